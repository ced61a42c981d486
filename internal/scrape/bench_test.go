package scrape

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/logwindow/logwindow_exporter/config/quantity"
)

// scrapeSet is the scrape benchmarks' store: 10,000 path series × 5 windows fed over an
// hour, and the second they are read at.
func scrapeSet(b *testing.B) (*store.Set, int64) { return scrapeSetOf(b, 1) }

// scrapeSetOf is scrapeSet fed by inputs sinks, each on a shard of its own and writing
// every series, which then has a part per input.
func scrapeSetOf(b *testing.B, inputs int) (*store.Set, int64) {
	const series = 10000
	cfg := storetest.Config(series, storetest.CountRule("http_requests", storetest.DefaultWindows, "method", "status", "path"))
	set, err := store.NewSetWith(cfg, nil, store.SetOptions{Shards: inputs})
	if err != nil {
		b.Fatal(err)
	}
	for range inputs {
		k := set.NewSink()
		for i := range series {
			feed(k, []line{{labels: []string{"GET", fmt.Sprint(200 + i%5), fmt.Sprintf("/api/v1/items/%d", i)}, now: start + int64(i%3600)}})
		}
	}
	return set, start + 3600
}

// BenchmarkCollectParts is BenchmarkCollect's text scrape of series written by one input,
// and by two whose parts a scrape reads and merges.
func BenchmarkCollectParts(b *testing.B) {
	for _, inputs := range []int{1, 2} {
		b.Run(fmt.Sprintf("inputs=%d", inputs), func(b *testing.B) {
			set, now := scrapeSetOf(b, inputs)
			benchWriteText(b, set, now)
		})
	}
}

// BenchmarkCollect is one scrape of 10,000 series × 5 windows: the rule families written
// in the text format (WriteText), OpenMetrics and delimited protobuf, each to io.Discard
// and through gzip at its fastest level, and the self-metrics gathered by a registry.
// allocs/sample is the allocations of one scrape per sample written.
func BenchmarkCollect(b *testing.B) {
	set, now := scrapeSet(b)
	c := collectorAt(fixed(set), &now)
	var text bytes.Buffer
	if err := c.WriteText(&text, nil); err != nil {
		b.Fatal(err)
	}
	samples := float64(bytes.Count(text.Bytes(), []byte("\n")) - 2*bytes.Count(text.Bytes(), []byte("# TYPE")))
	plain := func() io.WriteCloser { return nopCloser{io.Discard} }
	// One gzip writer reset per scrape, as the handler's spare is.
	gzw, err := kgzip.NewWriterLevel(io.Discard, kgzip.BestSpeed)
	if err != nil {
		b.Fatal(err)
	}
	gz := func() io.WriteCloser {
		gzw.Reset(io.Discard)
		return gzw
	}
	for _, tc := range []struct {
		name   string
		format expfmt.Format
		w      func() io.WriteCloser
	}{
		{"text", expfmt.FmtText, plain},
		{"gzip", expfmt.FmtText, gz},
		{"openmetrics", expfmt.FmtOpenMetrics_1_0_0, plain},
		{"openmetrics+gzip", expfmt.FmtOpenMetrics_1_0_0, gz},
		{"protobuf", expfmt.FmtProtoDelim, plain},
		{"protobuf+gzip", expfmt.FmtProtoDelim, gz},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for b.Loop() {
				w := tc.w()
				if err := c.Encode(w, nil, tc.format); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&m1)
			reportCPU(b, cpu)
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N)/samples, "allocs/sample")
			b.ReportMetric(samples, "samples/op")
		})
	}
	b.Run("self-metrics", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		b.ReportAllocs()
		cpu := cpuTime()
		for b.Loop() {
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, cpu)
	})
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// BenchmarkCompress compresses the text of a scrape of 10,000 series × 5 windows at the
// fastest level with the standard library and with klauspost/compress, which the handler
// uses: the ratio of their CPU times is why.
func BenchmarkCompress(b *testing.B) {
	set, now := scrapeSet(b)
	var text bytes.Buffer
	if err := collectorAt(fixed(set), &now).WriteText(&text, nil); err != nil {
		b.Fatal(err)
	}
	std, err := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	if err != nil {
		b.Fatal(err)
	}
	kp, err := kgzip.NewWriterLevel(io.Discard, kgzip.BestSpeed)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		w    interface {
			io.WriteCloser
			Reset(io.Writer)
		}
	}{{"compress-gzip", std}, {"klauspost-gzip", kp}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(text.Len()))
			cpu := cpuTime()
			for b.Loop() {
				tc.w.Reset(io.Discard)
				if _, err := tc.w.Write(text.Bytes()); err != nil {
					b.Fatal(err)
				}
				if err := tc.w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// cpuTime is the process's CPU time so far. The machine is shared, so wall time per op
// says more about the neighbours than about the code; CPU time (GC included) does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchWriteText measures the text scrape of set at second now: allocations and CPU.
func benchWriteText(b *testing.B, set *store.Set, now int64) {
	benchEncode(b, set, now, expfmt.FmtText)
}

// benchEncode measures the scrape of set at second now in format, and its bytes.
func benchEncode(b *testing.B, set *store.Set, now int64, format expfmt.Format) {
	c := collectorAt(fixed(set), &now)
	var w countingWriter
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		w = 0
		if err := c.Encode(&w, nil, format); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(w), "bytes/scrape")
}

// countingWriter counts what is written to it.
type countingWriter int

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

func reportCPU(b *testing.B, since time.Duration) {
	b.ReportMetric(float64(cpuTime()-since)/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkCollectQuantiles is one scrape of 1,000 series of a value rule with the default
// windows, each holding a day of a line every 10 s (log-uniform 1 ms–10 s): without
// quantiles, with the default three, with them and eleven buckets, and with them as a
// native histogram; in the text format (WriteText), OpenMetrics and protobuf.
func BenchmarkCollectQuantiles(b *testing.B) {
	const series = 1000
	buckets := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	for _, tc := range []struct {
		name    string
		q       bool
		buckets []float64
		native  bool
		format  expfmt.Format
	}{
		{"plain", false, nil, false, expfmt.FmtText},
		{"quantiles", true, nil, false, expfmt.FmtText},
		{"quantiles+buckets", true, buckets, false, expfmt.FmtText},
		{"quantiles/openmetrics", true, nil, false, expfmt.FmtOpenMetrics_1_0_0},
		{"quantiles/protobuf", true, nil, false, expfmt.FmtProtoDelim},
		{"quantiles+native/protobuf", true, nil, true, expfmt.FmtProtoDelim},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := storetest.ValueRule("request_seconds", storetest.DefaultWindows, "path")
			if tc.q {
				r.Aggregations.Quantiles, r.Quantiles = true, quantity.DefaultQuantiles
			}
			if tc.buckets != nil {
				r.Buckets = tc.buckets
			}
			r.NativeHistogram = tc.native
			set := mustSet(b, storetest.Config(series, r), nil)
			k := set.NewSink()
			rnd := rand.New(rand.NewPCG(1, 1))
			const span = 25 * 3600
			for t := int64(0); t < span; t += 10 {
				k.SetNow(start+t, start+t)
				for i := range series {
					e := line{labels: []string{fmt.Sprintf("/p/%d", i)}, value: math.Exp(math.Log(1e-3) + rnd.Float64()*math.Log(1e4))}.event()
					k.Event(e)
				}
			}
			now := int64(start + span)
			benchEncode(b, set, now, tc.format)
		})
	}
}
