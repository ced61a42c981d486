// Package windows keeps, for one series, the events of the recent past in a hierarchy of
// time wheels and answers "sum, count, max and min over the last W" for every configured
// window W at once.
//
// # Structure
//
// A Layout, shared by all series of a rule, decides which wheels exist and how large they
// are; a Series holds one ring of slots per wheel. The wheels are, from fine to coarse,
// seconds, minutes, hours and days; slots are aligned to absolute time (epoch second,
// minute, hour, day), never to the first event, so two series agree on slot edges.
// A window W is served by the finest wheel whose slots it spans at most 300 times:
//
//	1s … 5m     second slots  (exact)
//	5m1s … 5h   minute slots
//	5h1s … 300h hour slots
//	above 300h  day slots, up to MaxWindow
//
// so the defaults 1m and 5m are exact, 15m and 1h use minute slots and 24h hour slots.
// A wheel exists only if some window needs it, with just enough slots for its longest
// window: the defaults need 300 second, 61 minute and 25 hour slots.
//
// Every event is written into its slot of every wheel (the roll-up happens when the event
// is added, not by a ticker), so a coarse slot always holds the exact total of its seconds
// and a window reads a single wheel: the recent part of a coarse window is as exact as if
// it were read from finer slots, because the newest coarse slot only holds events up to the
// series' newest second.
//
// # Exactness
//
// A window of W seconds read during second S covers the seconds S−W+1 … S. For a window
// served by second slots the result equals a naive sum over those seconds. For a window
// served by slots of D seconds, every slot fully inside the window counts fully and the
// one slot that straddles the old edge S−W+1 counts pro rata to the part of it inside the
// window, so a steady stream reads as a smooth value instead of a sawtooth at each minute
// or hour. The error of Sum and Events is therefore at most the events of that one slot
// (Σ|v| of it for Sum), and Max and Min are taken over the window stretched back to that
// slot's start (at most D−1 seconds more).
//
// A layout made with Options.LastComplete ends every window at the last complete second: a
// window of W seconds read during second S covers S−W … S−1, as if read at S−1 with
// nothing of S added yet, so that a panel refreshed mid-second never shows the dip of a
// second still filling (as go-zero's RollingWindow with IgnoreCurrentBucket). Second slots
// leave the current second out exactly, and so do the sums and counts of coarser slots (the
// layout keeps the current second's slot to take it off, if only that one slot of seconds);
// the extrema of coarser slots, already taken over whole slots, still include it. Events
// reach one second further back: an event is Late at time − W − 1. A summary window is
// read up to the slot holding the last complete second, which holds the current second as
// well unless the current second opened it. A wheel whose longest window ends on a slot
// edge keeps one slot more for the extra second (the default 5m: 301 second slots).
//
// # Summaries
//
// A quantity that is not a float (a quantile sketch, bucket counts) is kept as a Summary:
// the layout is given SummaryKinds (Options.Summaries), and the series keeps, next to
// its float wheels, wheels of summary slots that it creates on a slot's first value,
// Resets when the wheel moves past the slot and Merges into one summary per window at read
// time (ReadSummaries), in the manner of a bucket generator. A summary costs far more than
// a float, so an event is not added to every summary wheel: a wheel's newest slot that
// events came to is open, its events are added to it alone, and the coarser wheels get them
// in one merge per wheel (Absorb, for an Absorber) when a newer slot opens or the wheel
// moves, a read merging the open slot with the coarser slot that holds its seconds
// meanwhile; an event in an older slot is added to every wheel that holds it. Summary
// wheels are also coarser (summaryGrid): windows up to 5m are served by 10-second slots, up
// to 1h by minutes, up to 300h by hours, beyond by days; a window is read as the whole
// slots from the one holding its oldest second, so it holds its events plus those of less
// than one slot before it. A summary that implements Sealer is told when its wheel moves on
// from its slot, after which the slot is only read (and added to by late events) until it
// is Reset: a sketch shrinks to its exact size then. A layout without summaries has no
// summary wheels and its Add is the float path alone.
//
// A summary says what it holds (Summary.Bytes), so that a series says what it takes
// (Series.Bytes): a new one takes Layout.SeriesBytes, which counts each summary slot at its
// kind's Floor, and each Add hands what the summaries it touched grew or shrank by beyond
// their floors to the layout's Account (Options.Account), which says how much room is
// left. Near the end of that room the series caps the summaries it adds to or merges into
// (Capper), so that past it a summary is coarsened (each kind says how) instead of
// growing; the floors, counted from the start, let every slot still have one.
//
// # Saving
//
// A series encodes to bytes (Series.AppendBinary) and decodes into a layout of the same
// Fingerprint (Layout.DecodeSeries), so that windows survive a restart: the decoded series
// reads and goes on exactly as the original would have, its summaries restored by their
// kinds (Codec). Decoding takes hostile bytes: it returns an error rather than panic, and
// allocates no more than the layout and the bytes account for.
//
// # Time
//
// Nothing here reads a clock: every call passes the current second (Unix seconds), and a
// series does not go back in time: its time is the newest now any Add passed, and a Read
// evaluates at the later of its own now and that. Two steps of a clock back are the
// exceptions: an Add whose now is behind it by the longest window or more starts the
// series over at now, since everything held is after every window seen from there; and
// one whose now is behind it by less but after every event placed (a clock that ran ahead
// of the events' own times and came back) moves the series back to now, since nothing
// placed lies in between: its windows then lack only what its wheels let go of while it
// was ahead, rather than reading as of the ahead second until the clock catches up. Catching up after an idle gap of any
// length costs at most one pass over each wheel, and a Read needs no Add to have advanced
// the wheels first.
//
// An event may carry its own time, out of order. However late it comes, it lands in its
// slot of every wheel whose windows can still include it; an event older than the longest
// window (at ≤ time − Longest) is not placed and Add returns Late; an event after now is
// placed at now and Add returns Future.
//
// PerSecond divides Sum by the window's seconds, or by the seconds observed when fewer: the
// observation runs from the since second passed to Read up to the window's last second,
// inclusive.
// The caller chooses since because what was observed is not a property of one series: a
// series first seen a minute ago may still have been watched for an hour, and a replay of
// old events has observed the time they span, so since may lie before the series' first
// event and before the caller started.
//
// # Cost
//
// A slot is 8 bytes per kept quantity (the sum; the count with Options.Events; max and min
// with Options.Extrema): the default windows take 386 slots, about 3.1 KiB per quantity
// plus an 80-byte header per series; summaries take what their kind takes per slot used,
// in 117 slots with the default windows (31 of 10 s, 61 minutes, 25 hours). Add takes the
// series' mutex and updates one slot per float wheel and, mostly, one summary slot; Read walks each ring once for all the
// windows it serves, ReadSummaries merges each summary slot once. There is no goroutine
// per series and no ticker.
//
// Times are clamped to ±2^50 seconds (some 35 million years) so that no input, however
// absurd, can overflow the arithmetic. Values are expected to be finite: a NaN or an
// infinity poisons the windows that include it until it expires.
package windows

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"
)

// MaxWindow is the longest window a layout can serve: a year, so that "365d" and "52w" are
// accepted, while memory stays bounded (367 day slots per quantity at most).
const MaxWindow = 366 * 24 * time.Hour

// grid is the slot widths a kind of quantity is kept at, finest first: wheel k, of slots of
// step seconds, serves the windows longer than wheel k−1's upTo and up to its own. Each
// step divides the next, so that a slot of a coarse wheel is whole slots of a finer one.
type grid [4]struct{ step, upTo int64 }

// valueGrid serves sums, counts and extrema: a window spans at most 300 slots of the wheel
// that serves it, which bounds memory and read cost per window and keeps the default 5m
// window (300 seconds) exact.
var valueGrid = grid{{1, 300}, {60, 300 * 60}, {3600, 300 * 3600}, {86400, math.MaxInt64}}

// summaryGrid serves summaries (sketches), which cost far more per slot than a float: the
// windows up to 5m are served by 10-second slots, up to 1h by minutes, then by hours and,
// beyond 300 hours, by days.
var summaryGrid = grid{{10, 300}, {60, 3600}, {3600, 300 * 3600}, {86400, math.MaxInt64}}

// WindowError is a window NewLayout rejects and why, for a message at config load:
// "window 1.5s: not a whole number of seconds". A caller that has the window as its user
// wrote it (1500ms) words its own message with Reason.
type WindowError struct {
	Window time.Duration
	Reason string
}

func (e *WindowError) Error() string { return fmt.Sprintf("window %v: %s", e.Window, e.Reason) }

func windowError(w time.Duration, reason string) error {
	return &WindowError{Window: w, Reason: reason}
}

// Summary is what a slot of a summary wheel holds: a mergeable digest of the events added
// to the slot, such as a quantile sketch or a distinct count. A series creates a slot's
// summary with its SummaryKind on the slot's first event, empties it with Reset when the
// wheel moves past the slot, and Read merges the slots of a window into a summary of the
// same kind.
type Summary interface {
	// Add records one event: its value and, for a kind that reads one, its item (nil
	// otherwise). item is valid only during the call.
	Add(v float64, item []byte)
	// Merge adds everything from holds; from is of the receiver's kind.
	Merge(from Summary)
	// Reset empties the summary; it may keep its memory for the next slot.
	Reset()
	// Bytes is the heap the summary holds, itself included, as the allocator rounds it
	// (HeapBytes), in constant time: what its series is charged for it (see Account).
	Bytes() int
}

// Capper is a Summary that can be held to a size. Near the memory bound (see Account) the
// series calls Cap(n) before it adds to one of its slots' summaries or merges into it, and
// Cap(0) after: in between the summary takes no more than n bytes in all (Bytes), or than
// it holds if that is more, coarsening what it keeps instead of growing. Each kind says how
// and what it then guarantees.
type Capper interface {
	Cap(n int)
}

// Account is what the series of a layout charge the growth of their summaries to, and what
// says how far they may grow: a series calls Room once per Add, and Charge with what its
// summaries grew or shrank by, before Add returns. Both may be called from any goroutine.
type Account interface {
	// Charge adds n bytes to what the series hold; n < 0 gives them back.
	Charge(n int64)
	// Room is how many more bytes the series may take, math.MaxInt64 without a bound; it
	// may be negative when others took more.
	Room() int64
}

// Sealer is a Summary that can make itself smaller once its slot is no longer the newest of
// its wheel: from then on the slot is read, and added to only by events that come late,
// until the wheel comes round and Resets it; or, once a clock that ran ahead of the events
// came back (see Time), the slot is the newest again and takes the events of its seconds
// as they come. The series calls Seal on a slot's summaries when its wheel moves on from
// the slot; Add must still work after it.
type Sealer interface {
	Seal()
}

// Absorber is a Summary that merges into a summary the series keeps otherwise than into
// one a read builds: the series merges a slot into a coarser wheel's slot with Absorb
// (see Series), and a read merges slots with Merge. A sketch whose Merge lays its counts
// out to be quick to add to, at the cost of room, keeps them compact in Absorb.
type Absorber interface {
	Absorb(from Summary)
}

// SummaryKind makes empty summaries of one kind and says what of an event they read
// besides its value.
type SummaryKind struct {
	// New makes an empty summary.
	New func() Summary
	// Item n ≥ 1 gives Summary.Add the n-th of the items passed to Series.AddItems: a
	// distinct count reads the text it counts, a top-values summary the value it ranks.
	// 0 gives it nil: the summary reads values only.
	Item int
	// Floor is what a summary of the kind may always hold, bound or not: a series is
	// charged it for each of its summary slots from the start (Layout.SeriesBytes), so that
	// at the bound every slot still gets a summary of at least that size (Capper). It is
	// at least what an empty one holds.
	Floor int
	// AddGrown, when not nil, is Add on a summary of the kind that returns its Bytes
	// before and after, or two equal numbers when the add left them alone, as the usual
	// add does: the series then asks no Bytes around the adds. A kind's own function calls
	// its type's method directly, where an optional interface would cost an assertion.
	AddGrown func(s Summary, v float64, item []byte) (before, after int)
	// AddRun, when not nil, adds events to a summary of the kind in their order, as
	// AddGrown would one at a time, and stops after the first add that changed its Bytes:
	// it returns how many events it added (at least one when given some), and Bytes
	// before and after the last of them, or two equal numbers when none changed them.
	// values are the events', items theirs in turn as Series.AddMany takes them
	// (len(items)/len(values) each), valid only during the call. Series.AddMany hands a
	// run of one second to it at once when its layout has this kind alone (or beside
	// Fixed ones), so that the loop over the events runs within the summary's code;
	// AddRun stops so that the series charges each growth, and checks its room, where it
	// would after AddGrown.
	AddRun func(s Summary, values []float64, items [][]byte) (n, before, after int)
	// Fixed says that a summary of the kind takes the same Bytes whatever it is given and
	// is no Capper (NewLayout refuses one that is): nothing the room does changes what it
	// keeps. With AddRun, a run is handed to it at once beside one kind that is not
	// fixed, as to that kind alone.
	Fixed bool
	// Unordered says that merges of summaries of the kind into an empty one read the same
	// whatever their order and grouping (a union of sets, sums of integer counts), so that
	// a read of several series' windows (ReadSummariesOf) merges the slots of all of them
	// into one window, rather than each series' window made and then merged. A kind whose
	// merges prune or sum floats reads each series' windows as Series.ReadSummaries does.
	Unordered bool
}

// Options chooses what a slot keeps besides the sum of values.
type Options struct {
	// Events keeps a count of events per slot, for value rules; for counting rules every
	// value is 1, so the count equals Sum and is not stored twice.
	Events bool
	// Extrema keeps the maximum and minimum value per slot.
	Extrema bool
	// Summaries are kept per slot of wheels of their own, coarser than those of the
	// floats (see summaryGrid), and read with Series.ReadSummaries in this order.
	Summaries []SummaryKind
	// Account, when not nil, is charged the growth of the series' summaries, and bounds it.
	Account Account
	// LastComplete ends every window at the last complete second: read during second S, a
	// window of W seconds covers S−W … S−1 instead of S−W+1 … S, so that a rate or a count
	// never shows the dip of the second still filling (see the package documentation).
	LastComplete bool
}

// Layout is the shape shared by every series of a rule: its windows and the wheels that
// serve them. It is immutable and safe for concurrent use.
type Layout struct {
	windows []time.Duration
	secs    []int64 // windows in seconds, same order
	longest int64
	// lag is 1 when windows end at the last complete second (Options.LastComplete), else 0;
	// reach is how far back from the series' second a window reaches: longest + lag.
	lag, reach int64
	stride     int // float64s per slot: sum, then events, then max and min
	events     int // offset of the count in a slot, or 0 when not kept
	extrema    int // offset of the max in a slot (min follows), or 0 when not kept
	wheels     []wheel
	size       int // float64s per series, over all wheels
	// kinds are the summaries of Options; sumWheels hold them, len(kinds) per slot, in
	// sumSize Summary values per series.
	kinds     []SummaryKind
	sumWheels []wheel
	sumSize   int
	// floors are the kinds' floors (at least an empty summary's bytes); account is
	// Options.Account; bytes is what a new series takes (SeriesBytes).
	floors  []int
	account Account
	bytes   int
	// byRun says that a run of events goes to each kind at once, and grows is the kind
	// that may grow, −1 if none (see runKinds).
	byRun bool
	grows int
	// ordered and unordered say whether some kind is not Unordered, and some is.
	ordered, unordered bool
	// fp is the Fingerprint of what a series' encoding depends on.
	fp uint64
}

// wheel is one ring of slots of a Series.
type wheel struct {
	step  int64 // seconds per slot
	n     int64 // slots in the ring
	off   int   // first value of this ring in Series.data, or in Series.sums
	serve []int // indexes of the windows this wheel serves, shortest first
}

// CheckWindow reports whether the wheels can serve a window of length w, so that a rule
// file is checked without building its layouts.
func CheckWindow(w time.Duration) error {
	switch {
	case w < time.Second:
		return windowError(w, "shorter than 1s")
	case w%time.Second != 0:
		return windowError(w, "not a whole number of seconds")
	case w > MaxWindow:
		return windowError(w, fmt.Sprintf("longer than the longest supported window (%d days)", MaxWindow/(24*time.Hour)))
	}
	return nil
}

// NewLayout checks the windows and sizes the wheels for them. Windows must be whole
// seconds, at least 1s and at most MaxWindow; the error for any other names the window
// and why. A Fixed summary kind must not be a Capper. Stats come back in the order
// windows are given.
func NewLayout(windows []time.Duration, opts Options) (*Layout, error) {
	if len(windows) == 0 {
		return nil, errors.New("no windows")
	}
	l := &Layout{
		windows: slices.Clone(windows),
		secs:    make([]int64, len(windows)),
		stride:  1,
	}
	if opts.Events {
		l.events = l.stride
		l.stride++
	}
	if opts.Extrema {
		l.extrema = l.stride
		l.stride += 2
	}
	for i, w := range windows {
		if err := CheckWindow(w); err != nil {
			return nil, err
		}
		l.secs[i] = int64(w / time.Second)
		l.longest = max(l.longest, l.secs[i])
	}
	if opts.LastComplete {
		l.lag = 1
	}
	l.reach = l.longest + l.lag
	l.wheels, l.size = l.buildWheels(&valueGrid, l.stride)
	l.bytes = HeapBytes(int(unsafe.Sizeof(Series{}))) + HeapBytes(8*l.size)
	if len(opts.Summaries) > 0 {
		l.kinds = slices.Clone(opts.Summaries)
		l.sumWheels, l.sumSize = l.buildWheels(&summaryGrid, len(l.kinds))
		l.account = opts.Account
		l.bytes += HeapBytes(int(unsafe.Sizeof(summaryRings{}))) + HeapBytes(int(unsafe.Sizeof(Summary(nil)))*l.sumSize)
		slots := l.sumSize / len(l.kinds)
		for k, kind := range l.kinds {
			floor := kind.Floor
			if kind.New != nil {
				sum := kind.New()
				if _, ok := sum.(Capper); ok && kind.Fixed {
					// The series would cap it near the bound, and hand it runs beside a
					// kind the room concerns as if the room did not concern it.
					return nil, fmt.Errorf("summary %d: a Fixed kind is a Capper", k+1)
				}
				floor = max(floor, sum.Bytes())
			}
			l.floors = append(l.floors, floor)
			l.bytes += slots * floor
			l.unordered = l.unordered || kind.Unordered
			l.ordered = l.ordered || !kind.Unordered
		}
		l.grows, l.byRun = runKinds(l.kinds)
	}
	l.fp = l.fingerprint()
	return l, nil
}

// buildWheels returns the wheels of g the windows need, each with just enough slots of
// stride values for its longest window, and the values they take in all. A layout whose
// windows end at the last complete second reaches one second further back, and keeps the
// second wheel, if only its head slot, to know what the current second holds (see Read).
func (l *Layout) buildWheels(g *grid, stride int) ([]wheel, int) {
	var serve [len(grid{})][]int
	for i, sec := range l.secs {
		k := 0
		for k < len(g)-1 && sec > g[k].upTo {
			k++
		}
		serve[k] = append(serve[k], i)
	}
	var wheels []wheel
	size := 0
	for k, idx := range serve {
		step := g[k].step
		n := int64(1)
		switch {
		case len(idx) > 0:
			slices.SortStableFunc(idx, func(a, b int) int { return int(l.secs[a] - l.secs[b]) })
			// The ring must still hold the slot of the window's oldest second right after
			// the wheel moved into a new slot: (n−1)·step ≥ W−1+lag.
			n = (l.secs[idx[len(idx)-1]]+l.lag-1+step-1)/step + 1
		case step != 1 || l.lag == 0:
			continue
		}
		wheels = append(wheels, wheel{step: step, n: n, off: size, serve: idx})
		size += int(n) * stride
	}
	return wheels, size
}

// Windows returns the windows in the order Read reports them.
func (l *Layout) Windows() []time.Duration { return slices.Clone(l.windows) }

// Longest returns how far back from the series' second its windows reach, in seconds: the
// longest window, one second more when windows end at the last complete second
// (Options.LastComplete). Events that old are Late, and a series idle for that long holds
// nothing.
func (l *Layout) Longest() int64 { return l.reach }

// SeriesBytes is the heap a new Series of l takes: its float wheels and, with summaries,
// their slots, each counted at its kind's Floor. Series.Bytes says what it takes as its
// summaries grow.
func (l *Layout) SeriesBytes() int { return l.bytes }

// HeapBytes is the heap an allocation of n bytes takes: n rounded up to the allocator's
// size class, or to whole pages past the largest class. Objects under 16 bytes without
// pointers (short texts, a few bytes of counts) share 16-byte blocks, which one of them
// keeps whole while it lives: they are counted at a block.
func HeapBytes(n int) int {
	switch {
	case n <= 0:
		return 0
	case n < 16:
		return 16
	case n <= smallMax:
		return int(classBy8[(n+7)>>3])
	case n <= largestClass:
		return int(classBy128[(n-smallMax+127)>>7])
	}
	return (n + pageSize - 1) &^ (pageSize - 1)
}

// pageSize is the allocator's page, to which a large object is rounded up.
const pageSize = 8192

// classBy8 and classBy128 map a size to its class as the allocator's own tables do: up to
// smallMax bytes by steps of 8, beyond by steps of 128, so that HeapBytes, which every
// summary's Bytes calls on every add, is a load.
const smallMax, largestClass = 1024, 32768

var classBy8, classBy128 = func() (by8 [smallMax/8 + 1]uint16, by128 [(largestClass-smallMax)/128 + 1]uint16) {
	class := func(n int) uint16 {
		i, _ := slices.BinarySearch(sizeClasses[:], n)
		return uint16(sizeClasses[i])
	}
	for i := range by8 {
		by8[i] = class(i * 8)
	}
	for i := range by128 {
		by128[i] = class(smallMax + i*128)
	}
	return by8, by128
}()

// sizeClasses are the Go allocator's size classes (internal/runtime/gc/sizeclasses.go);
// TestHeapBytes holds them to what the heap measures.
var sizeClasses = [...]int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208,
	224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024,
	1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144,
	6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432,
	19072, 20480, 21760, 24576, 27264, 28672, 32768}
