package windows

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"
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
// from the start of the slot holding the window's oldest second through now.
func (m *model) checkSummaries(l *Layout, got []Summary, now int64) error {
	wins := l.Windows()
	if len(got) != len(wins)*len(l.kinds) {
		return fmt.Errorf("%d summaries for %d windows × %d kinds", len(got), len(wins), len(l.kinds))
	}
	s := max(now, m.t)
	for i, w := range wins {
		var want []float64
		if m.started && !m.wentBack(now) {
			sec := int64(w / time.Second)
			step := summaryStep(sec)
			edge := floorDiv(s-sec+1, step) * step
			for _, e := range m.events {
				if e.at >= edge && e.at <= s {
					want = append(want, e.v)
				}
			}
		}
		slices.Sort(want)
		for k := range l.kinds {
			vs := slices.Sorted(slices.Values(got[i*len(l.kinds)+k].(*bag).vs))
			if !slices.Equal(vs, want) {
				return fmt.Errorf("window %v kind %d at %d: values %v, want %v", w, k, s, vs, want)
			}
		}
	}
	return nil
}

// TestSummaryReferenceModel runs the reference streams through layouts that keep two
// summaries next to every float quantity: the summaries must hold exactly the window's
// events (stretched to its edge slot), and the floats must be what they are without them.
func TestSummaryReferenceModel(t *testing.T) {
	cases := 30
	if testing.Short() || raceEnabled {
		cases = 3
	}
	for _, g := range generators {
		for _, lay := range referenceLayouts {
			t.Run(g.name+"/"+lay.name, func(t *testing.T) {
				t.Parallel()
				l, err := NewLayout(lay.windows, Options{Events: true, Extrema: true, Summaries: []SummaryKind{bagOfValues, bagOfItems}})
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
