// Package store keeps the matched series of every rule, for the exposition (package
// exporter) to read at scrape time through the read API of read.go. It knows nothing of
// Prometheus: what the series' families are called and how they are written is the
// exposition's.
//
// A Set holds one store per rule of a *config.Config: label set → series (a windows.Series
// plus the `_total`), the rule's cardinality budget with its `__overflow__` series, idle
// expiry and drop counters. Sinks, one per writing goroutine, feed parser events into a
// Set; the exposition reads the current Set at scrape time. A reload builds a new Set that
// takes over the stores of unchanged rules, so their windows survive.
//
// Idle series are expired by Set.Expire, which the pipeline calls now and then; a scrape
// changes nothing, judging idleness itself, and a window read after any gap is still right
// because the wheels catch up on read. Between two Expires the budget bounds memory.
//
// # Writers on several cores
//
// Inputs read on goroutines of their own, and often write the same label sets (a busy
// nginx's method and status). So that they do not contend, a store has shards of writers
// (sinks are dealt to them in turn): a line takes only its shard's read lock, and writes
// only its shard's part of the series: its own wheels and counters, in cache lines of its
// own. The part of the shard that made the series is inline; another shard's is made, with
// wheels, on that shard's first line to it. Readers (scrapes, expiry, the budget's
// eviction order) merge the parts: totals and window sums add up, extrema and summaries
// merge. Making or removing a series takes every shard's write lock.
//
// # Counters outlive windows
//
// A label set's `_total` never goes back while the process lives, so sparse events stay
// visible to increase(). Once a series has been idle longer than its longest window its
// wheels are released and it becomes a kept counter: its label set, its total and the
// second of its last line. A line revives it with new wheels. A kept counter is removed
// once idle for the counter TTL (global counter_ttl; 0 keeps it), or earlier when a new
// label set needs its room in the budget, least recently active first: kept counters
// count against max_series_per_rule like live series, so the budget still bounds them.
// Removed series keep their lines in the rule's matched-lines counter.
//
// A rule without labels and a rule's initial label sets are pinned: created with the
// store, never expired, their wheels never released, so they always export their series
// (0 before any line).
//
// # Clocks
//
// A processing-time rule places each line at the processing second (monotonic, so a
// wall-clock step moves nothing) and is read and expired at it. An event-time rule lives
// entirely on the wall clock, the clock its log's times come from: its lines are judged
// late or future against the wall second, and its series are read and expired at it. A
// rule never mixes the two, so neither clock's steps reach the other's rules' windows. A
// series is active (what the counter TTL and the eviction order go by) when its lines
// come, on the processing clock whatever its rule's, and whatever their own time: one line
// stamped years ahead cannot keep its series, the late lines of a log read from its
// beginning stay in their `_total`, however old, and a step of the wall clock neither makes
// a label set active a second ago look idle for a day (its counter removed, to restart at
// its next line) nor makes those active before a step back look newer than those active
// since. Rates divide
// by the seconds observed: since the exporter's start for processing-time rules; for
// event-time rules since the earlier of that and the oldest line any event-time rule
// placed, so that a replay from the beginning of a log gives a series first seen near its
// end the rate over the whole log.
//
// # Late lines
//
// A line older than its rule's longest window is in no window, but counts in the `_total`
// of its series: a log read from its beginning brings a label set's old lines before its
// recent ones, and those old lines belong in its `_total`. Such a series is idle from birth
// until a recent line arrives, so it must not keep a live label set out of the budget: when
// a new label set finds the budget full, idle series are reaped there and then, not only at
// the next Expire (at most once per second, or per quarter budget of new label sets, since
// it walks every series). A label set whose first line is late starts as a kept counter
// (no wheels), so it is the first to give way. Only a late line of a new label set that
// finds the budget full creates no series (nor goes to the overflow series, whose windows
// it cannot reach): it counts in the rule's matched lines and late drops.
package store

import (
	"log/slog"
	"math"
	"strings"
	"sync/atomic"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/parser/event"
	"github.com/logwindow/logwindow_exporter/windows"
)

// OverflowValue is the value of every label of the series that collects a rule's label
// sets once the rule holds max_series_per_rule series.
const OverflowValue = "__overflow__"

// store is the state of one rule that outlives a reload when the rule does not change.
type store struct {
	fingerprint string
	layout      *windows.Layout
	// value: the rule sums a capture, so `_total` is a float sum rather than the line count.
	value bool
	// eventTime: the rule places lines by their own time, on the wall clock (see the
	// package documentation). The fingerprint covers the timestamp, so an inherited store
	// keeps its clock.
	eventTime bool
	// overflowKey and overflowLabels describe the overflow series; a log line whose label
	// values are all OverflowValue lands in that same series, so the two can never be
	// exported as duplicate label sets.
	overflowKey    string
	overflowLabels []string

	// locks guard series, one per shard of writers: a sink read-locks only its shard's, so
	// that writers on different cores do not share the lock's reader count; changing the map
	// takes them all (lockAll), so any one of them is enough to read it. They are allocated
	// on their own: a block of a multiple of 64 bytes (up to 512), which the allocator
	// places at a multiple of its size, so that each lock is in a cache line of its own,
	// away from the fields every writer reads.
	locks  []shardLock
	series map[string]*Series
	// normal counts the series other than the overflow one; it is what the budget limits.
	normal int
	// retired is the line count of expired series, so matched lines stay monotonic.
	retired uint64
	// reapedAt is the now of the last reap at the budget and foldsSinceReap the new label
	// sets folded since: together they bound how often a reap walks the series.
	reapedAt       atomic.Int64
	foldsSinceReap atomic.Int64
	// lateUnseated counts late lines of label sets that had no series: matched lines that
	// are in no `_total` (see the package documentation).
	lateUnseated atomic.Uint64
	// matched counts the rule's matched lines (those its series' parts, retired and
	// lateUnseated count) once the sinks that wrote them published them (Sink.Publish):
	// what the rule's matched-lines self-metric says.
	matched atomic.Uint64

	// parserDrops is indexed by event.DropReason.
	parserDrops  [event.NumDropReasons]atomic.Uint64
	late, future atomic.Uint64
	// tooLarge counts lines of a value rule refused because their value would take the
	// magnitude of a part's sums past what admit allows.
	tooLarge atomic.Uint64
	folds    atomic.Uint64
	// oldest is the Set's shared oldest placed event (see Set.oldest).
	oldest *atomic.Int64
	// mem is the Set's shared memory bound; used is what this store's series take of it,
	// and wheelBytes what a series' wheels take when made (windows.Layout.SeriesBytes):
	// their summaries charge what they grow by since (Charge).
	mem        *memory
	used       atomic.Int64
	wheelBytes int64
	// dropped is set when a reload's Set does not take the store over: what the old
	// Set's writers still write into it (the lines in flight at the swap) is charged
	// nothing, as the store is never read nor expired again.
	dropped atomic.Bool
	// accounts holds, per shard of writers, the layout its wheels are made by and the
	// account their summaries charge (shardAccount); layout is the first's.
	accounts []shardAccount
	// memFolds counts the lines folded because of the memory bound (also in folds).
	memFolds atomic.Uint64
	// foldLog says that the rule folds (see logFold). name and labelNames are the rule's
	// (the fingerprint covers both, so an inherited store has the same); foldLogAt is the
	// second of the store's clock from which a fold is logged again.
	foldLog    *slog.Logger
	name       string
	labelNames []string
	foldLogAt  atomic.Int64
}

// layoutOptions are what r's wheels keep, without an account.
func layoutOptions(r *config.Rule) windows.Options {
	opts := r.Options()
	opts.LastComplete = r.WindowEnd == config.WindowEndLastComplete
	return opts
}

// newStore makes the store of rule r. Its series share one layout of the rule's windows
// with what its quantities keep (an inherited store has the same, as the fingerprint covers
// both), whose summaries charge their growth to the store (see Charge).
func newStore(r *config.Rule, oldest *atomic.Int64, mem *memory, shards int, log *slog.Logger) (*store, error) {
	overflow := make([]string, len(r.Labels))
	names := make([]string, len(r.Labels))
	for i, l := range r.Labels {
		overflow[i] = OverflowValue
		names[i] = l.Name
	}
	st := &store{
		mem:            mem,
		oldest:         oldest,
		fingerprint:    r.Fingerprint,
		value:          r.IsValueRule(),
		eventTime:      r.Timestamp != nil,
		overflowKey:    strings.Join(overflow, event.KeySep),
		overflowLabels: overflow,
		series:         map[string]*Series{},
		locks:          make([]shardLock, shards),
		foldLog:        log,
		name:           r.Name,
		labelNames:     names,
	}
	st.foldLogAt.Store(math.MinInt64)
	opts := layoutOptions(r)
	st.accounts = make([]shardAccount, shards)
	for i := range st.accounts {
		a := &st.accounts[i]
		opts.Account = a
		layout, err := windows.NewLayout(r.Windows, opts)
		if err != nil {
			return nil, err
		}
		a.st, a.layout = st, layout
	}
	st.layout, st.wheelBytes = st.accounts[0].layout, int64(st.accounts[0].layout.SeriesBytes())
	// The one series of a label-less rule has the overflow series' key (no values), which
	// keeps it out of the budget as it always was.
	if len(r.Labels) == 0 {
		st.pin("", []string{})
	}
	for _, values := range r.Initial {
		vs := make([][]byte, len(values))
		for i, v := range values {
			vs[i] = []byte(v)
		}
		st.pin(cloneLabels(vs))
	}
	return st, nil
}

// pin creates a series that exists from the start and never expires; config refuses
// duplicate initial label sets and more of them than the budget.
func (st *store) pin(key string, values []string) {
	s := newSeries(key, values, st.layout, false, 0)
	st.charge(st.seriesCost(len(key), len(values)))
	s.pinned = true
	st.series[key] = s
	if key != st.overflowKey {
		st.normal++
	}
}
