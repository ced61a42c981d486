package windows

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"
)

// TestAddManyIsAddItems: the reference streams added a run of events of one second at a
// time (AddMany) and event by event (AddItems) give the same series: placements, LastAdd,
// every read of the float windows and of the summaries, what the series says it holds and
// what its account was charged, with and without summaries, and near a bound under which
// summaries are capped.
func TestAddManyIsAddItems(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  Options
		bound int64
	}{
		{"floats", Options{Events: true, Extrema: true}, 0},
		{"summaries", Options{Events: true, Summaries: []SummaryKind{bagOfValues, bagOfItems}}, 0},
		{"capped summaries", Options{Summaries: []SummaryKind{bagCapped, bagCapped}}, 4 << 10},
	} {
		addManyRunsMatch(t, c.name, func(*int) []SummaryKind { return c.opts.Summaries }, c.bound, c.opts)
	}
}

func mustLayout(t *testing.T, ws []time.Duration, opts Options) *Layout {
	t.Helper()
	l, err := NewLayout(ws, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// runs cuts ops into runs of events of one now and second (of random lengths, at most
// every such event in a row) and reads.
func runs(r *rand.Rand, ops []op) [][]op {
	var out [][]op
	for i := 0; i < len(ops); {
		j := i + 1
		for !ops[i].read && j < len(ops) && ops[j] == (op{now: ops[i].now, at: ops[i].at, v: ops[j].v}) && r.IntN(8) != 0 {
			j++
		}
		out = append(out, ops[i:j])
		i = j
	}
	return out
}

// addManyMatches adds each run to one event by event and to many at once, comparing them
// after each.
func addManyMatches(one, many *Series, a1, am *account, runs [][]op) error {
	l := one.layout
	var d1, dm []Stats
	s1, sm := l.NewSummaries(), many.layout.NewSummaries()
	for i, run := range runs {
		o := run[0]
		if o.read {
			d1, dm = one.Read(o.now, 0, d1), many.Read(o.now, 0, dm)
			if !slices.EqualFunc(d1, dm, func(a, b Stats) bool {
				return same(a.Sum, b.Sum) && same(a.Events, b.Events) && same(a.Max, b.Max) && same(a.Min, b.Min) && same(a.PerSecond, b.PerSecond)
			}) {
				return fmt.Errorf("run %d: read at %d: AddMany's %v, AddItems' %v", i, o.now, dm, d1)
			}
			one.ReadSummaries(o.now, s1)
			many.ReadSummaries(o.now, sm)
			for k := range s1 {
				if fmt.Sprint(s1[k]) != fmt.Sprint(sm[k]) {
					return fmt.Errorf("run %d: summary %d read at %d: AddMany's %v, AddItems' %v", i, k, o.now, sm[k], s1[k])
				}
			}
			continue
		}
		var values []float64
		var items [][]byte
		var want Placement
		for _, e := range run {
			// Two items an event, so that a run handed on with its items misaligned reads
			// another event's.
			item := [][]byte{strconv.AppendFloat(nil, e.v, 'g', -1, 64), strconv.AppendFloat(nil, 2*e.v, 'g', -1, 64)}
			want = one.AddItems(e.now, e.at, e.v, item)
			values, items = append(values, e.v), append(items, item...)
		}
		if got := many.AddMany(o.now, o.at, values, items); got != want {
			return fmt.Errorf("run %d of %d events at (%d, %d): AddMany placed %v, AddItems %v", i, len(run), o.now, o.at, got, want)
		}
		if one.LastAdd() != many.LastAdd() || one.Bytes() != many.Bytes() || a1.used != am.used {
			return fmt.Errorf("run %d: LastAdd %d, %d bytes, %d charged; by AddItems %d, %d bytes, %d charged",
				i, many.LastAdd(), many.Bytes(), am.used, one.LastAdd(), one.Bytes(), a1.used)
		}
	}
	return nil
}

// runBag is a growBag that reads its item (the text of the value or of its double, as
// addManyMatches gives them) and adds a run at once (SummaryKind.AddRun), counting in *runs
// the calls that added more than one event.
type runBag struct {
	growBag
	runs *int
	item int // SummaryKind.Item
}

func newRunBag(runs *int, item int) SummaryKind {
	return SummaryKind{
		New: func() Summary {
			return &runBag{growBag: growBag{capBag{bag: bag{items: true}}}, runs: runs, item: item}
		},
		Item:     item,
		Floor:    100,
		AddGrown: func(s Summary, v float64, item []byte) (int, int) { return s.(*runBag).AddGrown(v, item) },
		AddRun: func(s Summary, values []float64, items [][]byte) (int, int, int) {
			return s.(*runBag).AddRun(values, items)
		},
	}
}

func (b *runBag) AddRun(values []float64, items [][]byte) (n, before, after int) {
	per := len(items) / len(values)
	for i, v := range values {
		if before, after := b.AddGrown(v, items[i*per+b.item-1]); before != after {
			b.count(i + 1)
			return i + 1, before, after
		}
	}
	b.count(len(values))
	return len(values), 0, 0
}

func (b *runBag) count(n int) {
	if n > 1 {
		*b.runs++
	}
}

// Merge merges values, which carry no item.
func (b *runBag) Merge(from Summary) {
	b.items = false
	b.growBag.Merge(&from.(*runBag).growBag)
	b.items = true
}

func (b *runBag) Reset() {
	*b = runBag{growBag: growBag{capBag{bag: bag{items: true}}}, runs: b.runs, item: b.item}
}

// TestAddManyRuns is TestAddManyIsAddItems for a kind that adds a run at once
// (SummaryKind.AddRun), alone, where AddMany hands it a second's run, and beside other
// kinds, where AddMany adds the run event by event to one slot: without a bound, near
// capBelow, where the room falls short of it within a run and the rest of the run is
// capped, and under a bound that caps every add.
func TestAddManyRuns(t *testing.T) {
	for _, c := range []struct {
		name  string
		kinds func(runs *int) []SummaryKind
		bound int64
	}{
		{"alone", func(runs *int) []SummaryKind { return []SummaryKind{newRunBag(runs, 2)} }, 0},
		{"alone, crossing capBelow", func(runs *int) []SummaryKind { return []SummaryKind{newRunBag(runs, 2)} }, capBelow + 4<<10},
		{"alone, capped", func(runs *int) []SummaryKind { return []SummaryKind{newRunBag(runs, 1)} }, 4 << 10},
		{"beside others", func(runs *int) []SummaryKind { return []SummaryKind{newRunBag(runs, 1), bagOfValues, bagGrowing} }, 0},
		{"beside others, crossing capBelow", func(runs *int) []SummaryKind { return []SummaryKind{bagGrowing, newRunBag(runs, 2)} }, capBelow + 4<<10},
	} {
		atOnce := addManyRunsMatch(t, c.name, c.kinds, c.bound, Options{Events: true})
		if single := len(c.kinds(new(int))) == 1; single && c.bound != 4<<10 && atOnce == 0 {
			t.Errorf("%s: AddMany never added a run at once", c.name)
		}
	}
}

// addManyRunsMatch runs addManyMatches for the kinds under the given bound over every
// generator and the first reference layouts, with the options opts (its summaries and
// account set here), and returns how many runs the kinds added at once.
func addManyRunsMatch(t *testing.T, name string, kinds func(runs *int) []SummaryKind, bound int64, opts Options) int {
	t.Helper()
	atOnce := 0
	for _, g := range generators {
		for _, lay := range referenceLayouts[:3] {
			t.Run(fmt.Sprintf("%s/%s/%s", name, g.name, lay.name), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(len(g.name)), uint64(len(lay.name))))
				one, many := &account{bound: bound}, &account{bound: bound}
				o1, om := opts, opts
				ks := kinds(&atOnce)
				o1.Summaries, om.Summaries = ks, ks
				o1.Account, om.Account = one, many
				l1, lm := mustLayout(t, lay.windows, o1), mustLayout(t, lay.windows, om)
				if err := addManyMatches(l1.NewSeries(), lm.NewSeries(), one, many, runs(r, g.gen(r, l1.Longest()))); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
	return atOnce
}

// sumBag is a Fixed kind: the sum and the count of its values, in the same bytes whatever
// they are.
type sumBag struct{ sum, n float64 }

var bagFixed = SummaryKind{
	New: func() Summary { return &sumBag{} },
	AddRun: func(s Summary, values []float64, _ [][]byte) (int, int, int) {
		for _, v := range values {
			s.Add(v, nil)
		}
		return len(values), 0, 0
	},
	Fixed: true,
}

func (b *sumBag) Add(v float64, _ []byte) { b.sum, b.n = b.sum+v, b.n+1 }
func (b *sumBag) Merge(from Summary)      { f := from.(*sumBag); b.sum, b.n = b.sum+f.sum, b.n+f.n }
func (b *sumBag) Reset()                  { *b = sumBag{} }
func (b *sumBag) Bytes() int              { return HeapBytes(int(unsafe.Sizeof(sumBag{}))) }

// TestAddManyFixedRuns is TestAddManyRuns for a kind that adds runs beside Fixed ones,
// which AddMany hands a run at once too, and for Fixed kinds alone; and, with two kinds
// that may grow, for the run added event by event.
func TestAddManyFixedRuns(t *testing.T) {
	for _, c := range []struct {
		name  string
		kinds func(runs *int) []SummaryKind
		bound int64
	}{
		{"beside a fixed kind", func(runs *int) []SummaryKind { return []SummaryKind{bagFixed, newRunBag(runs, 2)} }, 0},
		{"beside fixed kinds, crossing capBelow", func(runs *int) []SummaryKind { return []SummaryKind{bagFixed, newRunBag(runs, 2), bagFixed} }, capBelow + 4<<10},
		{"beside a fixed kind, capped", func(runs *int) []SummaryKind { return []SummaryKind{newRunBag(runs, 1), bagFixed} }, 4 << 10},
		{"fixed alone", func(*int) []SummaryKind { return []SummaryKind{bagFixed, bagFixed} }, capBelow + 4<<10},
		{"two that grow, crossing capBelow", func(runs *int) []SummaryKind { return []SummaryKind{newRunBag(runs, 1), bagFixed, newRunBag(runs, 2)} }, capBelow + 4<<10},
	} {
		atOnce := addManyRunsMatch(t, c.name, c.kinds, c.bound, Options{Events: true, Extrema: true})
		grows, byRun := runKinds(c.kinds(new(int)))
		if want := byRun && grows >= 0 && c.bound != 4<<10; want != (atOnce > 0) {
			t.Errorf("%s: %d runs added at once by a kind that grows", c.name, atOnce)
		}
	}
}

// idle is kind with an AddRun that adds none of a run, against SummaryKind.AddRun's word.
func idle(kind SummaryKind) SummaryKind {
	kind.AddRun = func(Summary, []float64, [][]byte) (int, int, int) { return 0, 0, 0 }
	return kind
}

// TestAddManyIdleRuns: a kind whose AddRun adds none of a run neither stalls AddMany nor
// loses events: the kind that grows gets the run event by event, a Fixed kind gets by Add
// the events the kind that grows took.
func TestAddManyIdleRuns(t *testing.T) {
	for _, c := range []struct {
		name  string
		kinds func(runs *int) []SummaryKind
	}{
		{"an idle fixed kind", func(runs *int) []SummaryKind { return []SummaryKind{idle(bagFixed), newRunBag(runs, 2)} }},
		{"an idle kind that grows", func(runs *int) []SummaryKind { return []SummaryKind{bagFixed, idle(newRunBag(runs, 2))} }},
	} {
		for _, g := range generators {
			t.Run(fmt.Sprintf("%s/%s", c.name, g.name), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(len(g.name)), 3))
				one, many := &account{}, &account{}
				lay := referenceLayouts[0]
				kinds := c.kinds(new(int))
				l1 := mustLayout(t, lay.windows, Options{Summaries: kinds, Account: one})
				lm := mustLayout(t, lay.windows, Options{Summaries: kinds, Account: many})
				if err := addManyMatches(l1.NewSeries(), lm.NewSeries(), one, many, runs(r, g.gen(r, l1.Longest()))); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestPutRunIsPutMemo: a run put at once (putRun) leaves every float slot with the bits
// putting its values one by one (putMemo) leaves: in every reference layout (up to the four
// wheels of the sums' lanes), onto slots of every wheel or of the coarser ones alone, runs
// of every length around the lanes of the extrema, with NaN, infinities and signed zeros
// anywhere in them, onto counts where adding a run at once is exact and where it is not
// (2^53 and near it, a fraction, a negative count, one past −2^53, infinite or NaN, as a
// damaged snapshot could hold).
func TestPutRunIsPutMemo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 53))
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e308, -1e308, 0.1}
	// 2^52 − 0.5 plus 1 is a tie that rounds to even, so that one by one a count of it
	// gains less than at once; −2^54 + 1 too, and stays there one by one.
	counts := []float64{0, 1, 41, 1<<53 - 3, 1 << 53, 1<<53 + 2, 1<<52 - 0.5, 0.1, -7, -(1 << 54), math.Inf(1), math.NaN(), math.Copysign(0, -1)}
	for _, lay := range referenceLayouts {
		for _, opts := range allOptions {
			l := mustLayout(t, lay.windows, opts)
			// An event 61 s old is in a slot of its own in every wheel; one of 2 h
			// is in the coarser wheels alone, where the layout has any.
			for _, age := range []int64{61, 7200} {
				name := fmt.Sprintf("%s/%s/age %d", lay.name, optName(opts), age)
				putRunIsPutMemo(t, name, r, l, age, specials, counts)
			}
		}
	}
}

// putRunIsPutMemo is TestPutRunIsPutMemo for the layout l, named name, and events age
// seconds old.
func putRunIsPutMemo(t *testing.T, name string, r *rand.Rand, l *Layout, age int64, specials, counts []float64) {
	t.Helper()
	for n := 1; n <= 19; n++ {
		for trial := range 40 {
			values := make([]float64, n)
			for i := range values {
				values[i] = value(r)
				if r.IntN(4) == 0 {
					values[i] = specials[r.IntN(len(specials))]
				}
			}
			c := counts[trial%len(counts)]
			const now = 1_700_000_000
			one, run := l.NewSeries(), l.NewSeries()
			for _, s := range []*Series{one, run} {
				if s.Add(now, now-age, 1) == Late {
					return
				}
				s.Add(now, now-age, -2)
				if l.events != 0 {
					for i := range l.wheels {
						if s.memo[i] >= 0 {
							s.data[l.wheels[i].off+int(s.memo[i])*l.stride+l.events] = c
						}
					}
				}
			}
			for _, v := range values {
				one.putMemo(v)
			}
			run.putRun(values)
			for i := range one.data {
				if a, b := one.data[i], run.data[i]; math.Float64bits(a) != math.Float64bits(b) && !(math.IsNaN(a) && math.IsNaN(b)) {
					t.Fatalf("%s, count %v, values %v: float %d is %v put at once, %v one by one", name, c, values, i, b, a)
				}
			}
		}
	}
}
