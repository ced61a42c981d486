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
// must be sorted ascending without duplicates (config checks that).
func BucketsKind(bounds []float64) windows.SummaryKind {
	bounds = slices.Clone(bounds)
	return windows.SummaryKind{
		New: func() windows.Summary {
			return &Buckets{bounds: bounds, counts: make([]uint64, len(bounds))}
		},
		AddGrown: func(s windows.Summary, v float64, _ []byte) (int, int) {
			return s.(*Buckets).AddGrown(v, nil)
		},
		AddRun: func(s windows.Summary, values []float64, _ [][]byte) (int, int, int) {
			b := s.(*Buckets)
			for _, v := range values {
				b.Add(v, nil)
			}
			return len(values), 0, 0
		},
		Fixed: true,
	}
}

// Add records v in the first bucket whose bound is at least v; NaN is ignored. Buckets
// read no item.
func (b *Buckets) Add(v float64, _ []byte) {
	if math.IsNaN(v) {
		return
	}
	if i := above(b.bounds, v); i < len(b.bounds) {
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
