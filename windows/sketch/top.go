package sketch

import (
	"cmp"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
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
	// counts are the counters, in no order; each item's text is in arena, which holds
	// nothing else, and table finds an item's counter (see find).
	counts []topCount
	arena  []byte
	table  []uint64
	total  float64 // N: every positive value added or merged
	kept   float64 // N̂: the sum of counts
	// loss is the sum of what the prunes took from every counter, and of the merged
	// summaries' losses: the most any value's counter lost (see Bound).
	loss float64
	// limit is the cap in bytes (windows.Capper), 0 for none.
	limit int32
}

// A Top keeps its items' text in one arena and finds them through a table of its own,
// rather than a map[string]int32 beside a slice of (string, count) with a string per item:
// about 55 bytes a counter of a 25-byte item against 110, and a line's lookup touches the
// table, its counter and the item's text, each in memory of the summary's own.
type topCount struct {
	count  float64
	off, n uint32 // the item is arena[off : off+n]
}

// TopValue is one value of an item and its window sum, as Top reports it.
type TopValue struct {
	Item string
	// Sum is at most Bound below the item's true sum, never above it.
	Sum float64
}

// Heap an empty Top takes, and TopKind's floor: room for floorCounters counters of
// values up to floorItem bytes.
var (
	topBytes  = windows.HeapBytes(int(unsafe.Sizeof(Top{})))
	topFloor  = topBytes + windows.HeapBytes(floorCounters*countSize) + windows.HeapBytes(floorCounters*floorItem) + windows.HeapBytes(minTable*8)
	countSize = int(unsafe.Sizeof(topCount{}))
)

const floorCounters, floorItem = 8, 32

// minTable is the fewest slots of a table; a table is at most half full, so that a
// lookup that misses ends at an empty slot soon.
const minTable = 16

// topSeed seeds the items' hashes: per process, so that no log can choose items that
// collide.
var topSeed = maphash.MakeSeed()

// TopKind returns the windows.SummaryKind of Top with capacity counters (≥ 1) over the
// item-th item of an event (windows.SummaryKind.Item).
func TopKind(capacity, item int) windows.SummaryKind {
	return windows.SummaryKind{
		Item:  item,
		New:   func() windows.Summary { return NewTop(capacity) },
		Floor: topFloor,
		AddGrown: func(s windows.Summary, v float64, item []byte) (int, int) {
			return s.(*Top).AddGrown(v, item)
		},
		AddRun: func(s windows.Summary, values []float64, items [][]byte) (int, int, int) {
			return s.(*Top).AddRun(values, items, item-1)
		},
	}
}

// NewTop returns an empty Top with capacity counters (at least 1).
func NewTop(capacity int) *Top {
	return &Top{capacity: max(capacity, 1)}
}

// Add adds v to the sum of item; item is valid only during the call.
func (t *Top) Add(v float64, item []byte) { t.AddGrown(v, item) }

// AddGrown is Add, and returns Bytes before and after it, 0 and 0 when no buffer grew:
// item had a counter already, or its new one fit (windows.SummaryKind.AddGrown).
func (t *Top) AddGrown(v float64, item []byte) (before, after int) {
	// What it holds is in its three buffers: most adds leave them as they are.
	was := t.buffers()
	if !t.add(v, item) || t.buffers() == was {
		return 0, 0
	}
	return was.heap(), t.Bytes()
}

// add adds v to the sum of item, and reports whether it did: only a positive finite v
// counts (see Top).
func (t *Top) add(v float64, item []byte) bool {
	if !(v > 0 && v <= math.MaxFloat64) {
		return false
	}
	t.total += v
	t.count(item, v)
	return true
}

// AddRun adds values[i] to the sum of items[i·per+item] for each event i in turn, per
// being len(items)/len(values), as AddGrown would, and stops after the first add that grew
// a buffer: it returns how many events it added and Bytes before and after the last of
// them, 0 and 0 when none grew (windows.SummaryKind.AddRun).
func (t *Top) AddRun(values []float64, items [][]byte, item int) (n, before, after int) {
	if len(values) == 0 {
		return 0, 0, 0
	}
	per := len(items) / len(values)
	was := t.buffers()
	for i, v := range values {
		if t.add(v, items[i*per+item]) && t.buffers() != was {
			return i + 1, was.heap(), t.Bytes()
		}
	}
	return len(values), 0, 0
}

// topBuffers is what Bytes counts of a Top: the capacities of its counters and its arena,
// and the slots of its table.
type topBuffers struct{ counts, arena, table int }

// buffers returns what Bytes counts of the summary now.
func (t *Top) buffers() topBuffers { return topBuffers{cap(t.counts), cap(t.arena), len(t.table)} }

// heap is the Bytes of a Top of these buffers.
func (b topBuffers) heap() int { return topHeap(b.counts, b.arena, b.table) }

// count adds v to item's counter, or gives item a counter of v.
func (t *Top) count(item []byte, v float64) { t.countHashed(item, itemHash(item), v) }

// itemHash is the hash of item the table keeps: its top 32 bits, which are both an
// entry's tag and where its probe starts, so that an entry says where it goes in a table
// of any size without its item hashed again (see entrySlot).
func itemHash(item []byte) uint64 { return maphash.Bytes(topSeed, item) >> 32 << 32 }

// entrySlot is where the probe for an entry, or for a hash, starts in a table of mask+1
// slots.
func entrySlot(e uint64, mask int) int { return int(e>>32) & mask }

// countHashed is count of an item whose itemHash is h.
func (t *Top) countHashed(item []byte, h uint64, v float64) {
	slot, i := t.find(item, h)
	if i >= 0 {
		t.counts[i].count += v
		t.kept += v
		return
	}
	if t.limit > 0 && !t.room(len(item)) {
		if v = t.makeRoom(len(item), v); v == 0 {
			return
		}
		slot = -1 // the prunes rebuilt the table
	}
	t.insert(item, h, v, slot)
}

// find returns the counter of item, whose itemHash is h, or -1 and the empty slot of
// table where it would go (-1 too when there is no table).
func (t *Top) find(item []byte, h uint64) (slot, i int) {
	if len(t.table) == 0 {
		return -1, -1
	}
	mask := len(t.table) - 1
	for slot = entrySlot(h, mask); ; slot = (slot + 1) & mask {
		e := t.table[slot]
		if e == 0 {
			return slot, -1
		}
		if e>>32<<32 == h {
			i := int(uint32(e)) - 1
			if c := t.counts[i]; string(t.arena[c.off:c.off+c.n]) == string(item) {
				return slot, i
			}
		}
	}
}

// insert adds a counter of v for item, whose itemHash is h, not held, at the empty slot
// of table find gave (-1 to find it again): pruning first when the room is full.
func (t *Top) insert(item []byte, h uint64, v float64, slot int) {
	if len(t.counts) >= 2*t.capacity {
		t.prune()
		slot = -1
	}
	if t.limit > 0 {
		// Grown by hand, so that what it takes is what room counted.
		if len(t.counts) == cap(t.counts) {
			t.counts = regrown(t.counts, nextCap(cap(t.counts)))
		}
		if need := len(t.arena) + len(item); need > cap(t.arena) {
			t.arena = regrown(t.arena, arenaCap(cap(t.arena), need))
		}
	}
	if 2*(len(t.counts)+1) > len(t.table) {
		t.retable(tableLen(len(t.counts)+1), t.table)
		slot = -1
	}
	if slot < 0 {
		slot, _ = t.find(item, h)
	}
	t.counts = append(t.counts, topCount{count: v, off: uint32(len(t.arena)), n: uint32(len(item))})
	t.arena = append(t.arena, item...)
	t.table[slot] = h | uint64(len(t.counts))
	t.kept += v
}

// regrown is s in room for c elements, made to measure: append's growth would round
// above what room counted.
func regrown[E any](s []E, c int) []E {
	grown := make([]E, len(s), c)
	copy(grown, s)
	return grown
}

// nextCap is the room for counters a capped Top grows to from c.
func nextCap(c int) int { return max(2*c, floorCounters) }

// arenaCap is the room for items' text a capped Top grows to from c, to hold need bytes.
func arenaCap(c, need int) int { return max(2*c, need, floorCounters*floorItem) }

// tableLen is the size of a table for n counters: a power of two, at most half full.
func tableLen(n int) int {
	l := minTable
	for l < 2*n {
		l *= 2
	}
	return l
}

// retable makes the table n slots and puts the entries of from (0: none) in it, which
// may be the table itself: each says where it goes (entrySlot), so that no item is hashed
// again.
func (t *Top) retable(n int, from []uint64) {
	if len(t.table) == n && (len(from) == 0 || &t.table[0] != &from[0]) {
		clear(t.table)
	} else {
		t.table = make([]uint64, n)
	}
	mask := n - 1
	for _, e := range from {
		if e != 0 {
			slot := entrySlot(e, mask)
			for t.table[slot] != 0 {
				slot = (slot + 1) & mask
			}
			t.table[slot] = e
		}
	}
}

// room reports whether the cap leaves room for a counter of an item of n bytes.
func (t *Top) room(n int) bool {
	grow := 0
	if len(t.counts) == cap(t.counts) {
		grow += windows.HeapBytes(nextCap(cap(t.counts))*countSize) - windows.HeapBytes(cap(t.counts)*countSize)
	}
	if need := len(t.arena) + n; need > cap(t.arena) {
		grow += windows.HeapBytes(arenaCap(cap(t.arena), need)) - windows.HeapBytes(cap(t.arena))
	}
	if l := tableLen(len(t.counts) + 1); l > len(t.table) {
		grow += windows.HeapBytes(l*8) - windows.HeapBytes(len(t.table)*8)
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
		delta := t.largest(len(t.counts) / 2)
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
func (t *Top) prune() { t.subtract(t.largest(t.capacity)) }

// largest returns the (m+1)-th largest count, m < len(counts). It selects among a copy
// of the counts, so that the counters stay in their items' order in the arena, which
// subtract moves them down in.
func (t *Top) largest(m int) float64 {
	p := countScratch.Get().(*[]float64)
	cs := (*p)[:0]
	for _, c := range t.counts {
		cs = append(cs, c.count)
	}
	delta := selectDesc(cs, m)
	*p = cs
	countScratch.Put(p)
	return delta
}

// countScratch holds the copies of counts largest selects among.
var countScratch = sync.Pool{New: func() any { return new([]float64) }}

// subtract takes delta from every count and drops those left without any, moving the
// items kept to the front of the arena in place.
func (t *Top) subtract(delta float64) {
	p := entryScratch.Get().(*[]uint64)
	*p = t.hashes(*p)
	// entries[j] becomes the entry of kept counter j, from the hash of the counter it was.
	entries := (*p)[1:]
	kept := t.counts[:0]
	t.kept = 0
	for i, c := range t.counts {
		if c.count > delta {
			c.count -= delta
			t.kept += c.count
			entries[len(kept)] = entries[i] | uint64(len(kept)+1)
			kept = append(kept, c)
		}
	}
	// The counters are in their items' order in the arena (they are appended with their
	// items, and kept in order here and by the decoder): each item moves down or stays,
	// and none is overwritten before it moved.
	end := uint32(0)
	for i := range kept {
		c := &kept[i]
		copy(t.arena[end:], t.arena[c.off:c.off+c.n])
		c.off = end
		end += c.n
	}
	t.counts, t.arena = kept, t.arena[:end]
	t.loss += delta
	t.retable(len(t.table), entries[:len(kept)])
	entryScratch.Put(p)
}

// entryScratch holds the table entries subtract and Merge build.
var entryScratch = sync.Pool{New: func() any { return new([]uint64) }}

// hashes returns in dst, reused, the itemHash of every counter as the table holds them,
// that of counter i at i+1: an entry's index counts from 1, and dst[0] takes what the
// free slots give, so that the loop has no branch to mispredict on a table half free.
func (t *Top) hashes(dst []uint64) []uint64 {
	dst = slices.Grow(dst[:0], len(t.counts)+1)[:len(t.counts)+1]
	for _, e := range t.table {
		dst[uint32(e)] = e >> 32 << 32
	}
	return dst
}

// Seal shrinks a slot its wheel has moved on from: pruned to at most capacity counters (a
// prune like any other, so the bound holds as before) in a slice, an arena and a table of
// their size, which is about half of what a full slot held. A late Add still works.
func (t *Top) Seal() {
	if len(t.counts) > t.capacity {
		t.prune()
	}
	if len(t.counts) == 0 {
		t.counts, t.arena, t.table = nil, nil, nil
		return
	}
	t.counts = slices.Clip(slices.Clone(t.counts))
	t.arena = slices.Clip(slices.Clone(t.arena))
	old := t.table
	t.table = nil
	t.retable(tableLen(len(t.counts)), old)
}

// selectDesc reorders cs so that cs[m] holds the (m+1)-th largest count, those before it
// are no smaller and those after it no larger (quickselect), and returns that count; m <
// len(cs).
func selectDesc(cs []float64, m int) float64 {
	lo, hi := 0, len(cs)-1
	for lo < hi {
		p := cs[lo+rand.IntN(hi-lo+1)]
		i, j := lo, hi
		for i <= j {
			for cs[i] > p {
				i++
			}
			for cs[j] < p {
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
			return cs[m]
		}
	}
	return cs[m]
}

// Merge adds the counters of from, a *Top of the same kind. The items it takes are
// copied into its own arena, so that a slot holds only what is its own (and Bytes counts
// it) and the wheels merge with Merge too.
func (t *Top) Merge(from windows.Summary) {
	f := from.(*Top)
	t.total += f.total
	t.loss += f.loss
	if len(t.counts) == 0 && t.limit <= 0 && len(f.counts) <= 2*t.capacity {
		t.take(f)
		return
	}
	// The items' hashes are f's table's: none is hashed again.
	p := entryScratch.Get().(*[]uint64)
	*p = f.hashes(*p)
	for i, c := range f.counts {
		t.countHashed(f.arena[c.off:c.off+c.n], (*p)[i+1], c.count)
	}
	entryScratch.Put(p)
}

// take gives an empty, uncapped summary the counters of f, which are no more than twice
// its capacity, as counting each in turn would (no prune, each a new counter, appended in
// order), without looking any up; its table is f's when it is of the length counting
// would leave, which places them where counting would, else made from them.
func (t *Top) take(f *Top) {
	for _, c := range f.counts {
		t.counts = append(t.counts, topCount{count: c.count, off: uint32(len(t.arena)), n: c.n})
		t.arena = append(t.arena, f.arena[c.off:c.off+c.n]...)
		t.kept += c.count
	}
	n := len(t.counts)
	if n == 0 {
		return
	}
	// Counting would leave the table it has if it has room for them all, else make it
	// tableLen(n) (see insert).
	size := len(t.table)
	if 2*n > size {
		size = tableLen(n)
	}
	if len(f.table) != size {
		t.retable(size, f.table)
		return
	}
	if len(t.table) != size {
		t.table = make([]uint64, size)
	}
	copy(t.table, f.table)
}

// Reset empties the summary, keeping its room for the next slot.
func (t *Top) Reset() {
	t.counts = t.counts[:0]
	t.arena = t.arena[:0]
	clear(t.table)
	t.total, t.kept, t.loss = 0, 0, 0
}

// Bytes is the heap the summary holds (windows.Summary): itself, its counters, its
// items' arena and its table.
func (t *Top) Bytes() int { return topHeap(cap(t.counts), cap(t.arena), len(t.table)) }

// topHeap is the heap of a Top with room for counts counters, arena bytes of items and a
// table of table slots.
func topHeap(counts, arena, table int) int {
	return topBytes + windows.HeapBytes(counts*countSize) + windows.HeapBytes(arena) + windows.HeapBytes(table*8)
}

// Cap holds the summary to n bytes (windows.Capper; 0 lifts the cap): a value not held
// gets a counter only if it fits, after a prune to the capacity and, as long as it does
// not, a prune to half the counters held (their median count taken from every counter and
// from the value) until the value is used up. With m counters at such a step, each value
// loses at most what m/2 of them lose in all, so a capped summary errs by at most twice
// the mass lost over the fewest counters it held, not over capacity+1; Bound says by how
// much. A value longer than the cap can ever hold gets no counter.
func (t *Top) Cap(n int) { t.limit = int32(min(n, math.MaxInt32)) }

// Total returns the sum of the values added or merged: the window's sum of them.
func (t *Top) Total() float64 { return t.total }

// Bound returns how far below its true sum a value's reported sum may be: the mass the
// counters lost, over capacity+1, which is at most Total/(capacity+1); or, if a cap made
// the summary keep fewer counters (Cap), what the counters lost, which is more.
func (t *Top) Bound() float64 {
	return max(max(t.total-t.kept, 0)/float64(t.capacity+1), t.loss)
}

// TopShared appends to dst the k values with the largest sums of at least atLeast,
// largest first, equal sums in the order of their items, and returns it. The items are
// not copied: each is the summary's own text, valid until the summary next changes (Add,
// Merge, Reset, Seal), so that a reader that keeps the summary as long as the values
// holds the items once, not twice; one that keeps the values longer clones them.
func (t *Top) TopShared(k int, atLeast float64, dst []TopValue) []TopValue {
	from := len(dst)
	if k < 1 {
		return dst
	}
	// The k best so far are a heap whose root is the worst of them, so that a summary of
	// many values costs n·log k, not the n·k of keeping them sorted; their items are
	// looked at in the arena, and copied only once chosen.
	for _, c := range t.counts {
		if c.count < atLeast {
			continue
		}
		item := t.arena[c.off : c.off+c.n]
		v := TopValue{unsafe.String(unsafe.SliceData(item), len(item)), c.count}
		if h := dst[from:]; len(h) < k {
			dst = append(dst, v)
			siftUp(dst[from:], len(h))
		} else if topOrder(v, h[0]) < 0 {
			h[0] = v
			siftDown(h, 0)
		}
	}
	slices.SortFunc(dst[from:], topOrder)
	return dst
}

// siftUp and siftDown keep h a heap whose root is the last value in topOrder.
func siftUp(h []TopValue, i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if topOrder(h[i], h[parent]) <= 0 {
			return
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func siftDown(h []TopValue, i int) {
	for {
		worst := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(h) && topOrder(h[c], h[worst]) > 0 {
				worst = c
			}
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}

// topOrder sorts values by sum, largest first, then by item.
func topOrder(a, b TopValue) int {
	if c := cmp.Compare(b.Sum, a.Sum); c != 0 {
		return c
	}
	return strings.Compare(a.Item, b.Item)
}
