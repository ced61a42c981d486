package sketch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// capped runs f on s under a cap of n bytes, as the wheels do (windows.Capper).
func capped[S interface{ Cap(int) }](s S, n int, f func()) {
	s.Cap(n)
	f()
	s.Cap(0)
}

// binOf is where a value is counted once a sketch collapsed the bins below lo of its sign
// (posLo, negLo; −maxIndex−1 while not collapsed): its sign and its bin, raised to lo.
func binOf(v float64, posLo, negLo int32) (sign int, bin int32) {
	switch {
	case v > 0:
		return 1, max(index(v), posLo)
	case v < 0:
		return -1, max(index(-v), negLo)
	}
	return 0, 0
}

// collapsedTo is the lowest bin of s, or below every bin while it has not collapsed.
func collapsedTo(s *bins) int32 {
	if s == nil || !s.collapsed() {
		return -maxIndex - 1
	}
	return s.lo
}

// TestQuantilesCapped is the reference model of a capped sketch: held to n bytes it never
// takes more (than it held, when the cap came down), and its every quantile is exactly
// that of the values with each magnitude below the lowest bin its sign kept raised to that
// bin (the collapse of DDSketch's collapsing stores), so the 1 % bound holds for the
// quantiles above it; the values added one by one or merged in (Absorb) alike, under a
// fixed cap or one that moves as the room of the bound does. Without a cap nothing
// collapses.
func TestQuantilesCapped(t *testing.T) {
	n := 0 // numbers the subtests, of which race.Runs says which run
	for _, st := range streams {
		for _, limit := range []int{QuantilesKind.Floor, 150, 300, 1000, 4000, 1 << 20} {
			for _, moving := range []bool{false, true} {
				if n++; !race.Runs(n) {
					continue
				}
				t.Run(fmt.Sprintf("%s/%d/moving %v", st.name, limit, moving), func(t *testing.T) {
					checkQuantilesCapped(t, st.gen, limit, moving)
				})
			}
		}
	}
}

func checkQuantilesCapped(t *testing.T, gen func(r *rand.Rand) float64, limit int, moving bool) {
	r := rand.New(rand.NewPCG(uint64(limit), 3))
	var q, absorbed Quantiles
	var vs []float64
	capAt := func() int {
		if moving {
			return QuantilesKind.Floor + r.IntN(limit-QuantilesKind.Floor+1)
		}
		return limit
	}
	for round := range 20 {
		part := new(Quantiles)
		for range 1 + r.IntN(300) {
			v := gen(r)
			vs = append(vs, v)
			before, n := q.Bytes(), capAt()
			capped(&q, n, func() { q.Add(v, nil) })
			part.Add(v, nil)
			if b := q.Bytes(); b > max(n, before) {
				t.Fatalf("round %d: %d bytes under a cap of %d", round, b, n)
			}
		}
		before, n := absorbed.Bytes(), capAt()
		capped(&absorbed, n, func() { absorbed.Absorb(part) })
		if b := absorbed.Bytes(); b > max(n, before) {
			t.Fatalf("round %d: %d bytes absorbed under a cap of %d", round, b, n)
		}
		if round%7 == 6 {
			q.Seal() // a slot closes; late values still come
		}
	}
	for name, s := range map[string]*Quantiles{"added": &q, "absorbed": &absorbed} {
		posLo, negLo := collapsedTo(&s.pos), collapsedTo(s.neg)
		if limit == 1<<20 && !moving && (posLo > -maxIndex-1 || negLo > -maxIndex-1) {
			t.Fatalf("%s: collapsed with room for every bin", name)
		}
		model := make([]float64, len(vs))
		for i, v := range vs {
			sign, bin := binOf(v, posLo, negLo)
			model[i] = float64(sign) * value(bin)
		}
		slices.Sort(model)
		// A quantile is read over every bin, and the race detector makes each read of the
		// uncollapsed sketches slow: under it one rank in ten is checked.
		for i := 1; i <= 2000; i++ {
			if race.Enabled && i%10 != 0 {
				continue
			}
			p := float64(i) / 2000 // a decimal, as a quantile is written
			if got, want := s.Quantile(p), exactRank(model, p); got != want {
				t.Fatalf("%s: q%v = %v, the model says %v (kept from bins %d and -%d)", name, p, got, want, posLo, negLo)
			}
		}
		if s.Count() != uint64(len(vs)) {
			t.Fatalf("%s: count %d, want %d", name, s.Count(), len(vs))
		}
	}
}

// TestBinsCollapse works a collapse through by hand: a run of 1-bit counts in a 16-byte
// buffer holds 128 bins; a value 100 bins above them keeps the 128 up to it and counts
// the rest in the lowest kept, at a width that holds their sum (which keeps fewer bins).
func TestBinsCollapse(t *testing.T) {
	var s bins
	for i := range int32(128) {
		s.add(i, 1, minBuffer)
	}
	if s.collapsed() || s.lo != 0 || s.len() != 128 || s.width() != 1 {
		t.Fatalf("128 ones: run %d+%d of %d bits, collapsed %v", s.lo, s.len(), s.width(), s.collapsed())
	}
	s.add(227, 1, minBuffer)
	// Bins 100 … 227 fit at 1 bit, but 100 then sums 101 ones, 7 bits: 18 bins fit,
	// 210 … 227, and 210 sums all 128 ones, 8 bits: 16 bins, 212 … 227, which hold.
	if !s.collapsed() || s.lo != 212 || s.len() != 16 || s.width() != 8 || s.get(0) != 128 || s.get(15) != 1 {
		t.Fatalf("collapsed to run %d+%d of %d bits, lowest %d, highest %d", s.lo, s.len(), s.width(), s.get(0), s.get(s.len()-1))
	}
	s.add(-5, 2, minBuffer) // below the run: counted in its lowest bin
	if s.lo != 212 || s.get(0) != 130 {
		t.Fatalf("a low value: run from %d, lowest %d", s.lo, s.get(0))
	}
	s.reset()
	s.add(-5, 1, 0)
	if s.collapsed() || s.lo > -5 {
		t.Fatalf("after a reset the run starts at %d, collapsed %v", s.lo, s.collapsed())
	}
}

// TestQuantilesCapFitsExactly: a run of counts that fits the room its cap leaves to the
// byte does not collapse, so that once the cap is lifted (the memory bound has room again)
// a smaller value is kept in its own bin and reported within RelativeError; one a bin too
// long collapses, and the smaller value counts in the lowest bin kept, as Cap says. The
// cap leaves the positive store 48 bytes (a size the allocator has): 384 bins of 1-bit
// counts.
func TestQuantilesCapFitsExactly(t *testing.T) {
	const low, room = 1000, 48
	for _, tc := range []struct {
		name string
		span int32 // bins from the first value's to the second's, both included
		// lowest is the bin the smaller value is reported from, relative to the first value's.
		lowest int32
	}{
		{"a byte short of the room", 8 * (room - 1), -10},
		{"the room exactly", 8 * room, -10},
		{"a bin past the room", 8*room + 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q Quantiles
			limit := QuantilesKind.Floor + room - minBuffer
			capped(&q, limit, func() {
				q.Add(value(low), nil)
				q.Add(value(low+tc.span-1), nil)
			})
			if b := q.Bytes(); b > limit {
				t.Fatalf("%d bytes under a cap of %d", b, limit)
			}
			q.Add(value(low-10), nil) // uncapped
			if got, want := q.Quantile(1.0/3), value(low+tc.lowest); got != want {
				t.Errorf("the smallest of 3 values reported as %v (bin %d), want %v (bin %d)", got, index(got), want, low+tc.lowest)
			}
			if got, want := q.Quantile(1), value(low+tc.span-1); got != want {
				t.Errorf("the largest reported as %v, want %v", got, want)
			}
		})
	}
}

// TestDistinctCapped: held to n bytes, a distinct count takes no more (its floor aside),
// stays exact while its sparse set fits, and past that is dense at the highest precision
// whose registers fit (never below 6), its count within four standard errors of that
// precision; a window merged from slots of several precisions has the lowest.
func TestDistinctCapped(t *testing.T) {
	floor := DistinctKind(1).Floor
	for _, limit := range []int{floor, 200, 1000, 5000, 20000, 70000} {
		for _, n := range []int{10, 1000, 5000, 20000, 200000} {
			t.Run(fmt.Sprintf("%d bytes/%d items", limit, n), func(t *testing.T) {
				d := NewDistinct()
				for i := range n {
					capped(d, limit, func() { d.Add(1, sizedItem(i, 8)) })
					if b := d.Bytes(); b > limit {
						t.Fatalf("%d items: %d bytes under a cap of %d", i+1, b, limit)
					}
				}
				p := d.Precision()
				if p == 0 {
					if got := d.Count(); math.Abs(float64(got)-float64(n)) > 2 {
						t.Fatalf("sparse: count %d of %d", got, n)
					}
					return
				}
				want := DistinctPrecision
				for want > minPrecision && distinctBytes+1<<want > limit {
					want--
				}
				if p != want {
					t.Fatalf("dense at precision %d, want %d under %d bytes", p, want, limit)
				}
				sigma := 1.04 / math.Sqrt(float64(uint64(1)<<p))
				if got := float64(d.Count()); math.Abs(got-float64(n)) > 4*sigma*float64(n)+2 {
					t.Fatalf("precision %d: count %v of %d, past 4σ = %.1f %%", p, got, n, 400*sigma)
				}
			})
		}
	}
	t.Run("merge of precisions", func(t *testing.T) {
		full, small, sparse := NewDistinct(), NewDistinct(), NewDistinct()
		distinctOf(full, 50000)      // precision 16
		capped(small, 2000, func() { // precision 10
			for i := 40000; i < 90000; i++ {
				small.Add(1, sizedItem(i, 8))
			}
		})
		for i := 85000; i < 86000; i++ {
			sparse.Add(1, sizedItem(i, 8))
		}
		w := NewDistinct()
		for _, s := range []*Distinct{full, sparse, small} {
			w.Merge(s)
		}
		const union = 90000
		if w.Precision() != 10 || math.Abs(float64(w.Count())-union) > 4*1.04/32*union {
			t.Fatalf("merged: precision %d, count %d of %d", w.Precision(), w.Count(), union)
		}
	})
}

// TestDistinctReduce: registers of precision 16 reduced to a lower precision are exactly
// those made at that precision from the same items, from their hashes (Add) or from their
// sparse keys (a sketch turned dense under a cap).
func TestDistinctReduce(t *testing.T) {
	for _, p := range []uint8{6, 10, 14, 15} {
		full := distinctOf(NewDistinct(), 30000)
		direct := &Distinct{regs: make([]uint64, 1<<p/8), p: p}
		fromKeys := NewDistinct()
		capped(fromKeys, distinctBytes+1<<p, func() {
			for i := range 30000 {
				direct.Add(1, sizedItem(i, 8))
				fromKeys.Add(1, sizedItem(i, 8))
			}
		})
		reduced := reduce(full.regs, full.p, p)
		if !slices.Equal(reduced, direct.regs) {
			t.Fatalf("precision %d: the reduced registers differ from those made at it", p)
		}
		if fromKeys.p != p || !slices.Equal(fromKeys.regs, direct.regs) {
			t.Fatalf("precision %d: a capped sketch turned dense at %d, or its registers differ", p, fromKeys.p)
		}
	}
}

// TestTopCapped: held to n bytes a top summary takes no more, and what it reports keeps
// the bound it states (Bound): every reported sum at most its value's true one and at most
// Bound below it, every value whose sum passes Bound held; a value too long for the cap
// gets no counter, and its mass is in the bound.
func TestTopCapped(t *testing.T) {
	n := 0 // numbers the subtests, of which race.Runs says which run
	for _, tc := range []struct {
		name string
		item func(r *rand.Rand, i int) string
		v    func(r *rand.Rand) float64
	}{
		{"unique 1 KB paths", func(_ *rand.Rand, i int) string { return fmt.Sprintf("/%01020d", i) }, func(*rand.Rand) float64 { return 1 }},
		{"zipf short", func(r *rand.Rand, _ int) string { return "/p/" + strconv.Itoa(zipfDraw(r, 1.1, 100000)) }, func(*rand.Rand) float64 { return 1 }},
		{"zipf weighted, long", func(r *rand.Rand, _ int) string {
			return fmt.Sprintf("/%0300d", zipfDraw(r, 1.2, 10000))
		}, func(r *rand.Rand) float64 { return r.ExpFloat64() }},
	} {
		for _, limit := range []int{TopKind(1000, 1).Floor, 20_000, 200_000} {
			if n++; !race.Runs(n) {
				continue
			}
			t.Run(fmt.Sprintf("%s/%d", tc.name, limit), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(limit), 7))
				tp := NewTop(1000)
				exact := map[string]float64{}
				for i := range 20000 {
					item, v := tc.item(r, i), tc.v(r)
					exact[item] += v
					capped(tp, limit, func() { tp.Add(v, []byte(item)) })
					if b := tp.Bytes(); b > limit {
						t.Fatalf("%d items: %d bytes under a cap of %d", i+1, b, limit)
					}
				}
				checkTopBound(t, tp, exact)
			})
		}
	}
	// A value not held whose counter does not fit prunes the counters of 1 … 8 (items a … h)
	// to half, their median taken from every counter and from the value, until the value
	// is used up; its item is too long for the arena under the cap until the prunes drop
	// almost every counter. Once the value is used up the prunes stop: 4 and 6 are used up
	// at a median exactly (4, then 4 and 2), and the counters lose that much and no more.
	for _, tc := range []struct {
		v    float64
		want []TopValue
	}{
		{3.5, []TopValue{{"h", 4}, {"g", 3}, {"f", 2}, {"e", 1}}},
		{4, []TopValue{{"h", 4}, {"g", 3}, {"f", 2}, {"e", 1}}},
		{6, []TopValue{{"h", 2}, {"g", 1}}},
	} {
		t.Run(fmt.Sprintf("prunes for a value of %v", tc.v), func(t *testing.T) {
			tp := NewTop(100)
			for i := range 8 {
				tp.Add(float64(i+1), []byte{byte('a' + i)})
			}
			capped(tp, tp.Bytes(), func() { tp.Add(tc.v, make([]byte, 64)) })
			if got := tp.TopShared(10, 0, nil); !slices.Equal(got, tc.want) {
				t.Errorf("held %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("too long for the cap", func(t *testing.T) {
		tp := NewTop(10)
		capped(tp, TopKind(10, 1).Floor, func() { tp.Add(5, make([]byte, 4096)) })
		if got := tp.TopShared(10, 0, nil); len(got) != 0 || tp.Bound() != 5 || tp.Total() != 5 {
			t.Fatalf("held %v, bound %v, total %v: want nothing held, bound 5", got, tp.Bound(), tp.Total())
		}
	})
}

// checkTopBound checks what tp reports against the exact sums.
func checkTopBound(t *testing.T, tp *Top, exact map[string]float64) {
	t.Helper()
	eps := tp.Bound()
	held := map[string]bool{}
	for _, g := range tp.TopShared(len(exact), 0, nil) {
		c := exact[g.Item]
		if g.Sum > c*(1+1e-12) || c-g.Sum > eps*(1+1e-9)+1e-9 {
			t.Fatalf("%.20s… reported %v, exact %v, bound %v", g.Item, g.Sum, c, eps)
		}
		held[g.Item] = true
	}
	for item, c := range exact {
		if c > eps*(1+1e-9)+1e-9 && !held[item] {
			t.Fatalf("%.20s… left out with exact %v above the bound %v", item, c, eps)
		}
	}
}

// zipfDraw is a Zipf(s) draw from 1 … n.
func zipfDraw(r *rand.Rand, s float64, n int) int {
	z := rand.NewZipf(r, s, 1, uint64(n-1))
	return int(z.Uint64()) + 1
}
