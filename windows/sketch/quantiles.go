// Package sketch holds the mergeable summaries the windows keep per slot for quantities
// that are not a sum: a quantile sketch with a relative-error guarantee, exact counts over
// fixed histogram buckets, and distinct counts (Distinct). All implement windows.Summary.
//
// Each says what it holds (Bytes, as the allocator rounds it), and all but Buckets, which
// never grow, can be held to a size (windows.Capper): past the memory bound a sketch is
// coarsened instead of growing, each kind in the way its Cap says, and keeps the bound its
// Cap states. A kind's Floor is the least it works in.
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
// run of bins from the lowest to the highest used, the counts packed as many bits wide as
// the largest needs (a slot of a thousand values over 465 bins takes 3 or 4 bits a bin),
// where DDSketch's dense store keeps a float64 per bin. When its wheel moves on from its
// slot (windows.Sealer) a sketch trims the run to the bins it uses in a buffer of their
// size (as the allocator rounds it), the room a growing run keeps being no longer needed.
// README gives the measured bytes and speed of both.
package sketch

import (
	"encoding/binary"
	"math"
	"unsafe"

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
// bins per sign whatever it is fed: every normal float64 is in range, up to half an octave
// below the largest, where math.Exp, which value uses, overflows on amd64 (past e^709.43).
const maxIndex = 1023*binsPerOctave + binsPerOctave/2

// MinMagnitude and MaxMagnitude bound the magnitudes for which the error bound holds: the
// edges of the outermost bins, about 8.1e-309 (below the smallest normal float64,
// 2.2e-308) and 1.2e308 (math.MaxFloat64 is 1.8e308).
var (
	MinMagnitude = math.Exp(-maxIndex * logGamma)
	MaxMagnitude = math.Exp((maxIndex - 1) * logGamma)
)

// Quantiles is a quantile sketch of values of any sign (see the package documentation).
// The zero value is empty and ready to use. It is not safe for concurrent use.
type Quantiles struct {
	pos bins // by magnitude
	// neg is made by the first negative value: latencies and sizes have none, and a
	// series holds over a hundred sketches.
	neg  *bins
	zero uint64
	n    uint64
	// limit is the cap (windows.Capper) in bytes, 0 for none.
	limit int
}

// Heap a sketch takes besides its buffers of counts: itself, and the store of negative
// values once it has one.
var (
	quantilesBytes = windows.HeapBytes(int(unsafe.Sizeof(Quantiles{})))
	binsBytes      = windows.HeapBytes(int(unsafe.Sizeof(bins{})))
)

// minBuffer is the least buffer of counts a store may always have, capped or not: 128 bits,
// the least the allocator gives a buffer (windows.HeapBytes).
const minBuffer = 16

// QuantilesKind makes empty Quantiles for windows.Options. Its floor holds the least
// buffer of counts of either sign.
var QuantilesKind = windows.SummaryKind{
	New:   func() windows.Summary { return new(Quantiles) },
	Floor: quantilesBytes + minBuffer + binsBytes + minBuffer,
	// A read's sketch adds the counts of each bin, uncapped: whatever the order.
	Unordered: true,
	AddGrown: func(s windows.Summary, v float64, _ []byte) (int, int) {
		return s.(*Quantiles).AddGrown(v, nil)
	},
	AddRun: func(s windows.Summary, values []float64, _ [][]byte) (int, int, int) {
		return s.(*Quantiles).AddRun(values)
	},
}

// Add records v; the sketch reads no item.
func (q *Quantiles) Add(v float64, _ []byte) {
	switch {
	case v > 0:
		if i := index(v); !q.pos.bump(i, 1) {
			q.pos.grow(i, 1, q.room(&q.pos))
		}
	case v < 0:
		if q.neg == nil {
			q.makeNeg()
		}
		if i := index(-v); !q.neg.bump(i, 1) {
			q.neg.grow(i, 1, q.room(q.neg))
		}
	case v == 0:
		q.zero++
	default:
		return
	}
	q.n++
}

// AddGrown is Add, and returns Bytes before and after it, 0 and 0 when a positive value
// counted in a bin the run holds (windows.SummaryKind.AddGrown), as most do.
func (q *Quantiles) AddGrown(v float64, _ []byte) (before, after int) {
	if v > 0 && q.pos.bump(index(v), 1) {
		q.n++
		return 0, 0
	}
	before = q.Bytes()
	q.Add(v, nil)
	return before, q.Bytes()
}

// AddRun records values in turn as AddGrown would, and stops after the first add that
// changed Bytes: it returns how many values it added and Bytes before and after the last
// of them, two equal numbers when none changed (windows.SummaryKind.AddRun).
func (q *Quantiles) AddRun(values []float64) (n, before, after int) {
	// AddGrown's common cases in the loop, with the run's shape (its lowest bin, how many
	// it holds, their width and buffer) read once and again only after a call: a call of
	// AddGrown a value, and bump's reading of the shape, took more instructions than the
	// count. A zero is counted in q.zero, which Bytes does not read.
	s := &q.pos
	lo, w, nb, b := s.lo, uint(s.run>>24&0x7f), uint(s.run&runBins), s.b
	for i, v := range values {
		// A normal magnitude's index inlined: index's call took more than its work.
		if bits := math.Float64bits(v); v > 0 && w-1 < 63 && bits>>52-1 < 0x7fe {
			if j := uint(normalIndex(bits) - lo); j < nb {
				p := j * w
				if k := p >> 3; k+8 <= uint(len(b)) {
					word := binary.LittleEndian.Uint64(b[k : k+8 : k+8])
					if x := word>>(p&7)&(1<<w-1) + 1; x < 1<<w {
						binary.LittleEndian.PutUint64(b[k:k+8:k+8], word+1<<(p&7))
						q.n++
						continue
					}
				}
			}
		} else if v == 0 {
			q.zero++
			q.n++
			continue
		}
		if before, after := q.AddGrown(v, nil); before != after {
			return i + 1, before, after
		}
		lo, w, nb, b = s.lo, uint(s.run>>24&0x7f), uint(s.run&runBins), s.b
	}
	return len(values), 0, 0
}

// index returns the bin of a magnitude m > 0: ⌈log_γ m⌉, exactly up to the rounding of the
// edges, clamped to ±maxIndex.
func index(m float64) int32 {
	bits := math.Float64bits(m)
	exp := int32(bits>>52) & 0x7ff
	switch exp {
	case 0: // subnormal: read as the normal float 2^64 times larger (exactly), 64 octaves down
		return max(index(m*0x1p64)-64*binsPerOctave, -maxIndex)
	case 0x7ff: // +Inf
		return maxIndex
	}
	return normalIndex(bits)
}

// normalIndex is index of the normal float of bits: a leaf small enough to be inlined
// where index's recursion for subnormals keeps index itself from being (AddRun's loop).
func normalIndex(bits uint64) int32 {
	mant := math.Float64frombits(bits&(1<<52-1) | 1023<<52) // in [1, 2)
	j := cellBin[bits>>(52-mantissaBits)&(1<<mantissaBits-1)]
	if mant > edges[j] {
		j++
	}
	i := (int32(bits>>52)&0x7ff-1023)*binsPerOctave + int32(j)
	return min(max(i, -maxIndex), maxIndex)
}

// Merge adds the values from holds; from must be a *Quantiles. The receiver's counts
// become 8 bytes wide: merging is for building a window from its slots, not for keeping.
func (q *Quantiles) Merge(from windows.Summary) { q.merge(from, false) }

// Absorb is Merge into a sketch the wheels keep (windows.Absorber): the counts of from are
// added bin by bin, keeping the receiver's packed, so that a slot that absorbs slots of a
// finer wheel takes no more room than one that was added their values.
func (q *Quantiles) Absorb(from windows.Summary) { q.merge(from, true) }

func (q *Quantiles) merge(from windows.Summary, packed bool) {
	f := from.(*Quantiles)
	q.pos.merge(&f.pos, packed, q.room(&q.pos))
	if f.neg != nil {
		if q.neg == nil {
			q.makeNeg()
		}
		q.neg.merge(f.neg, packed, q.room(q.neg))
	}
	q.zero += f.zero
	q.n += f.n
}

// Reset empties the sketch, keeping its memory, and the bins it spanned, for reuse.
func (q *Quantiles) Reset() {
	q.pos.reset()
	if q.neg != nil {
		q.neg.reset()
	}
	q.zero, q.n = 0, 0
}

// Bytes is the heap the sketch holds (windows.Summary).
func (q *Quantiles) Bytes() int {
	n := quantilesBytes + windows.HeapBytes(cap(q.pos.b))
	if q.neg != nil {
		n += binsBytes + windows.HeapBytes(cap(q.neg.b))
	}
	return n
}

// Cap holds the sketch to n bytes (windows.Capper; 0 lifts the cap): a value whose bin the
// run of its sign cannot take in that room, or whose count would need wider counts than
// fit, collapses the run's lowest bins, those of the smallest magnitudes, into the lowest
// it keeps, as DDSketch's collapsing stores do. From then until Reset, values of smaller
// magnitude than that bin count in it: they are reported as its value, and the 1 % bound
// holds for the quantiles of magnitudes at least that bin's. Each sign keeps 16 bytes of
// counts however small n is (QuantilesKind's floor holds both): the largest values are
// always told apart from the rest.
func (q *Quantiles) Cap(n int) { q.limit = n }

// room is how many bytes the buffer of s, a store of q, may take under the cap (0 without
// one): the cap less the rest of the sketch and what the other sign is still owed of its
// least buffer (and of its store, while q has no negative value). A store is always let
// have its least buffer: if the cap has no room for it, the other store gives it up
// (shrink).
func (q *Quantiles) room(s *bins) int {
	if q.limit <= 0 {
		return 0
	}
	other := q.neg
	if s == q.neg {
		other = &q.pos
	}
	rest := q.Bytes() - windows.HeapBytes(cap(s.b))
	if other == nil {
		rest += binsBytes + minBuffer
	} else {
		rest += max(minBuffer-windows.HeapBytes(cap(other.b)), 0)
	}
	room := q.limit - rest
	if lack := minBuffer - max(room, windows.HeapBytes(cap(s.b))); lack > 0 && other != nil {
		other.shrink(lack)
	}
	return max(room, minBuffer)
}

// makeNeg makes the store of negative values; under a cap that has no room left for it and
// its least buffer, the store of positive values gives that up (shrink).
func (q *Quantiles) makeNeg() {
	if q.limit > 0 {
		q.pos.shrink(q.Bytes() + binsBytes + minBuffer - q.limit)
	}
	q.neg = new(bins)
}

// Seal moves the counts into buffers of their size (as the allocator rounds it: the least
// heap that holds them), the run trimmed to its first and last bins that are not empty and
// the counts no wider than the largest needs: the wheels call it when a slot closes, which
// takes off the room a growing run keeps. Add still works after it.
func (q *Quantiles) Seal() {
	q.pos.seal()
	if q.neg != nil {
		q.neg.seal()
	}
}

// Count returns how many values were added.
func (q *Quantiles) Count() uint64 { return q.n }

// Quantile returns the value of rank ⌈p·n⌉ (at least 1) among the n values added, within
// RelativeError; NaN when the sketch is empty. p is in (0, 1].
func (q *Quantiles) Quantile(p float64) float64 {
	if q.n == 0 {
		return math.NaN()
	}
	// p is a decimal quantile as a float64, and p·n may land a hair above the whole number
	// the decimal's product is (0.55·100 = 55.00000000000001): both roundings together err
	// by under 2^-52 of it, so ⌈⌉ is taken of p·n less 2^-50 of it.
	x := p * float64(q.n)
	rank := uint64(min(max(math.Ceil(x-x*0x1p-50), 1), float64(q.n)))
	// Ascending order: negatives from the largest magnitude down, zeros, positives up.
	seen := uint64(0)
	if q.neg != nil {
		for j := q.neg.len() - 1; j >= 0; j-- {
			if seen += q.neg.get(j); seen >= rank {
				return -value(q.neg.lo + int32(j))
			}
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

// BinsPerOctave is how many bins each power of two is cut into: bin i holds the magnitudes
// in (2^((i−1)/BinsPerOctave), 2^(i/BinsPerOctave)].
const BinsPerOctave = binsPerOctave

// BinValue is the magnitude bin i reports, within RelativeError of every magnitude it holds.
func BinValue(i int32) float64 { return value(i) }

// Bins calls f with every bin of one sign that holds values (those of negative values
// when neg) and its count, in ascending order of magnitude; Zeros is the count of zeros. It
// changes nothing.
func (q *Quantiles) Bins(neg bool, f func(i int32, c uint64)) {
	s := &q.pos
	if neg {
		if s = q.neg; s == nil {
			return
		}
	}
	for j := range s.len() {
		if c := s.get(j); c != 0 {
			f(s.lo+int32(j), c)
		}
	}
}

// Zeros returns how many of the values added were 0.
func (q *Quantiles) Zeros() uint64 { return q.zero }
