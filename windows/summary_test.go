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

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// bag is the exact summary: it keeps every value, so a read shows precisely which events
// the wheels put in a window. Of the kind that reads an item it keeps the item, the text
// of the value (see replay), read back as a number.
type bag struct {
	vs     []float64
	items  bool
	sealed bool // since the last Reset; Add stays allowed (late events)
}

var (
	bagOfValues = SummaryKind{New: func() Summary { return &bag{} }}
	bagOfItems  = SummaryKind{New: func() Summary { return &bag{items: true} }, Item: 1}
)

func (b *bag) Add(v float64, item []byte) {
	switch {
	case b.items:
		var err error
		if v, err = strconv.ParseFloat(string(item), 64); err != nil {
			panic(fmt.Sprintf("item %q: %v", item, err))
		}
	case item != nil:
		panic(fmt.Sprintf("item %q given to a summary of values", item))
	}
	b.vs = append(b.vs, v)
}

func (b *bag) Merge(from Summary) { b.vs = append(b.vs, from.(*bag).vs...) }
func (b *bag) Reset()             { b.vs, b.sealed = b.vs[:0], false }
func (b *bag) Bytes() int         { return HeapBytes(int(unsafe.Sizeof(bag{}))) + HeapBytes(8*cap(b.vs)) }

// Seal moves the values to a slice of their exact size, as a summary shrinking would.
func (b *bag) Seal() { b.vs, b.sealed = slices.Clone(b.vs), true }

// summaryStep is the slot width the package documentation promises summaries for a window.
func summaryStep(sec int64) int64 {
	for _, w := range summaryGrid {
		if sec <= w.upTo {
			return w.step
		}
	}
	panic("unreachable")
}

// checkSummaries compares every window's summary with the model: exactly the values placed
// from the start of the slot holding the window's oldest second through the end of the slot
// holding its newest (now, or the second before with lag).
func (m *model) checkSummaries(l *Layout, got []Summary, now int64) error {
	wins := l.Windows()
	if len(got) != len(wins)*len(l.kinds) {
		return fmt.Errorf("%d summaries for %d windows × %d kinds", len(got), len(wins), len(l.kinds))
	}
	now = clamped(now)
	e := m.readSecond(now) - m.lag
	var want []float64
	for i, w := range wins {
		want = want[:0]
		if m.started && !m.wentBack(now) {
			sec := int64(w / time.Second)
			step := summaryStep(sec)
			edge := floorDiv(e-sec+1, step) * step
			last := (floorDiv(e, step)+1)*step - 1
			w := servedBy(l.sumWheels, i)
			for _, ev := range m.events {
				if ev.at >= edge && ev.at <= last && ev.held(w) {
					want = append(want, ev.v)
				}
			}
		}
		wantPrint := fingerprintOf(want)
		for k := range l.kinds {
			held := got[i*len(l.kinds)+k].(*bag).vs
			if p := fingerprintOf(held); p == wantPrint && !p.nan {
				continue
			}
			vs := slices.Sorted(slices.Values(held))
			slices.Sort(want)
			if !slices.Equal(vs, want) {
				return fmt.Errorf("window %v kind %d ending %d: values %v, want %v", w, k, e, vs, want)
			}
		}
	}
	return nil
}

// fingerprint is what checkSummaries compares the values of a window by before it sorts
// them, which took most of the package's tests: how many, and the sum of a 64-bit mix of
// each one's bits, which their order does not change. Two lists that are not the same
// values sorted have the same fingerprint with a chance of about 2^-64 (a zero of either
// sign reads as one, as slices.Equal has it); one that holds a NaN is compared sorted,
// where it is equal to none.
type fingerprint struct {
	n, sum uint64
	nan    bool
}

func fingerprintOf(vs []float64) fingerprint {
	var f fingerprint
	for _, v := range vs {
		if v == 0 {
			v = 0 // -0 as +0
		}
		f.nan = f.nan || math.IsNaN(v)
		// splitmix64's finalizer: every bit of the value moves about half of the sum's.
		x := math.Float64bits(v)
		x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
		x = (x ^ x>>27) * 0x94d049bb133111eb
		f.n, f.sum = f.n+1, f.sum+(x^x>>31)
	}
	return f
}

// TestFingerprint: lists of the same values in another order, or with a zero of the
// other sign, have one fingerprint; lists that differ in ways a plain sum of the values'
// bits would miss (a sign moved from one value to another, both of two equal values
// negated, the bits of two values summing to those of two others, a value duplicated and
// one of the same bits' sum dropped) do not; a NaN is told, to be compared sorted.
func TestFingerprint(t *testing.T) {
	ulp := func(n uint64) float64 { return math.Float64frombits(math.Float64bits(1) + n) }
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		a, b []float64
		same bool
	}{
		{"another order", []float64{1, -2.5, 3, 1}, []float64{3, 1, 1, -2.5}, true},
		{"zero of the other sign", []float64{0, 7}, []float64{7, math.Copysign(0, -1)}, true},
		{"sign moved to another value", []float64{1.5, -4}, []float64{-1.5, 4}, false},
		{"two equal values negated", []float64{2, 2}, []float64{-2, -2}, false},
		{"bits summing alike", []float64{ulp(1), ulp(4)}, []float64{ulp(2), ulp(3)}, false},
		{"duplicated and dropped", []float64{ulp(2), ulp(2)}, []float64{ulp(1), ulp(3)}, false},
		{"one more zero", []float64{3}, []float64{3, 0}, false},
		{"one value changed", []float64{1, 2, 3}, []float64{1, 2, 3.0000000000000004}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := fingerprintOf(tc.a), fingerprintOf(tc.b)
			if (a == b) != tc.same {
				t.Errorf("%v: %+v, %v: %+v; want the same: %v", tc.a, a, tc.b, b, tc.same)
			}
			if a.nan || b.nan {
				t.Errorf("%v, %v: NaN told", tc.a, tc.b)
			}
		})
	}
	t.Run("NaN", func(t *testing.T) {
		for _, vs := range [][]float64{{nan}, {1, nan, 2}, {math.Float64frombits(math.Float64bits(nan) ^ 1)}} {
			if f := fingerprintOf(vs); !f.nan {
				t.Errorf("%v: %+v, NaN not told", vs, f)
			}
		}
	})
}

// TestSummaryReferenceModel runs the reference streams through layouts that keep two
// summaries next to every float quantity: the summaries must hold exactly the window's
// events (stretched to its edge slot), and the floats must be what they are without them.
func TestSummaryReferenceModel(t *testing.T) {
	cases := 30
	if testing.Short() || race.Enabled {
		cases = 3
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
					l, err := NewLayout(lay.windows, Options{Events: true, Extrema: true, Summaries: []SummaryKind{bagOfValues, bagOfItems}, LastComplete: end.lastComplete})
					if err != nil {
						t.Fatal(err)
					}
					for c := range cases {
						r := rand.New(rand.NewPCG(uint64(c), uint64(len(g.name)*7+len(lay.name))))
						ops := g.gen(r, l.Longest())
						since := ops[0].now - r.Int64N(2*l.Longest())
						if err := replay(l, since, ops); err != nil {
							t.Fatalf("case %d: %v", c, err)
						}
					}
				})
			}
		}
	}
}

// TestSummaryWheelSizes pins the slots summaries take: 10-second slots up to 5m, minutes up
// to 1h, hours up to 300h, days beyond.
func TestSummaryWheelSizes(t *testing.T) {
	type ring struct{ step, n int64 }
	for _, tc := range []struct {
		name    string
		windows []time.Duration
		want    []ring
	}{
		{"defaults", defaultWindows, []ring{{10, 31}, {60, 61}, {3600, 25}}},
		{"1m only", []time.Duration{time.Minute}, []ring{{10, 7}}},
		{"just over 5m", []time.Duration{301 * time.Second}, []ring{{60, 6}}},
		{"just over 1h", []time.Duration{time.Hour + time.Second}, []ring{{3600, 2}}},
		{"a year", []time.Duration{365 * 24 * time.Hour}, []ring{{86400, 366}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLayout(tc.windows, Options{Summaries: []SummaryKind{bagOfValues}})
			if err != nil {
				t.Fatal(err)
			}
			var got []ring
			for _, w := range l.sumWheels {
				got = append(got, ring{w.step, w.n})
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("summary wheels %v, want %v", got, tc.want)
			}
			if len(l.NewSummaries()) != len(tc.windows) {
				t.Fatalf("NewSummaries: %d, want one per window", len(l.NewSummaries()))
			}
		})
	}
	l, err := NewLayout(defaultWindows, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.sumWheels) != 0 || l.sumSize != 0 || len(l.NewSummaries()) != 0 {
		t.Fatalf("a layout without summaries has summary wheels %v", l.sumWheels)
	}
}

// TestSummarySeal: a slot's summaries are sealed when the wheel's head moves on from the
// slot, never while it is the head, and a slot that a late event lands in after sealing
// holds it.
func TestSummarySeal(t *testing.T) {
	l, err := NewLayout(defaultWindows, Options{Summaries: []SummaryKind{bagOfValues}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		step func(r *rand.Rand) int64 // seconds to the next add
		late int64                    // how far back events may be stamped
	}{
		{"every second", func(*rand.Rand) int64 { return 1 }, 0},
		{"jumps within a slot or two", func(r *rand.Rand) int64 { return r.Int64N(130) }, 0},
		{"late events", func(r *rand.Rand) int64 { return r.Int64N(20) }, 3600},
		{"gaps longer than a ring", func(r *rand.Rand) int64 { return []int64{1, 9, 400, 7000, 100000}[r.IntN(5)] }, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, uint64(tc.late)))
			s := l.NewSeries()
			now := int64(1_700_000_000)
			var heads [len(grid{})]int32
			var filled [len(grid{})]bool // the head slot held values before the add
			for range 5000 {
				prev := s.t
				now += tc.step(r)
				at := now - r.Int64N(tc.late+1)
				s.Add(now, at, 1)
				for i := range l.sumWheels {
					w := &l.sumWheels[i]
					if head := s.rings.sums[w.off+int(s.rings.head[i])]; head != nil && head.(*bag).sealed {
						t.Fatalf("at %d: the head slot of the %d s wheel is sealed", now, w.step)
					}
					moved := floorDiv(now, w.step) - floorDiv(prev, w.step)
					closed := s.rings.sums[w.off+int(heads[i])]
					if prev != never && moved > 0 && moved < w.n && filled[i] && !closed.(*bag).sealed {
						t.Fatalf("at %d: the %d s wheel moved %d slots on and left its slot unsealed", now, w.step, moved)
					}
					heads[i] = s.rings.head[i]
					head := s.rings.sums[w.off+int(heads[i])]
					filled[i] = head != nil && len(head.(*bag).vs) > 0
				}
			}
		})
	}
}

// capBag is a bag that can be capped (Capper): past its cap it keeps no more values, and
// counts those it turned away. limit is the cap in force, 0 between the series' calls.
// Reset lets its memory go.
type capBag struct {
	bag
	limit   int
	refused int
}

var bagCapped = SummaryKind{New: func() Summary { return &capBag{} }, Floor: 200}

func (b *capBag) Add(v float64, item []byte) {
	if b.limit > 0 && len(b.vs) == cap(b.vs) && b.grownBytes() > b.limit {
		b.refused++
		return
	}
	b.bag.Add(v, item)
}

func (b *capBag) Merge(from Summary) {
	for _, v := range from.(*capBag).vs {
		b.Add(v, nil)
	}
}

func (b *capBag) Cap(n int)  { b.limit = n }
func (b *capBag) Bytes() int { return HeapBytes(int(unsafe.Sizeof(capBag{}))) + HeapBytes(8*cap(b.vs)) }
func (b *capBag) Seal()      { b.bag.Seal() }
func (b *capBag) Reset()     { *b = capBag{} }
func (b *capBag) grownBytes() int {
	return HeapBytes(int(unsafe.Sizeof(capBag{}))) + HeapBytes(8*cap(append(b.vs[:len(b.vs):len(b.vs)], 0)))
}

// growBag is a capBag that says what an add grew it by (SummaryKind.AddGrown), and some
// other equal numbers when it did not grow, which the series must then leave alone.
type growBag struct{ capBag }

var bagGrowing = SummaryKind{
	New:      func() Summary { return &growBag{} },
	Floor:    100,
	AddGrown: func(s Summary, v float64, item []byte) (int, int) { return s.(*growBag).AddGrown(v, item) },
}

func (b *growBag) AddGrown(v float64, item []byte) (before, after int) {
	before = b.Bytes()
	b.Add(v, item)
	if after = b.Bytes(); after == before {
		return 7, 7
	}
	return before, after
}

func (b *growBag) Merge(from Summary) { b.capBag.Merge(&from.(*growBag).capBag) }
func (b *growBag) Reset()             { *b = growBag{} }

// account is an Account with a bound: what Charge was given, and the room left under it.
type account struct{ used, bound int64 }

func (a *account) Charge(n int64) { a.used += n }
func (a *account) Room() int64 {
	if a.bound == 0 {
		return math.MaxInt64
	}
	return a.bound - a.used
}

// TestSummaryAccounting runs the reference streams through a series whose summaries grow
// with their values (one of them saying by how much, SummaryKind.AddGrown), charging an account: after
// every Add, what the account was charged
// is what the series says it grew by (Bytes less SeriesBytes), which is what its slots'
// summaries take beyond their floors; no cap outlives the call that set it; and under a
// bound, summaries that can be capped never take the account past it.
func TestSummaryAccounting(t *testing.T) {
	cases := 10
	if testing.Short() || race.Enabled {
		cases = 2
	}
	for _, bound := range []int64{0, 1 << 20, 16 << 10} {
		kinds := []SummaryKind{bagOfValues, bagCapped, bagGrowing}
		if bound > 0 {
			kinds = []SummaryKind{bagCapped, bagCapped}
		}
		refused := 0
		for _, g := range generators {
			for _, lay := range referenceLayouts {
				t.Run(fmt.Sprintf("%s/%s/bound %d", g.name, lay.name, bound), func(t *testing.T) {
					acct := &account{bound: bound}
					l, err := NewLayout(lay.windows, Options{Summaries: kinds, Account: acct})
					if err != nil {
						t.Fatal(err)
					}
					for c := range cases {
						r := rand.New(rand.NewPCG(uint64(c), uint64(len(g.name))))
						s := l.NewSeries()
						acct.used = 0
						for i, o := range g.gen(r, l.Longest()) {
							if o.read {
								continue
							}
							s.AddItems(o.now, o.at, o.v, [][]byte{nil})
							if err := checkAccount(s, acct); err != nil {
								t.Fatalf("case %d op %d: %v", c, i, err)
							}
						}
						for _, sum := range s.rings.sums {
							if b, ok := sum.(*capBag); ok {
								refused += b.refused
							}
						}
					}
				})
			}
		}
		if bound == 16<<10 && refused == 0 {
			t.Errorf("under a bound of %d bytes no summary was capped", bound)
		}
	}
}

// checkAccount compares what the series' summaries take with what acct was charged.
func checkAccount(s *Series, acct *account) error {
	l := s.layout
	var held int64
	for i, sum := range s.rings.sums {
		k := i % len(l.kinds)
		if sum == nil {
			continue
		}
		held += int64(max(sum.Bytes(), l.floors[k]) - l.floors[k])
		if b, ok := sum.(*capBag); ok && b.limit != 0 {
			return fmt.Errorf("slot %d keeps its cap of %d bytes after the Add", i, b.limit)
		}
	}
	if grown := s.Bytes() - int64(l.SeriesBytes()); grown != held || acct.used != held {
		return fmt.Errorf("the slots hold %d bytes beyond their floors; the series says %d, the account was charged %d", held, grown, acct.used)
	}
	if acct.bound > 0 && acct.used > acct.bound {
		return fmt.Errorf("the account was charged %d bytes, past its bound of %d", acct.used, acct.bound)
	}
	return nil
}
