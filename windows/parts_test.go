package windows

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// Bags of values that say their merges are Unordered, and that do not: a bag's values are
// in the order they were added and merged, so that a read of parts shows in which order
// their slots and windows were merged.
var (
	unorderedBag = SummaryKind{New: func() Summary { return &bag{} }, Unordered: true}
	orderedBag   = SummaryKind{New: func() Summary { return &bag{} }}
)

// readPartsOneByOne is what a read of several parts was before ReadSummariesOf: each
// part's windows read alone, merged into the first's in the parts' order.
func readPartsOneByOne(now int64, parts []*Series, dst, more []Summary) {
	for i, s := range parts {
		if i == 0 {
			s.ReadSummaries(now, dst)
			continue
		}
		s.ReadSummaries(now, more)
		for k, d := range dst {
			d.Merge(more[k])
		}
	}
}

// How a stream's events are dealt to the parts of a series.
var partDeals = []struct {
	name string
	deal func(r *rand.Rand, i, parts int) int
}{
	{"random", func(r *rand.Rand, _, parts int) int { return r.IntN(parts) }},
	{"in turn", func(_ *rand.Rand, i, parts int) int { return i % parts }},
	{"all to the last", func(_ *rand.Rand, _, parts int) int { return parts - 1 }},
	{"runs", func(r *rand.Rand, i, parts int) int { return i / 20 % parts }},
}

// TestReadSummariesOf compares a read of a label set's parts, some of whose kinds are
// Unordered, with its parts read one by one and merged in their order, over the
// reference streams dealt to two to four parts in several ways: a kind that is not
// Unordered is merged in exactly the same order (its bag holds the same values in the
// same order), one that is holds the same values, and so it does whatever the order of
// the parts.
func TestReadSummariesOf(t *testing.T) {
	cases := 8
	if testing.Short() || race.Enabled {
		cases = 2
	}
	n := 0 // numbers the subtests, of which race.Runs says which run
	for _, g := range generators {
		for _, lay := range referenceLayouts {
			for _, end := range windowEnds {
				if n++; !race.Runs(n) {
					continue
				}
				t.Run(g.name+"/"+lay.name+"/"+end.name, func(t *testing.T) {
					t.Parallel()
					l, err := NewLayout(lay.windows, Options{Summaries: []SummaryKind{unorderedBag, orderedBag, unorderedBag}, LastComplete: end.lastComplete})
					if err != nil {
						t.Fatal(err)
					}
					for c := range cases {
						r := rand.New(rand.NewPCG(uint64(c), uint64(len(g.name)*7+len(lay.name))))
						d := partDeals[c%len(partDeals)]
						n := 2 + c%3
						if err := readPartsOf(l, g.gen(r, l.Longest()), n, func(i int) int { return d.deal(r, i, n) }); err != nil {
							t.Fatalf("case %d, %d parts dealt %s: %v", c, n, d.name, err)
						}
					}
				})
			}
		}
	}
}

// readPartsOf adds the events of ops to the part of n that deal says, and at each read
// compares ReadSummariesOf with readPartsOneByOne, and with ReadSummariesOf of the parts
// in reverse order.
func readPartsOf(l *Layout, ops []op, n int, deal func(i int) int) error {
	parts := make([]*Series, n)
	for i := range parts {
		parts[i] = l.NewSeries()
	}
	reversed := slices.Clone(parts)
	slices.Reverse(reversed)
	got, want, back := l.NewSummaries(), l.NewSummaries(), l.NewSummaries()
	wantMore := l.NewSummaries()
	var more, backMore []Summary
	for i, o := range ops {
		if !o.read {
			parts[deal(i)].Add(o.now, o.at, o.v)
			continue
		}
		ReadSummariesOf(o.now, parts, got, &more)
		readPartsOneByOne(o.now, parts, want, wantMore)
		ReadSummariesOf(o.now, reversed, back, &backMore)
		for k := range got {
			kind := l.kinds[k%len(l.kinds)]
			g, w, b := got[k].(*bag).vs, want[k].(*bag).vs, back[k].(*bag).vs
			if kind.Unordered {
				g, w, b = slices.Sorted(slices.Values(g)), slices.Sorted(slices.Values(w)), slices.Sorted(slices.Values(b))
				if !slices.Equal(b, w) {
					return fmt.Errorf("op %d, read at %d, summary %d: parts in reverse %v, one by one %v", i, o.now, k, b, w)
				}
			}
			if !slices.Equal(g, w) {
				return fmt.Errorf("op %d, read at %d, summary %d (unordered %v): %v, one by one %v", i, o.now, k, kind.Unordered, g, w)
			}
		}
	}
	return nil
}

// TestReadSummariesOfFew: no part, and parts with no events to read (never added to, or
// read at a clock gone back past every window), read as empty summaries, and a part
// beside them as it reads alone; a read of several parts of a layout whose kinds are all
// Unordered makes no scratch.
func TestReadSummariesOfFew(t *testing.T) {
	l, err := NewLayout(defaultWindows, Options{Summaries: []SummaryKind{unorderedBag, orderedBag}})
	if err != nil {
		t.Fatal(err)
	}
	const now = 40_000_000
	empty, gone, live := l.NewSeries(), l.NewSeries(), l.NewSeries()
	gone.Add(now+l.Longest(), now+l.Longest(), 7)
	live.Add(now, now-5, 3)
	live.Add(now, now, 4)
	alone := l.NewSummaries()
	live.ReadSummaries(now, alone)
	for _, tc := range []struct {
		name  string
		parts []*Series
		want  []Summary // nil: every summary empty
	}{
		{"no part", nil, nil},
		{"never added to", []*Series{empty}, nil},
		{"clock gone back", []*Series{gone, empty}, nil},
		{"one with events last", []*Series{empty, gone, live}, alone},
		{"one with events first", []*Series{live, gone}, alone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := l.NewSummaries()
			got[0].Add(1, nil) // a read resets what it is given
			var more []Summary
			ReadSummariesOf(now, tc.parts, got, &more)
			for k := range got {
				var want []float64
				if tc.want != nil {
					want = tc.want[k].(*bag).vs
				}
				if g := got[k].(*bag).vs; !slices.Equal(g, want) {
					t.Errorf("summary %d: %v, want %v", k, g, want)
				}
			}
			if more != nil {
				t.Errorf("scratch made for %d parts of which one has events", len(tc.parts))
			}
		})
	}
	t.Run("all unordered", func(t *testing.T) {
		l, err := NewLayout(defaultWindows, Options{Summaries: []SummaryKind{unorderedBag}})
		if err != nil {
			t.Fatal(err)
		}
		a, b := l.NewSeries(), l.NewSeries()
		a.Add(now, now, 1)
		b.Add(now, now, 2)
		got := l.NewSummaries()
		var more []Summary
		ReadSummariesOf(now, []*Series{a, b}, got, &more)
		if more != nil {
			t.Error("scratch made for kinds that are all Unordered")
		}
		if g := slices.Sorted(slices.Values(got[0].(*bag).vs)); !slices.Equal(g, []float64{1, 2}) {
			t.Errorf("1m window holds %v, want [1 2]", g)
		}
	})
}

// TestPartsReadBackAsOne: the clock a label set's parts are added at runs ahead of the
// events' own times and comes back (an event-time rule's wall clock set wrong and set
// right, its lines written by two inputs), and only one part has events after that. Its
// parts must read as one series that had every event does, which goes back to the clock
// at its first event after it came back: the quiet part is read back with it rather than
// holding the label set's reads at the second of the wrong clock, where the shorter
// windows lack every event since.
func TestPartsReadBackAsOne(t *testing.T) {
	const t0 = 1_700_000_000
	for _, ahead := range []int64{90, 1800, 7200} {
		for _, kinds := range [][]SummaryKind{nil, {unorderedBag, orderedBag}} {
			for _, end := range windowEnds {
				t.Run(fmt.Sprintf("ahead %ds/%d summaries/%s", ahead, len(kinds), end.name), func(t *testing.T) {
					l, err := NewLayout(defaultWindows, Options{Events: true, Summaries: kinds, LastComplete: end.lastComplete})
					if err != nil {
						t.Fatal(err)
					}
					whole := l.NewSeries()
					parts := []*Series{l.NewSeries(), l.NewSeries()}
					add := func(part int, now, at int64) {
						v := float64(at - t0)
						whole.Add(now, at, v)
						parts[part].Add(now, at, v)
					}
					real := int64(t0)
					for i := range 40 {
						add(i%2, real+ahead, real)
						real++
					}
					for range 100 {
						add(0, real, real)
						real++
						now := real + 1
						want := whole.Read(now, t0, nil)
						at := ReadSecondOf(now, parts)
						got := parts[0].Read(at, t0, nil)
						more := parts[1].Read(at, t0, nil)
						for i := range got {
							got[i].Events += more[i].Events
							if got[i].Events != want[i].Events {
								t.Fatalf("read at %d: %v window of the parts read at %d holds %v events, one series %v", now, l.Windows()[i], at, got[i].Events, want[i].Events)
							}
						}
						if kinds == nil {
							continue
						}
						gotSums, wantSums := l.NewSummaries(), l.NewSummaries()
						ReadSummariesOf(at, parts, gotSums, nil)
						whole.ReadSummaries(now, wantSums)
						for k := range gotSums {
							g := slices.Sorted(slices.Values(gotSums[k].(*bag).vs))
							w := slices.Sorted(slices.Values(wantSums[k].(*bag).vs))
							if !slices.Equal(g, w) {
								t.Fatalf("read at %d: summary %d of the parts read at %d holds %v, one series %v", now, k, at, g, w)
							}
						}
					}
				})
			}
		}
	}
}
