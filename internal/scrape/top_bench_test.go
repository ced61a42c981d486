package scrape

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/quantity"
)

// topBenchRules are the same rule, keyed by host, with and without ranking its paths.
func topBenchRules(b *testing.B, series int) map[string]*config.Config {
	out := map[string]*config.Config{}
	for name, top := range map[string]string{"without top": "", "top k=10": "\n    top: {label: path, k: 10}"} {
		labels := "{host: '${host}'}"
		if top != "" {
			labels = "{host: '${host}', path: '${path}'}"
		}
		cfg, err := config.Parse(fmt.Appendf(nil, `
global: {windows: [1m, 5m], max_series_per_rule: %d}
rules:
  - name: http_requests
    match: '^(?P<host>\S+) (?P<path>\S+)$'
    labels: %s%s
`, series, labels, top), "bench.yaml")
		if err != nil {
			b.Fatal(err)
		}
		out[name] = cfg
	}
	return out
}

// topPaths are n Zipf(1.1) draws from a million paths, made before the timing.
func topPaths(n int) [][]byte {
	z := rand.NewZipf(rand.New(rand.NewPCG(3, 3)), 1.1, 1, 999_999)
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "/api/v1/items/%d", z.Uint64())
	}
	return out
}

// BenchmarkSinkEventTop is the store's cost per line of a rule keyed by host, without top
// and ranking its paths (Zipf(1.1) over a million, at 100 lines per second), windows 1m
// and 5m.
func BenchmarkSinkEventTop(b *testing.B) {
	paths := topPaths(1 << 16)
	for _, name := range []string{"without top", "top k=10"} {
		cfg := topBenchRules(b, 10)[name]
		b.Run(name, func(b *testing.B) {
			set := mustSet(b, cfg, nil)
			k := set.NewSink()
			e := line{labels: []string{"h1"}}.event()
			if cfg.Rules[0].Top != nil {
				e.Items = [][]byte{nil}
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				now := start + int64(i/100)
				k.SetNow(now, now)
				if e.Items != nil {
					e.Items[0] = paths[i&(1<<16-1)]
				}
				k.Event(e)
			}
		})
	}
}

// BenchmarkCollectTop is one scrape (the rule families' text) of 100 label sets of a rule ranking paths
// (k = 10, capacity 1,000), each fed 5 minutes of 100 lines per second drawn from a
// million paths, against the same rule without top. It reports the samples of the top
// family, which k bounds whatever the paths: at most k per window and label set.
func BenchmarkCollectTop(b *testing.B) {
	const series = 100
	paths := topPaths(1 << 16)
	for _, name := range []string{"without top", "top k=10"} {
		cfg := topBenchRules(b, series)[name]
		b.Run(name, func(b *testing.B) {
			set := mustSet(b, cfg, nil)
			k := set.NewSink()
			j := 0
			for t := int64(0); t < 300; t++ {
				k.SetNow(start+t, start+t)
				for i := range series {
					e := line{labels: []string{fmt.Sprintf("h%d", i)}}.event()
					for range 100 {
						if cfg.Rules[0].Top != nil {
							e.Items = [][]byte{paths[j&(1<<16-1)]}
							j++
						}
						k.Event(e)
					}
				}
			}
			now := int64(start + 300)
			c := collectorAt(fixed(set), &now)
			b.ReportAllocs()
			cpu := cpuTime()
			var text bytes.Buffer
			for b.Loop() {
				text.Reset()
				if err := c.WriteText(&text, nil); err != nil {
					b.Fatal(err)
				}
			}
			top := bytes.Count(text.Bytes(), []byte("\nhttp_requests"+quantity.TopSuffix+"{"))
			reportCPU(b, cpu)
			if limit := 10 * 2 * series; top > limit {
				b.Fatalf("%d top samples, more than k·windows·label sets = %d", top, limit)
			}
			b.ReportMetric(float64(top), "top-samples/op")
			b.ReportMetric(float64(text.Len()), "bytes/scrape")
		})
	}
}
