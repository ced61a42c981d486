package sketch

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"unsafe"

	"github.com/logwindow/logwindow_exporter/windows"
)

// Top keeps the values of an item (a label value: a path, a client) with the largest sums
// in bounded room: a weighted Misra–Gries summary with capacity counters, which is a
// mergeable summary (Agarwal et al., "Mergeable Summaries", 2012).
//
// Each counter holds a lower bound of its value's sum. When more than 2·capacity values
// are held, the (capacity+1)-th largest counter δ is subtracted from every counter and the
// counters left at zero or below are dropped: the mass taken away is at least
// (capacity+1)·δ while each value loses at most δ. Merging adds counters and prunes the
// same way. So, with N the sum of every value added or merged and N̂ the sum of the
// counters, every value's counter c̃ and true sum c satisfy
//
//	c − (N − N̂)/(capacity+1) ≤ c̃ ≤ c,
//
// whatever the order of adds and merges (Bound returns that error). A window merged from
// its slots has N = the window's sum, so its error is at most window sum/(capacity+1) —
// the sum of the slots' own errors — and a value whose sum exceeds that is always held.
//
// Only positive values count: the sum a top value is ranked by cannot go down, so a zero,
// negative or NaN value is ignored (and is not in N), and so is +Inf, which no sum could
// rank against.
//
// Held to fewer bytes (Cap), it keeps fewer counters: see Cap.
type Top struct {
	capacity int
	index    map[string]int32
	counts   []topCount
	total    float64 // N: every positive value added or merged
	kept     float64 // N̂: the sum of counts
	// loss is the sum of what the prunes took from every counter, and of the merged
	// summaries' losses: the most any value's counter lost (see Bound).
	loss float64
	// itemBytes is the heap of the items held; mapSize the most counters the index held
	// since it was made, which its heap follows (see mapBytes).
	itemBytes int
	mapSize   int32
	// limit is the cap in bytes (windows.Capper), 0 for none.
	limit int32
}

type topCount struct {
	item  string
	count float64
}

// TopValue is one value of an item and its window sum, as Top reports it.
type TopValue struct {
	Item string
	// Sum is at most Bound below the item's true sum, never above it.
	Sum float64
}

// Heap an empty Top takes (itself and its index), and TopKind's floor: room for
// floorCounters counters of values up to floorItem bytes.
var (
	topBytes  = windows.HeapBytes(int(unsafe.Sizeof(Top{}))) + mapBytes(0)
	topFloor  = topBytes + mapBytes(floorCounters) - mapBytes(0) + windows.HeapBytes(floorCounters*int(unsafe.Sizeof(topCount{}))) + floorCounters*floorItem
	countSize = int(unsafe.Sizeof(topCount{}))
)

const floorCounters, floorItem = 8, 32

// TopKind returns the windows.SummaryKind of Top with capacity counters (≥ 1) over the
// item-th item of an event (windows.SummaryKind.Item).
func TopKind(capacity, item int) windows.SummaryKind {
	return windows.SummaryKind{Item: item, New: func() windows.Summary { return NewTop(capacity) }, Floor: topFloor}
}

// NewTop returns an empty Top with capacity counters (at least 1).
func NewTop(capacity int) *Top {
	return &Top{capacity: max(capacity, 1), index: map[string]int32{}}
}

// Add adds v to the sum of item; item is valid only during the call.
func (t *Top) Add(v float64, item []byte) {
	if !(v > 0 && v <= math.MaxFloat64) {
		return
	}
	t.total += v
	if i, ok := t.index[string(item)]; ok {
		t.counts[i].count += v
		t.kept += v
		return
	}
	if t.limit > 0 && !t.room(len(item)) {
		if v = t.makeRoom(len(item), v); v == 0 {
			return
		}
	}
	t.insert(string(item), v)
}

// insert adds a counter of v for an item not held, pruning first when the room is full.
func (t *Top) insert(item string, v float64) {
	if len(t.counts) >= 2*t.capacity {
		t.prune()
	}
	if len(t.counts) == cap(t.counts) && t.limit > 0 {
		// Grown by hand, so that what it takes is what room counted.
		grown := make([]topCount, len(t.counts), nextCap(cap(t.counts)))
		copy(grown, t.counts)
		t.counts = grown
	}
	t.index[item] = int32(len(t.counts))
	t.counts = append(t.counts, topCount{item, v})
	t.mapSize = max(t.mapSize, int32(len(t.counts)))
	t.itemBytes += windows.HeapBytes(len(item))
	t.kept += v
}

// nextCap is the room for counters a capped Top grows to from c.
func nextCap(c int) int { return max(2*c, floorCounters) }

// room reports whether the cap leaves room for a counter of an item of n bytes.
func (t *Top) room(n int) bool {
	grow := windows.HeapBytes(n)
	if len(t.counts) == cap(t.counts) {
		grow += windows.HeapBytes(nextCap(cap(t.counts))*countSize) - windows.HeapBytes(cap(t.counts)*countSize)
	}
	if size := int32(len(t.counts) + 1); size > t.mapSize {
		grow += mapBytes(int(size)) - mapBytes(int(t.mapSize))
	}
	return t.Bytes()+grow <= int(t.limit)
}

// makeRoom makes room under the cap for a counter of v for an item of n bytes: it prunes to
// the capacity first, and then, as long as there is no room, takes the median count from
// every counter and from v, dropping the counters left without any (half of them at
// least, so that the linear cost of a step is shared by as many new values). It returns
// what is left of v, 0 when the item gets no counter: then it is one of the values whose
// sums err by the bound.
func (t *Top) makeRoom(n int, v float64) float64 {
	if len(t.counts) > t.capacity {
		t.prune()
	}
	for !t.room(n) {
		if len(t.counts) == 0 {
			// An item too long for the cap: all of v is lost.
			t.loss += v
			return 0
		}
		delta := selectDesc(t.counts, len(t.counts)/2)
		t.subtract(delta)
		if v -= delta; v <= 0 {
			return 0
		}
	}
	return v
}

// prune subtracts the (capacity+1)-th largest count from every count and drops those left
// without any, which leaves at most capacity counters. Pruning at twice the capacity
// rather than at each new value makes its linear cost once per capacity new values.
func (t *Top) prune() { t.subtract(selectDesc(t.counts, t.capacity)) }

// subtract takes delta from every count and drops those left without any.
func (t *Top) subtract(delta float64) {
	kept := t.counts[:0]
	t.kept = 0
	for _, c := range t.counts {
		if c.count > delta {
			c.count -= delta
			t.kept += c.count
			kept = append(kept, c)
		} else {
			t.itemBytes -= windows.HeapBytes(len(c.item))
		}
	}
	clear(t.counts[len(kept):]) // release the dropped items' text
	t.counts = kept
	t.loss += delta
	clear(t.index)
	t.reindex()
}

// reindex fills the empty index from counts.
func (t *Top) reindex() {
	for i, c := range t.counts {
		t.index[c.item] = int32(i)
	}
}

// Seal shrinks a slot its wheel has moved on from: pruned to at most capacity counters (a
// prune like any other, so the bound holds as before) in a slice and an index of their
// size, which is about half of what a full slot held. A late Add still works.
func (t *Top) Seal() {
	if len(t.counts) > t.capacity {
		t.prune()
	}
	t.counts = slices.Clone(t.counts)
	t.index = make(map[string]int32, len(t.counts))
	t.mapSize = int32(len(t.counts))
	t.reindex()
}

// selectDesc reorders cs so that cs[m] holds the (m+1)-th largest count, those before it
// are no smaller and those after it no larger (quickselect), and returns that count; m <
// len(cs).
func selectDesc(cs []topCount, m int) float64 {
	lo, hi := 0, len(cs)-1
	for lo < hi {
		p := cs[lo+rand.IntN(hi-lo+1)].count
		i, j := lo, hi
		for i <= j {
			for cs[i].count > p {
				i++
			}
			for cs[j].count < p {
				j--
			}
			if i <= j {
				cs[i], cs[j] = cs[j], cs[i]
				i++
				j--
			}
		}
		switch {
		case m <= j:
			hi = j
		case m >= i:
			lo = i
		default:
			return cs[m].count
		}
	}
	return cs[m].count
}

// Merge adds the counters of from, a *Top of the same kind. The items it takes are
// from's: a read merges slots into a summary that lives no longer than they do.
func (t *Top) Merge(from windows.Summary) { t.merge(from.(*Top), false) }

// Absorb is Merge into a summary the wheels keep (windows.Absorber): the items it takes are
// copies, so that a slot holds only what is its own (and Bytes counts it) and a finer slot
// that is pruned or reset lets its items go.
func (t *Top) Absorb(from windows.Summary) { t.merge(from.(*Top), true) }

func (t *Top) merge(f *Top, own bool) {
	t.total += f.total
	t.loss += f.loss
	for _, c := range f.counts {
		if i, ok := t.index[c.item]; ok {
			t.counts[i].count += c.count
			t.kept += c.count
			continue
		}
		v := c.count
		if t.limit > 0 && !t.room(len(c.item)) {
			if v = t.makeRoom(len(c.item), v); v == 0 {
				continue
			}
		}
		item := c.item
		if own {
			item = strings.Clone(item)
		}
		t.insert(item, v)
	}
}

// Reset empties the summary, keeping its room for the next slot.
func (t *Top) Reset() {
	clear(t.counts)
	t.counts = t.counts[:0]
	clear(t.index)
	t.total, t.kept, t.loss, t.itemBytes = 0, 0, 0, 0
}

// Bytes is the heap the summary holds (windows.Summary): itself, its counters, its index
// (as mapBytes estimates it) and its items.
func (t *Top) Bytes() int {
	return topBytes - mapBytes(0) + mapBytes(int(t.mapSize)) + windows.HeapBytes(cap(t.counts)*countSize) + t.itemBytes
}

// Cap holds the summary to n bytes (windows.Capper; 0 lifts the cap): a value not held
// gets a counter only if it fits, after a prune to the capacity and, as long as it does
// not, a prune to half the counters held (their median count taken from every counter and
// from the value). With m counters at such a step, each value loses at most what m/2 of
// them lose in all, so a capped summary errs by at most twice the mass lost over the
// fewest counters it held, not over capacity+1; Bound says by how much. A value longer
// than the cap can ever hold gets no counter.
func (t *Top) Cap(n int) { t.limit = int32(min(n, math.MaxInt32)) }

// Total returns the sum of the values added or merged: the window's sum of them.
func (t *Top) Total() float64 { return t.total }

// Bound returns how far below its true sum a value's reported sum may be: the mass the
// counters lost, over capacity+1, which is at most Total/(capacity+1); or, if a cap made
// the summary keep fewer counters (Cap), what the counters lost, which is more.
func (t *Top) Bound() float64 {
	return max(max(t.total-t.kept, 0)/float64(t.capacity+1), t.loss)
}

// mapBytes is the heap of a map[string]int32 that held at most n entries, as Go's maps
// lay them out: a header, then groups of 8 slots (8 control bytes, 8 slots of 24 bytes)
// in tables of at most 1,024 slots filled to 7/8, which split when full (to about 620
// entries each, as measured). TestTopBytes holds it to the heap.
func mapBytes(n int) int {
	const header, table, group = 48, 40, 8 + 8*24
	switch {
	case n == 0:
		return header
	case n <= 8:
		return header + windows.HeapBytes(group)
	}
	slots, tables := 16, 1
	for slots*7/8 < n && slots < 1024 {
		slots *= 2
	}
	if n > 1024*7/8 {
		tables = (n + 619) / 620
	}
	return header + tables*(table+windows.HeapBytes(slots/8*group))
}

// Top appends to dst the k values with the largest sums of at least atLeast, largest
// first, equal sums in the order of their items, and returns it.
func (t *Top) Top(k int, atLeast float64, dst []TopValue) []TopValue {
	from := len(dst)
	if k < 1 {
		return dst
	}
	for _, c := range t.counts {
		if c.count < atLeast {
			continue
		}
		v := TopValue{c.item, c.count}
		out := dst[from:]
		if len(out) == k {
			if topOrder(v, out[k-1]) >= 0 {
				continue
			}
			dst = dst[:len(dst)-1]
		}
		i, _ := slices.BinarySearchFunc(dst[from:], v, topOrder)
		dst = slices.Insert(dst, from+i, v)
	}
	return dst
}

// topOrder sorts values by sum, largest first, then by item.
func topOrder(a, b TopValue) int {
	if c := cmp.Compare(b.Sum, a.Sum); c != 0 {
		return c
	}
	return strings.Compare(a.Item, b.Item)
}
