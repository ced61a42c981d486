package store

import (
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// BenchmarkSinkEvent is the per-line cost of the store on an existing series: the target
// is a few tens of ns and no allocation.
func BenchmarkSinkEvent(b *testing.B) {
	cases := []struct {
		name   string
		rule   *config.Rule
		budget int
		labels []string
	}{
		{"count rule", storetest.CountRule("http_requests", storetest.DefaultWindows, "method", "status"), 100, []string{"GET", "200"}},
		{"value rule", storetest.ValueRule("request_seconds", storetest.DefaultWindows, "method", "status"), 100, []string{"GET", "200"}},
		{"folded into overflow", storetest.CountRule("http_requests", storetest.DefaultWindows, "method", "status"), 1, []string{"GET", "404"}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			set := storetest.Must(NewSet(storetest.Config(tc.budget, tc.rule), nil))
			k := set.NewSink()
			k.SetNow(start, start)
			k.Event(storetest.Event(0, 0, 0, "POST", "201"))
			e := storetest.Event(0, 0, 0.25, tc.labels...)
			k.Event(e)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				now := start + int64(i>>16) // a new second every 65536 lines
				k.SetNow(now, now)
				k.Event(e)
			}
		})
	}
}

// BenchmarkSinkEventParallel shows the cost when every writer hits the same series.
func BenchmarkSinkEventParallel(b *testing.B) {
	set := storetest.Must(NewSet(storetest.Config(100, storetest.CountRule("http_requests", storetest.DefaultWindows, "status")), nil))
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
