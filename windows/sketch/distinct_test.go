package sketch

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/internal/testutil/reference"
	"github.com/logwindow/logwindow_exporter/windows"
)

// distinctBound is the documented bound on a distinct count: within max(2, 2 %) of the exact
// count, so exact or off by at most 2 up to 100 values.
func distinctBound(got uint64, exact int) bool {
	return math.Abs(float64(got)-float64(exact)) <= max(2, 0.02*float64(exact))
}

// itemOf is the text counted for id: 8 bytes, except id 0, which is the empty item (a
// template that renders to nothing is one value too).
func itemOf(id uint64, buf *[8]byte) []byte {
	if id == 0 {
		return buf[:0]
	}
	binary.LittleEndian.PutUint64(buf[:], id)
	return buf[:]
}

func TestDistinct(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ids   func(i int) uint64
		adds  int
		exact int
	}{
		{"nothing", func(int) uint64 { return 1 }, 0, 0},
		{"the empty item", func(int) uint64 { return 0 }, 5, 1},
		{"one value 100,000 times", func(int) uint64 { return 7 }, 100_000, 1},
		{"2 values", func(i int) uint64 { return uint64(i % 2) }, 100, 2},
		{"100 values", func(i int) uint64 { return uint64(i % 100) }, 1000, 100},
		{"10,000 values", func(i int) uint64 { return uint64(i % 10_000) }, 30_000, 10_000},
		{"1,000,000 unique", func(i int) uint64 { return uint64(i + 1) }, 1_000_000, 1_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDistinct()
			var buf [8]byte
			for i := range tc.adds {
				d.Add(0, itemOf(tc.ids(i), &buf))
			}
			if got := d.Count(); !distinctBound(got, tc.exact) {
				t.Fatalf("count %d, exact %d", got, tc.exact)
			}
			d.Reset()
			if got := d.Count(); got != 0 {
				t.Fatalf("count %d after Reset", got)
			}
		})
	}
}

// TestDistinctMerge merges overlapping sketches, sparse and dense, as a window's slots are.
func TestDistinctMerge(t *testing.T) {
	for _, size := range []int{50, 5_000, 80_000} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			parts := make([]*Distinct, 4)
			var buf [8]byte
			for k := range parts {
				parts[k] = NewDistinct()
				// Part k holds ids [k·size/2, k·size/2 + size): each overlaps the next by half.
				for id := k * size / 2; id < k*size/2+size; id++ {
					parts[k].Add(0, itemOf(uint64(id)+1, &buf))
				}
			}
			into := NewDistinct()
			into.Merge(NewDistinct()) // an empty slot changes nothing
			for _, p := range parts {
				into.Merge(p)
			}
			exact := 3*size/2 + size
			if got := into.Count(); !distinctBound(got, exact) {
				t.Fatalf("merged count %d, exact %d", got, exact)
			}
			for k, p := range parts {
				if got := p.Count(); !distinctBound(got, size) {
					t.Fatalf("part %d changed by the merge: %d, exact %d", k, got, size)
				}
			}
		})
	}
}

// TestDistinctMergeAtSparseBound merges two overlapping sketches whose union holds one key
// less than the sparse bound, the bound, or one more, by a read's Merge and a wheel's
// Absorb, sealed or not, split anywhere: the union is exact and sparse up to the bound,
// and dense past it.
func TestDistinctMergeAtSparseBound(t *testing.T) {
	var buf [8]byte
	for _, split := range []int{1, 100, maxSparse / 2, maxSparse - 1} {
		for _, total := range []int{maxSparse - 1, maxSparse, maxSparse + 1} {
			for _, sealed := range []bool{false, true} {
				for _, absorb := range []bool{false, true} {
					name := fmt.Sprintf("split %d, %d keys, sealed %v, absorb %v", split, total, sealed, absorb)
					a, b := NewDistinct(), NewDistinct()
					for id := range total {
						if id < split {
							a.Add(0, itemOf(uint64(id)+1, &buf))
						}
						if id >= split-50 { // b overlaps a by up to 50 keys
							b.Add(0, itemOf(uint64(id)+1, &buf))
						}
					}
					if sealed {
						a.Seal()
						b.Seal()
					}
					into := NewDistinct()
					for _, from := range []*Distinct{a, b} {
						if absorb {
							into.Absorb(from)
						} else {
							into.Merge(from)
						}
					}
					got := into.Count()
					switch exact := total <= maxSparse; {
					case exact && (got != uint64(total) || into.Precision() != 0):
						t.Errorf("%s: count %d at precision %d, want exactly %d", name, got, into.Precision(), total)
					case !exact && (!distinctBound(got, total) || into.Precision() != DistinctPrecision):
						t.Errorf("%s: count %d at precision %d, want about %d, dense", name, got, into.Precision(), total)
					}
				}
			}
		}
	}
}

// TestDistinctMemoryBounded checks that a sketch holds at most 64 KiB of keys or registers
// whatever the number of items, sealed or not.
func TestDistinctMemoryBounded(t *testing.T) {
	sizes := []int{1, 1_000, maxSparse, maxSparse + 1, 100_000, 2_000_000}
	if testing.Short() || race.Enabled {
		sizes = sizes[:5]
	}
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			d := NewDistinct()
			var buf [8]byte
			for id := range n {
				d.Add(0, itemOf(uint64(id)+1, &buf))
			}
			for _, stage := range []string{"open", "sealed"} {
				if bytes := 4*cap(d.set) + 8*cap(d.regs); bytes > 64<<10 {
					t.Errorf("%s: %d bytes of keys and registers for %d items", stage, bytes, n)
				}
				d.Seal()
			}
		})
	}
}

// TestDistinctSeal checks that a sealed sketch keeps just its keys and the same count, and
// still takes late items (new ones and repeats, up to turning dense) and merges as before.
// The late items unseal it into the table its adds would have made: as many bytes as a
// sketch never sealed, at 12 and 24 keys too, which fill theirs to three quarters exactly;
// under a cap that holds that table, a late item keeps it sparse (exact).
func TestDistinctSeal(t *testing.T) {
	for _, tc := range []struct{ before, late int }{{0, 3}, {1, 0}, {5, 5}, {12, 0}, {24, 0}, {24, 1}, {2_000, 100}, {12_000, 1_000}} {
		t.Run(fmt.Sprint(tc.before, "+", tc.late), func(t *testing.T) {
			d, plain := NewDistinct(), NewDistinct()
			var buf [8]byte
			for id := range tc.before {
				d.Add(0, itemOf(uint64(id)+1, &buf))
				plain.Add(0, itemOf(uint64(id)+1, &buf))
			}
			count := d.Count()
			d.Seal()
			if d.regs == nil && len(d.set) != int(d.n) {
				t.Errorf("sealed: %d keys in room for %d", d.n, len(d.set))
			}
			if got := d.Count(); got != count {
				t.Fatalf("count %d after Seal, %d before", got, count)
			}
			// The late items: every earlier one again, and new ones.
			for id := range tc.before + tc.late {
				d.Add(0, itemOf(uint64(id)+1, &buf))
				plain.Add(0, itemOf(uint64(id)+1, &buf))
			}
			if got, want := d.Count(), plain.Count(); got != want {
				t.Errorf("count %d after late items, %d unsealed", got, want)
			}
			if got, want := d.Bytes(), plain.Bytes(); got != want {
				t.Errorf("%d bytes after late items, %d unsealed", got, want)
			}
			if got := d.Count(); !distinctBound(got, tc.before+tc.late) {
				t.Errorf("count %d, exact %d", got, tc.before+tc.late)
			}
			into := NewDistinct()
			into.Merge(d)
			if got, want := into.Count(), d.Count(); got != want {
				t.Errorf("merged count %d, sealed %d", got, want)
			}
		})
	}
	t.Run("capped to the table of 12 keys", func(t *testing.T) {
		d := NewDistinct()
		var buf [8]byte
		limit := distinctBytes + windows.HeapBytes(4*16)
		for id := range 12 {
			capped(d, limit, func() { d.Add(0, itemOf(uint64(id)+1, &buf)) })
		}
		d.Seal()
		capped(d, limit, func() { d.Add(0, itemOf(1, &buf)) })
		if d.Precision() != 0 || d.Count() != 12 || d.Bytes() > limit {
			t.Fatalf("a late item already counted: precision %d, count %d, %d bytes under a cap of %d", d.Precision(), d.Count(), d.Bytes(), limit)
		}
	})
}

// distinctStreams are the streams of the distinct reference test: each event's v is the id
// of the item it carries (itemOf), so the streams of the quantile test's shape carry items.
var distinctStreams = []struct {
	name string
	gen  func(r *rand.Rand) []tick
}{
	{"random clients, skewed, the empty item among them", func(r *rand.Rand) []tick {
		return stream(r, 0, 3*3600, func(now int64) []timed {
			vs := make([]timed, r.IntN(12))
			for i := range vs {
				// Half the lines from 50 busy clients, half from 20,000 others.
				id := r.Uint64N(50)
				if r.IntN(2) == 0 {
					id = 50 + r.Uint64N(20_000)
				}
				vs[i] = timed{now - r.Int64N(5), float64(id)}
			}
			return vs
		})
	}},
	{"late into sealed slots of every wheel", func(r *rand.Rand) []tick {
		return stream(r, 0, 3*3600, func(now int64) []timed {
			vs := make([]timed, r.IntN(12))
			for i := range vs {
				at := now
				switch x := r.IntN(20); {
				case x == 0:
					at -= min(now-base, 10+r.Int64N(400)) // a sealed 10 s slot, a minute's
				case x == 1:
					at -= r.Int64N(min(now-base, 20*3600) + 1) // an hour's, from the stream's start
				}
				vs[i] = timed{at, float64(1 + r.Uint64N(40_000))} // the longer windows turn dense
			}
			return vs
		})
	}},
	{"all values unique", func(r *rand.Rand) []tick {
		next := uint64(1)
		return stream(r, 0, 2*3600, func(now int64) []timed {
			vs := make([]timed, 15+r.IntN(10))
			for i := range vs {
				vs[i] = timed{now, float64(next)}
				next++
			}
			return vs
		})
	}},
	{"one value repeated", func(r *rand.Rand) []tick {
		// About a million lines of the same value (a quarter of that in short mode).
		return stream(r, 0, 2*3600, func(now int64) []timed {
			return slices.Repeat([]timed{{now - r.Int64N(3), 42}}, 1+r.IntN(280))
		})
	}},
	{"values return after the window", func(r *rand.Rand) []tick {
		return stream(r, 0, 3*3600, func(now int64) []timed {
			// 400 values live for 7 minutes, then rest for 14 (longer than 5m and 15m);
			// 300 others every other 70 minutes (longer than 1h).
			var vs []timed
			for range 3 {
				vs = append(vs, timed{now, float64(1 + uint64(now/420%3)*1000 + r.Uint64N(400))})
			}
			if now/4200%2 == 0 {
				vs = append(vs, timed{now, float64(10_000 + r.Uint64N(300))})
			}
			return vs
		})
	}},
	{"bursts at slot edges", func(r *rand.Rand) []tick {
		next := uint64(1_000_000)
		return stream(r, 0, 3*3600, func(now int64) []timed {
			var vs []timed
			for _, step := range []int64{10, 60, 3600} {
				if m := now % step; m == 0 || m == step-1 {
					// New values, and some of the last burst's again.
					for range 20 + r.IntN(200) {
						vs = append(vs, timed{now, float64(next)})
						next++
					}
					for range 20 {
						vs = append(vs, timed{now, float64(next - 1 - r.Uint64N(300))})
					}
				}
			}
			return vs
		})
	}},
}

// TestWindowedDistinct is the reference model for windowed distinct counts: every event is
// stored with its item, and each read compares every window's count with the exact number
// of different items among the events from the start of the window's edge slot (as for
// quantiles) through now, which must be within max(2, 2 %).
func TestWindowedDistinct(t *testing.T) {
	l, err := windows.NewLayout(defaultWindows, windows.Options{Summaries: []windows.SummaryKind{DistinctKind(1)}})
	if err != nil {
		t.Fatal(err)
	}
	seeds := 2
	if testing.Short() || race.Enabled {
		seeds = 1
	}
	for _, st := range distinctStreams {
		for seed := range seeds {
			t.Run(st.name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(seed), 12))
				ticks := st.gen(r)
				if testing.Short() || race.Enabled {
					ticks = ticks[:len(ticks)/4]
				}
				s := l.NewSeries()
				// last holds each item's newest second, and newest[t−from] how many items have
				// second t as their newest: the items of a window are those whose newest
				// second is at or after its edge.
				last := map[uint64]int64{}
				from := ticks[0].now - 10
				newest := make([]int, ticks[len(ticks)-1].now-from+1)
				dst := l.NewSummaries()
				var buf [8]byte
				reads, worst := 0, 0.0
				for _, tk := range ticks {
					for _, a := range tk.adds {
						id := uint64(a.v)
						if p := s.AddItems(tk.now, a.at, 1, [][]byte{itemOf(id, &buf)}); p != windows.Placed {
							t.Fatalf("add at %d of %d: %v", a.at, tk.now, p)
						}
						if prev, ok := last[id]; !ok || prev < a.at {
							if ok {
								newest[prev-from]--
							}
							newest[a.at-from]++
							last[id] = a.at
						}
					}
					if !tk.read {
						continue
					}
					reads++
					s.ReadSummaries(tk.now, dst)
					for i, w := range defaultWindows {
						exact := 0
						for _, n := range newest[max(0, reference.SummaryEdge(tk.now, w)-from):] {
							exact += n
						}
						got := dst[i].(*Distinct).Count()
						if !distinctBound(got, exact) {
							t.Fatalf("read at %d, window %v: %d distinct, exact %d", tk.now, w, got, exact)
						}
						if exact > 0 && math.Abs(float64(got)/float64(exact)-1) > 0.002 {
							t.Logf("w %v exact %d got %d", w, exact, got)
						}
						if exact > 0 {
							worst = max(worst, math.Abs(float64(got)/float64(exact)-1))
						}
					}
				}
				if reads < 5 {
					t.Fatalf("only %d reads", reads)
				}
				t.Logf("%d reads, %d values, worst relative error %.3f %%", reads, len(last), 100*worst)
			})
		}
	}
}

// distinctSource is a sketch of the ids [from, from+n) (id 0 is the empty item), sealed or
// not, held to limit bytes when limit > 0 (fewer registers): a slot as a wheel keeps it.
type distinctSource struct {
	from, n int
	sealed  bool
	limit   int
}

func (src distinctSource) sketch() *Distinct {
	d := NewDistinct()
	d.Cap(src.limit)
	var buf [8]byte
	for id := src.from; id < src.from+src.n; id++ {
		d.Add(0, itemOf(uint64(id), &buf))
	}
	if src.sealed {
		d.Seal()
	}
	return d
}

// distinctState is what a sketch holds: its keys, sorted, while sparse, else its
// registers and their precision.
func distinctState(d *Distinct) (keys []uint32, regs []uint64, p uint8) {
	if d.regs != nil {
		return nil, d.regs, d.p
	}
	for _, k := range d.set {
		if k != 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil, 0
}

// TestDistinctMergeAbsorb checks the merge a read makes (Merge: a table made for the
// keys of both, an empty sketch taking a source's keys as they are) against the one the
// wheels make (Absorb: key by key, as adds would), and both against the reference of
// their sources' keys: the same keys, or the same registers, whatever the sources and
// their order (sparse, sealed, dense at full or lower precision, empty, duplicates, one
// huge source, unions on either side of the sparse bound), into an uncapped sketch and a
// capped one.
func TestDistinctMergeAbsorb(t *testing.T) {
	full := distinctSource{from: 1, n: 100_000}
	r := rand.New(rand.NewPCG(5, 5))
	var random []distinctSource
	for range 40 {
		random = append(random, distinctSource{from: r.IntN(20_000), n: r.IntN(3_000), sealed: r.IntN(2) == 0})
	}
	for _, tc := range []struct {
		name    string
		sources []distinctSource
	}{
		{"nothing", nil},
		{"empty sources", []distinctSource{{}, {sealed: true}, {}}},
		{"the empty item", []distinctSource{{n: 1}, {n: 1, sealed: true}}},
		{"one source", []distinctSource{{from: 1, n: 3_000}}},
		{"one sealed source", []distinctSource{{from: 1, n: 3_000, sealed: true}}},
		{"all duplicates", slices.Repeat([]distinctSource{{from: 5, n: 2_000, sealed: true}}, 8)},
		{"the sparse bound exactly", []distinctSource{{from: 1, n: 8_000}, {from: 4_289, n: 8_000, sealed: true}}},
		{"one past the sparse bound", []distinctSource{{from: 1, n: 8_000}, {from: 4_290, n: 8_000, sealed: true}}},
		{"disjoint to the sparse bound", []distinctSource{{from: 1, n: 6_144}, {from: 6_145, n: 6_144, sealed: true}}},
		{"disjoint to one past the sparse bound", []distinctSource{{from: 1, n: 6_144}, {from: 6_145, n: 6_145}}},
		{"sparse sum past the bound, union within", []distinctSource{{from: 1, n: 9_000}, {from: 2, n: 9_000}, {from: 3, n: 9_000, sealed: true}}},
		{"one huge source first", []distinctSource{full, {from: 1, n: 500}, {from: 200_000, n: 3_000, sealed: true}}},
		{"one huge source last", []distinctSource{{from: 1, n: 500}, {from: 200_000, n: 3_000, sealed: true}, full}},
		{"dense among sparse", []distinctSource{{from: 1, n: 700}, {from: 50_000, n: 20_000}, {}, {from: 3, n: 700, sealed: true}}},
		{"lower precisions", []distinctSource{{from: 1, n: 3_000}, {from: 1, n: 5_000, limit: 4 << 10}, full, {from: 9, n: 2_000, limit: 1 << 10}}},
		{"random slots", random},
	} {
		for _, limit := range []int{0, 6 << 10, 40 << 10} {
			t.Run(fmt.Sprintf("%s/cap=%d", tc.name, limit), func(t *testing.T) {
				merged, absorbed := NewDistinct(), NewDistinct()
				merged.Cap(limit)
				absorbed.Cap(limit)
				union := map[uint32]bool{}
				for _, src := range tc.sources {
					merged.Merge(src.sketch())
					absorbed.Absorb(src.sketch())
					s := src.sketch()
					keys, _, _ := distinctState(s)
					for _, k := range keys {
						union[k] = true
					}
				}
				mk, mr, mp := distinctState(merged)
				ak, ar, ap := distinctState(absorbed)
				if !slices.Equal(mk, ak) || !slices.Equal(mr, ar) || mp != ap {
					t.Fatalf("Merge holds %d keys, %d words of registers at precision %d; Absorb %d, %d at %d", len(mk), len(mr), mp, len(ak), len(ar), ap)
				}
				if got, want := merged.Count(), absorbed.Count(); got != want {
					t.Fatalf("Merge counts %d, Absorb %d", got, want)
				}
				if merged.regs != nil || limit > 0 {
					return
				}
				// Sparse and uncapped, the count is exact: the union of the sources' keys.
				if int(merged.n) != len(union) || len(mk) != len(union) {
					t.Fatalf("%d keys (n %d), the sources' union holds %d", len(mk), merged.n, len(union))
				}
				for _, k := range mk {
					if !union[k] {
						t.Fatalf("key %x is in no source", k)
					}
				}
				if 4*int(merged.n) > 3*len(merged.set) {
					t.Fatalf("%d keys in a table of %d", merged.n, len(merged.set))
				}
			})
		}
	}
}

// TestDistinctMergeOrder checks that a read's merge of the same slots in any order, and
// grouped in any way (as two shards' parts are merged), holds the same keys or registers.
func TestDistinctMergeOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{3, 12, 30} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var slots []*Distinct
			for range n {
				slots = append(slots, distinctSource{from: r.IntN(30_000), n: r.IntN(2_500), sealed: r.IntN(3) > 0}.sketch())
			}
			want := NewDistinct()
			for _, s := range slots {
				want.Merge(s)
			}
			wk, wr, wp := distinctState(want)
			for round := range 5 {
				perm := r.Perm(n)
				cut := r.IntN(n + 1)
				a, b := NewDistinct(), NewDistinct()
				for _, i := range perm[:cut] {
					a.Merge(slots[i])
				}
				for _, i := range perm[cut:] {
					b.Merge(slots[i])
				}
				a.Merge(b)
				gk, gr, gp := distinctState(a)
				if !slices.Equal(gk, wk) || !slices.Equal(gr, wr) || gp != wp {
					t.Fatalf("round %d: %d keys, %d words at %d; in order %d, %d at %d", round, len(gk), len(gr), gp, len(wk), len(wr), wp)
				}
			}
		})
	}
}

// TestDistinctRecycledBuffers runs sketches through adds, merges both ways, seals and
// resets in random order, so that the 64 KiB tables and registers one lets go are taken
// by another: after every step each sketch must hold what one made anew from the same
// items holds, which it would not if a buffer were still written by a sketch that let it
// go.
func TestDistinctRecycledBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	const sketches = 6
	ds := make([]*Distinct, sketches)
	fed := make([][]distinctSource, sketches)
	for i := range ds {
		ds[i] = NewDistinct()
	}
	var buf [8]byte
	steps := 400
	if testing.Short() || race.Enabled {
		steps = 100
	}
	for step := range steps {
		i, j := r.IntN(sketches), r.IntN(sketches)
		switch op := r.IntN(6); {
		case op == 0:
			ds[i].Reset()
			fed[i] = nil
		case op == 1:
			ds[i].Seal()
		case op == 2 && i != j:
			ds[i].Absorb(ds[j])
			fed[i] = append(fed[i], fed[j]...)
		case op == 3 && i != j:
			ds[i].Merge(ds[j])
			fed[i] = append(fed[i], fed[j]...)
		default:
			src := distinctSource{from: r.IntN(40_000), n: r.IntN(9_000)}
			for id := src.from; id < src.from+src.n; id++ {
				ds[i].Add(0, itemOf(uint64(id), &buf))
			}
			fed[i] = append(fed[i], src)
		}
		for k, d := range ds {
			want := NewDistinct()
			for _, src := range fed[k] {
				for id := src.from; id < src.from+src.n; id++ {
					want.Add(0, itemOf(uint64(id), &buf))
				}
			}
			gk, gr, gp := distinctState(d)
			wk, wr, wp := distinctState(want)
			if !slices.Equal(gk, wk) || !slices.Equal(gr, wr) || gp != wp {
				t.Fatalf("step %d: sketch %d holds %d keys, %d words at %d; made anew %d, %d at %d", step, k, len(gk), len(gr), gp, len(wk), len(wr), wp)
			}
		}
	}
}

// TestDistinctMergeNothing checks that merging a sketch without items, as a read does
// with every slot a wheel emptied, leaves the sketch it merges into as it was: no table
// made for an empty one, a sealed one not unsealed, its bytes the same.
func TestDistinctMergeNothing(t *testing.T) {
	emptied := distinctSource{from: 1, n: 3_000}.sketch()
	emptied.Reset()
	for _, tc := range []struct {
		name string
		into distinctSource
		from *Distinct
	}{
		{"new into new", distinctSource{}, NewDistinct()},
		{"reset into new", distinctSource{}, emptied},
		{"new into sparse", distinctSource{from: 1, n: 3_000}, NewDistinct()},
		{"new into sealed", distinctSource{from: 1, n: 3_000, sealed: true}, NewDistinct()},
		{"new into dense", distinctSource{from: 1, n: 20_000}, NewDistinct()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.into.sketch()
			bytes, sealed := d.Bytes(), d.sealed
			wk, wr, wp := distinctState(d)
			d.Merge(tc.from)
			gk, gr, gp := distinctState(d)
			if !slices.Equal(gk, wk) || !slices.Equal(gr, wr) || gp != wp {
				t.Fatalf("%d keys, %d words at %d; before %d, %d at %d", len(gk), len(gr), gp, len(wk), len(wr), wp)
			}
			if d.Bytes() != bytes || d.sealed != sealed {
				t.Fatalf("%d bytes, sealed %t; before %d, sealed %t", d.Bytes(), d.sealed, bytes, sealed)
			}
		})
	}
}
