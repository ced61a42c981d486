package store

import (
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// BenchmarkSinkEvent is the per-line cost of the store on an existing series: the target
// is a few tens of ns and no allocation. A quantile rule's summaries charge the memory
// bound as they grow, and are capped near it ("near the bound": less than 4 MiB left).
// Batched, a batching sink is flushed every readLines lines, as an input flushes after
// each read.
func BenchmarkSinkEvent(b *testing.B) {
	quantiles := storetest.ValueRule("request_seconds", storetest.DefaultWindows, "method", "status")
	quantiles.Aggregations.Quantiles, quantiles.Quantiles = true, []float64{0.5, 0.99}
	cases := []struct {
		name     string
		rule     *config.Rule
		budget   int
		labels   []string
		maxBytes int64
	}{
		{"count rule", storetest.CountRule("http_requests", storetest.DefaultWindows, "method", "status"), 100, []string{"GET", "200"}, 0},
		{"value rule", storetest.ValueRule("request_seconds", storetest.DefaultWindows, "method", "status"), 100, []string{"GET", "200"}, 0},
		{"folded into overflow", storetest.CountRule("http_requests", storetest.DefaultWindows, "method", "status"), 1, []string{"GET", "404"}, 0},
		{"quantile rule", quantiles, 100, []string{"GET", "200"}, 0},
		{"quantile rule near the bound", quantiles, 100, []string{"GET", "200"}, 1 << 20},
	}
	const readLines = 300
	for _, tc := range cases {
		for _, batched := range []bool{false, true} {
			name := tc.name
			if batched {
				name += ", batched"
			}
			b.Run(name, func(b *testing.B) {
				set := storetest.Must(NewSetWith(storetest.Config(tc.budget, tc.rule), nil, SetOptions{MaxBytes: tc.maxBytes}))
				k := set.NewSink()
				if batched {
					k = set.NewBatchSink()
				}
				k.SetNow(start, start)
				k.Event(storetest.Event(0, 0, 0, "POST", "201"))
				e := storetest.Event(0, 0, 0.25, tc.labels...)
				k.Event(e)
				k.Flush()
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					now := start + int64(i>>16) // a new second every 65536 lines
					k.SetNow(now, now)
					k.Event(e)
					if i%readLines == readLines-1 {
						k.Flush()
					}
				}
				k.Flush()
			})
		}
	}
}

// BenchmarkSinkEventParallel shows the cost when every writer hits the same series.
func BenchmarkSinkEventParallel(b *testing.B) {
	set := storetest.Must(NewSetWith(storetest.Config(100, storetest.CountRule("http_requests", storetest.DefaultWindows, "status")), nil, SetOptions{}))
	e := storetest.Event(0, 0, 0, "200")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		k := set.NewSink()
		k.SetNow(start, start)
		for pb.Next() {
			k.Event(e)
		}
	})
}
