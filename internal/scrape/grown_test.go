package scrape

import (
	"context"
	"errors"
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
	set, feed := vhostFeed(t, grownRules)
	now := int64(start)
	c := collectorAt(fixed(set), &now)
	h := exporter.Handler(c, prometheus.NewRegistry(), nil)
	feed(start, "v", 2)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/metrics", nil))
	text := expfmt.NewFormat(expfmt.TypeTextPlain)
	small, known := c.ScrapeCost(nil, text)
	if !known {
		t.Fatal("the cost of a scrape of a rule read is unknown")
	}
	feed(start, "v", vhosts)
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

// TestScrapeHoldsGrownReadByWhatItUses: what a scrape asks for before it reads a rule that
// grew goes by what the rule's last read used a series, not by the buffers of the reader
// that read it, which a larger rule read before may have left larger: a rule of two
// series read with the buffers of one of hundreds, grown to four, is asked for as four
// series, not as twice those buffers.
func TestScrapeHoldsGrownReadByWhatItUses(t *testing.T) {
	const vhosts = 300
	set, feed := vhostFeed(t, grownRules+`
  - name: requests
    match: '^(?P<addr>[^ ]*) (?P<vhost>[^ ]*)$'
    labels: {vhost: '${vhost}'}
`)
	feed(start, "v", vhosts)
	now := int64(start)
	c := collectorAt(fixed(set), &now)
	h := exporter.Handler(c, prometheus.NewRegistry(), nil)
	// clients_* sort before requests_*: the reader of clients reads requests next.
	keep := "?name[]=clients_total&name[]=clients_window&name[]=clients_distinct&name[]=requests_total&name[]=requests_window"
	scrape := func() (asked []int64) {
		req := httptest.NewRequest(http.MethodGet, "/metrics"+keep, nil)
		req = req.WithContext(exporter.WithHold(context.Background(), func(n int64) error {
			asked = append(asked, n)
			return nil
		}))
		h.ServeHTTP(httptest.NewRecorder(), req)
		return asked
	}
	first := scrape()
	if len(first) != 4 {
		t.Fatalf("a scrape of two rules asked to hold %v, want before and after each read", first)
	}
	// requests grows from its 300 vhosts by 4: what it asks before its read may grow by
	// what 4 series take, and by its label pairs, which the first estimate (the buffers a
	// snapshot makes alone) left out: some 30 bytes a series; not by what the reader's
	// buffers, grown for clients, hold a series (30 KB).
	feed(start, "w", 4)
	second := scrape()
	if len(second) != 4 {
		t.Fatalf("a scrape of two rules asked to hold %v, want before and after each read", second)
	}
	if grew := second[2] - first[2]; grew > 64<<10 {
		t.Errorf("before reading a rule grown by 4 series of a few dozen bytes, the scrape asked for %d bytes more (%v, then %v)", grew, first, second)
	}
}
