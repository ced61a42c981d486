package scrape

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/windows"
)

// BenchmarkCollectSummaries is one scrape (the rule families' text) of the example rules'
// summaries after 51 minutes of 260 lines a second: the distinct clients of four status
// classes (1m, 5m, 1h; Zipf(1.05) over 20,000 clients, some 3,000 a minute and 18,000
// in the hour, past the exact count's bound) and the top paths (k = 10; 1m, 5m, 24h;
// Zipf(1.1) over a million), written by one input and by two on shards of their own,
// every other line each, whose parts a scrape merges.
func BenchmarkCollectSummaries(b *testing.B) {
	for _, inputs := range []int{1, 2} {
		b.Run(fmt.Sprintf("inputs=%d", inputs), func(b *testing.B) {
			benchWriteText(b, summariesSet(b, inputs), int64(start+summariesSecs))
		})
	}
}

// BenchmarkReadSummaries is the part of BenchmarkCollectSummaries that merges: each
// rule's summaries of every series read through the store, parts merged, and nothing
// written.
func BenchmarkReadSummaries(b *testing.B) {
	for _, inputs := range []int{1, 2} {
		set := summariesSet(b, inputs)
		for i := range set.NumRules() {
			r := set.Rule(i)
			b.Run(fmt.Sprintf("%s/inputs=%d", r.Config().Name, inputs), func(b *testing.B) {
				series := r.Snapshot(nil)
				sums := r.Layout().NewSummaries()
				var more []windows.Summary
				for b.Loop() {
					for _, s := range series {
						r.ReadSummaries(s, start+summariesSecs, sums, &more)
					}
				}
			})
		}
	}
}

// summariesSecs is how long summariesSet's lines span.
const summariesSecs = 51 * 60

// summariesSet is the Set BenchmarkCollectSummaries scrapes, written by inputs sinks on
// shards of their own, every inputs-th line each.
func summariesSet(b *testing.B, inputs int) *store.Set {
	b.Helper()
	cfg, err := config.Parse([]byte(`
global: {max_series_per_rule: 100}
rules:
  - name: http_clients
    match: '^(?P<class>\S+) (?P<client>\S+) (?P<path>\S+)$'
    labels: {status_class: '${class}'}
    distinct: '${client}'
    aggregations: [window]
    windows: [1m, 5m, 1h]
  - name: http_path_requests
    match: '^(?P<class>\S+) (?P<client>\S+) (?P<path>\S+)$'
    labels: {path: '${path}'}
    top: {label: path, k: 10}
    windows: [1m, 5m, 24h]
`), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	const perSecond, secs = 260, summariesSecs
	r := rand.New(rand.NewPCG(4, 4))
	clients := rand.NewZipf(r, 1.05, 1, 19_999)
	paths := topPaths(1 << 16)
	classes := []string{"2xx", "2xx", "2xx", "2xx", "2xx", "2xx", "3xx", "4xx", "4xx", "5xx"}
	type event struct {
		class        string
		client, path []byte
	}
	events := make([]event, perSecond*secs)
	for i := range events {
		class := classes[r.IntN(len(classes))]
		c := clients.Uint64() // one client: two draws would not be Zipf over 20,000
		events[i] = event{class, fmt.Appendf(nil, "10.%d.%d.1", c/250, c%250), paths[i&(1<<16-1)]}
	}
	set, err := store.NewSetWith(cfg, nil, store.SetOptions{Shards: inputs})
	if err != nil {
		b.Fatal(err)
	}
	for in := range inputs {
		k := set.NewSink()
		for t := range int64(secs) {
			k.SetNow(start+t, start+t)
			for i := in; i < perSecond; i += inputs {
				ev := events[t*perSecond+int64(i)]
				clients := line{rule: 0, labels: []string{ev.class}}.event()
				clients.Items = [][]byte{ev.client}
				k.Event(clients)
				top := line{rule: 1}.event()
				top.Items = [][]byte{ev.path}
				k.Event(top)
			}
		}
	}
	return set
}
