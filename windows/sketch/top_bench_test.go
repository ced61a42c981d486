package sketch

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/windows"
)

// benchItems are n distinct path-like values, made before the timing.
func benchItems(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte("/api/v1/items/" + strconv.Itoa(i))
	}
	return out
}

// topBenchWindows are the window sets the top benchmarks run with: 5m alone, 1m, 5m, 15m
// and 1h (the 10 s and the minute wheels), and the example rules' 1m, 5m and 24h (the 10 s
// and the hour wheels).
var topBenchWindows = []struct {
	name string
	ws   []time.Duration
}{
	{"5m", []time.Duration{5 * time.Minute}},
	{"1m,5m,15m,1h", []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}},
	{"1m,5m,24h", []time.Duration{time.Minute, 5 * time.Minute, 24 * time.Hour}},
}

// unsealedTop is Top without its Seal, for comparison: every slot keeps up to twice the
// capacity until it is Reset.
type unsealedTop struct{ t *Top }

func (u unsealedTop) Add(v float64, item []byte) { u.t.Add(v, item) }
func (u unsealedTop) Merge(from windows.Summary) { u.t.Merge(from.(unsealedTop).t) }
func (u unsealedTop) Reset()                     { u.t.Reset() }
func (u unsealedTop) Bytes() int                 { return u.t.Bytes() }

// BenchmarkTopSeriesBytes is the live heap of one series keeping a top-values summary after
// a million lines (or 100,000) spread evenly over the longest window and its edge slot, so
// that every slot holds its share: each line a value never seen before (every line a new
// counter, none of which survives a prune) or Zipf(1.1) draws from a million values
// (whose heavy values survive); with Seal shrinking the closed slots, and without. The
// heap follows the capacity and not the number of distinct values.
func BenchmarkTopSeriesBytes(b *testing.B) {
	streams := []struct {
		name  string
		items [][]byte
	}{
		{"100000_unique", benchItems(100_000)},
		{"1000000_unique", benchItems(1_000_000)},
		{"1000000_zipf_1.1", zipfItems(1_000_000, 1.1, 1_000_000)},
	}
	for _, wins := range topBenchWindows {
		for _, capacity := range []int{100, 1000} {
			for _, st := range streams {
				for _, sealed := range []bool{true, false} {
					kind := TopKind(capacity, 1)
					name := fmt.Sprintf("%s/capacity_%d/%s", wins.name, capacity, st.name)
					if !sealed {
						kind = windows.SummaryKind{Item: 1, New: func() windows.Summary { return unsealedTop{NewTop(capacity)} }}
						name += "/unsealed"
					}
					benchTopBytes(b, name, wins.ws, kind, st.items)
				}
			}
		}
	}
}

func benchTopBytes(b *testing.B, name string, ws []time.Duration, kind windows.SummaryKind, items [][]byte) {
	b.Run(name, func(b *testing.B) {
		l, err := windows.NewLayout(ws, windows.Options{Summaries: []windows.SummaryKind{kind}})
		if err != nil {
			b.Fatal(err)
		}
		secs := int64(ws[len(ws)-1]/time.Second) + 60
		keep := make([]*windows.Series, b.N)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		item := make([][]byte, 1)
		for i := range keep {
			keep[i] = l.NewSeries()
			for j, it := range items {
				now := base + int64(j)*secs/int64(len(items))
				item[0] = it
				keep[i].AddItems(now, now, 1, item)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "B/series")
		runtime.KeepAlive(keep)
	})
}

// BenchmarkSeriesAddTop is what a line costs in the wheels with the 1m, 5m, 15m and 1h
// windows at 100 lines per second, without a summary (a rule without top) and with a
// top-values summary of capacity 1000 (k = 10) over Zipf(1.1) draws from 1M values.
func BenchmarkSeriesAddTop(b *testing.B) {
	ws := topBenchWindows[1].ws
	for _, tc := range []struct {
		name  string
		kinds []windows.SummaryKind
	}{
		{"plain", nil},
		{"top", []windows.SummaryKind{TopKind(1000, 1)}},
	} {
		l, err := windows.NewLayout(ws, windows.Options{Summaries: tc.kinds})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			items := zipfItems(1_000_000, 1.1, 1<<16)
			s := l.NewSeries()
			item := make([][]byte, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range int64(b.N) {
				now := base + i/100
				if tc.kinds == nil {
					s.Add(now, now, 1)
					continue
				}
				item[0] = items[i&(1<<16-1)]
				s.AddItems(now, now, 1, item)
			}
		})
	}
}

// zipfItems draws n values from Zipf(s) over distinct values, before the timing.
func zipfItems(distinct int, s float64, n int) [][]byte {
	r := rand.New(rand.NewPCG(7, 7))
	z := rand.NewZipf(r, s, 1, uint64(distinct-1))
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte("/api/v1/items/" + strconv.FormatUint(z.Uint64(), 10))
	}
	return out
}

// BenchmarkReadTop is the scrape-time work for one series with a top-values summary of
// capacity 1000 after an hour of 100 lines per second (Zipf(1.1) over 1M values): merging
// its slots into every window and picking the top 10 of each.
func BenchmarkReadTop(b *testing.B) {
	for _, wins := range topBenchWindows {
		b.Run(wins.name, func(b *testing.B) {
			l, err := windows.NewLayout(wins.ws, windows.Options{Summaries: []windows.SummaryKind{TopKind(1000, 1)}})
			if err != nil {
				b.Fatal(err)
			}
			items := zipfItems(1_000_000, 1.1, 1<<16)
			s := l.NewSeries()
			item := make([][]byte, 1)
			const end = base + 3600
			i := 0
			for now := int64(base); now < end; now++ {
				for range 100 {
					item[0] = items[i&(1<<16-1)]
					s.AddItems(now, now, 1, item)
					i++
				}
			}
			dst := l.NewSummaries()
			var top []TopValue
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				s.ReadSummaries(end, dst)
				for _, d := range dst {
					top = d.(*Top).TopShared(10, 0, top[:0])
				}
			}
		})
	}
}

// BenchmarkTopAdd is the cost of one line in a top-values summary of capacity 1000 alone,
// as the wheels use it: Zipf(1.1) draws from a million values (or a value never seen
// before every line), a slot of 1,000 lines sealed and merged into a coarser one, which
// is reset every six slots.
func BenchmarkTopAdd(b *testing.B) {
	for _, tc := range []struct {
		name  string
		items [][]byte
	}{{"zipf", zipfItems(1_000_000, 1.1, 1<<16)}, {"new", benchItems(1 << 16)}} {
		b.Run(tc.name, func(b *testing.B) {
			fine, coarse := NewTop(1000), NewTop(1000)
			b.ReportAllocs()
			for i := range b.N {
				fine.Add(1, tc.items[i&(1<<16-1)])
				if i%1000 == 999 {
					fine.Seal()
					if i%6000 == 5999 {
						coarse.Reset()
					}
					coarse.Merge(fine)
					fine.Reset()
				}
			}
		})
	}
}
