package sketch

import (
	"github.com/axiomhq/hyperloglog"

	"github.com/logwindow/logwindow_exporter/windows"
)

// DistinctPrecision is the HyperLogLog precision of Distinct: 2^16 registers. Its
// standard error, 1.04/√2^16 ≈ 0.41 %, puts the 2 % of the bound at almost five standard
// errors; at precision 14 (0.81 %) it is two and a half, which a reference test over many
// windows sees crossed.
const DistinctPrecision = 16

// Distinct counts the different items added to it: a HyperLogLog sketch (axiomhq's, with
// its sparse representation) kept per slot of a summary wheel and merged, register by
// register, into a window at read time. An item is counted by its bytes, whatever it is;
// an empty item is one value like any other, and the value added with it is ignored.
//
// While a sketch is sparse it holds each item as a 25-bit index and a rank, and counts them
// by linear counting over 2^25 cells: exact but for collisions among those cells, under
// one expected among 8,000 items and under 15 among 30,000 (n²/2^26), which linear
// counting corrects on average. Past about 30,000 items (when the sparse list would take
// more than the 64 KiB of the registers) it turns dense and its count is HyperLogLog's,
// with the standard error above. A window is sparse as long as every slot in it is and
// their merge still is.
//
// The sketch is allocated at the first item: an empty slot or window costs a pointer.
type Distinct struct {
	hll *hyperloglog.Sketch
	p   uint8
}

// DistinctKind is the summary of distinct counts over the item-th of the items a rule's
// events carry (windows.SummaryKind.Item).
func DistinctKind(item int) windows.SummaryKind {
	return windows.SummaryKind{New: func() windows.Summary { return NewDistinct() }, Item: item}
}

// NewDistinct returns an empty distinct count at DistinctPrecision.
func NewDistinct() *Distinct { return newDistinct(DistinctPrecision) }

func newDistinct(p uint8) *Distinct { return &Distinct{p: p} }

// Add counts item; v is not read.
func (d *Distinct) Add(_ float64, item []byte) {
	if d.hll == nil {
		d.hll = d.empty()
	}
	d.hll.Insert(item)
}

// empty makes the sketch; the precision is a constant in range, so NewSketch cannot fail.
func (d *Distinct) empty() *hyperloglog.Sketch {
	hll, err := hyperloglog.NewSketch(d.p, true)
	if err != nil {
		panic(err)
	}
	return hll
}

// Merge adds the items of from, a *Distinct of the same precision.
func (d *Distinct) Merge(from windows.Summary) {
	f := from.(*Distinct)
	if f.hll == nil {
		return
	}
	if d.hll == nil {
		d.hll = d.empty()
	}
	// Both sketches have d.p's precision, the only error Merge returns.
	if err := d.hll.Merge(f.hll); err != nil {
		panic(err)
	}
}

// Reset empties the count and lets its memory go: a slot that turned dense holds 64 KiB,
// and the next slot may need far less.
func (d *Distinct) Reset() { d.hll = nil }

// Count returns the number of different items added (estimated, see Distinct). It may
// compact the sketch, so it must not run concurrently with anything else on d.
func (d *Distinct) Count() uint64 {
	if d.hll == nil {
		return 0
	}
	return d.hll.Estimate()
}
