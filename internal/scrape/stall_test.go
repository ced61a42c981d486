package scrape

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// stallWriter is a client's connection that takes the first limit bytes of a reply, then
// stalls: the Write past them tells stalled and blocks until resume is closed.
type stallWriter struct {
	h       http.Header
	limit   int
	written int
	stalled chan struct{}
	resume  chan struct{}
}

func (w *stallWriter) Header() http.Header { return w.h }
func (w *stallWriter) WriteHeader(int)     {}
func (w *stallWriter) Write(p []byte) (int, error) {
	if w.written+len(p) > w.limit && w.stalled != nil {
		close(w.stalled)
		w.stalled = nil
		<-w.resume
	}
	w.written += len(p)
	return len(p), nil
}

// liveHeap is the heap in use once the garbage is collected.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestStalledScrapeHeld measures what a scrape holds while its client does not read: the
// heap in use while the handler is blocked writing to it, against before the scrape. It
// must stay within what the scrape limiter charges it (Collector.ScrapeCost: the rules
// open at once at their last read, a chunk and the compressor), far under the reply, in
// each streamed format, gzipped or not, whether it stalls at the first chunk or amid the
// rules: a scrape is written as it is read, never held whole for a client.
func TestStalledScrapeHeld(t *testing.T) {
	const rules, series = 8, 600
	var rs []string
	for i := range rules {
		rs = append(rs, fmt.Sprintf("r%d_requests", i))
	}
	ws := []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}
	cfg := storetest.Config(series)
	for _, name := range rs {
		cfg.Rules = append(cfg.Rules, storetest.CountRule(name, ws, "path", "status"))
	}
	cfg = storetest.Config(series, cfg.Rules...)
	set := mustSet(t, cfg, nil)
	k := set.NewSink()
	var lines []line
	for r := range rules {
		for i := range series {
			lines = append(lines, line{rule: r, labels: []string{fmt.Sprintf("/api/v1/items/%08d", i), "200"}, now: start})
		}
	}
	feed(k, lines)
	now := int64(start + 30)
	// handler serves a collector of its own: one that kept nothing of an earlier scrape.
	handler := func() (*Collector, http.Handler) {
		c := collectorAt(fixed(set), &now)
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		return c, exporter.Handler(c, reg, nil)
	}

	for _, tc := range []struct {
		name, accept string
		gzip         bool
	}{
		{"text", "text/plain;version=0.0.4", false},
		{"text gzipped", "text/plain;version=0.0.4", true},
		{"OpenMetrics", "application/openmetrics-text;version=1.0.0", false},
		{"protobuf", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", false},
		{"protobuf gzipped", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", true},
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", tc.accept)
		if tc.gzip {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		// A first scrape in the format measures its rules (ScrapeCost) and its size.
		c, h := handler()
		whole := &stallWriter{h: http.Header{}, limit: 1 << 62}
		h.ServeHTTP(whole, req)
		cost, known := c.ScrapeCost(exporter.Negotiate(req))
		if !known {
			t.Fatalf("%s: no cost known after a scrape", tc.name)
		}
		for _, at := range []float64{0, 0.5} {
			t.Run(fmt.Sprintf("%s stalled at %.0f%%", tc.name, 100*at), func(t *testing.T) {
				_, h := handler()
				before := liveHeap()
				w := &stallWriter{h: http.Header{}, limit: int(at * float64(whole.written)), stalled: make(chan struct{}), resume: make(chan struct{})}
				stalled := w.stalled
				done := make(chan struct{})
				go func() {
					defer close(done)
					h.ServeHTTP(w, req)
				}()
				<-stalled
				held := liveHeap() - before
				close(w.resume)
				<-done
				t.Logf("held %d KiB while stalled; charged %d KiB; the reply is %d KiB", held>>10, cost>>10, whole.written>>10)
				if held > cost {
					t.Errorf("a stalled scrape held %d bytes, over the %d it is charged (the reply: %d bytes)", held, cost, whole.written)
				}
			})
		}
	}
}
