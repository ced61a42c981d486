package sketch

import (
	"math"
	"slices"
	"unsafe"

	"github.com/logwindow/logwindow_exporter/windows"
)

// Buckets counts values exactly into fixed buckets, as a Prometheus histogram does, and
// keeps their count and sum: what a window's histogram family exposes.
type Buckets struct {
	bounds []float64 // upper bounds, ascending, shared by every Buckets of a kind
	counts []uint64  // values ≤ bounds[i] and > bounds[i−1]; the rest are above the last
	n      uint64
	sum    float64
}

// BucketsKind returns the windows.SummaryKind of Buckets with these upper bounds, which
// must be sorted ascending without duplicates (config checks that). Its AddGrown and
// AddRun, which the wheels add a rule's values by, find their buckets by the kind's
// bucketCells; Add, by a search of the bounds.
func BucketsKind(bounds []float64) windows.SummaryKind {
	bounds = slices.Clone(bounds)
	cells := newBucketCells(bounds)
	return windows.SummaryKind{
		New: func() windows.Summary {
			return &Buckets{bounds: bounds, counts: make([]uint64, len(bounds))}
		},
		AddGrown: func(s windows.Summary, v float64, _ []byte) (int, int) {
			s.(*Buckets).add(cells, v)
			return 0, 0
		},
		AddRun: func(s windows.Summary, values []float64, _ [][]byte) (int, int, int) {
			b := s.(*Buckets)
			for _, v := range values {
				b.add(cells, v)
			}
			return len(values), 0, 0
		},
		Fixed: true,
	}
}

// Add records v in the first bucket whose bound is at least v; NaN is ignored. Buckets
// read no item.
func (b *Buckets) Add(v float64, _ []byte) {
	if !math.IsNaN(v) {
		b.put(above(b.bounds, v), v)
	}
}

// add is Add with the bucket found by c, the cells of the kind's bounds (see
// bucketCells): the cells are the kind's rather than a field, which would take every
// slot's Buckets to the next size class. The clamps of the cell are arithmetic, not min
// and max: a value below the lowest bound's cell (a duration under the first bucket) is
// as common as one within the table, and a branch would guess between them.
func (b *Buckets) add(c *bucketCells, v float64) {
	if math.IsNaN(v) {
		return
	}
	i := int(order(v)>>c.shift) - c.lo
	i &^= i >> 63
	d := i - c.span
	i = c.span + d&(d>>63)
	lo, hi := int(c.below[i]), int(c.below[i+1])
	if hi-lo > 1 {
		lo += above(c.bounds[lo:hi], v)
	} else if c.bounds[lo] < v {
		lo++
	}
	b.put(lo, v)
}

// put records v in bucket i, none when i is past the last.
func (b *Buckets) put(i int, v float64) {
	if i < len(b.counts) {
		b.counts[i]++
	}
	b.n++
	b.sum += v
}

// AddGrown is Add (windows.SummaryKind.AddGrown): the buckets never grow.
func (b *Buckets) AddGrown(v float64, item []byte) (before, after int) {
	b.Add(v, item)
	return 0, 0
}

// above returns how many of the ascending bounds are below v, which is not NaN: the index
// of the first bound at least v. It is slices.BinarySearch without cmp.Compare's NaN
// cases, which neither the bounds nor v have, and which cost a line half its search.
func above(bounds []float64, v float64) int {
	lo, hi := 0, len(bounds)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bounds[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// bucketCells finds the bucket of a value (Buckets.add) by a table rather than by a
// search of the bounds, whose branches a rule's values take at random (durations spread
// over a few buckets, each line's unlike the last). A value's bits, ordered as the floats
// are (see order), cut to their sign, exponent and top mantissa bits, name its cell; the
// table says how many bounds lie in the cells before it, and the bounds in its own cell
// are compared with the value: at most one in the usual case, without a branch. Past the
// table's ends, a value is below every bound or above every one.
type bucketCells struct {
	// bounds are the bounds and +Inf after them, which no value is above: the compare of a
	// cell that holds no bound.
	bounds []float64
	// A value's cell is order(v) >> shift: 16 cells an octave, or fewer if the bounds
	// span more than maxCells of them.
	shift uint
	// lo is the cell before the lowest bound's, span how many cells after it the one after
	// the highest bound's is: a cell below lo is looked up as lo, above lo+span as lo+span,
	// neither of which holds a bound.
	lo, span int
	// below[i] is how many bounds lie in the cells before lo+i, i ≤ span+1.
	below []int32
}

// maxCells bounds the table of a kind's bucketCells: bounds that span more cells at 16 an
// octave (below 0 and above it, or over 64 octaves) get coarser ones.
const maxCells = 1024

// newBucketCells returns the cells of bounds, ascending without duplicates.
func newBucketCells(bounds []float64) *bucketCells {
	c := &bucketCells{bounds: append(slices.Clone(bounds), math.Inf(1)), shift: 52 - 4}
	if len(bounds) == 0 {
		c.below = make([]int32, 2)
		return c
	}
	cell := func(x float64) int {
		if x == 0 {
			x = 0 // a bound of −0 is in the cell of +0, which it equals: order puts −0 below
		}
		return int(order(x) >> c.shift)
	}
	first, last := bounds[0], bounds[len(bounds)-1]
	for cell(last)-cell(first) > maxCells {
		c.shift++
	}
	c.lo = cell(first) - 1
	c.span = cell(last) + 1 - c.lo
	c.below = make([]int32, c.span+2)
	j := 0
	for i := range c.below {
		for j < len(bounds) && cell(bounds[j]) < c.lo+i {
			j++
		}
		c.below[i] = int32(j)
	}
	return c
}

// order maps a float to an integer of the same order (−0 below +0, NaN apart): the bits of
// a positive one with the sign bit set, those of a negative one inverted.
func order(x float64) uint64 {
	b := math.Float64bits(x)
	return b ^ (uint64(int64(b)>>63) | 1<<63)
}

// Merge adds the counts of from, a *Buckets of the same kind.
func (b *Buckets) Merge(from windows.Summary) {
	f := from.(*Buckets)
	for i, c := range f.counts {
		b.counts[i] += c
	}
	b.n += f.n
	b.sum += f.sum
}

// Reset empties the buckets.
func (b *Buckets) Reset() {
	clear(b.counts)
	b.n, b.sum = 0, 0
}

// Bytes is the heap the buckets hold (windows.Summary): their bounds are their kind's.
func (b *Buckets) Bytes() int {
	return bucketsBytes + windows.HeapBytes(8*cap(b.counts))
}

var bucketsBytes = windows.HeapBytes(int(unsafe.Sizeof(Buckets{})))

// Count returns how many values were added, and Sum their sum.
func (b *Buckets) Count() uint64 { return b.n }

// Sum returns the sum of the values added.
func (b *Buckets) Sum() float64 { return b.sum }

// Cumulative calls f with every upper bound and the number of values at or below it, in
// ascending order (the +Inf bucket is Count).
func (b *Buckets) Cumulative(f func(le float64, n uint64)) {
	acc := uint64(0)
	for i, c := range b.counts {
		acc += c
		f(b.bounds[i], acc)
	}
}
