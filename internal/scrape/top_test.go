package scrape

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

const topRules = `
global: {windows: [1m, 5m], max_series_per_rule: 100}
rules:
  - name: hot_paths
    match: '^(?P<host>\S+) (?P<zone>\S+) (?P<path>\S+)$'
    labels: {host: '${host}', zone: '${zone}', path: '${path}'}
    top: {label: path, k: 2, min: 3}
`

// TestTopFamily feeds lines through parser, sink and collector: the store keeps one series
// per host and zone whose _total and _window sum over every path, _window_top holds at most
// k paths per window and label set, those with the largest sums of at least min, with the
// path's pair sorted among the others; the next scrape shows other paths as the traffic
// moves; and the scrape is lint-clean.
func TestTopFamily(t *testing.T) {
	p, set := parserSet(t, topRules)
	k := set.NewSink()
	feed := func(at int64, lines map[string]int) {
		k.SetNow(at, at)
		for line, n := range lines {
			for range n {
				p.Parse("web", []byte(line), k)
			}
		}
	}
	// Four minutes ago /old was hot; now /a, /b and /c are, and /d below min.
	feed(start, map[string]int{"h1 eu /old": 9, "h1 eu /a": 1})
	feed(start+240, map[string]int{"h1 eu /a": 5, "h1 eu /b": 4, "h1 eu /c": 3, "h1 eu /d": 2, "h2 us /a": 1})
	now := int64(start + 240)
	c := collectorAt(fixed(set), &now)
	want := map[string]float64{
		"hot_paths_total{host=h1,zone=eu}":                          24,
		"hot_paths_total{host=h2,zone=us}":                          1,
		"hot_paths_window{host=h1,window=1m,zone=eu}":               14,
		"hot_paths_window{host=h1,window=5m,zone=eu}":               24,
		"hot_paths_window_top{host=h1,path=/a,window=1m,zone=eu}":   5,
		"hot_paths_window_top{host=h1,path=/b,window=1m,zone=eu}":   4,
		"hot_paths_window_top{host=h1,path=/old,window=5m,zone=eu}": 9,
		"hot_paths_window_top{host=h1,path=/a,window=5m,zone=eu}":   6,
	}
	checkTopScrape(t, c, want)
	// 70 s later (past the edge slots of both windows) /old has left the 5m window and
	// /c is the hottest.
	feed(start+310, map[string]int{"h1 eu /c": 7})
	now = start + 310
	want = map[string]float64{
		"hot_paths_window_top{host=h1,path=/c,window=1m,zone=eu}": 7,
		"hot_paths_window_top{host=h1,path=/c,window=5m,zone=eu}": 10,
		"hot_paths_window_top{host=h1,path=/a,window=5m,zone=eu}": 5,
	}
	checkTopScrape(t, c, want)
	problems, err := testutil.GatherAndLint(scraped(c))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// checkTopScrape scrapes c once and compares the hot_paths samples named in want, and
// every _window_top sample, with want; every sample's pairs must be sorted by name (the
// text is parsed back with its pairs in the order they were written).
func checkTopScrape(t *testing.T, c *Collector, want map[string]float64) {
	t.Helper()
	checkAsRegistry(t, c)
	mfs, err := scraped(c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, out := range mf.GetMetric() {
			var key []string
			for _, l := range out.GetLabel() {
				key = append(key, l.GetName()+"="+l.GetValue())
			}
			if !slices.IsSortedFunc(out.GetLabel(), func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) }) {
				t.Errorf("%s: label pairs not sorted: %v", mf.GetName(), key)
			}
			name := mf.GetName() + "{" + strings.Join(key, ",") + "}"
			got[name] = out.GetGauge().GetValue() + out.GetCounter().GetValue()
			if _, ok := want[name]; !ok && strings.HasPrefix(name, "hot_paths_window_top") {
				t.Errorf("%s = %v, not expected", name, got[name])
			}
		}
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, v)
		}
	}
}

// A scrape of a top rule whose label sets have seen no line yet (a rule with labels
// besides the ranked one has no series until then) writes its families empty. (It
// panicked, the scrape answering nothing, until a first line came.)
func TestTopFamilyWithoutSeries(t *testing.T) {
	_, set := parserSet(t, topRules)
	now := int64(start)
	c := collectorAt(fixed(set), &now)
	mfs, err := scraped(c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "hot_paths") && len(mf.GetMetric()) > 0 {
			t.Errorf("%s has %d samples before any line", mf.GetName(), len(mf.GetMetric()))
		}
	}
}

// A reader kept for the next scrape lets go of merged summaries past keepSummaryBytes: the
// top values of long, ever new paths would otherwise stay held between scrapes by every
// kept reader, outside --series.max-bytes. Small ones are kept, for the next scrape to
// reuse.
func TestKeptReadersLetLargeSummariesGo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths int
		kept  bool
	}{
		{name: "a few short paths", paths: 10, kept: true},
		{name: "many long paths", paths: 20000, kept: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, set := parserSet(t, strings.Replace(topRules, "k: 2, min: 3", "k: 5000", 1))
			k := set.NewSink()
			k.SetNow(start, start)
			pad := strings.Repeat("x", 200)
			for i := range tc.paths {
				p.Parse("web", []byte("h1 eu /"+pad+strconv.Itoa(i)), k)
			}
			now := int64(start)
			c := collectorAt(fixed(set), &now)
			if err := c.WriteText(io.Discard, prometheus.NewPedanticRegistry()); err != nil {
				t.Fatal(err)
			}
			c.free.mu.Lock()
			defer c.free.mu.Unlock()
			if len(c.free.rs) == 0 {
				t.Fatal("no reader kept")
			}
			for _, x := range c.free.rs {
				held := summaryBytes(x.sums) + summaryBytes(x.partSums)
				if held > keepSummaryBytes || tc.kept != (x.sums != nil) {
					t.Errorf("a kept reader holds %d bytes of summaries (kept: %v, want %v)", held, x.sums != nil, tc.kept)
				}
			}
		})
	}
}
