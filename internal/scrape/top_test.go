package scrape

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/windows"
	"github.com/logwindow/logwindow_exporter/windows/sketch"
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

// A reader kept for the next scrape lets go of merged summaries past keepSummaryBytes, its
// other layouts' included (a
// large top summary goes to the snapshot, which lets it go once written): the top values
// of long, ever new paths would otherwise stay held between scrapes by every kept reader,
// outside --series.max-bytes. Small ones are kept, for the next scrape to reuse.
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
				for _, o := range x.others {
					held += o.bytes()
				}
				if held > keepSummaryBytes || tc.kept && x.sums == nil {
					t.Errorf("a kept reader holds %d bytes of summaries (kept: %v, want %v)", held, x.sums != nil, tc.kept)
				}
				if n := x.snap.Bytes(); n > keepSummaryBytes {
					t.Errorf("a kept reader's snapshot holds %d bytes", n)
				}
			}
		})
	}
}

// TestKeptReadersKeepEachRulesSummaries: a scrape reads its rules one after another with
// one reader, which keeps the merged summaries of every rule it read (within
// keepSummaryBytes): the next scrape merges into the same summaries rather than new ones,
// and writes what it wrote, with lines written by one sink and by two (parts merged).
func TestKeptReadersKeepEachRulesSummaries(t *testing.T) {
	rules := `
global: {windows: [1m, 5m], max_series_per_rule: 100}
rules:
  - name: clients
    match: '^(?P<host>\S+) (?P<zone>\S+) (?P<path>\S+)$'
    labels: {zone: '${zone}'}
    distinct: '${host}'
  - name: hot_paths
    match: '^(?P<host>\S+) (?P<zone>\S+) (?P<path>\S+)$'
    labels: {zone: '${zone}', path: '${path}'}
    top: {label: path, k: 3}
  - name: latency
    match: '^(?P<host>\S+) (?P<zone>\S+) (?P<path>\S+)$'
    value: path
    labels: {zone: '${zone}'}
    aggregations: [quantiles]
`
	for _, sinks := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d sinks", sinks), func(t *testing.T) {
			cfg, p := storetest.ParseRules(t, rules)
			set, err := store.NewSetWith(cfg, nil, store.SetOptions{Shards: sinks})
			if err != nil {
				t.Fatal(err)
			}
			ks := make([]*store.Sink, sinks)
			for i := range ks {
				ks[i] = set.NewSink()
				ks[i].SetNow(start, start)
			}
			for i := range 300 {
				p.Parse("web", fmt.Appendf(nil, "h%d z%d %d", i%37, i%3, i%11), ks[i%sinks])
			}
			now := int64(start)
			c := collectorAt(fixed(set), &now)
			first := scrapeText(t, c)
			kept := func() map[*windows.Layout]windows.Summary {
				c.free.mu.Lock()
				defer c.free.mu.Unlock()
				if len(c.free.rs) != 1 {
					t.Fatalf("%d readers kept, want 1", len(c.free.rs))
				}
				x := c.free.rs[0]
				got := map[*windows.Layout]windows.Summary{x.sumsOf.Value(): x.sums[0]}
				for _, o := range x.others {
					got[o.of.Value()] = o.sums[0]
				}
				return got
			}
			before := kept()
			if len(before) != 3 {
				t.Fatalf("the reader keeps the summaries of %d rules, want 3", len(before))
			}
			if again := scrapeText(t, c); again != first {
				t.Errorf("second scrape\n%s\nfirst\n%s", again, first)
			}
			for l, s := range kept() {
				if before[l] != s {
					t.Errorf("a rule's summaries were made anew by the second scrape")
				}
			}
		})
	}
}

// TestTopValuesSharedOrCopied: a window's top values are the same whether they are copied
// out of the merged summary or exported as its own text, the summary kept by the snapshot
// (shareTops): against a naive count per path, for two label sets read one after the other
// by one reader (the second merged into a summary of its own, so that the first's items
// stay as they were), in both windows.
func TestTopValuesSharedOrCopied(t *testing.T) {
	const paths = 3000
	for _, tc := range []struct {
		name   string
		pad, k int
	}{
		{name: "copied: a small summary", pad: 10, k: 1000},
		{name: "copied: k a third of the values", pad: 400, k: 1000},
		{name: "shared: every value exported", pad: 400, k: paths},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := tc.k
			p, set := parserSet(t, strings.Replace(topRules, "k: 2, min: 3", "k: "+strconv.Itoa(k), 1))
			sink := set.NewSink()
			sink.SetNow(start, start)
			rnd := rand.New(rand.NewPCG(5, 6))
			counts := map[[2]string]int{} // host, path
			for _, host := range []string{"h1", "h2"} {
				for i := range paths {
					path := "/" + strings.Repeat(host, tc.pad/2) + strconv.Itoa(i)
					n := 1 + rnd.IntN(5)
					counts[[2]string{host, path}] = n
					for range n {
						p.Parse("web", []byte(host+" eu "+path), sink)
					}
				}
			}
			now := int64(start)
			c := collectorAt(fixed(set), &now)
			want := map[string]float64{}
			for _, host := range []string{"h1", "h2"} {
				var ranked []sketch.TopValue
				for key, n := range counts {
					if key[0] == host {
						ranked = append(ranked, sketch.TopValue{Item: key[1], Sum: float64(n)})
					}
				}
				slices.SortFunc(ranked, func(a, b sketch.TopValue) int {
					if c := cmp.Compare(b.Sum, a.Sum); c != 0 {
						return c
					}
					return strings.Compare(a.Item, b.Item)
				})
				for _, tv := range ranked[:k] {
					for _, w := range []string{"1m", "5m"} {
						want["hot_paths_window_top{host="+host+",path="+tv.Item+",window="+w+",zone=eu}"] = tv.Sum
					}
				}
			}
			mfs, err := scraped(c).Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, mf := range mfs {
				if mf.GetName() != "hot_paths_window_top" {
					continue
				}
				for _, m := range mf.GetMetric() {
					var key []string
					for _, l := range m.GetLabel() {
						key = append(key, l.GetName()+"="+l.GetValue())
					}
					got[mf.GetName()+"{"+strings.Join(key, ",")+"}"] = m.GetGauge().GetValue()
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("%d top values, want %d; they differ", len(got), len(want))
				for name, v := range want {
					if g, ok := got[name]; !ok || g != v {
						t.Errorf("%.80s... = %v (present %v), want %v", name, g, ok, v)
						break
					}
				}
			}
		})
	}
}

// TestShareTops: a window's top values are exported as their summary's text when it is
// past shareTopBytes and they are more than half of it.
func TestShareTops(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n, items int
		want     bool
	}{
		{name: "small, all exported", n: shareTopBytes, items: shareTopBytes - 1000, want: false},
		{name: "large, all exported", n: 100 << 20, items: 95 << 20, want: true},
		{name: "large, half exported", n: 100 << 20, items: 50 << 20, want: false},
		{name: "large, just over half", n: 100 << 20, items: 50<<20 + 1, want: true},
		{name: "large, a tenth exported", n: 100 << 20, items: 10 << 20, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := shareTops(tc.n, tc.items); got != tc.want {
				t.Errorf("shareTops(%d, %d) = %v, want %v", tc.n, tc.items, got, tc.want)
			}
		})
	}
}
