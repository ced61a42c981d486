package scrape

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/logwindow/logwindow_exporter/exporter"
)

// grownRules keep a distinct count's registers per vhost: 16 KiB a window of each series
// in a read.
const grownRules = `
global: {windows: [1m, 5m], max_series_per_rule: 1000}
rules:
  - name: clients
    match: '^(?P<addr>[^ ]*) (?P<vhost>[^ ]*)$'
    labels: {vhost: '${vhost}'}
    distinct: '${addr}'
    distinct_registers: 16384
`

// TestScrapeHoldsGrownReadBeforeReading: a scrape charged what a rule held at its last read
// (a few series) asks its limiter for what reading the rule as it has grown since will
// hold before it reads it, not after: scrapes sent at once, each charged the small read,
// would otherwise each make the grown read (hundreds of MB under many stalled clients)
// before the limiter could make any of them wait or end. A limiter that refuses the room
// leaves the rule unread.
func TestScrapeHoldsGrownReadBeforeReading(t *testing.T) {
	const vhosts = 300
	p, set := parserSet(t, grownRules)
	k := set.NewSink()
	k.SetNow(start, start)
	feed := func(n int) {
		for v := range n {
			p.Parse("app", fmt.Appendf(nil, "10.0.0.1 v%d", v), k)
		}
	}
	now := int64(start)
	c := collectorAt(fixed(set), &now)
	h := exporter.Handler(c, prometheus.NewRegistry(), nil)
	feed(2)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/metrics", nil))
	text := expfmt.NewFormat(expfmt.TypeTextPlain)
	small, known := c.ScrapeCost(nil, text)
	if !known {
		t.Fatal("the cost of a scrape of a rule read is unknown")
	}
	feed(vhosts)
	// The registers of the grown read alone: every vhost's, each window's.
	grown := int64(vhosts * 2 * 16384)
	noRoom := errors.New("no room")
	var asked []int64
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req = req.WithContext(exporter.WithHold(context.Background(), func(n int64) error {
		asked = append(asked, n)
		if n > small {
			return noRoom
		}
		return nil
	}))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h.ServeHTTP(httptest.NewRecorder(), req)
	runtime.ReadMemStats(&after)
	if len(asked) == 0 || asked[len(asked)-1] < grown {
		t.Errorf("the scrape asked to hold %v, want at least the grown read's %d", asked, grown)
	}
	if allocated := int64(after.TotalAlloc - before.TotalAlloc); allocated > grown/4 {
		t.Errorf("a scrape refused the room for a read of %d bytes allocated %d: it read the rule before it asked", grown, allocated)
	}
}
