package sketch

import (
	"encoding/binary"
	"maps"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/logwindow/logwindow_exporter/windows"
)

// probes are the quantiles every check asks for, the edges included.
var probes = []float64{0.001, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1}

// exactRank is the reference: the value of rank ⌈p·n⌉ (at least 1) of sorted, p taken
// as the decimal it is written as (the shortest that reads as it), in exact arithmetic.
func exactRank(sorted []float64, p float64) float64 {
	x, ok := new(big.Rat).SetString(strconv.FormatFloat(p, 'g', -1, 64))
	if !ok {
		panic(p)
	}
	x.Mul(x, new(big.Rat).SetInt64(int64(len(sorted))))
	r := new(big.Int).Quo(x.Num(), x.Denom())
	if !x.IsInt() {
		r.Add(r, big.NewInt(1))
	}
	return sorted[min(max(int(r.Int64()), 1), len(sorted))-1]
}

// withinBound reports whether got is the exact value within RelativeError (0 exactly).
func withinBound(got, want float64) bool {
	if want == 0 {
		return got == 0
	}
	return math.Abs(got-want) <= RelativeError*math.Abs(want)
}

func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo)))
}

// streams are value distributions the bound must hold for.
var streams = []struct {
	name string
	gen  func(r *rand.Rand) float64
}{
	{"log-uniform 1ms-10s", func(r *rand.Rand) float64 { return logUniform(r, 1e-3, 10) }},
	{"any sign", func(r *rand.Rand) float64 {
		return float64(1-2*r.IntN(2)) * logUniform(r, 1e-6, 1e6)
	}},
	{"mostly zeros", func(r *rand.Rand) float64 {
		if r.IntN(10) != 0 {
			return 0
		}
		return r.NormFloat64()
	}},
	{"one value repeated", func(*rand.Rand) float64 { return 0.137 }},
	{"negatives only", func(r *rand.Rand) float64 { return -logUniform(r, 1e-3, 10) }},
	{"bin edges", func(r *rand.Rand) float64 { return math.Pow(gamma, float64(r.IntN(400)-200)) }},
	{"whole range", func(r *rand.Rand) float64 {
		return float64(1-2*r.IntN(2)) * logUniform(r, MinMagnitude, MaxMagnitude)
	}},
	{"integers", func(r *rand.Rand) float64 { return float64(r.IntN(1000)) }},
	{"1e-300 to 1e300, subnormals, zeros", func(r *rand.Rand) float64 {
		sign := float64(1 - 2*r.IntN(2))
		switch r.IntN(10) {
		case 0:
			return 0
		case 1: // subnormal, down to the lowest bin's edge
			return sign * logUniform(r, MinMagnitude, 0x1p-1022)
		}
		return sign * logUniform(r, 1e-300, 1e300)
	}},
}

// Magnitudes far from 1 are read within the bound as any other, down to the smallest
// normal float64 and past it (the sketch once stopped at 6.2e-18: 100 values of 1e-300
// read 6.22e-18); subnormals below MinMagnitude are read as the lowest bin's value.
func TestQuantilesFarMagnitudes(t *testing.T) {
	for _, v := range []float64{1e-300, 0x1p-1022, 1e-308, 1e300, -1e-300, -1e300, 1.2e308, MinMagnitude, MaxMagnitude} {
		var q Quantiles
		for range 100 {
			q.Add(v, nil)
		}
		if got := q.Quantile(0.5); !withinBound(got, v) {
			t.Errorf("p50 of 100 × %v = %v", v, got)
		}
	}
	for _, v := range []float64{math.SmallestNonzeroFloat64, MinMagnitude / 2, math.MaxFloat64, math.Inf(1)} {
		var q Quantiles
		q.Add(v, nil)
		want := value(-maxIndex)
		if v > 1 {
			want = value(maxIndex)
		}
		if got := q.Quantile(1); got != want {
			t.Errorf("%v read as %v, want the outermost bin's %v", v, got, want)
		}
	}
}

// TestQuantilesBound checks every probe against the exact rank, for few and many values.
func TestQuantilesBound(t *testing.T) {
	for _, st := range streams {
		for _, n := range []int{1, 2, 3, 10, 101, 5000, 70000} {
			t.Run(st.name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(n), 7))
				var q Quantiles
				vs := make([]float64, n)
				for i := range vs {
					vs[i] = st.gen(r)
					q.Add(vs[i], nil)
				}
				slices.Sort(vs)
				if q.Count() != uint64(n) {
					t.Fatalf("count %d, want %d", q.Count(), n)
				}
				for _, p := range probes {
					if got, want := q.Quantile(p), exactRank(vs, p); !withinBound(got, want) {
						t.Fatalf("n=%d: q%v = %v, exact %v", n, p, got, want)
					}
				}
			})
		}
	}
}

// TestQuantilesDecimalRank: a quantile written in decimal reads the value of rank ⌈q·n⌉ of
// that decimal, also where q·n in floats lands a hair above the whole number it is
// (0.55·100 = 55.00000000000001 once 0.55 is a float64). The values are 10% apart, so
// that a rank off by one reads another bin.
func TestQuantilesDecimalRank(t *testing.T) {
	for _, tc := range []struct {
		q        string
		num, den int // q as a fraction
		n        int
	}{
		{"0.07", 7, 100, 100}, {"0.14", 14, 100, 50}, {"0.28", 28, 100, 25},
		{"0.55", 55, 100, 100}, {"0.56", 56, 100, 25}, {"0.68", 68, 100, 75},
		{"0.81", 81, 100, 300}, {"0.275", 275, 1000, 200}, {"0.545", 545, 1000, 200},
		{"0.5", 1, 2, 3}, {"0.99", 99, 100, 101}, {"0.999", 999, 1000, 1000},
	} {
		t.Run(tc.q+"/"+strconv.Itoa(tc.n), func(t *testing.T) {
			p, err := strconv.ParseFloat(tc.q, 64)
			if err != nil {
				t.Fatal(err)
			}
			var q Quantiles
			vs := make([]float64, tc.n)
			for i := range vs {
				vs[i] = math.Pow(1.1, float64(i))
				q.Add(vs[i], nil)
			}
			rank := (tc.num*tc.n + tc.den - 1) / tc.den
			if got, want := q.Quantile(p), vs[rank-1]; !withinBound(got, want) {
				t.Errorf("q%v of %d values = %v, want rank %d's %v", p, tc.n, got, rank, want)
			}
		})
	}
}

// TestQuantilesMerge: merged sketches answer exactly like one sketch fed every value, also
// after counts outgrew a byte and two bytes, and a reset sketch is empty and reusable.
func TestQuantilesMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var all, acc Quantiles
	parts := make([]Quantiles, 5)
	for i := range parts {
		for j := range 20000 * i {
			v := 0.25
			if j%3 != 0 {
				v = float64(1-2*r.IntN(2)) * logUniform(r, 1e-4, 1e4)
			}
			parts[i].Add(v, nil)
			all.Add(v, nil)
		}
		parts[i].Add(0, nil)
		all.Add(0, nil)
	}
	for round := range 2 {
		for i := range parts {
			acc.Merge(&parts[i])
		}
		if acc.Count() != all.Count() {
			t.Fatalf("round %d: merged count %d, want %d", round, acc.Count(), all.Count())
		}
		for _, p := range append(probes, 0.3333, 0.6667) {
			if got, want := acc.Quantile(p), all.Quantile(p); got != want {
				t.Fatalf("round %d: merged q%v = %v, one sketch %v", round, p, got, want)
			}
		}
		acc.Reset()
		if acc.Count() != 0 || !math.IsNaN(acc.Quantile(0.5)) {
			t.Fatalf("reset sketch: count %d, median %v", acc.Count(), acc.Quantile(0.5))
		}
	}
	// A live run widens with two bits to spare (grownWidth); the seal narrows it to the
	// bits its largest count needs.
	for _, w := range []struct {
		n          int
		live, want uint8
	}{{1, 1, 1}, {2, 4, 2}, {255, 10, 8}, {256, 10, 9}, {65536, 19, 17}} {
		var q Quantiles
		for range w.n {
			q.Add(3, nil)
		}
		if q.pos.width() != w.live || q.Quantile(1) < 2.97 || q.Quantile(1) > 3.03 {
			t.Errorf("%d equal values: width %d (want %d), max %v", w.n, q.pos.width(), w.live, q.Quantile(1))
		}
		if q.Seal(); q.pos.width() != w.want || q.Count() != uint64(w.n) || q.Quantile(1) < 2.97 || q.Quantile(1) > 3.03 {
			t.Errorf("%d equal values sealed: width %d (want %d), count %d, max %v", w.n, q.pos.width(), w.want, q.Count(), q.Quantile(1))
		}
	}
}

// TestQuantilesIgnoresNaN: NaN is not a value (the parser drops it first), infinities are
// clamped into the outermost bins and stay finite.
func TestQuantilesIgnoresNaN(t *testing.T) {
	var q Quantiles
	q.Add(math.NaN(), nil)
	if q.Count() != 0 {
		t.Fatalf("NaN counted: %d", q.Count())
	}
	q.Add(math.Inf(1), nil)
	q.Add(math.Inf(-1), nil)
	if lo, hi := q.Quantile(0.5), q.Quantile(1); math.IsInf(lo, 0) || math.IsInf(hi, 0) || lo >= 0 || hi <= 0 {
		t.Fatalf("infinities: q0.5 %v, q1 %v", lo, hi)
	}
}

func TestBuckets(t *testing.T) {
	kind := BucketsKind([]float64{0.1, 1, 10})
	a, b := kind.New().(*Buckets), kind.New().(*Buckets)
	for _, v := range []float64{-1, 0.1, 0.10001, 1, 5, 10, 11, math.Inf(1), math.NaN()} {
		a.Add(v, nil)
	}
	b.Add(0.05, nil)
	b.Merge(a)
	type bucket struct {
		le float64
		n  uint64
	}
	var got []bucket
	b.Cumulative(func(le float64, n uint64) { got = append(got, bucket{le, n}) })
	want := []bucket{{0.1, 3}, {1, 5}, {10, 7}}
	if !slices.Equal(got, want) || b.Count() != 9 || !math.IsInf(b.Sum(), 1) {
		t.Fatalf("buckets %v count %d sum %v, want %v count 9 sum +Inf", got, b.Count(), b.Sum(), want)
	}
	b.Reset()
	got = got[:0]
	b.Cumulative(func(le float64, n uint64) { got = append(got, bucket{le, n}) })
	if b.Count() != 0 || b.Sum() != 0 || got[2].n != 0 {
		t.Fatalf("reset: %v count %d sum %v", got, b.Count(), b.Sum())
	}
}

// TestBucketsAbove holds the bucket search to slices.BinarySearch, on random values and on
// every bound, its neighbours, zeros and infinities, for bound lists of every length up to
// the example rules' eleven and beyond.
func TestBucketsAbove(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	all := []float64{-10, -0.5, 0, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 1e300}
	for _, tc := range []struct {
		name   string
		bounds []float64
	}{
		{"none", nil},
		{"one", []float64{1}},
		{"example", all[3:14]},
		{"all", all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := []float64{math.Inf(-1), math.Inf(1), math.Copysign(0, -1), 0, -math.MaxFloat64, math.MaxFloat64}
			for _, b := range tc.bounds {
				vs = append(vs, b, math.Nextafter(b, math.Inf(-1)), math.Nextafter(b, math.Inf(1)))
			}
			for range 2000 {
				vs = append(vs, (r.Float64()-0.3)*20, logUniform(r, 1e-4, 100))
			}
			for _, v := range vs {
				want, _ := slices.BinarySearch(tc.bounds, v)
				if got := above(tc.bounds, v); got != want {
					t.Fatalf("above(%v, %v) = %d, want %d", tc.bounds, v, got, want)
				}
			}
		})
	}
}

// checkBucket checks that Add, and its kind's AddGrown and AddRun, which find the bucket by
// its cells (bucketCells), each count v in the bucket slices.BinarySearch finds among the
// bounds: the one count raised, none when v is above every bound.
func checkBucket(t testing.TB, kind windows.SummaryKind, bounds []float64, v float64) {
	t.Helper()
	want, _ := slices.BinarySearch(bounds, v)
	b := kind.New().(*Buckets)
	for _, how := range []struct {
		name string
		add  func()
	}{
		{"Add", func() { b.Add(v, nil) }},
		{"AddGrown", func() { kind.AddGrown(b, v, nil) }},
		{"AddRun", func() { kind.AddRun(b, []float64{v}, nil) }},
	} {
		b.Reset()
		how.add()
		got := len(b.counts)
		for i, c := range b.counts {
			if c != 0 {
				got = i
			}
		}
		if got != want || b.Count() != 1 {
			t.Fatalf("bounds %v: %s counted %v in bucket %d (count %d), want %d", bounds, how.name, v, got, b.Count(), want)
		}
	}
}

// TestBucketsCells holds the bucket a value is counted in to slices.BinarySearch over the
// bounds (checkBucket): on every bound, its neighbours and the edges of its
// cell, zeros and infinities, values of random bits and random values among the bounds,
// for bounds of one cell each, many in a cell (dense, and any that span so many octaves
// that the cells are coarser), on both sides of zero, a bound of −0, and infinite bounds.
func TestBucketsCells(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	dense := make([]float64, 40)
	for i := range dense {
		dense[i] = 1 + float64(i)/1000
	}
	for _, tc := range []struct {
		name   string
		bounds []float64
	}{
		{"none", nil},
		{"one", []float64{1}},
		{"example", []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}},
		{"dense", dense},
		{"negative", []float64{-1e10, -5, -1e-3}},
		{"both sides", []float64{-10, -0.5, 0, 0.005, 1, 1e300}},
		{"minus zero", []float64{-1, math.Copysign(0, -1), 1}},
		{"wide", []float64{1e-300, 1e-100, 1, 1e100, 1e300}},
		{"subnormal", []float64{5e-324, 1e-310, 1e-300}},
		{"infinite", []float64{math.Inf(-1), 0, math.Inf(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind := BucketsKind(tc.bounds)
			vs := []float64{math.Inf(-1), math.Inf(1), math.Copysign(0, -1), 0, -math.MaxFloat64, math.MaxFloat64, 5e-324, -5e-324}
			for _, x := range tc.bounds {
				vs = append(vs, x, math.Nextafter(x, math.Inf(-1)), math.Nextafter(x, math.Inf(1)))
				// The edges of the cells about it: a cell is order(v)>>shift.
				o, sh := order(x), newBucketCells(tc.bounds).shift
				for _, e := range []uint64{o>>sh<<sh - 1, o >> sh << sh, (o>>sh+1)<<sh - 1, (o>>sh + 1) << sh} {
					// order back to a float: inverted for a negative one.
					bits := e &^ (1 << 63)
					if e>>63 == 0 {
						bits = ^e
					}
					if y := math.Float64frombits(bits); !math.IsNaN(y) {
						vs = append(vs, y)
					}
				}
			}
			for range 3000 {
				if y := math.Float64frombits(r.Uint64()); !math.IsNaN(y) {
					vs = append(vs, y)
				}
				if n := len(tc.bounds); n > 1 {
					i := r.IntN(n - 1)
					lo, hi := tc.bounds[i], tc.bounds[i+1]
					if !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
						vs = append(vs, lo+(hi-lo)*r.Float64())
					}
				}
			}
			for _, v := range vs {
				checkBucket(t, kind, tc.bounds, v)
			}
		})
	}
}

// FuzzBucketsAdd holds the bucket a value is counted in to slices.BinarySearch
// (checkBucket), for any bounds and value: the bounds are the data's floats, 8 bytes each, without NaN, sorted and without
// duplicates.
func FuzzBucketsAdd(f *testing.F) {
	f.Add([]byte{}, 1.0)
	f.Add(binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.1)), 0.1)
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, math.Float64bits(-1)), math.Float64bits(1e300)), 0.0)
	f.Fuzz(func(t *testing.T, data []byte, v float64) {
		if math.IsNaN(v) {
			return
		}
		var bounds []float64
		for ; len(data) >= 8; data = data[8:] {
			if x := math.Float64frombits(binary.LittleEndian.Uint64(data)); !math.IsNaN(x) {
				bounds = append(bounds, x)
			}
		}
		slices.Sort(bounds)
		// −0 and +0 are one bound: keep the first.
		bounds = slices.CompactFunc(bounds, func(a, b float64) bool { return a == b })
		checkBucket(t, BucketsKind(bounds), bounds, v)
	})
}

// TestIndex compares the bin of a value with ⌈log_γ v⌉ from the logarithm: equal, or one
// apart only for a value within rounding of a bin edge.
func TestIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	check := func(v float64) {
		ref := math.Log(v) / logGamma
		if v < 0x1p-1022 {
			// math.Log is off for subnormals on amd64 (by 10 bins at 1.5e-308).
			ref = (math.Log(v*0x1p64) - 64*math.Ln2) / logGamma
		}
		got := index(v)
		if want := int32(math.Ceil(ref)); got != want && math.Abs(ref-math.Round(ref)) > 1e-9 {
			t.Fatalf("index(%v) = %d, want %d (log_γ %v)", v, got, want, ref)
		}
		if lo, hi := value(got)/represent/gamma, value(got)/represent; !(v > lo*(1-1e-12) && v <= hi*(1+1e-12)) {
			t.Fatalf("index(%v) = %d, whose bin is (%v, %v]", v, got, lo, hi)
		}
	}
	for range 200000 {
		check(logUniform(r, MinMagnitude, MaxMagnitude))
	}
	for i := -maxIndex + 1; i < maxIndex; i++ {
		edge := math.Pow(gamma, float64(i))
		for _, v := range []float64{edge, math.Nextafter(edge, 0), math.Nextafter(edge, math.Inf(1)), edge * (1 + 1e-6), edge * (1 - 1e-6)} {
			check(v)
		}
	}
	for _, tc := range []struct {
		v    float64
		want int32
	}{{1, 0}, {2, binsPerOctave}, {0.5, -binsPerOctave}, {math.SmallestNonzeroFloat64, -maxIndex}, {math.MaxFloat64, maxIndex}, {math.Inf(1), maxIndex}} {
		if got := index(tc.v); got != tc.want {
			t.Errorf("index(%v) = %d, want %d", tc.v, got, tc.want)
		}
	}
}

// TestBinsModel checks the packed counts against a map of exact counts: adds that grow the
// run on either side and widen the counts (up to 64 bits), seals that trim and narrow the
// run (and adds after them), merges of packed runs into 8-byte ones, and resets that leave
// a buffer holding old counts for the next run.
func TestBinsModel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spread int32  // bins of either side of 0 the indexes are drawn from
		big    uint64 // largest count added at once
	}{
		{"ones in a few bins", 3, 1},
		{"ones over a wide run", 600, 1},
		{"counts that widen", 40, 300},
		{"counts past 32 bits", 40, 1 << 40},
		{"counts past 56 bits", 5, 1 << 58},
		{"the whole index range", maxIndex, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.spread), tc.big))
			var s, merged bins
			model, mergedModel := map[int32]uint64{}, map[int32]uint64{}
			check := func(what string, s *bins, m map[int32]uint64) {
				t.Helper()
				if s.len() > 0 && len(s.b) != (s.len()*int(s.width())+7)/8 {
					t.Fatalf("%s: %d bins of %d bits in %d bytes", what, s.len(), s.width(), len(s.b))
				}
				if used := s.len() * int(s.width()); used%8 != 0 && s.b[len(s.b)-1]>>(used%8) != 0 {
					t.Fatalf("%s: the bits past the last count are %#x, not 0", what, s.b[len(s.b)-1]>>(used%8))
				}
				for i, c := range m {
					if j := int(i - s.lo); c != 0 && (j < 0 || j >= s.len() || s.get(j) != c) {
						t.Fatalf("%s: bin %d holds %d, want %d (run %d+%d, %d bits)", what, i, s.getAt(i), c, s.lo, s.len(), s.width())
					}
				}
				for j := range s.len() {
					if got, want := s.get(j), m[s.lo+int32(j)]; got != want {
						t.Fatalf("%s: bin %d holds %d, want %d", what, s.lo+int32(j), got, want)
					}
				}
			}
			for round := range 40 {
				// A run that starts anywhere and spreads; a third of the rounds keep to
				// a narrow band so that counts grow.
				center := r.Int32N(2*tc.spread+1) - tc.spread
				width := tc.spread
				if round%3 == 0 {
					width = 2
				}
				for range 1 + r.IntN(300) {
					i := min(max(center+r.Int32N(2*width+1)-width, -maxIndex), maxIndex)
					c := uint64(1)
					if r.IntN(4) == 0 {
						c = 1 + r.Uint64N(tc.big)
					}
					if model[i] > math.MaxUint64/4-c {
						continue // keep the sums of the merges below 2^64
					}
					s.add(i, c, 0)
					model[i] += c
				}
				check("add", &s, model)
				if r.IntN(2) == 0 {
					// Sealed as a closing slot is, then added to and merged as before.
					s.seal()
					check("seal", &s, model)
					if first, last := s.get(0), s.get(s.len()-1); first == 0 || last == 0 || s.width() != widthFor(slices.Max(slices.Collect(maps.Values(model)))) && s.width() != 64 {
						t.Fatalf("sealed run %d+%d of %d bits ends with counts %d and %d", s.lo, s.len(), s.width(), first, last)
					}
				}
				// Either way of merging: widening to 8-byte counts (Merge), or bin by bin (Absorb).
				merged.merge(&s, r.IntN(2) == 0, 0)
				for i, c := range model {
					mergedModel[i] += c
				}
				check("merge", &merged, mergedModel)
				if r.IntN(3) == 0 {
					s.reset()
					clear(model)
					check("reset", &s, model)
				}
				if r.IntN(4) == 0 {
					merged.seal()
					check("sealed merge", &merged, mergedModel)
				}
				if r.IntN(5) == 0 {
					merged.reset()
					clear(mergedModel)
				}
			}
		})
	}
}
