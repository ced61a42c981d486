// Package sketch holds the mergeable summaries the windows keep per slot for quantities
// that are not a sum: a quantile sketch with a relative-error guarantee, exact counts over
// fixed histogram buckets, and distinct counts (Distinct). All implement windows.Summary.
//
// # Quantiles
//
// Quantiles is a log-linear bucket array, the mapping of DDSketch: a value v > 0 falls in
// bin i = ⌈log_γ v⌉, which covers (γ^(i−1), γ^i], and a bin is reported as 2γ^i/(γ+1), within
// (γ−1)/(γ+1) of every value it holds. With γ = 2^(1/35) (0.99 %), the value reported for rank
// r is within 1 % of the value of rank r among the values added, whatever their number or
// order: ranks are exact, only values are rounded. Negative values use the same bins for
// their magnitude; 0 is counted apart and reported as 0 exactly. Magnitudes outside
// [MinMagnitude, MaxMagnitude] are clamped into the outermost bins (the bound does not
// hold for them); NaN is ignored (the parser drops it before it gets here).
//
// It differs from sketches-go's DDSketch in how it stores counts, which is what a series'
// memory is made of (each series holds a sketch per slot, over a hundred of them): a dense
// run of bins from the lowest to the highest used, each count as wide as the largest
// count needs (1, 2, 4 or 8 bytes), where DDSketch's dense store keeps a float64 per bin.
// README gives the measured bytes and speed of both.
package sketch

import (
	"encoding/binary"
	"math"

	"github.com/logwindow/logwindow_exporter/windows"
)

// RelativeError is the bound on the relative error of every value Quantile reports, for
// values whose magnitude lies in [MinMagnitude, MaxMagnitude] (0 is exact).
const RelativeError = 0.01

// binsPerOctave cuts each power of two into 35 bins: γ = 2^(1/35) ≈ 1.0200 reports every
// value within (γ−1)/(γ+1) ≈ 0.9901 %, a little under RelativeError, so that rounding at a
// bin edge cannot take the error over it. Whole bins per octave let index read the
// octave from the float's exponent and the bin from its mantissa, without a logarithm.
const binsPerOctave = 35

var (
	gamma    = math.Exp2(1.0 / binsPerOctave)
	logGamma = math.Log(gamma)
	// represent turns γ^i, a bin's upper edge, into the value the bin reports.
	represent = 2 / (1 + gamma)
	// edges are the mantissas 2^(j/35), j = 0…35: bin j of an octave holds the mantissas
	// in (edges[j−1], edges[j]]. cellBin maps the top mantissaBits bits of a mantissa to the
	// first bin its cell can hold; a cell is narrower than a bin, so the mantissa is in
	// that bin or the next.
	edges   [binsPerOctave + 1]float64
	cellBin [1 << mantissaBits]uint8
)

const mantissaBits = 8

func init() {
	for j := range edges {
		edges[j] = math.Exp2(float64(j) / binsPerOctave)
	}
	edges[binsPerOctave] = 2
	for c := range cellBin {
		lo := 1 + float64(c)/(1<<mantissaBits) // the cell's smallest mantissa
		j := 0
		for edges[j] < lo {
			j++
		}
		cellBin[c] = uint8(j)
	}
}

// maxIndex bounds bin indexes to ±maxIndex, so that one sketch holds at most 2·maxIndex+1
// bins per sign whatever it is fed.
const maxIndex = 2000

// MinMagnitude and MaxMagnitude bound the magnitudes for which the error bound holds: the
// edges of the outermost bins, about 1.7e-17 and 6e16.
var (
	MinMagnitude = math.Exp(-maxIndex * logGamma)
	MaxMagnitude = math.Exp((maxIndex - 1) * logGamma)
)

// Quantiles is a quantile sketch of values of any sign (see the package documentation).
// The zero value is empty and ready to use. It is not safe for concurrent use.
type Quantiles struct {
	pos, neg bins // by magnitude
	zero     uint64
	n        uint64
}

// QuantilesKind makes empty Quantiles for windows.Options.
var QuantilesKind = windows.SummaryKind{New: func() windows.Summary { return new(Quantiles) }}

// Add records v; the sketch reads no item.
func (q *Quantiles) Add(v float64, _ []byte) {
	switch {
	case v > 0:
		q.pos.add(index(v), 1)
	case v < 0:
		q.neg.add(index(-v), 1)
	case v == 0:
		q.zero++
	default:
		return
	}
	q.n++
}

// index returns the bin of a magnitude m > 0: ⌈log_γ m⌉, exactly up to the rounding of the
// edges, clamped to ±maxIndex.
func index(m float64) int32 {
	bits := math.Float64bits(m)
	exp := int32(bits>>52) & 0x7ff
	switch exp {
	case 0: // subnormal: far below the clamp
		return -maxIndex
	case 0x7ff: // +Inf
		return maxIndex
	}
	mant := math.Float64frombits(bits&(1<<52-1) | 1023<<52) // in [1, 2)
	j := cellBin[bits>>(52-mantissaBits)&(1<<mantissaBits-1)]
	if mant > edges[j] {
		j++
	}
	i := (exp-1023)*binsPerOctave + int32(j)
	return min(max(i, -maxIndex), maxIndex)
}

// Merge adds the values from holds; from must be a *Quantiles. The receiver's counts
// become 8 bytes wide: merging is for building a window from its slots, not for keeping.
func (q *Quantiles) Merge(from windows.Summary) {
	f := from.(*Quantiles)
	q.pos.merge(&f.pos)
	q.neg.merge(&f.neg)
	q.zero += f.zero
	q.n += f.n
}

// Reset empties the sketch, keeping its memory for reuse.
func (q *Quantiles) Reset() {
	q.pos.reset()
	q.neg.reset()
	q.zero, q.n = 0, 0
}

// Count returns how many values were added.
func (q *Quantiles) Count() uint64 { return q.n }

// Quantile returns the value of rank ⌈p·n⌉ (at least 1) among the n values added, within
// RelativeError; NaN when the sketch is empty. p is in (0, 1].
func (q *Quantiles) Quantile(p float64) float64 {
	if q.n == 0 {
		return math.NaN()
	}
	rank := uint64(min(max(math.Ceil(p*float64(q.n)), 1), float64(q.n)))
	// Ascending order: negatives from the largest magnitude down, zeros, positives up.
	seen := uint64(0)
	for j := q.neg.len() - 1; j >= 0; j-- {
		if seen += q.neg.get(j); seen >= rank {
			return -value(q.neg.lo + int32(j))
		}
	}
	if seen += q.zero; seen >= rank {
		return 0
	}
	for j := range q.pos.len() {
		if seen += q.pos.get(j); seen >= rank {
			return value(q.pos.lo + int32(j))
		}
	}
	// Unreachable while n is the sum of the counts.
	return math.NaN()
}

// value is what bin i reports.
func value(i int32) float64 { return math.Exp(float64(i)*logGamma) * represent }

// bins is a dense run of counts for the bin indexes lo, lo+1, …, each count width bytes
// (little-endian), widened as a count outgrows it.
type bins struct {
	lo    int32
	width uint8 // 0 while empty
	b     []byte
}

func (s *bins) len() int {
	if s.width == 0 {
		return 0
	}
	return len(s.b) / int(s.width)
}

func (s *bins) get(j int) uint64 {
	switch s.width {
	case 1:
		return uint64(s.b[j])
	case 2:
		return uint64(binary.LittleEndian.Uint16(s.b[2*j:]))
	case 4:
		return uint64(binary.LittleEndian.Uint32(s.b[4*j:]))
	}
	return binary.LittleEndian.Uint64(s.b[8*j:])
}

func (s *bins) set(j int, c uint64) {
	switch s.width {
	case 1:
		s.b[j] = byte(c)
	case 2:
		binary.LittleEndian.PutUint16(s.b[2*j:], uint16(c))
	case 4:
		binary.LittleEndian.PutUint32(s.b[4*j:], uint32(c))
	default:
		binary.LittleEndian.PutUint64(s.b[8*j:], c)
	}
}

// add adds c to bin i.
func (s *bins) add(i int32, c uint64) {
	s.cover(i, i)
	j := int(i - s.lo)
	x := s.get(j) + c
	if x > maxCount(s.width) {
		s.widen(widthFor(x))
	}
	s.set(j, x)
}

// merge adds every count of o, with 8-byte counts so that no sum can overflow a width.
func (s *bins) merge(o *bins) {
	n := o.len()
	if n == 0 {
		return
	}
	s.cover(o.lo, o.lo+int32(n)-1)
	s.widen(8)
	dst := s.b[8*int(o.lo-s.lo):][:8*n]
	// Each count is resliced to its exact width, so that the loads and stores need no
	// bounds checks of their own: this loop is most of a scrape's cost.
	switch o.width {
	case 1:
		for j, c := range o.b {
			d := dst[8*j : 8*j+8 : 8*j+8]
			binary.LittleEndian.PutUint64(d, binary.LittleEndian.Uint64(d)+uint64(c))
		}
	case 2:
		src := o.b[:2*n]
		for j := range n {
			d := dst[8*j : 8*j+8 : 8*j+8]
			binary.LittleEndian.PutUint64(d, binary.LittleEndian.Uint64(d)+uint64(binary.LittleEndian.Uint16(src[2*j:2*j+2:2*j+2])))
		}
	default:
		for j := range n {
			d := dst[8*j : 8*j+8 : 8*j+8]
			binary.LittleEndian.PutUint64(d, binary.LittleEndian.Uint64(d)+o.get(j))
		}
	}
}

func (s *bins) reset() {
	s.b = s.b[:0]
	s.width = 0
}

// cover makes bins lo…hi part of the run, with a little room beyond on the side that grew
// so that a run growing one bin at a time is not copied every time.
func (s *bins) cover(lo, hi int32) {
	if s.width == 0 {
		s.width, s.lo = 1, lo
		s.resize(lo, hi)
		return
	}
	top := s.lo + int32(s.len()) - 1
	if lo >= s.lo && hi <= top {
		return
	}
	slack := int32(4 + s.len()/16)
	newLo, newHi := s.lo, top
	if lo < s.lo {
		newLo = max(lo-slack, -maxIndex)
	}
	if hi > top {
		newHi = min(hi+slack, maxIndex)
	}
	s.resize(newLo, newHi)
}

// resize makes the run cover exactly lo…hi ⊇ the current run, keeping the counts.
func (s *bins) resize(lo, hi int32) {
	w := int(s.width)
	old := len(s.b)
	shift := int(s.lo-lo) * w
	size := int(hi-lo+1) * w
	if size <= cap(s.b) {
		s.b = s.b[:size]
		copy(s.b[shift:], s.b[:old])
		clear(s.b[:shift])
		clear(s.b[shift+old:])
	} else {
		b := make([]byte, size)
		copy(b[shift:], s.b)
		s.b = b
	}
	s.lo = lo
}

// widen makes counts w bytes wide, if they are narrower.
func (s *bins) widen(w uint8) {
	if w <= s.width {
		return
	}
	n := s.len()
	size := n * int(w)
	old := *s
	if size <= cap(s.b) {
		s.b = s.b[:size]
	} else {
		s.b = make([]byte, size)
	}
	s.width = w
	// From the top down, so that in place no count is overwritten before it is read.
	for j := n - 1; j >= 0; j-- {
		s.set(j, old.get(j))
	}
}

func maxCount(w uint8) uint64 {
	if w >= 8 {
		return math.MaxUint64
	}
	return 1<<(8*uint(w)) - 1
}

func widthFor(x uint64) uint8 {
	switch {
	case x <= math.MaxUint8:
		return 1
	case x <= math.MaxUint16:
		return 2
	case x <= math.MaxUint32:
		return 4
	}
	return 8
}
