package sketch

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

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
type Top struct {
	capacity int
	index    map[string]int32
	counts   []topCount
	total    float64 // N: every positive value added or merged
	kept     float64 // N̂: the sum of counts
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

// TopKind returns the windows.SummaryKind of Top with capacity counters (≥ 1) over the
// item-th item of an event (windows.SummaryKind.Item).
func TopKind(capacity, item int) windows.SummaryKind {
	return windows.SummaryKind{Item: item, New: func() windows.Summary { return NewTop(capacity) }}
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
	t.insert(string(item), v)
}

// insert adds a counter of v for an item not held, pruning first when the room is full.
func (t *Top) insert(item string, v float64) {
	if len(t.counts) >= 2*t.capacity {
		t.prune()
	}
	t.index[item] = int32(len(t.counts))
	t.counts = append(t.counts, topCount{item, v})
	t.kept += v
}

// prune subtracts the (capacity+1)-th largest count from every count and drops those left
// without any, which leaves at most capacity counters. Pruning at twice the capacity
// rather than at each new value makes its linear cost once per capacity new values.
func (t *Top) prune() {
	m := t.capacity
	delta := selectDesc(t.counts, m)
	kept := t.counts[:0]
	t.kept = 0
	for _, c := range t.counts {
		if c.count > delta {
			c.count -= delta
			t.kept += c.count
			kept = append(kept, c)
		}
	}
	clear(t.counts[len(kept):]) // release the dropped items' text
	t.counts = kept
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

// Merge adds the counters of from, a *Top of the same kind.
func (t *Top) Merge(from windows.Summary) {
	f := from.(*Top)
	t.total += f.total
	for _, c := range f.counts {
		if i, ok := t.index[c.item]; ok {
			t.counts[i].count += c.count
			t.kept += c.count
			continue
		}
		t.insert(c.item, c.count)
	}
}

// Reset empties the summary, keeping its room for the next slot.
func (t *Top) Reset() {
	clear(t.counts)
	t.counts = t.counts[:0]
	clear(t.index)
	t.total, t.kept = 0, 0
}

// Total returns the sum of the values added or merged: the window's sum of them.
func (t *Top) Total() float64 { return t.total }

// Bound returns how far below its true sum a value's reported sum may be: the mass the
// counters lost, over capacity+1. It is at most Total/(capacity+1).
func (t *Top) Bound() float64 { return max(t.total-t.kept, 0) / float64(t.capacity+1) }

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
