package sketch

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/axiomhq/hyperloglog"

	"github.com/logwindow/logwindow_exporter/windows"
)

// ddSummary is sketches-go's DDSketch at the same 1 % bound, as a windows.Summary: the
// alternative the README compares Quantiles with.
type ddSummary struct{ *ddsketch.DDSketch }

func newDD() windows.Summary {
	s, err := ddsketch.NewDefaultDDSketch(RelativeError)
	if err != nil {
		panic(err)
	}
	return ddSummary{s}
}

func (d ddSummary) Add(v float64, _ []byte) {
	if err := d.DDSketch.Add(v); err != nil {
		panic(err)
	}
}

func (d ddSummary) Merge(from windows.Summary) {
	if err := d.MergeWith(from.(ddSummary).DDSketch); err != nil {
		panic(err)
	}
}

func (d ddSummary) Reset() { d.Clear() }

// Bytes is not measured: the comparison is by the heap the benchmarks measure.
func (d ddSummary) Bytes() int { return 0 }

var sketchKinds = []struct {
	name string
	kind windows.SummaryKind
}{{"own", QuantilesKind}, {"ddsketch", windows.SummaryKind{New: newDD}}}

// benchValues are 4,096 log-uniform values from 1 ms to 10 s, drawn before the timing.
func benchValues() []float64 {
	r := rand.New(rand.NewPCG(1, 1))
	vs := make([]float64, 4096)
	for i := range vs {
		vs[i] = logUniform(r, 1e-3, 10)
	}
	return vs
}

// BenchmarkSketchAdd is the cost of one value (log-uniform 1 ms–10 s) added to a sketch.
func BenchmarkSketchAdd(b *testing.B) {
	for _, k := range sketchKinds {
		b.Run(k.name, func(b *testing.B) {
			vs := benchValues()
			s := k.kind.New()
			b.ReportAllocs()
			for i := range b.N {
				s.Add(vs[i&4095], nil)
			}
		})
	}
}

// BenchmarkBucketsAdd is the cost of one value (log-uniform 1 ms–10 s) counted into the
// example rules' eleven buckets: by Add, which searches the bounds, and by the kind's
// AddGrown, which the wheels add by, through the bounds' cells.
func BenchmarkBucketsAdd(b *testing.B) {
	// More values than benchValues' 4,096, which a branch predictor learns in turn.
	r := rand.New(rand.NewPCG(2, 2))
	vs := make([]float64, 1<<16)
	for i := range vs {
		vs[i] = logUniform(r, 1e-3, 10)
	}
	kind := BucketsKind([]float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10})
	b.Run("search", func(b *testing.B) {
		s := kind.New()
		b.ReportAllocs()
		for i := range b.N {
			s.Add(vs[i&(1<<16-1)], nil)
		}
	})
	b.Run("cells", func(b *testing.B) {
		s := kind.New()
		b.ReportAllocs()
		for i := range b.N {
			kind.AddGrown(s, vs[i&(1<<16-1)], nil)
		}
	})
}

// BenchmarkQuantileSeriesBytes is the live heap of one series of the default windows keeping
// a quantile sketch, after 25 hours of a steady stream of log-uniform 1 ms–10 s values at
// 1, 100 and 1,000 lines per second (every slot of every wheel then holds its share).
func BenchmarkQuantileSeriesBytes(b *testing.B) {
	for _, k := range sketchKinds {
		l, err := windows.NewLayout(defaultWindows, windows.Options{Events: true, Summaries: []windows.SummaryKind{k.kind}})
		if err != nil {
			b.Fatal(err)
		}
		plain, err := windows.NewLayout(defaultWindows, windows.Options{Events: true})
		if err != nil {
			b.Fatal(err)
		}
		for _, rate := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("%s/%d_per_s", k.name, rate), func(b *testing.B) {
				r := rand.New(rand.NewPCG(2, 2))
				reportSeriesBytes(b, l, func(s *windows.Series) {
					for now := int64(base); now < base+25*3600; now++ {
						for range rate {
							s.Add(now, now, logUniform(r, 1e-3, 10))
						}
					}
				})
				var before, after runtime.MemStats
				// The floats of the same series without the sketch, for comparison.
				runtime.GC()
				runtime.ReadMemStats(&before)
				floats := plain.NewSeries()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc), "B/plain")
				runtime.KeepAlive(floats)
			})
		}
	}
}

// reportSeriesBytes reports the live heap of b.N series of l, each filled by fill.
func reportSeriesBytes(b *testing.B, l *windows.Layout, fill func(s *windows.Series)) {
	keep := make([]*windows.Series, b.N)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = l.NewSeries()
		fill(keep[i])
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "B/series")
	runtime.KeepAlive(keep)
}

// BenchmarkSeriesAdd is what a line costs in the wheels of a value rule with the default
// windows, without and with quantiles (and buckets), at 100 lines per second.
func BenchmarkSeriesAdd(b *testing.B) {
	for _, tc := range []struct {
		name  string
		kinds []windows.SummaryKind
	}{
		{"plain", nil},
		{"quantiles", []windows.SummaryKind{QuantilesKind}},
		{"quantiles+buckets", []windows.SummaryKind{QuantilesKind, bucketsKind}},
		{"ddsketch", []windows.SummaryKind{{New: newDD}}},
	} {
		l, err := windows.NewLayout(defaultWindows, windows.Options{Events: true, Extrema: true, Summaries: tc.kinds})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			vs := benchValues()
			s := l.NewSeries()
			b.ReportAllocs()
			for i := range int64(b.N) {
				now := base + i/100
				s.Add(now, now, vs[i&4095])
			}
		})
	}
}

// BenchmarkSeriesAddBehind is BenchmarkSeriesAdd for a log read after it was written, as
// a start from the beginning of a file reads it: the events' seconds are up to an hour
// behind the clock, 100 lines each, while the clock moves a second per million lines.
func BenchmarkSeriesAddBehind(b *testing.B) {
	for _, tc := range []struct {
		name  string
		kinds []windows.SummaryKind
	}{
		{"plain", nil},
		{"quantiles", []windows.SummaryKind{QuantilesKind}},
		{"quantiles+buckets", []windows.SummaryKind{QuantilesKind, bucketsKind}},
	} {
		l, err := windows.NewLayout(defaultWindows, windows.Options{Events: true, Extrema: true, Summaries: tc.kinds})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			vs := benchValues()
			s := l.NewSeries()
			b.ReportAllocs()
			for i := range int64(b.N) {
				now := base + 3600 + i/1000000
				s.Add(now, base+i/100%3600, vs[i&4095])
			}
		})
	}
}

// BenchmarkSeriesAddSparse is BenchmarkSeriesAdd's quantile rule at low rates: a line
// every second, 10 s and 100 s, where a summary slot holds few values and the merge of a
// closing slot into the coarser wheels costs more than the adds it spares.
func BenchmarkSeriesAddSparse(b *testing.B) {
	l, err := windows.NewLayout(defaultWindows, windows.Options{Events: true, Extrema: true, Summaries: []windows.SummaryKind{QuantilesKind}})
	if err != nil {
		b.Fatal(err)
	}
	for _, every := range []int64{1, 10, 100} {
		b.Run(fmt.Sprintf("every_%ds", every), func(b *testing.B) {
			vs := benchValues()
			s := l.NewSeries()
			b.ReportAllocs()
			for i := range int64(b.N) {
				now := base + i*every
				s.Add(now, now, vs[i&4095])
			}
		})
	}
}

// BenchmarkReadQuantiles is the scrape-time work for one series that held 10 or 100 lines
// per second (log-uniform 1 ms–10 s) for 25 hours: merging its slots into every default
// window and asking four quantiles of each.
func BenchmarkReadQuantiles(b *testing.B) {
	for _, k := range sketchKinds {
		l, err := windows.NewLayout(defaultWindows, windows.Options{Summaries: []windows.SummaryKind{k.kind}})
		if err != nil {
			b.Fatal(err)
		}
		for _, rate := range []int{10, 100} {
			b.Run(fmt.Sprintf("%s/%d_per_s", k.name, rate), func(b *testing.B) {
				r := rand.New(rand.NewPCG(4, 4))
				s := l.NewSeries()
				const end = base + 25*3600
				for now := int64(base); now < end; now++ {
					for range rate {
						s.Add(now, now, logUniform(r, 1e-3, 10))
					}
				}
				dst := l.NewSummaries()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					s.ReadSummaries(end, dst)
					for _, d := range dst {
						switch q := d.(type) {
						case *Quantiles:
							for _, p := range []float64{0.5, 0.9, 0.99, 0.999} {
								q.Quantile(p)
							}
						case ddSummary:
							if _, err := q.GetValuesAtQuantiles([]float64{0.5, 0.9, 0.99, 0.999}); err != nil {
								b.Fatal(err)
							}
						}
					}
				}
			})
		}
	}
}

// hllSummary is axiomhq/hyperloglog's sketch at the same precision, sparse while small, as
// a windows.Summary: the alternative the README compares Distinct with.
type hllSummary struct{ hll *hyperloglog.Sketch }

func newHLL() windows.Summary { return &hllSummary{} }

func (h *hllSummary) init() {
	if h.hll == nil {
		hll, err := hyperloglog.NewSketch(DistinctPrecision, true)
		if err != nil {
			panic(err)
		}
		h.hll = hll
	}
}

func (h *hllSummary) Add(_ float64, item []byte) {
	h.init()
	h.hll.Insert(item)
}

func (h *hllSummary) Merge(from windows.Summary) {
	if f := from.(*hllSummary); f.hll != nil {
		h.init()
		if err := h.hll.Merge(f.hll); err != nil {
			panic(err)
		}
	}
}

func (h *hllSummary) Reset() { h.hll = nil }

// Bytes is not measured: the comparison is by the heap the benchmarks measure.
func (h *hllSummary) Bytes() int { return 0 }

func (h *hllSummary) count() uint64 {
	if h.hll == nil {
		return 0
	}
	return h.hll.Estimate()
}

var distinctKinds = []struct {
	name string
	kind windows.SummaryKind
}{{"own", DistinctKind(1)}, {"axiomhq", windows.SummaryKind{New: newHLL, Item: 1}}}

// distinctStream feeds s perFive different values in every 5 minutes, a new set each 5
// minutes (so a day holds 288 times as many), for secs seconds from base, at
// ⌈perFive/300⌉ lines per second cycling through the set.
func distinctStream(s *windows.Series, perFive, secs int64) {
	rate := (perFive + 299) / 300
	var buf [8]byte
	items := [][]byte{buf[:]}
	for now := int64(base); now < base+secs; now++ {
		for j := range rate {
			k := ((now-base)%300*rate + j) % perFive
			binary.LittleEndian.PutUint64(buf[:], uint64((now-base)/300*perFive+k))
			s.AddItems(now, now, 1, items)
		}
	}
}

// BenchmarkDistinctSeriesBytes is the live heap of one series keeping a distinct count
// after a stream of 10, 10,000 and 1,000,000 different values per 5 minutes: with the
// default windows after 25 hours (every slot of every wheel then holds its share; the
// million is BenchmarkDistinctMillionSeriesBytes), with the example rule's 1m, 5m and 1h
// after an hour, and with a 5m window only after 5 minutes.
func BenchmarkDistinctSeriesBytes(b *testing.B) {
	for _, tc := range []struct {
		name    string
		windows []time.Duration
		secs    int64
		perFive []int64
	}{
		{"default_windows", defaultWindows, 25 * 3600, []int64{10, 10_000}},
		// The windows of example-rules.yaml's distinct rule, after an hour and 10 s.
		{"1m_5m_1h", []time.Duration{time.Minute, 5 * time.Minute, time.Hour}, 3610, []int64{10, 10_000}},
		{"5m", []time.Duration{5 * time.Minute}, 310, []int64{10, 10_000, 1_000_000}},
	} {
		for _, k := range distinctKinds {
			l, err := windows.NewLayout(tc.windows, windows.Options{Summaries: []windows.SummaryKind{k.kind}})
			if err != nil {
				b.Fatal(err)
			}
			for _, perFive := range tc.perFive {
				b.Run(fmt.Sprintf("%s/%s/%d_per_5m", k.name, tc.name, perFive), func(b *testing.B) {
					reportSeriesBytes(b, l, func(s *windows.Series) { distinctStream(s, perFive, tc.secs) })
				})
			}
		}
	}
}

// BenchmarkDistinctMillionSeriesBytes is BenchmarkDistinctSeriesBytes' default windows at
// 1,000,000 different values per 5 minutes, this sketch only: 300 million lines, some two
// minutes, so it is a benchmark of its own.
func BenchmarkDistinctMillionSeriesBytes(b *testing.B) {
	l, err := windows.NewLayout(defaultWindows, windows.Options{Summaries: []windows.SummaryKind{DistinctKind(1)}})
	if err != nil {
		b.Fatal(err)
	}
	reportSeriesBytes(b, l, func(s *windows.Series) { distinctStream(s, 1_000_000, 25*3600) })
}

// BenchmarkDistinctAdd is what a line costs in the wheels of a counting rule with the
// default windows, 10,000 different values per 5 minutes: without a distinct count (Add,
// and AddItems without items, the path of rules without one) and with each sketch.
func BenchmarkDistinctAdd(b *testing.B) {
	plain, err := windows.NewLayout(defaultWindows, windows.Options{})
	if err != nil {
		b.Fatal(err)
	}
	type addCase struct {
		name string
		l    *windows.Layout
		add  func(s *windows.Series, now int64, items [][]byte)
	}
	cases := []addCase{
		{"plain", plain, func(s *windows.Series, now int64, _ [][]byte) { s.Add(now, now, 1) }},
		{"plain_no_items", plain, func(s *windows.Series, now int64, _ [][]byte) { s.AddItems(now, now, 1, nil) }},
	}
	for _, k := range distinctKinds {
		l, err := windows.NewLayout(defaultWindows, windows.Options{Summaries: []windows.SummaryKind{k.kind}})
		if err != nil {
			b.Fatal(err)
		}
		cases = append(cases, addCase{k.name, l, func(s *windows.Series, now int64, items [][]byte) { s.AddItems(now, now, 1, items) }})
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			s := tc.l.NewSeries()
			var buf [8]byte
			items := [][]byte{buf[:]}
			b.ReportAllocs()
			for i := range int64(b.N) {
				// 34 lines a second, a new set of 10,000 values every 5 minutes.
				now := base + i/34
				binary.LittleEndian.PutUint64(buf[:], uint64(i%10_200))
				tc.add(s, now, items)
			}
		})
	}
}

// BenchmarkReadDistinct is the scrape-time work for one distinct series after 25 hours of
// 10 and 10,000 different values per 5 minutes: merging its slots into every default
// window and counting each.
func BenchmarkReadDistinct(b *testing.B) {
	for _, k := range distinctKinds {
		l, err := windows.NewLayout(defaultWindows, windows.Options{Summaries: []windows.SummaryKind{k.kind}})
		if err != nil {
			b.Fatal(err)
		}
		for _, perFive := range []int64{10, 10_000} {
			b.Run(fmt.Sprintf("%s/%d_per_5m", k.name, perFive), func(b *testing.B) {
				s := l.NewSeries()
				distinctStream(s, perFive, 25*3600)
				dst := l.NewSummaries()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					s.ReadSummaries(base+25*3600, dst)
					for _, d := range dst {
						switch c := d.(type) {
						case *Distinct:
							c.Count()
						case *hllSummary:
							c.count()
						}
					}
				}
			})
		}
	}
}

// BenchmarkSeriesAddMany is what a line costs in the wheels when a second's lines come at
// once (Series.AddMany, as the store's sinks hand them), 300 lines a second, without a
// summary and for each summary the example rules keep with their windows: top paths (capacity 1000, Zipf(1.1)
// over 1M paths; 1m, 5m, 24h), distinct clients (Zipf(1.05) over 20,000; 1m, 5m, 1h),
// quantiles, and quantiles with buckets (the default windows).
func BenchmarkSeriesAddMany(b *testing.B) {
	const perSecond = 300
	minute, day := time.Minute, 24*time.Hour
	for _, tc := range []struct {
		name  string
		ws    []time.Duration
		kinds []windows.SummaryKind
		items [][]byte
	}{
		{"plain", defaultWindows, nil, nil},
		{"top", []time.Duration{minute, 5 * minute, day}, []windows.SummaryKind{TopKind(1000, 1)}, zipfItems(1_000_000, 1.1, 1<<16)},
		{"distinct", []time.Duration{minute, 5 * minute, time.Hour}, []windows.SummaryKind{DistinctKind(1)}, zipfItems(20_000, 1.05, 1<<16)},
		{"quantiles", defaultWindows, []windows.SummaryKind{QuantilesKind}, nil},
		{"quantiles+buckets", defaultWindows, []windows.SummaryKind{QuantilesKind, bucketsKind}, nil},
	} {
		l, err := windows.NewLayout(tc.ws, windows.Options{Events: true, Summaries: tc.kinds})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			vs := benchValues()
			s := l.NewSeries()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += perSecond {
				n := min(perSecond, b.N-i)
				now := base + int64(i/perSecond)
				from := i & 4095 % (4096 - perSecond)
				var items [][]byte
				if tc.items != nil {
					items = tc.items[i&(1<<16-1)%(1<<16-perSecond):][:n]
				}
				s.AddMany(now, now, vs[from:from+n], items)
			}
		})
	}
}

// BenchmarkReadDistinctExample is the scrape-time work for the example rule's distinct
// count (1m, 5m, 1h) after 51 minutes of 260 lines a second, Zipf(1.05) over 20,000
// clients (about 4,000 different a minute, 19,800 in the hour, as in the log the bench
// generates): every window merged from its slots, sparse ones and, for the hour, past
// the sparse bound, and counted; parts=2 reads two such series and merges the second's
// windows into the first's, as a scrape of a rule written by two shards does.
func BenchmarkReadDistinctExample(b *testing.B) {
	l, err := windows.NewLayout([]time.Duration{time.Minute, 5 * time.Minute, time.Hour}, windows.Options{Summaries: []windows.SummaryKind{DistinctKind(1)}})
	if err != nil {
		b.Fatal(err)
	}
	const perSecond, secs = 260, 51 * 60
	items := zipfItems(20_000, 1.05, perSecond*secs)
	values := make([]float64, perSecond)
	parts := make([]*windows.Series, 2)
	for p := range parts {
		parts[p] = l.NewSeries()
		for i := range int64(secs) {
			now := base + i
			// Each part gets every other line of the second, as shards split a log.
			run := items[i*perSecond:][:perSecond]
			var mine [][]byte
			for j := p; j < len(run); j += len(parts) {
				mine = append(mine, run[j])
			}
			parts[p].AddMany(now, now, values[:len(mine)], mine)
		}
	}
	whole := l.NewSeries()
	for i := range int64(secs) {
		whole.AddMany(base+i, base+i, values, items[i*perSecond:][:perSecond])
	}
	end := int64(base + secs)
	b.Run("parts=1", func(b *testing.B) {
		dst := l.NewSummaries()
		b.ReportAllocs()
		for b.Loop() {
			whole.ReadSummaries(end, dst)
			for _, d := range dst {
				d.(*Distinct).Count()
			}
		}
	})
	b.Run("parts=2", func(b *testing.B) {
		dst, more := l.NewSummaries(), l.NewSummaries()
		b.ReportAllocs()
		for b.Loop() {
			parts[0].ReadSummaries(end, dst)
			parts[1].ReadSummaries(end, more)
			for i, d := range dst {
				d.Merge(more[i])
				d.(*Distinct).Count()
			}
		}
	})
}
