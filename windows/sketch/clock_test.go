package sketch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
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

// TestKindsUnderClockSteps: the clock a series is added at moves as a host's may, jumping
// ahead of the events' own times and coming back (the series goes back to it), stepping
// back by seconds or hours, jumping ahead by a day, with events late, ahead of it and a
// wheel's length behind it; at every read, each kind's summary of each window reads as a
// new sketch given the window's events does. So sealing a slot, adding to it after, taking
// it up again as the series goes back and sealing it again, rolling up and merging lose or
// add nothing, in every kind.
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
				real := int64(base) + r.Int64N(86400)
				for range rounds {
					skew := []int64{5, 299, 900, 3599, 3700}[r.IntN(5)]
					step := []int64{0, -20, -4000, 86400 + r.Int64N(3600)}[r.IntN(4)]
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
								s.AddItems(now, at, v, [][]byte{fmt.Appendf(nil, "i%d", r.IntN(60))})
							}
							if r.IntN(3) != 0 {
								continue
							}
							at := now - r.Int64N(2)
							s.ReadSummaries(at, got)
							for w := range ws {
								held := got[w*len(all)].(*events)
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
