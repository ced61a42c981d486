package windows

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// model is the specification the wheels are checked against: it keeps every placed event
// and answers a window by scanning them all.
type model struct {
	// longest is the longest window; lag is 1 when windows end at the last complete
	// second, and reach, longest+lag, how far back from the series' second they reach.
	longest, lag, reach int64
	t                   int64 // newest now passed to add, or the one it went back to
	newest              int64 // newest event second placed
	started             bool
	events              []event
}

type event struct {
	at int64
	v  float64
	// hi is the newest second the series was at since the event was placed.
	hi int64
}

// held reports whether wheel w holds e: its slot was not let go of as the series moved on.
func (e event) held(w *wheel) bool {
	return w.slot(e.hi)-w.slot(e.at) < w.n
}

// servedBy returns the wheel of ws that serves window i.
func servedBy(ws []wheel, i int) *wheel {
	for j := range ws {
		if slices.Contains(ws[j].serve, i) {
			return &ws[j]
		}
	}
	panic("no wheel serves the window")
}

func newModel(l *Layout) *model {
	var longest int64
	for _, w := range l.Windows() {
		longest = max(longest, int64(w/time.Second))
	}
	return &model{longest: longest, reach: l.Longest(), lag: l.Longest() - longest}
}

// farthest is where the package documentation says times are clamped: ±2^50 seconds.
const farthest = 1 << 50

// clamped is a time as the documentation says the package takes it.
func clamped(t int64) int64 { return min(max(t, -farthest), farthest) }

// add follows the documented placement rules: the series' time is the newest now, events
// older than the windows reach are Late, events after now are placed at now. A now that
// went back by the longest window or more starts the series over; one that went back by
// less, to after every event placed, is the series' time from then on: a window of a
// wheel then lacks the events the wheel let go of while the series was ahead (held).
// Times are clamped.
func (m *model) add(now, at int64, v float64) Placement {
	now, at = clamped(now), clamped(at)
	if m.wentBack(now) {
		m.started, m.events = false, nil
	}
	if !m.started || now > m.t || now < m.t && m.newest < now {
		if !m.started {
			m.newest = math.MinInt64
		}
		m.t, m.started = now, true
	}
	for i := range m.events {
		m.events[i].hi = max(m.events[i].hi, m.t)
	}
	p := Placed
	if at > now {
		at, p = now, Future
	}
	if at <= m.t-m.reach {
		return Late
	}
	m.events = append(m.events, event{at, v, m.t})
	m.newest = max(m.newest, at)
	return p
}

// wentBack reports whether now is the longest window or more behind the series' time, so
// that every event held is after every window at now.
func (m *model) wentBack(now int64) bool {
	return m.started && now <= m.t-m.longest
}

// readSecond is the second a read at now reads the windows at: the series' own when it is
// later, now when the series holds nothing to read or when now is after every event
// placed, where its next add would take the series back (add).
func (m *model) readSecond(now int64) int64 {
	now = clamped(now)
	if !m.started || m.wentBack(now) || m.newest < now {
		return now
	}
	return max(now, m.t)
}

// agg is a naive aggregate over a span of seconds.
type agg struct {
	sum, abs, n float64
	max, min    float64
}

// span is the seconds from through to.
type span struct{ from, to int64 }

// spans aggregates, for each of the four spans a read checks of a window, the events in it
// that wheel w holds: one pass over the events for all four.
func (m *model) spans(w *wheel, ss [4]span) [4]agg {
	var as [4]agg
	lo, hi := ss[0].from, ss[0].to
	for i := range ss {
		as[i] = agg{max: math.Inf(-1), min: math.Inf(1)}
		lo, hi = min(lo, ss[i].from), max(hi, ss[i].to)
	}
	for _, e := range m.events {
		if e.at < lo || e.at > hi || !e.held(w) {
			continue
		}
		for i, s := range ss {
			if e.at < s.from || e.at > s.to {
				continue
			}
			a := &as[i]
			a.sum += e.v
			a.abs += math.Abs(e.v)
			a.n++
			a.max = max(a.max, e.v)
			a.min = min(a.min, e.v)
		}
	}
	return as
}

// servingStep is the slot width the package documentation promises for a window.
func servingStep(sec int64) int64 {
	switch {
	case sec <= 5*60:
		return 1
	case sec <= 5*3600:
		return 60
	case sec <= 300*3600:
		return 3600
	}
	return 86400
}

// check compares what Read returned at now against the model: windows served by second
// slots exactly, coarser windows within one old-edge slot and at its pro-rated value, and
// rates over the seconds from since. Windows end at the series' second, or the one before
// with lag; extrema of coarser windows are those of their whole slots, the newest of which
// holds the series' second.
func (m *model) check(l *Layout, got []Stats, now, since int64) error {
	wins := l.Windows()
	if len(got) != len(wins) {
		return fmt.Errorf("read returned %d stats for %d windows", len(got), len(wins))
	}
	now, since = clamped(now), clamped(since)
	if !m.started || m.wentBack(now) {
		for i, g := range got {
			if g.Sum != 0 || g.Events != 0 || g.PerSecond != 0 || !math.IsNaN(g.Max) || !math.IsNaN(g.Min) {
				return fmt.Errorf("window %v: %+v before any add, or read after the clock went back past every window", wins[i], g)
			}
		}
		return nil
	}
	s := m.readSecond(now)
	e := s - m.lag
	observed := max(e-since+1, 1)
	for i, g := range got {
		sec := int64(wins[i] / time.Second)
		lo := e - sec + 1
		step := servingStep(sec)
		w := servedBy(l.wheels, i)
		edge := floorDiv(lo, step) * step
		newest := e
		if step > 1 {
			newest = s
		}
		as := m.spans(w, [4]span{{lo, e}, {edge, edge + step - 1}, {edge + step, e}, {edge, newest}})
		exact, edgeSlot, inside, ext := as[0], as[1], as[2], as[3]
		wantEvents := func(a agg) float64 {
			if l.events != 0 {
				return a.n
			}
			return a.sum
		}
		if step == 1 {
			if g.Sum != exact.sum || g.Events != wantEvents(exact) {
				return fmt.Errorf("window %v at %d: sum %v events %v, naive %v %v", wins[i], s, g.Sum, g.Events, exact.sum, wantEvents(exact))
			}
		} else {
			if !within(g.Sum, exact.sum, edgeSlot.abs) || !within(g.Events, wantEvents(exact), wantEvents(edgeSlot)) {
				return fmt.Errorf("window %v at %d: sum %v events %v, naive %v %v, edge slot %+v beyond bound",
					wins[i], s, g.Sum, g.Events, exact.sum, wantEvents(exact), edgeSlot)
			}
			part := float64(edge+step-lo) / float64(step)
			if !near(g.Sum, inside.sum+part*edgeSlot.sum) || !near(g.Events, wantEvents(inside)+part*wantEvents(edgeSlot)) {
				return fmt.Errorf("window %v at %d: sum %v events %v, want %v+%v*%v", wins[i], s, g.Sum, g.Events, inside.sum, part, edgeSlot.sum)
			}
		}
		wantMax, wantMin := math.NaN(), math.NaN()
		if l.extrema != 0 && ext.n > 0 {
			wantMax, wantMin = ext.max, ext.min
		}
		if !same(g.Max, wantMax) || !same(g.Min, wantMin) {
			return fmt.Errorf("window %v at %d: max %v min %v, want %v %v", wins[i], s, g.Max, g.Min, wantMax, wantMin)
		}
		if want := g.Sum / float64(min(sec, observed)); !same(g.PerSecond, want) {
			return fmt.Errorf("window %v at %d: per second %v, want %v (observed %d)", wins[i], s, g.PerSecond, want, observed)
		}
	}
	return nil
}

// within reports |got−want| ≤ bound, allowing for rounding of the pro-rated slot.
func within(got, want, bound float64) bool {
	return math.Abs(got-want) <= bound+1e-9*(1+math.Abs(want)+bound)
}

func near(got, want float64) bool { return within(got, want, 0) }

func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// op is one step of a stream: an Add, or a Read at now.
type op struct {
	read    bool
	now, at int64
	v       float64
}

// replay applies ops to a fresh series and the model, checking every placement and read;
// reads pass since as the first second observed.
func replay(l *Layout, since int64, ops []op) error {
	s, m := l.NewSeries(), newModel(l)
	var dst []Stats
	sums := l.NewSummaries()
	for i, o := range ops {
		if o.read {
			dst = s.Read(o.now, since, dst)
			if err := m.check(l, dst, o.now, since); err != nil {
				return fmt.Errorf("op %d (read at %d): %w", i, o.now, err)
			}
			if at, want := ReadSecondOf(o.now, []*Series{s}), m.readSecond(o.now); at != want {
				return fmt.Errorf("op %d: read at %d reads second %d, want %d", i, o.now, at, want)
			}
			if len(sums) > 0 {
				s.ReadSummaries(o.now, sums)
				if err := m.checkSummaries(l, sums, o.now); err != nil {
					return fmt.Errorf("op %d (read at %d): %w", i, o.now, err)
				}
			}
			continue
		}
		// With summaries, the value's text is the event's one item: a summary reading it
		// must see the same events as one reading the value. Without, Add's own path.
		add := s.Add
		if len(l.kinds) > 0 {
			item := [][]byte{strconv.AppendFloat(nil, o.v, 'g', -1, 64)}
			add = func(now, at int64, v float64) Placement { return s.AddItems(now, at, v, item) }
		}
		if got, want := add(o.now, o.at, o.v), m.add(o.now, o.at, o.v); got != want {
			return fmt.Errorf("op %d add(now %d, at %d): %v, want %v", i, o.now, o.at, got, want)
		}
		if got, want := s.LastAdd(), m.last(); got != want {
			return fmt.Errorf("op %d: LastAdd %d, want %d", i, got, want)
		}
	}
	return nil
}

// last is the newest event second placed since the series started (over), which newest
// keeps as the events are placed.
func (m *model) last() int64 {
	if len(m.events) == 0 {
		return math.MinInt64
	}
	return m.newest
}
