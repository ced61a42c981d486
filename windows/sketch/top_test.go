package sketch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/internal/testutil/reference"
	"github.com/logwindow/logwindow_exporter/windows"
)

// topValues is the number of distinct values the streams draw from.
const topValues = 100_000

var topNames = func() []string {
	names := make([]string, topValues)
	for i := range names {
		names[i] = "/p/" + strconv.Itoa(i)
	}
	return names
}()

// zipf draws value ids with probability ∝ 1/(rank+1)^s over topValues values (any s > 0,
// where math/rand's Zipf needs s > 1).
type zipf []float64

func newZipf(s float64) zipf {
	cdf := make(zipf, topValues)
	acc := 0.0
	for i := range cdf {
		acc += math.Pow(float64(i+1), -s)
		cdf[i] = acc
	}
	return cdf
}

func (z zipf) draw(r *rand.Rand) int32 {
	i, _ := slices.BinarySearch(z, r.Float64()*z[len(z)-1])
	return int32(min(i, len(z)-1))
}

// hit is one line: its second, its value's id and its weight (1 for a counting rule).
type hit struct {
	at int64
	id int32
	w  float64
}

type topTick struct {
	now  int64
	adds []hit
	read bool
}

// topStream runs secs seconds from base, adding what add returns for each second and
// reading the windows now and then, around slot edges and at the seconds reads says.
func topStream(r *rand.Rand, secs int64, reads func(now int64) bool, add func(now int64) []hit) []topTick {
	out := make([]topTick, 0, secs)
	for now := int64(base); now < base+secs; now++ {
		m := now % 3600
		read := r.IntN(200) == 0 || now%600 == 599 || m == 0 || m == 9 || (reads != nil && reads(now))
		out = append(out, topTick{now: now, adds: add(now), read: read})
	}
	return out
}

// zipfLines returns n lines at or up to two seconds before now, drawn from z, each weighing
// weight(r).
func zipfLines(r *rand.Rand, z zipf, now int64, n int, weight func(r *rand.Rand) float64) []hit {
	out := make([]hit, n)
	for i := range out {
		out[i] = hit{now - r.Int64N(3), z.draw(r), weight(r)}
	}
	return out
}

func one(*rand.Rand) float64 { return 1 }

const topSecs = 3 * 3600

// edgeBurst is when the value hot only at the old edge of the windows is hot: ten seconds
// of 40 lines each, in one 10 s slot.
const edgeBurst = base + 600

// topStreams are the reference test's streams. separated marks those whose top values are
// far enough apart that the exact top k must come out, in order.
var topStreams = []struct {
	name      string
	separated bool
	gen       func(r *rand.Rand) []topTick
}{
	{"zipf 0.8", false, zipfStream(0.8, one)},
	{"zipf 1.0", false, zipfStream(1.0, one)},
	{"zipf 1.2", false, zipfStream(1.2, one)},
	{"zipf 1.5", false, zipfStream(1.5, one)},
	{"zipf 1.1 weighted", false, zipfStream(1.1, func(r *rand.Rand) float64 { return float64(1 + r.IntN(1000)) })},
	{"heavy value changes every minute", false, func(r *rand.Rand) []topTick {
		uniform := newZipf(1e-9)
		return topStream(r, topSecs, nil, func(now int64) []hit {
			hs := zipfLines(r, uniform, now, r.IntN(6), one)
			hot := int32(now / 60 % topValues)
			for range 4 + r.IntN(6) {
				hs = append(hs, hit{now, hot, 1})
			}
			return hs
		})
	}},
	{"many values tied", false, func(r *rand.Rand) []topTick {
		next := int32(0)
		return topStream(r, topSecs, nil, func(now int64) []hit {
			hs := make([]hit, 7)
			for i := range hs {
				hs[i] = hit{now, next, 1}
				next = (next + 1) % 1000
			}
			return hs
		})
	}},
	{"hot only at the old edge", false, func(r *rand.Rand) []topTick {
		z := newZipf(1.1)
		// Read every second around the moment the burst reaches each window's old edge.
		reads := func(now int64) bool {
			for _, w := range topWindows {
				if d := now - edgeBurst - int64(w/time.Second); d >= -15 && d <= 25 {
					return true
				}
			}
			return false
		}
		return topStream(r, topSecs, reads, func(now int64) []hit {
			hs := zipfLines(r, z, now, r.IntN(10), one)
			if now >= edgeBurst && now < edgeBurst+10 {
				for range 40 {
					hs = append(hs, hit{now, topValues - 1, 1})
				}
			}
			return hs
		})
	}},
	{"late into sealed slots of every wheel", false, func(r *rand.Rand) []topTick {
		z := newZipf(1.1)
		return topStream(r, topSecs, nil, func(now int64) []hit {
			hs := zipfLines(r, z, now, r.IntN(12), one)
			for i := range hs {
				switch x := r.IntN(20); {
				case x == 0:
					hs[i].at = now - 10 - r.Int64N(400) // a sealed 10 s slot, a minute's
				case x == 1:
					hs[i].at = now - r.Int64N(7200) // an hour's, up to the longest window
				}
			}
			return hs
		})
	}},
	{"well separated heavy values", true, func(r *rand.Rand) []topTick {
		uniform := newZipf(1e-9)
		return topStream(r, topSecs, nil, func(now int64) []hit {
			hs := zipfLines(r, uniform, now, r.IntN(5), one)
			for i, n := range []int{13, 10, 8, 6, 4, 2, 1} {
				for range n {
					hs = append(hs, hit{now, int32(i), 1})
				}
			}
			return hs
		})
	}},
}

func zipfStream(s float64, weight func(r *rand.Rand) float64) func(r *rand.Rand) []topTick {
	return func(r *rand.Rand) []topTick {
		z := newZipf(s)
		return topStream(r, topSecs, nil, func(now int64) []hit {
			return zipfLines(r, z, now, r.IntN(12), weight)
		})
	}
}

var topWindows = []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 2 * time.Hour}

// topCapacities are the capacities the reference test runs at once; topK values are
// reported from each.
var topCapacities = []int{40, 400}

const topK = 5

// TestWindowedTop is the reference model for the windowed top values: every line is stored
// with its second, value and weight, and each read compares every window's summary with
// the exact sums per value from the start of the window's edge slot through now (as documented:
// 10 s slots for windows ≤ 5m, 1 min ≤ 1h, 1 h beyond): the window's total; the error
// bound at most total/(capacity+1); every reported sum at most the bound below the exact
// one and never above it; no value left out whose exact sum beats the k-th reported (or
// the threshold) by more than the bound; and, wherever the exact top k+1 are further apart
// than the bound, exactly the top k in order.
func TestWindowedTop(t *testing.T) {
	var kinds []windows.SummaryKind
	for _, c := range topCapacities {
		kinds = append(kinds, TopKind(c, 1))
	}
	l, err := windows.NewLayout(topWindows, windows.Options{Summaries: kinds})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range topStreams {
		t.Run(st.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 13))
			ticks := st.gen(r)
			if testing.Short() || race.Enabled {
				ticks = ticks[:len(ticks)/4]
			}
			s := l.NewSeries()
			dst := l.NewSummaries()
			var held []hit
			item := make([][]byte, 1)
			reads, separated, checks := 0, 0, 0
			exact := make([]map[int32]float64, len(topWindows))
			totals := make([]float64, len(topWindows))
			for _, tk := range ticks {
				for _, h := range tk.adds {
					item[0] = []byte(topNames[h.id])
					if p := s.AddItems(tk.now, h.at, h.w, item); p != windows.Placed {
						t.Fatalf("add at %d of %d: %v", h.at, tk.now, p)
					}
					held = append(held, h)
				}
				if !tk.read {
					continue
				}
				reads++
				held = slices.DeleteFunc(held, func(h hit) bool { return h.at < tk.now-3*3600 })
				for i, w := range topWindows {
					exact[i], totals[i] = map[int32]float64{}, 0
					edge := reference.SummaryEdge(tk.now, w)
					for _, h := range held {
						if h.at >= edge && h.at <= tk.now {
							exact[i][h.id] += h.w
							totals[i] += h.w
						}
					}
				}
				s.ReadSummaries(tk.now, dst)
				for i, w := range topWindows {
					for j := range topCapacities {
						tp := dst[i*len(kinds)+j].(*Top)
						for _, atLeast := range []float64{0, totals[i] / 50} {
							sep, err := checkTop(tp, exact[i], totals[i], topK, atLeast)
							if err != nil {
								t.Fatalf("read at %+d, window %v, capacity %d, min %v: %v", tk.now-base, w, topCapacities[j], atLeast, err)
							}
							checks++
							if sep {
								separated++
							}
						}
					}
				}
			}
			if reads < 10 {
				t.Fatalf("only %d reads", reads)
			}
			// The exact order is checked wherever the values are far enough apart; on the
			// stream made for it, that must be most windows read.
			if st.separated && separated < checks/4 {
				t.Fatalf("top k checked in order at %d of %d window reads", separated, checks)
			}
			t.Logf("%d reads; exact top %d checked in order at %d of %d", reads, topK, separated, checks)
		})
	}
}

// checkTop compares a window's summary with its exact sums; separated reports whether
// the exact top k+1 were further apart than the bound, so that the order was checked.
// valueSum is a value's exact sum in a window.
type valueSum struct {
	id int32
	c  float64
}

// topSums returns the n greatest exact sums in the order Top reports them: checkTop
// needs no more in order (a sort of every window's sums at each read took half the test).
func topSums(exact map[int32]float64, n int) []valueSum {
	top := make([]valueSum, 0, n+1)
	for id, c := range exact {
		v := valueSum{id, c}
		if i, _ := slices.BinarySearchFunc(top, v, sumOrder); i < n {
			top = slices.Insert(top, i, v)[:min(len(top)+1, n)]
		}
	}
	return top
}

// sumOrder is the order Top reports values in.
func sumOrder(a, b valueSum) int {
	return topOrder(TopValue{topNames[a.id], a.c}, TopValue{topNames[b.id], b.c})
}

func checkTop(tp *Top, exact map[int32]float64, total float64, k int, atLeast float64) (separated bool, err error) {
	if tp.Total() != total {
		return false, fmt.Errorf("total %v, want %v", tp.Total(), total)
	}
	eps := tp.Bound()
	if limit := total / float64(tp.capacity+1); eps > limit*(1+1e-12) {
		return false, fmt.Errorf("bound %v above total/(capacity+1) = %v", eps, limit)
	}
	got := tp.TopShared(k, atLeast, nil)
	if len(got) > k {
		return false, fmt.Errorf("%d values reported, k is %d", len(got), k)
	}
	reported := map[string]bool{}
	for i, g := range got {
		if i > 0 && topOrder(got[i-1], g) >= 0 {
			return false, fmt.Errorf("reported out of order: %v", got)
		}
		id, _ := strconv.Atoi(g.Item[len("/p/"):])
		c := exact[int32(id)]
		if g.Sum > c || c-g.Sum > eps+1e-9 || g.Sum < atLeast {
			return false, fmt.Errorf("%s reported %v, exact %v, bound %v, min %v", g.Item, g.Sum, c, eps, atLeast)
		}
		reported[g.Item] = true
	}
	floor := atLeast
	if len(got) == k {
		floor = max(floor, got[k-1].Sum)
	}
	var left []valueSum // the greatest left out
	for id, c := range exact {
		if v := (valueSum{id, c}); c > floor+eps+1e-9 && !reported[topNames[id]] && (left == nil || sumOrder(v, left[0]) < 0) {
			left = []valueSum{v}
		}
	}
	if left != nil {
		return false, fmt.Errorf("%s left out with exact %v, above %v + bound %v; reported %v", topNames[left[0].id], left[0].c, floor, eps, got)
	}
	if atLeast > 0 || len(exact) < k {
		return false, nil
	}
	all := append(topSums(exact, k+1), valueSum{-1, 0})
	for i := range k {
		if all[i].c-all[i+1].c <= eps {
			return false, nil
		}
	}
	for i := range k {
		if got[i].Item != topNames[all[i].id] {
			return false, fmt.Errorf("separated by more than %v: reported %v, exact top %v", eps, got, all[:k])
		}
	}
	return true, nil
}

// TestTopMerge merges summaries of parts of a stream in random trees, as windows do across
// slots and again across windows, and checks the merged bound against the exact sums.
func TestTopMerge(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity int
		s        float64
		parts    int
	}{
		{"capacity 1", 1, 1.1, 5},
		{"zipf 0.8 into 64 parts", 50, 0.8, 64},
		{"zipf 1.5 into 300 parts", 20, 1.5, 300},
		{"uniform into 8 parts", 100, 1e-9, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, uint64(tc.parts)))
			z := newZipf(tc.s)
			exact := map[int32]float64{}
			total := 0.0
			parts := make([]*Top, tc.parts)
			for i := range parts {
				parts[i] = NewTop(tc.capacity)
				for range r.IntN(2000) {
					id, w := z.draw(r), float64(1+r.IntN(3))
					parts[i].Add(w, []byte(topNames[id]))
					exact[id] += w
					total += w
				}
			}
			for len(parts) > 1 {
				i := r.IntN(len(parts) - 1)
				parts[i].Merge(parts[i+1])
				parts = slices.Delete(parts, i+1, i+2)
			}
			if _, err := checkTop(parts[0], exact, total, topK, 0); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTopIgnores checks that values which cannot rank (zero, negative, NaN, infinite) are
// left out of the sums and the total, and that Reset empties the summary.
func TestTopIgnores(t *testing.T) {
	tp := NewTop(3)
	for _, v := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1)} {
		tp.Add(v, []byte("x"))
	}
	tp.Add(2, []byte("a"))
	tp.Add(1, []byte("b"))
	tp.Add(2, []byte("b"))
	want := []TopValue{{"a", 2}, {"b", 3}}
	slices.SortFunc(want, topOrder)
	if got := tp.TopShared(10, 0, nil); !slices.Equal(got, want) || tp.Total() != 5 || tp.Bound() != 0 {
		t.Fatalf("top %v total %v bound %v, want %v total 5 bound 0", got, tp.Total(), tp.Bound(), want)
	}
	if got := tp.TopShared(1, 0, nil); !slices.Equal(got, want[:1]) {
		t.Fatalf("top 1: %v", got)
	}
	if got := tp.TopShared(2, 2.5, nil); !slices.Equal(got, want[:1]) {
		t.Fatalf("top 2 from 2.5: %v", got)
	}
	tp.Reset()
	if got := tp.TopShared(10, 0, nil); len(got) != 0 || tp.Total() != 0 || len(tp.counts) != 0 {
		t.Fatalf("after reset: %v total %v", got, tp.Total())
	}
}

// TestTopPruneStep works one prune through by hand: with capacity 2, four values held and
// a fifth arriving, the third largest count (5) is taken from every count, which leaves a
// at 4 and b at 2 and drops c and d, and the bound is the mass lost over capacity+1, 16/3,
// at least each value's error (5 at most). Taking the second largest instead (7) would
// leave b's error, 7, above its bound, 20/3, and taking the fourth (1) would keep three
// counters, more than the capacity: the randomized tests' errors stay too far below the
// bound to tell these apart.
func TestTopPruneStep(t *testing.T) {
	tp := NewTop(2)
	for _, v := range []struct {
		item string
		n    float64
	}{{"a", 9}, {"b", 7}, {"c", 5}, {"d", 1}, {"e", 1}} {
		tp.Add(v.n, []byte(v.item))
	}
	want := []TopValue{{"a", 4}, {"b", 2}, {"e", 1}}
	if got := tp.TopShared(5, 0, nil); !slices.Equal(got, want) || tp.Total() != 23 || tp.Bound() != 16.0/3 {
		t.Fatalf("top %v total %v bound %v, want %v total 23 bound 16/3", got, tp.Total(), tp.Bound(), want)
	}
}

// TestTopItemsKeptApart checks the arena and table that hold a Top's items against a
// naive map. The items are hard to keep apart: empty, prefixes of one another, equal
// lengths, from a two-letter alphabet. The Top is added to, merged into, sealed and
// reset in turn. With room for every item nothing is pruned, so every sum must be exact;
// with room for few, every reported sum must lie within the bound below the true one.
func TestTopItemsKeptApart(t *testing.T) {
	for _, capacity := range []int{100_000, 7} {
		t.Run(fmt.Sprint("capacity ", capacity), func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, uint64(capacity)))
			item := func() []byte {
				b := make([]byte, r.IntN(12))
				for i := range b {
					b[i] = "ab"[r.IntN(2)]
				}
				return b
			}
			tp, want := NewTop(capacity), map[string]float64{}
			for round := range 40 {
				for range 500 {
					it, v := item(), float64(1+r.IntN(5))
					tp.Add(v, it)
					want[string(it)] += v
				}
				other := NewTop(capacity)
				for range 200 {
					it, v := item(), float64(1+r.IntN(5))
					other.Add(v, it)
					want[string(it)] += v
				}
				tp.Merge(other)
				if round%3 == 0 {
					tp.Seal()
				}
				got := tp.TopShared(math.MaxInt32, 0, nil)
				seen := map[string]bool{}
				for _, g := range got {
					if seen[g.Item] {
						t.Fatalf("round %d: %q reported twice", round, g.Item)
					}
					seen[g.Item] = true
					if w := want[g.Item]; g.Sum > w || g.Sum < w-tp.Bound() {
						t.Fatalf("round %d: %q sums %v, true %v, bound %v", round, g.Item, g.Sum, w, tp.Bound())
					}
				}
				if capacity > len(want) && (len(got) != len(want) || tp.Bound() != 0) {
					t.Fatalf("round %d: %d items reported, %d added, bound %v", round, len(got), len(want), tp.Bound())
				}
				if round%10 == 9 {
					tp.Reset()
					clear(want)
					if got := tp.TopShared(math.MaxInt32, 0, nil); len(got) != 0 || tp.Total() != 0 {
						t.Fatalf("after reset: %v", got)
					}
				}
			}
		})
	}
}

// TestTopPicksAsSorting checks Top against sorting every value, with many ties, for k
// below, at and above the values held, appended after what dst holds already; the items
// are copies, left intact when the summary is reset and refilled.
func TestTopPicksAsSorting(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	tp := NewTop(1000)
	for range 5000 {
		tp.Add(float64(1+rnd.IntN(20)), fmt.Appendf(nil, "/v/%d", rnd.IntN(300)))
	}
	var all []TopValue
	all = tp.TopShared(math.MaxInt32, 0, all)
	slices.SortFunc(all, topOrder)
	for _, c := range []struct {
		k       int
		atLeast float64
	}{{1, 0}, {7, 0}, {100, 0}, {len(all), 0}, {len(all) + 5, 0}, {50, 60}} {
		t.Run(fmt.Sprintf("k=%d,min=%v", c.k, c.atLeast), func(t *testing.T) {
			want := slices.DeleteFunc(slices.Clone(all), func(v TopValue) bool { return v.Sum < c.atLeast })
			want = want[:min(c.k, len(want))]
			prefix := []TopValue{{"kept", 1}}
			got := tp.TopShared(c.k, c.atLeast, slices.Clone(prefix))
			if !slices.Equal(got[:1], prefix) || !slices.Equal(got[1:], want) {
				t.Fatalf("Top(%d, %v) = %v…, want %v…", c.k, c.atLeast, got[:min(len(got), 4)], want[:min(len(want), 3)])
			}
		})
	}
	got := tp.TopShared(10, 0, nil)
	want := slices.Clone(got)
	for i := range want {
		want[i].Item = strings.Clone(want[i].Item)
	}
	tp.Reset()
	for range 5000 {
		tp.Add(1, []byte("/overwritten/"))
	}
	if !slices.Equal(got, want) {
		t.Errorf("the items reported changed with the summary: %v, want %v", got, want)
	}
}

// TestTopDecodedInAnyOrder decodes summaries whose counters are written in an order other
// than their items' in the arena (which a Top's prune moves items down in), then prunes
// them by adding new items and merging: every item's sum must stay within the bound below
// its true one, as against a naive map.
func TestTopDecodedInAnyOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order func(r *rand.Rand, n int) []int
	}{
		{"reversed", func(_ *rand.Rand, n int) []int {
			o := make([]int, n)
			for i := range o {
				o[i] = n - 1 - i
			}
			return o
		}},
		{"shuffled", func(r *rand.Rand, n int) []int { return r.Perm(n) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, uint64(len(tc.name))))
			const capacity = 6
			src, want := NewTop(capacity), map[string]float64{}
			for i := range 2 * capacity {
				// The largest counts first in the arena, mixed with small ones, so that a
				// prune in the wrong order would write over items it keeps.
				it, v := sizedItem(i, 1+i%5), float64(1+(2*capacity-i)*7%(2*capacity+1))
				src.Add(v, it)
				want[string(it)] += v
			}
			tp := NewTop(capacity)
			if err := tp.UnmarshalBinary(encodeInOrder(src, tc.order(r, len(src.counts)))); err != nil {
				t.Fatal(err)
			}
			for i := range 200 {
				it, v := sizedItem(100+r.IntN(40), 1+i%7), float64(1+r.IntN(3))
				tp.Add(v, it)
				want[string(it)] += v
				if i%50 == 49 {
					tp.Merge(src)
					for _, c := range src.counts {
						want[string(src.arena[c.off:c.off+c.n])] += c.count
					}
				}
				for _, g := range tp.TopShared(math.MaxInt32, 0, nil) {
					if w := want[g.Item]; g.Sum > w || g.Sum < w-tp.Bound() {
						t.Fatalf("after add %d: %q sums %v, true %v, bound %v", i, g.Item, g.Sum, w, tp.Bound())
					}
				}
				for j := 1; j < len(tp.counts); j++ {
					if a, b := tp.counts[j-1], tp.counts[j]; a.off+a.n > b.off {
						t.Fatalf("after add %d: counters %d and %d out of their items' order: %+v, %+v", i, j-1, j, a, b)
					}
				}
			}
		})
	}
}

// encodeInOrder is src as AppendBinary writes it but with its counters in the given order:
// AppendBinary writes them in the order they are in.
func encodeInOrder(src *Top, order []int) []byte {
	shuffled := Top{total: src.total, kept: src.kept, loss: src.loss, arena: src.arena}
	for _, i := range order {
		shuffled.counts = append(shuffled.counts, src.counts[i])
	}
	enc, _ := shuffled.AppendBinary(nil)
	return enc
}

// TestTopEmptyItemRoundTrips: an empty item shares its offset in the arena with the item
// added after it; a summary holding both decodes as it was encoded, whatever order the
// decoder's sort leaves the two counters in.
func TestTopEmptyItemRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity int
		items    int
	}{
		{"few counters", 20, 10},
		{"many counters", 64, 100},
		{"full", 200, 399},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(tc.items)))
			for trial := range 50 {
				src := NewTop(tc.capacity)
				for i := range tc.items {
					src.Add(1, sizedItem(i, 1+r.IntN(6)))
					if r.IntN(tc.items) == 0 || i == trial%tc.items {
						src.Add(1, nil)
					}
				}
				enc, err := src.AppendBinary(nil)
				if err != nil {
					t.Fatal(err)
				}
				got := NewTop(tc.capacity)
				if err := got.UnmarshalBinary(enc); err != nil {
					t.Fatalf("trial %d: a summary's own encoding does not decode: %v", trial, err)
				}
			}
		})
	}
}

// TestTopDecodesTiedOffsets: counters written in any order decode (TestTopDecodedInAnyOrder),
// also when an empty item lies where the next item starts.
func TestTopDecodesTiedOffsets(t *testing.T) {
	src := NewTop(8)
	src.Add(2, []byte("ab"))
	src.Add(3, nil)
	src.Add(4, []byte("cd"))
	for _, tc := range []struct {
		name  string
		order []int
	}{{"arena order", []int{0, 1, 2}}, {"empty item last", []int{0, 2, 1}}, {"reversed", []int{2, 1, 0}}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := NewTop(8).UnmarshalBinary(encodeInOrder(src, tc.order)); err != nil {
				t.Errorf("counters %v: %v", src.counts, err)
			}
		})
	}
}

// countEach is Merge as counting each of from's counters in turn, the reference a merge
// into an empty summary (take) must match.
func countEach(t, from *Top) {
	t.total += from.total
	t.loss += from.loss
	for _, c := range from.counts {
		t.count(from.arena[c.off:c.off+c.n], c.count)
	}
}

// sameTop reports how got differs from want: counters, items, sums, losses, room, and a
// table that finds every item.
func sameTop(got, want *Top) error {
	if len(got.counts) != len(want.counts) || got.total != want.total || got.kept != want.kept || got.loss != want.loss {
		return fmt.Errorf("%d counters, total %v, kept %v, loss %v; want %d, %v, %v, %v", len(got.counts), got.total, got.kept, got.loss, len(want.counts), want.total, want.kept, want.loss)
	}
	if !slices.Equal(got.counts, want.counts) || string(got.arena) != string(want.arena) {
		return fmt.Errorf("counters or items differ")
	}
	if got.buffers() != want.buffers() {
		return fmt.Errorf("buffers %+v, want %+v", got.buffers(), want.buffers())
	}
	for i, c := range got.counts {
		item := got.arena[c.off : c.off+c.n]
		if _, j := got.find(item, itemHash(item)); j != i {
			return fmt.Errorf("the table finds counter %d of %q at %d", i, item, j)
		}
	}
	return nil
}

// TestTopMergeIntoEmpty checks a merge into an empty summary, which takes the counters as
// they are, against counting each in turn: the same counters, items, sums and room, for
// sources of every size up to twice the capacity (open, sealed, pruned, decoded, empty
// with a total), into summaries fresh, reset with a smaller or larger table, or capped;
// and the two stay the same through the adds and merges that follow.
func TestTopMergeIntoEmpty(t *testing.T) {
	const capacity = 50
	r := rand.New(rand.NewPCG(3, 3))
	z := newZipf(1.1)
	source := func(lines int, seal, decode bool) *Top {
		s := NewTop(capacity)
		for range lines {
			s.Add(float64(1+r.IntN(3)), []byte(topNames[z.draw(r)]))
		}
		if seal {
			s.Seal()
		}
		if decode {
			enc, _ := s.AppendBinary(nil)
			d := NewTop(capacity)
			if err := d.UnmarshalBinary(enc); err != nil {
				t.Fatal(err)
			}
			return d
		}
		return s
	}
	// What a summary went through before it is empty and merged into; big is a source
	// of many counters.
	into := map[string]func(d, big *Top){
		"fresh":         func(*Top, *Top) {},
		"reset small":   func(d, _ *Top) { d.Add(1, []byte("x")); d.Reset() },
		"reset large":   func(d, big *Top) { d.Merge(big); d.Reset() },
		"pruned empty":  func(d, _ *Top) { d.Add(1, []byte("x")); d.subtract(2) },
		"capped":        func(d, _ *Top) { d.Cap(4 << 10) },
		"capped, reset": func(d, big *Top) { d.Merge(big); d.Cap(4 << 10); d.Reset() },
	}
	for _, lines := range []int{0, 1, 10, 60, 99, 100, 101, 400, 5000} {
		for _, kind := range []struct {
			name         string
			seal, decode bool
		}{{"open", false, false}, {"sealed", true, false}, {"decoded", false, true}} {
			for name, prepare := range into {
				t.Run(fmt.Sprintf("%d lines/%s/into %s", lines, kind.name, name), func(t *testing.T) {
					f, big := source(lines, kind.seal, kind.decode), source(5000, false, false)
					got, want := NewTop(capacity), NewTop(capacity)
					prepare(got, big)
					prepare(want, big)
					got.Merge(f)
					countEach(want, f)
					if err := sameTop(got, want); err != nil {
						t.Fatal(err)
					}
					for i := range 300 {
						item := []byte(topNames[z.draw(r)])
						got.Add(2, item)
						want.Add(2, item)
						if i%100 == 99 {
							g := source(r.IntN(3000), r.IntN(2) == 0, false)
							got.Merge(g)
							countEach(want, g)
						}
					}
					if err := sameTop(got, want); err != nil {
						t.Fatalf("after adds and merges: %v", err)
					}
				})
			}
		}
	}
}
