package sketch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/internal/testutil/reference"
	"github.com/logwindow/logwindow_exporter/windows"
)

// events is a summary that keeps every event merged into it, value and item: beside the
// sketches in one layout, it is what their window holds, which a new sketch given those
// events must read as.
type events struct {
	vs    []float64
	items [][]byte
}

func (e *events) Add(v float64, item []byte) {
	e.vs, e.items = append(e.vs, v), append(e.items, slices.Clone(item))
}

func (e *events) Merge(from windows.Summary) {
	f := from.(*events)
	e.vs, e.items = append(e.vs, f.vs...), append(e.items, f.items...)
}

func (e *events) Reset()     { e.vs, e.items = e.vs[:0], e.items[:0] }
func (e *events) Bytes() int { return 64 }

// keys appends to dst the eventKey of every event held, of the items TestKindsUnderClockSteps
// adds ("i" and a number).
func (e *events) keys(dst []int64) []int64 {
	for i, v := range e.vs {
		n, err := strconv.ParseInt(string(e.items[i][1:]), 10, 64)
		if err != nil {
			panic(err)
		}
		dst = append(dst, eventKey(v, n))
	}
	return dst
}

// clockModel is which events a series' summary windows hold as the package documentation
// says, written from it rather than from the wheels: the series' second is the newest now
// added at, or now when that went back to after every event placed; a now the longest
// window or more behind it starts the series over; an event is placed at now if after it,
// and is late at the series' second less the reach; a window reads at the later of its now
// and the series' second (or at now, when that is after every event placed), from the start
// of the slot holding its oldest second to the end of the one holding its newest; and a
// wheel lets go of an event's slot once its second has moved as many slots past it as the
// wheel has (it keeps just enough for its longest window).
type clockModel struct {
	longest, lag int64
	// slots is how many slots the summary wheel of each step has.
	slots   map[int64]int64
	t       int64 // the series' second
	newest  int64 // newest event second placed
	started bool
	placed  []modelEvent
}

// modelEvent is an event placed: its second, its key (see eventKey) and the newest second
// the series was at since it was placed, which says whether a wheel still holds it.
type modelEvent struct {
	at, key, hi int64
}

// eventKey names an event of the test by its value, a multiple of 1/8, and its item's
// number.
func eventKey(v float64, item int64) int64 { return int64(v*8)<<8 | item }

// add places an event of second at with key at now, and says where.
func (m *clockModel) add(now, at, key int64) windows.Placement {
	if m.wentBack(now) {
		m.started, m.placed = false, m.placed[:0]
	}
	if !m.started || now > m.t || now < m.t && m.newest < now {
		if !m.started {
			m.newest = math.MinInt64
		}
		m.t, m.started = now, true
	}
	// What no window can reach again is dropped: two days past the longest, which covers
	// the edge slot a window stretches back to.
	m.placed = slices.DeleteFunc(m.placed, func(e modelEvent) bool { return e.at < m.t-m.longest-2*86400 })
	for i := range m.placed {
		m.placed[i].hi = max(m.placed[i].hi, m.t)
	}
	p := windows.Placed
	if at > now {
		at, p = now, windows.Future
	}
	if at <= m.t-m.longest-m.lag {
		return windows.Late
	}
	m.placed = append(m.placed, modelEvent{at: at, key: key, hi: m.t})
	m.newest = max(m.newest, at)
	return p
}

func (m *clockModel) wentBack(now int64) bool { return m.started && now <= m.t-m.longest }

// window appends to dst the keys of the events a window w holds when read at now.
func (m *clockModel) window(dst []int64, now int64, w time.Duration) []int64 {
	if !m.started || m.wentBack(now) {
		return dst
	}
	e := now
	if m.newest >= now {
		e = max(now, m.t)
	}
	e -= m.lag
	step := reference.SummaryStep(w)
	edge, last := reference.SummaryEdge(e, w), floorDiv(e, step)*step+step-1
	for _, ev := range m.placed {
		if ev.at >= edge && ev.at <= last && floorDiv(ev.hi, step)-floorDiv(ev.at, step) < m.slots[step] {
			dst = append(dst, ev.key)
		}
	}
	return dst
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// TestKindsUnderClockSteps: the clock a series is added at moves as a host's may, jumping
// ahead of the events' own times and coming back (the series goes back to it), stepping
// back by seconds or hours or by about the longest window, jumping ahead by a day, with
// events late, ahead of it and a wheel's length behind it; reads come at now, a second
// before, and ahead of it by about a window, where the window's old edge falls on the events
// just placed. At every read, each window holds the events the documented model says
// (clockModel), and each kind's summary of it reads as a new sketch given those events does.
// So sealing a slot, adding to it after, taking it up again as the series goes back and
// sealing it again, rolling up and merging lose, add or move nothing, in every kind.
func TestKindsUnderClockSteps(t *testing.T) {
	kinds := []windows.SummaryKind{QuantilesKind, BucketsKind([]float64{-1, 0, 0.5, 2}), DistinctKind(1), TopKind(1000, 1)}
	all := append([]windows.SummaryKind{{New: func() windows.Summary { return &events{} }, Item: 1}}, kinds...)
	ws := []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 24 * time.Hour}
	seeds, rounds := 6, 6
	if testing.Short() || race.Enabled {
		seeds, rounds = 1, 1
	}
	for _, end := range []bool{false, true} {
		for seed := range seeds {
			t.Run(fmt.Sprintf("last complete %v/seed %d", end, seed), func(t *testing.T) {
				l, err := windows.NewLayout(ws, windows.Options{Summaries: all, LastComplete: end})
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(uint64(seed), 17))
				s := l.NewSeries()
				got := l.NewSummaries()
				// The wheels of 10 s, minutes and hours the windows take, as the package
				// documentation counts them for the default windows.
				m := &clockModel{longest: 86400, slots: map[int64]int64{10: 31, 60: 61, 3600: 25}}
				if end {
					m.lag = 1
				}
				var want, have []int64
				real := int64(base) + r.Int64N(86400)
				for range rounds {
					skew := []int64{5, 299, 900, 3599, 3700}[r.IntN(5)]
					step := []int64{0, -20, -4000, 86400 + r.Int64N(3600), -86400 + r.Int64N(3) - 1}[r.IntN(5)]
					for _, skew := range []int64{0, skew, 0} {
						for range 20 + r.IntN(40) {
							real += r.Int64N(3)
							now := real + skew
							for range 1 + r.IntN(3) {
								at := real - r.Int64N(3) + r.Int64N(2)
								switch r.IntN(15) {
								case 0:
									at = now - 300 - r.Int64N(4000)
								case 1:
									at = now + 1 + r.Int64N(100)
								}
								// Multiples of 1/8, so that sums in any order are exact.
								v := float64(r.IntN(161)-40) / 8
								item := r.Int64N(60)
								if p, want := s.AddItems(now, at, v, [][]byte{fmt.Appendf(nil, "i%d", item)}), m.add(now, at, eventKey(v, item)); p != want {
									t.Fatalf("add at %d of %d: %v, want %v", at, now, p, want)
								}
							}
							if r.IntN(3) != 0 {
								continue
							}
							at := now - r.Int64N(2)
							if r.IntN(4) == 0 {
								at = now + int64(ws[r.IntN(len(ws))]/time.Second) - r.Int64N(120)
							}
							s.ReadSummaries(at, got)
							for w := range ws {
								held := got[w*len(all)].(*events)
								want, have = m.window(want[:0], at, ws[w]), held.keys(have[:0])
								slices.Sort(want)
								slices.Sort(have)
								if !slices.Equal(have, want) {
									t.Fatalf("read at %d, %v window: %d events, the model's %d", at, ws[w], len(have), len(want))
								}
								for k, kind := range kinds {
									fresh := kind.New()
									for i, v := range held.vs {
										fresh.Add(v, held.items[i])
									}
									if g, want := reading(got[w*len(all)+1+k]), reading(fresh); g != want {
										t.Fatalf("read at %d, %v window, %T: %s, its events give %s", at, ws[w], fresh, g, want)
									}
								}
							}
						}
					}
					real += step
				}
			})
		}
	}
}
