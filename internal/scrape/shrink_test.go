package scrape

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"

	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/store"
)

// scrapeKept writes a text scrape of c of the families keep passes (all when nil).
func scrapeKept(t *testing.T, c *Collector, keep func(string) bool) {
	t.Helper()
	text := expfmt.NewFormat(expfmt.TypeTextPlain)
	s := c.Scrape(keep, text)
	defer s.Close()
	w := exporter.NewWriter(io.Discard, text, nil)
	if err := s.Write(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// vhostFeed is a Set over rules and a feed of its app log through one sink: at a time,
// a line from each of n vhosts, named prefix and their number, all from one client.
func vhostFeed(t testing.TB, rules string) (*store.Set, func(at int64, prefix string, n int)) {
	p, set := parserSet(t, rules)
	k := set.NewSink()
	return set, func(at int64, prefix string, n int) {
		k.SetNow(at, at)
		for v := range n {
			p.Parse("app", fmt.Appendf(nil, "10.0.0.1 %s%d", prefix, v), k)
		}
	}
}

// shrinkRules are grownRules at 2,048 registers a window of each series (a spike of 300
// vhosts reads 1.2 MB of them), beside a rule that counts the same lines per vhost.
var shrinkRules = strings.Replace(grownRules, "distinct_registers: 16384", "distinct_registers: 2048", 1) + `
  - name: requests
    match: '^(?P<addr>[^ ]*) (?P<vhost>[^ ]*)$'
    labels: {vhost: '${vhost}'}
`

// registerBytes are what a read of the clients rule of shrinkRules holds a series.
const registerBytes = 2 * 2048

// TestScrapeCostAfterSpike: a rule is charged what its reads use, by the buffers of the
// reader that read it; a reader grown for a spike (a larger rule read before, the rule's
// own series since expired) lets go of the buffers its reads of the last few scrapes did
// not need, so that a few ordinary scrapes after it the rule is charged about what a
// reader that never saw the spike is, not the spike's megabytes at every scrape.
func TestScrapeCostAfterSpike(t *testing.T) {
	const vhosts = 300
	rules := strings.Replace(shrinkRules, "max_series_per_rule: 1000", "max_series_per_rule: 1000, counter_ttl: 10m", 1)
	clientsOnly := func(name string) bool { return strings.HasPrefix(name, "clients_") }
	requestsOnly := func(name string) bool { return strings.HasPrefix(name, "requests_") }
	for _, tc := range []struct {
		name string
		// spike scrapes c once a reader grows for the spike and readies the ordinary
		// scrapes that follow it, now at the second they read.
		spike func(t *testing.T, c *Collector, now *int64, feed func(at int64, prefix string, n int))
		keep  func(string) bool
	}{
		{"a larger rule read before", func(t *testing.T, c *Collector, now *int64, feed func(int64, string, int)) {
			scrapeKept(t, c, nil) // clients, then requests with the reader clients grew
		}, requestsOnly},
		{"the rule's own series expired", func(t *testing.T, c *Collector, now *int64, feed func(int64, string, int)) {
			scrapeKept(t, c, clientsOnly)
			// Past the counter TTL the 300 vhosts are left out; two new ones remain.
			*now = start + 20*60
			feed(*now, "w", 2)
		}, clientsOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, feed := vhostFeed(t, rules)
			feed(start, "v", vhosts)
			now := int64(start)
			c := collectorAt(fixed(set), &now)
			tc.spike(t, c, &now, feed)
			for range shrinkScrapes + 1 {
				scrapeKept(t, c, tc.keep)
			}
			text := expfmt.NewFormat(expfmt.TypeTextPlain)
			cost, known := c.ScrapeCost(tc.keep, text)
			// What the same scrape costs read by a reader that never saw the spike.
			fresh := collectorAt(fixed(set), &now)
			scrapeKept(t, fresh, tc.keep)
			want, wantKnown := fresh.ScrapeCost(tc.keep, text)
			if !known || !wantKnown {
				t.Fatalf("costs unknown after scrapes of the rule (known %v, fresh %v)", known, wantKnown)
			}
			if read, freshRead := cost-scrapeOverhead, want-scrapeOverhead; read > 2*freshRead+4<<10 {
				t.Errorf("after a spike and %d ordinary scrapes the rule's scrape is charged %d bytes, %d beside the overhead; read by a fresh reader, %d (%d)",
					shrinkScrapes+1, cost, read, want, freshRead)
			}
		})
	}
}

// TestSteadyScrapesKeepReaders: a reader that reads a large rule and then a small one at
// every scrape keeps the large read's buffers from one scrape to the next: letting go of
// buffers a spike grew must not make every scrape of the two grow them anew.
func TestSteadyScrapesKeepReaders(t *testing.T) {
	const vhosts = 300
	set, feed := vhostFeed(t, shrinkRules)
	feed(start, "v", vhosts)
	now := int64(start)
	c := collectorAt(fixed(set), &now)
	scrapeKept(t, c, nil)
	const scrapes = 2 * shrinkScrapes
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range scrapes {
		scrapeKept(t, c, nil)
	}
	runtime.ReadMemStats(&after)
	// The clients read alone: every vhost's registers, each window's.
	read := uint64(vhosts * registerBytes)
	// A scrape allocates some, its writer's and the view's; not the read anew.
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > scrapes*read/2 {
		t.Errorf("%d scrapes of a large rule and a small one allocated %d bytes, against the large read's %d: the reader's buffers were made anew", scrapes, allocated, read)
	}
}

// TestScrapeCostFilteredBetweenFull: a scrape of one small rule (name[]) between full
// scrapes is charged about what its read uses, not the buffers the full scrapes keep
// their reader grown to for a larger rule; and the two kinds of scrape, taking turns,
// keep their readers' buffers rather than grow them anew at every scrape.
func TestScrapeCostFilteredBetweenFull(t *testing.T) {
	const vhosts = 300
	requestsOnly := func(name string) bool { return strings.HasPrefix(name, "requests_") }
	set, feed := vhostFeed(t, shrinkRules)
	feed(start, "v", vhosts)
	now := int64(start)
	c := collectorAt(fixed(set), &now)
	turns := func(n int) {
		for range n {
			scrapeKept(t, c, nil)
			scrapeKept(t, c, requestsOnly)
		}
	}
	turns(shrinkScrapes + 1)
	text := expfmt.NewFormat(expfmt.TypeTextPlain)
	cost, known := c.ScrapeCost(requestsOnly, text)
	fresh := collectorAt(fixed(set), &now)
	scrapeKept(t, fresh, requestsOnly)
	want, wantKnown := fresh.ScrapeCost(requestsOnly, text)
	if !known || !wantKnown {
		t.Fatalf("costs unknown after scrapes of the rule (known %v, fresh %v)", known, wantKnown)
	}
	if read, freshRead := cost-scrapeOverhead, want-scrapeOverhead; read > 2*freshRead+4<<10 {
		t.Errorf("a scrape of the small rule between full scrapes is charged %d bytes, %d beside the overhead; read by a fresh reader, %d (%d)",
			cost, read, want, freshRead)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	turns(shrinkScrapes)
	runtime.ReadMemStats(&after)
	// The clients read alone: every vhost's registers, each window's.
	read := uint64(vhosts * registerBytes)
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 2*shrinkScrapes*read/2 {
		t.Errorf("%d full and filtered scrapes in turn allocated %d bytes, against the large read's %d: the readers' buffers were made anew", 2*shrinkScrapes, allocated, read)
	}
}
