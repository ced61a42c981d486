package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/parser"
	"github.com/logwindow/logwindow_exporter/parser/event"
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

// mixedRules are the rules of BenchmarkSinkEventMixed: with %s a rule of distinct clients
// and one of top paths, or of counts by the same label sets.
const mixedRules = `
global: {windows: [1m, 5m, 1h], max_series_per_rule: 1000}
rules:
  - {name: requests, match: '^(?P<m>\S+) (?P<s>\S+) (?P<c>\S+) (?P<p>\S+)$', labels: {method: '${m}', status: '${s}'}}
  - {name: clients, match: '^(?P<m>\S+) (?P<s>\S+) (?P<c>\S+) (?P<p>\S+)$', labels: {status: '${s}'}%s}
  - {name: paths, match: '^(?P<m>\S+) (?P<s>\S+) (?P<c>\S+) (?P<p>\S+)$', labels: {path: '${p}'}%s}
`

// BenchmarkSinkEventMixed is a batching sink's cost per event on events as an access log
// gives them: a rule counting by method and status, one by status and one by path, whose
// label values repeat the previous line's four times in five (and are the most common one
// half the time they change), flushed every 300 lines (900 events), each 300 of a second
// of their own. With items, the second counts distinct clients (one of each line's own)
// and the third the top paths; without, the store's share of the cost is the larger, as
// the windows add counts only.
func BenchmarkSinkEventMixed(b *testing.B) {
	for _, items := range []bool{false, true} {
		b.Run(fmt.Sprintf("items=%v", items), func(b *testing.B) {
			distinct, top := "", ""
			if items {
				distinct, top = ", distinct: '${c}', aggregations: [window]", ", top: {label: path, k: 10}"
			}
			cfg, _ := storetest.ParseRules(b, fmt.Sprintf(mixedRules, distinct, top))
			events := mixedEvents(items)
			set := storetest.Must(NewSetWith(cfg, nil, SetOptions{}))
			k := set.NewBatchSink()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				j := i % len(events)
				if j%900 == 0 {
					now := start + int64(i/900)
					k.SetNow(now, now)
				}
				k.Event(events[j])
				if j%900 == 899 {
					k.Flush()
				}
			}
			k.Flush()
		})
	}
}

// mixedEvents are 3,000 lines' events of BenchmarkSinkEventMixed's rules.
func mixedEvents(items bool) []*event.Event {
	rng := rand.New(rand.NewPCG(1, 2))
	methods, statuses := []string{"GET", "POST", "HEAD"}, []string{"200", "304", "404", "500", "502", "201"}
	var m, s, p string
	var events []*event.Event
	// A value that changes is the first, most common one half the time.
	pick := func(n int) int { return rng.IntN(n) * rng.IntN(2) }
	for range 3000 {
		if m == "" || rng.IntN(5) == 0 {
			m = methods[pick(len(methods))]
		}
		if s == "" || rng.IntN(5) == 0 {
			s = statuses[pick(len(statuses))]
		}
		if p == "" || rng.IntN(5) == 0 {
			p = fmt.Sprintf("/api/v1/things/%d", pick(40))
		}
		client := fmt.Appendf(nil, "203.0.113.%d", rng.IntN(250))
		clients, paths := storetest.Event(1, 0, 0, s), storetest.Event(2, 0, 0, p)
		if items {
			clients.Items, paths.Items = [][]byte{client}, [][]byte{[]byte(p)}
		}
		events = append(events, storetest.Event(0, 0, 0, m, s), clients, paths)
	}
	return events
}

// BenchmarkExampleLines is the parse and the store's side of a line together, in process:
// 60,000 generated lines parsed with example-rules.yaml into a batching sink flushed every
// 300 lines (a read), into a store of its own each op, so that its lines come in time
// order as a live read's do. best-ns/line sums each block's fastest time over the ops: on
// a machine shared with other work the fastest of many short blocks moves far less with
// their load than a total does (med-ns/line, the median op's). Compare builds by their
// test binaries, alternated, with -benchtime 30x or so.
func BenchmarkExampleLines(b *testing.B) {
	lines := nginxlog.Lines(b, 60000, 1)
	cfg, err := config.Load("../../example-rules.yaml")
	if err != nil {
		b.Fatal(err)
	}
	p, err := parser.New(cfg.Rules)
	if err != nil {
		b.Fatal(err)
	}
	// The clocks stand a second after the last line, as a read's at its end.
	last := lines[len(lines)-1]
	stamp := last[bytes.IndexByte(last, '[')+1 : bytes.IndexByte(last, ']')]
	t, err := time.Parse("02/Jan/2006:15:04:05 -0700", string(stamp))
	if err != nil {
		b.Fatal(err)
	}
	wall := t.Unix() + 1
	const block = 300
	best := make([]time.Duration, len(lines)/block)
	var ops []time.Duration
	for b.Loop() {
		set := storetest.Must(NewSetWith(cfg, nil, SetOptions{}))
		k := set.NewBatchSink()
		k.SetNow(wall, wall)
		var op time.Duration
		for x := range best {
			t0 := time.Now()
			for _, l := range lines[x*block : (x+1)*block] {
				p.Parse("nginx", l, k)
			}
			k.Flush()
			d := time.Since(t0)
			op += d
			if best[x] == 0 || d < best[x] {
				best[x] = d
			}
		}
		if k.Received() < uint64(len(lines)) {
			b.Fatalf("%d events of %d lines: the example's rules did not read them", k.Received(), len(lines))
		}
		ops = append(ops, op)
	}
	var sum time.Duration
	for _, d := range best {
		sum += d
	}
	slices.Sort(ops)
	n := float64(len(best) * block)
	b.ReportMetric(float64(sum.Nanoseconds())/n, "best-ns/line")
	b.ReportMetric(float64(ops[len(ops)/2].Nanoseconds())/n, "med-ns/line")
}

// BenchmarkShortRead is what an input's sink costs per read besides its events: a live
// log is mostly read a line or a few at a time, each read flushed and published
// (NewDeferredSink) by the pipeline. With many rules, a read's few events touch one or
// two of them: what the read costs beyond theirs grows with the rules it visits.
func BenchmarkShortRead(b *testing.B) {
	for _, rules := range []int{1, 5000} {
		b.Run(fmt.Sprintf("rules=%d", rules), func(b *testing.B) {
			rs := make([]*config.Rule, rules)
			for i := range rs {
				rs[i] = storetest.CountRule(fmt.Sprintf("r%d", i), storetest.DefaultWindows, "status")
			}
			set := storetest.Must(NewSetWith(storetest.Config(100, rs...), nil, SetOptions{}))
			k := set.NewDeferredSink()
			e := storetest.Event(0, 0, 0, "200")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				now := start + int64(i>>16)
				k.SetNow(now, now)
				k.Event(e)
				k.Flush()
				k.Publish()
			}
		})
	}
}

// BenchmarkNewSeries is the cost of a line of a label set not held yet: the series made,
// its label values copied and charged. Every line is of a new label set; the Set is
// made anew, off the clock, every newSeriesSets of them.
func BenchmarkNewSeries(b *testing.B) {
	const newSeriesSets = 4096
	for _, tc := range []struct {
		labels, length int
	}{
		{2, 12},
		{10, 1000},
	} {
		b.Run(fmt.Sprintf("%d×%d", tc.labels, tc.length), func(b *testing.B) {
			names := make([]string, tc.labels)
			for i := range names {
				names[i] = fmt.Sprint("l", i)
			}
			events := make([]*event.Event, newSeriesSets)
			values := make([]string, tc.labels)
			for j := range events {
				for i := range values {
					values[i] = fmt.Sprintf("%0*d", tc.length, j*tc.labels+i)
				}
				events[j] = storetest.Event(0, 0, 0, values...)
			}
			cfg := storetest.Config(newSeriesSets, storetest.CountRule("r", storetest.DefaultWindows, names...))
			var k *Sink
			fresh := func() {
				k = storetest.Must(NewSetWith(cfg, nil, SetOptions{})).NewSink()
				k.SetNow(start, start)
			}
			fresh()
			b.ReportAllocs()
			for i := range b.N {
				if i%newSeriesSets == 0 && i > 0 {
					b.StopTimer()
					fresh()
					b.StartTimer()
				}
				k.Event(events[i%newSeriesSets])
			}
		})
	}
}
