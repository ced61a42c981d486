package sketch

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/windows"
)

// runAccount is a windows.Account of a bound (0: none).
type runAccount struct{ used, bound int64 }

func (a *runAccount) Charge(n int64) { a.used += n }
func (a *runAccount) Room() int64 {
	if a.bound == 0 {
		return math.MaxInt64
	}
	return a.bound - a.used
}

// TestSeriesAddManyRealKinds holds Series.AddMany to AddItems event by event with the real
// sketches, on layouts whose events carry several items (the kind reading any one of them),
// with odd values, late seconds, and accounts that cross 4 MiB of room within a run.
func TestSeriesAddManyRealKinds(t *testing.T) {
	odd := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), -3, 1, 2.5, 1e300, math.MaxFloat64}
	bkt := BucketsKind([]float64{0, 1, 2, 10})
	for _, tc := range []struct {
		name  string
		kinds []windows.SummaryKind
		per   int
	}{
		{"top item 2 of 2, buckets", []windows.SummaryKind{bkt, TopKind(200, 2)}, 2},
		{"distinct item 1 of 3, buckets", []windows.SummaryKind{DistinctKind(1), bkt}, 3},
		{"top item 3 of 3, distinct item 1", []windows.SummaryKind{TopKind(200, 3), DistinctKind(1), bkt}, 3},
		{"quantiles, buckets", []windows.SummaryKind{QuantilesKind, bkt}, 0},
		{"top alone item 2 of 2", []windows.SummaryKind{TopKind(100, 2)}, 2},
	} {
		for _, bound := range []int64{0, 4<<20 + 24<<10, 6 << 10} {
			t.Run(fmt.Sprintf("%s/bound %d", tc.name, bound), func(t *testing.T) {
				r := rand.New(rand.NewPCG(1, uint64(bound)))
				ws := []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute}
				a1, am := &runAccount{bound: bound}, &runAccount{bound: bound}
				l1, err := windows.NewLayout(ws, windows.Options{Events: true, Extrema: true, Summaries: tc.kinds, Account: a1})
				if err != nil {
					t.Fatal(err)
				}
				lm, _ := windows.NewLayout(ws, windows.Options{Events: true, Extrema: true, Summaries: tc.kinds, Account: am})
				one, many := l1.NewSeries(), lm.NewSeries()
				s1, sm := l1.NewSummaries(), lm.NewSummaries()
				now := int64(1_000_000)
				next := 0
				runs := 3000
				if testing.Short() || race.Enabled {
					runs = 300
				}
				for run := range runs {
					now += int64(r.IntN(2))
					at := now
					if r.IntN(6) == 0 {
						at -= int64(r.IntN(400))
					}
					n := 1 + r.IntN(1+r.IntN(300))
					var values []float64
					var items [][]byte
					var want windows.Placement
					for range n {
						v := float64(1 + r.IntN(3))
						if r.IntN(5) == 0 {
							v = odd[r.IntN(len(odd))]
						}
						var its [][]byte
						for k := range tc.per {
							var it []byte
							if r.IntN(3) == 0 {
								next++
								it = sizedItem(next, 8+k)
							} else {
								it = sizedItem(zipfDraw(r, 1.2, 50), 8+k)
							}
							its = append(its, it)
						}
						want = one.AddItems(now, at, v, its)
						values, items = append(values, v), append(items, its...)
					}
					if got := many.AddMany(now, at, values, items); got != want {
						t.Fatalf("run %d: placed %v, want %v", run, got, want)
					}
					if one.Bytes() != many.Bytes() || a1.used != am.used {
						t.Fatalf("run %d of %d at %d/%d: %d bytes, %d charged; one by one %d, %d", run, n, now, at, many.Bytes(), am.used, one.Bytes(), a1.used)
					}
					if run%10 == 0 {
						d1, dm := one.Read(now, 0, nil), many.Read(now, 0, nil)
						if fmt.Sprintf("%#v", d1) != fmt.Sprintf("%#v", dm) {
							t.Fatalf("run %d: stats %v, one by one %v", run, dm, d1)
						}
					}
					if run%50 == 0 {
						one.ReadSummaries(now, s1)
						many.ReadSummaries(now, sm)
						for k := range s1 {
							w, _ := s1[k].(encoded).AppendBinary(nil)
							g, _ := sm[k].(encoded).AppendBinary(nil)
							if !bytes.Equal(w, g) {
								t.Fatalf("run %d: summary %d differs", run, k)
							}
						}
					}
				}
				t.Logf("charged %d", a1.used)
			})
		}
	}
}
