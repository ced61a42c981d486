package sketch

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/logwindow/logwindow_exporter/windows"
)

// BenchmarkCodecSummaries encodes and decodes one series of the default windows keeping
// each kind of summary, after 25 hours of 5 events a second: latencies log-uniform from
// 1 ms to 10 s for quantiles and buckets, 1,000 different values per 5 minutes for the
// distinct count (distinctStream), and paths from a skewed set of 1,000 for top values
// (capacity 10). It reports the encoding's bytes beside what the series takes in memory.
func BenchmarkCodecSummaries(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	values := func(s *windows.Series) {
		for now := int64(base); now < base+25*3600; now++ {
			for range 5 {
				s.Add(now, now, logUniform(r, 1e-3, 10))
			}
		}
	}
	paths := make([][]byte, 1000)
	for i := range paths {
		paths[i] = fmt.Appendf(nil, "/api/v1/resource/%d", i)
	}
	for _, tc := range []struct {
		name string
		kind windows.SummaryKind
		fill func(s *windows.Series)
	}{
		{"quantiles", QuantilesKind, values},
		{"buckets", bucketsKind, values},
		{"distinct", DistinctKind(1), func(s *windows.Series) { distinctStream(s, 1000, 25*3600) }},
		{"top", TopKind(10, 1), func(s *windows.Series) {
			for now := int64(base); now < base+25*3600; now++ {
				for range 5 {
					s.AddItems(now, now, 1, [][]byte{paths[min(int(r.ExpFloat64()*50), len(paths)-1)]})
				}
			}
		}},
	} {
		l, err := windows.NewLayout(defaultWindows, windows.Options{Summaries: []windows.SummaryKind{tc.kind}})
		if err != nil {
			b.Fatal(err)
		}
		s := l.NewSeries()
		tc.fill(s)
		enc, err := s.AppendBinary(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name+"/encode", func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				if buf, err = s.AppendBinary(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(enc)), "bytes/series")
			b.ReportMetric(float64(s.Bytes()), "heap-bytes/series")
		})
		b.Run(tc.name+"/decode", func(b *testing.B) {
			for b.Loop() {
				if _, _, err := l.DecodeSeries(enc); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(enc)), "bytes/series")
		})
	}
}
