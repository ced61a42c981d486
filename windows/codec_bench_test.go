package windows

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkCodec encodes and decodes 10,000 counting series of the default windows after
// 25 hours of events, a third each at one event a second, one in 10 s and one in 5
// minutes (at random seconds): the time per 10,000 and the bytes per series.
func BenchmarkCodec(b *testing.B) {
	l, err := NewLayout(defaultWindows, Options{})
	if err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	const start = 1_700_000_000
	end := int64(start + 25*3600)
	r := rand.New(rand.NewPCG(1, 2))
	var profiles [][]byte
	for _, every := range []int64{1, 10, 300} {
		s := l.NewSeries()
		for t := int64(start); t < end; t += 1 + r.Int64N(2*every) {
			s.Add(t, t, 1)
		}
		s.Add(end, end, 1)
		enc, err := s.AppendBinary(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("one event in %ds: %d bytes", every, len(enc))
		profiles = append(profiles, enc)
	}
	series := make([]*Series, n)
	for i := range series {
		if series[i], _, err = l.DecodeSeries(profiles[i%len(profiles)]); err != nil {
			b.Fatal(err)
		}
	}
	var buf []byte
	b.Run("encode_10k", func(b *testing.B) {
		for b.Loop() {
			buf = buf[:0]
			for _, s := range series {
				if buf, err = s.AppendBinary(buf); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(len(buf))/n, "bytes/series")
	})
	b.Run("decode_10k", func(b *testing.B) {
		for b.Loop() {
			rest := buf
			for range n {
				if _, rest, err = l.DecodeSeries(rest); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(len(buf))/n, "bytes/series")
	})
}
