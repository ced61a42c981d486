package scrape

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// storetest.TTLConfig is storetest.Config with a counter TTL.
// gather collects c and returns the samples of family by their label set rendered as
// `k="v",...` (window label included), "" for no labels.
func gather(t testing.TB, c *Collector, family string) map[string]float64 {
	t.Helper()
	mfs, err := scraped(c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[labelText(m.GetLabel())] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out
}

func labelText(pairs []*dto.LabelPair) string {
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = fmt.Sprintf("%s=%q", p.GetName(), p.GetValue())
	}
	return strings.Join(parts, ",")
}

// TestKeptCounters: a label set's _total outlives its windows, comes back with them on a
// new line without going back, and goes only after counter_ttl (or never with 0).
func TestKeptCounters(t *testing.T) {
	cases := []struct {
		name string
		ttl  time.Duration
		// scrapes: second → the _total and 1m window of status 500 (absent: -1)
		scrapes []struct {
			now           int64
			total, window float64
		}
	}{
		{"ttl 10m", 10 * time.Minute, []struct {
			now           int64
			total, window float64
		}{
			{1010, 2, 2},   // both lines in the 1m window
			{1070, 2, 0},   // idle 60 s: the window is empty but not idle past it yet
			{1071, 2, -1},  // idle past 1m: windows released, total kept
			{1610, 2, -1},  // idle 600 s: kept (idle means longer than the TTL)
			{1611, -1, -1}, // removed
		}},
		{"ttl 0 keeps forever", 0, []struct {
			now           int64
			total, window float64
		}{
			{1071, 2, -1},
			{1000 + 86400*400, 2, -1},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := mustSet(t, storetest.TTLConfig(10, tc.ttl, storetest.CountRule("http_requests", storetest.OneMin, "status")), nil)
			feed(set.NewSink(), []line{{labels: []string{"500"}, now: 1000}, {labels: []string{"500"}, now: 1010}})
			for _, sc := range tc.scrapes {
				now := sc.now
				c := collectorAt(fixed(set), &now)
				total, ok := gather(t, c, "http_requests_total")[`status="500"`]
				if !ok {
					total = -1
				}
				window, ok := gather(t, c, "http_requests_window")[`status="500",window="1m"`]
				if !ok {
					window = -1
				}
				if total != sc.total || window != sc.window {
					t.Errorf("at %d: total %v, 1m window %v; want %v, %v (-1: absent)", now, total, window, sc.total, sc.window)
				}
			}
		})
	}
	t.Run("a kept counter revives without going back", func(t *testing.T) {
		set := mustSet(t, storetest.TTLConfig(10, time.Hour, storetest.CountRule("http_requests", storetest.OneMin, "status")), nil)
		k := set.NewSink()
		feed(k, []line{{labels: []string{"500"}, now: 1000}})
		now := int64(1100)
		c := collectorAt(fixed(set), &now)
		if got := gather(t, c, "http_requests_window"); len(got) != 0 {
			t.Fatalf("windows %v after idling, want none", got)
		}
		feed(k, []line{{labels: []string{"500"}, now: 1200}})
		now = 1200
		if got := gather(t, c, "http_requests_total")[`status="500"`]; got != 2 {
			t.Errorf("total after revival = %v, want 2", got)
		}
		if got := gather(t, c, "http_requests_window")[`status="500",window="1m"`]; got != 1 {
			t.Errorf("1m window after revival = %v, want 1", got)
		}
	})
}

// TestKeptCountersAtBudget: kept counters count against max_series_per_rule; a new label
// set at a full budget takes the room of the least recently active kept counter, and
// live series are never evicted (new label sets fold instead).
func TestKeptCountersAtBudget(t *testing.T) {
	set := mustSet(t, storetest.TTLConfig(3, 0, storetest.CountRule("http_requests", storetest.OneMin, "status")), nil)
	k := set.NewSink()
	feed(k, []line{
		{labels: []string{"a"}, now: 1000},
		{labels: []string{"b"}, now: 1005},
		{labels: []string{"c"}, now: 1003},
	})
	now := int64(1100) // all three idle: kept counters
	c := collectorAt(fixed(set), &now)
	if got := gather(t, c, "logwindow_rule_series")[`rule="http_requests"`]; got != 3 {
		t.Fatalf("series = %v, want 3 kept counters", got)
	}
	// d takes a's room (a was last active at 1000), e takes c's (1003).
	feed(k, []line{{labels: []string{"d"}, now: 1100}, {labels: []string{"e"}, now: 1101}})
	now = 1101
	totals := gather(t, c, "http_requests_total")
	want := map[string]float64{`status="b"`: 1, `status="d"`: 1, `status="e"`: 1}
	if fmt.Sprint(totals) != fmt.Sprint(want) {
		t.Errorf("totals = %v, want %v", totals, want)
	}
	// Three live series: the next new label set folds, nothing live is evicted.
	feed(k, []line{{labels: []string{"b"}, now: 1101}, {labels: []string{"f"}, now: 1102}})
	now = 1102
	totals = gather(t, c, "http_requests_total")
	want = map[string]float64{`status="__overflow__"`: 1, `status="b"`: 2, `status="d"`: 1, `status="e"`: 1}
	if fmt.Sprint(totals) != fmt.Sprint(want) {
		t.Errorf("totals = %v, want %v", totals, want)
	}
	if got := gather(t, c, "logwindow_rule_matched_lines_total")[`rule="http_requests"`]; got != 7 {
		t.Errorf("matched lines = %v, want 7 (evicted counters' lines stay counted)", got)
	}
}

// TestCountersAgainstModel: over random streams of label sets with long idle gaps and
// random scrapes, with no TTL and room in the budget, every label set's _total equals the
// lines written for it so far at every scrape, windows or not; with a small budget the
// series never exceed it (plus the overflow series), no counter exceeds its lines, and
// the rule's matched lines still count every line.
func TestCountersAgainstModel(t *testing.T) {
	for _, budget := range []int{1000, 4} {
		t.Run(fmt.Sprint("budget ", budget), func(t *testing.T) {
			for seed := range uint64(20) {
				rng := rand.New(rand.NewPCG(seed, 15))
				set := mustSet(t, storetest.TTLConfig(budget, 0, storetest.CountRule("r", storetest.MinFive, "k")), nil)
				k := set.NewSink()
				now := int64(start)
				c := collectorAt(fixed(set), &now)
				written := map[string]float64{}
				lines := 0.0
				for range 300 {
					now += rng.Int64N(120) // gaps up to 2 minutes, often past none
					if rng.IntN(20) == 0 {
						now += 600 // past the longest window
					}
					for range rng.IntN(4) {
						v := fmt.Sprint(rng.IntN(12))
						feed(k, []line{{labels: []string{v}, now: now}})
						written[fmt.Sprintf("k=%q", v)]++
						lines++
					}
					if rng.IntN(3) > 0 {
						continue
					}
					got := gather(t, c, "r_total")
					if budget >= 12 && fmt.Sprint(got) != fmt.Sprint(written) {
						t.Fatalf("seed %d at %d: totals %v, want %v", seed, now, got, written)
					}
					if len(got) > budget+1 {
						t.Fatalf("seed %d: %d series, budget %d", seed, len(got), budget)
					}
					if budget < 12 {
						for ls, v := range got {
							if ls != `k="__overflow__"` && v > written[ls] {
								t.Fatalf("seed %d: %s = %v, more than its %v lines", seed, ls, v, written[ls])
							}
						}
					}
					if m := gather(t, c, "logwindow_rule_matched_lines_total")[`rule="r"`]; m != lines {
						t.Fatalf("seed %d: matched lines %v, want %v", seed, m, lines)
					}
				}
			}
		})
	}
}

// TestCountersThroughClockJumps: with room in the budget, every label set's _total of the
// counting rules equals the lines written for it, and each rule's matched lines every
// line, at every scrape, while the wall clock the event-time rules live on steps back and
// forth by seconds to days, lines carry times from the ends of int64 and far ahead, two
// shards write through direct and batching sinks, and Expire runs now and then; no sample
// is NaN or infinite, and no window of lines is negative. With a counter TTL (10m), that
// holds of every label set that never went a TTL of processing time without a line: a step
// of the wall clock past the TTL does not make one idle, whose counter would restart.
func TestCountersThroughClockJumps(t *testing.T) {
	for _, ttl := range []int64{0, 600} {
		t.Run(fmt.Sprintf("ttl %ds", ttl), func(t *testing.T) { countersThroughClockJumps(t, ttl) })
	}
}

func countersThroughClockJumps(t *testing.T, ttl int64) {
	cfg, _ := storetest.ParseRules(t, fmt.Sprintf(batchRules, 1000, fmt.Sprint(ttl, "s")))
	seeds, reads := 6, 80
	if testing.Short() || race.Enabled {
		seeds, reads = 2, 40
	}
	counting := map[string]bool{}
	for _, r := range cfg.Rules {
		counting[r.Name] = !r.IsValueRule()
	}
	for seed := range uint64(seeds) {
		set := storetest.Must(store.NewSetWith(cfg, nil, store.SetOptions{Shards: 2}))
		sinks := []*store.Sink{set.NewSink(), set.NewBatchSink()}
		rng := rand.New(rand.NewPCG(seed, 17))
		c := batchCase{statuses: 5, paths: 30, late: 0.1, future: 0.1}
		processing, wall := int64(start), int64(start)
		col := NewCollector(Options{Set: fixed(set), Now: func() int64 { return processing }, Wall: func() int64 { return wall }, Start: start})
		written := map[string]float64{}
		matched := map[string]float64{}
		// lastLine is the processing second of each label set's last line; idled holds
		// those that went longer than the TTL without one, whose counters may restart.
		lastLine := map[string]int64{}
		idled := map[string]bool{}
		for read := range reads {
			processing += []int64{0, 1, 5, 70}[rng.IntN(4)]
			wall += []int64{0, 1, 70, -3, -400, -4000, 100000, -100000, 3 * 86400, -3 * 86400}[rng.IntN(10)]
			for _, e := range c.events(rng, cfg, wall) {
				if e.HasTime {
					switch rng.IntN(20) {
					case 0:
						e.Time = math.MaxInt64 - rng.Int64N(5)
					case 1:
						e.Time = math.MinInt64 + rng.Int64N(5)
					case 2:
						e.Time = wall + 1<<45
					}
				}
				r := cfg.Rules[e.Rule]
				matched[fmt.Sprintf("rule=%q", r.Name)]++
				pairs := make([]string, len(r.Labels))
				for i, l := range r.Labels {
					pairs[i] = fmt.Sprintf("%s=%q", l.Name, e.Labels[i])
				}
				slices.Sort(pairs)
				if counting[r.Name] {
					key := r.Name + "_total{" + strings.Join(pairs, ",") + "}"
					written[key]++
					if last, ok := lastLine[key]; ttl > 0 && ok && processing-last > ttl {
						idled[key] = true
					}
					lastLine[key] = processing
				}
				k := sinks[rng.IntN(len(sinks))]
				k.SetNow(processing, wall)
				k.Event(e)
			}
			for _, k := range sinks {
				k.Flush()
			}
			if rng.IntN(3) == 0 {
				set.Expire(processing, wall)
			}
			mfs, err := scraped(col).Gather()
			if err != nil {
				t.Fatalf("seed %d read %d: %v", seed, read, err)
			}
			totals := map[string]float64{}
			for _, mf := range mfs {
				name := mf.GetName()
				for _, m := range mf.GetMetric() {
					v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
					key := name + "{" + labelText(m.GetLabel()) + "}"
					switch rule, _ := strings.CutSuffix(name, "_total"); {
					case math.IsNaN(v) || math.IsInf(v, 0):
						t.Fatalf("seed %d read %d (wall %+d): %s = %v", seed, read, wall-start, key, v)
					case counting[rule] && rule+"_total" == name:
						totals[key] = v
					case name == "logwindow_rule_matched_lines_total" && v != matched[labelText(m.GetLabel())]:
						t.Fatalf("seed %d read %d (wall %+d): %s = %v, want %v", seed, read, wall-start, key, v, matched[labelText(m.GetLabel())])
					case strings.HasSuffix(name, "_window") && counting[strings.TrimSuffix(name, "_window")] && v < 0:
						t.Fatalf("seed %d read %d (wall %+d): %s = %v", seed, read, wall-start, key, v)
					}
				}
			}
			for key, n := range written {
				if ttl > 0 && (idled[key] || processing-lastLine[key] > ttl) {
					continue
				}
				if totals[key] != n {
					t.Fatalf("seed %d read %d (wall %+d): %s = %v, want %v", seed, read, wall-start, key, totals[key], n)
				}
			}
			if ttl == 0 && len(totals) != len(written) {
				t.Fatalf("seed %d read %d: %d counters, want %d", seed, read, len(totals), len(written))
			}
		}
		drops := gather(t, col, "logwindow_rule_dropped_lines_total")
		for _, reason := range []string{"late", "future"} {
			if drops[fmt.Sprintf("reason=%q,rule=%q", reason, "stamped")] == 0 {
				t.Errorf("seed %d: no line was %s: the stream missed what it is for", seed, reason)
			}
		}
	}
}

// TestPinnedSeries: a rule without labels and a rule's initial label sets export every
// family at 0 before any line, and keep exporting it after idling past every window and
// the counter TTL; initial label sets count against the budget.
func TestPinnedSeries(t *testing.T) {
	withInitial := storetest.CountRule("by_status", storetest.OneMin, "status")
	withInitial.Initial = [][]string{{"500"}, {"502"}}
	set := mustSet(t, storetest.TTLConfig(3, time.Minute, storetest.CountRule("errors", storetest.OneMin), withInitial), nil)
	now := int64(start)
	c := collectorAt(fixed(set), &now)
	want := `
# HELP by_status_total Requests. Matched lines since the exporter started.
# TYPE by_status_total counter
by_status_total{status="500"} %[1]v
by_status_total{status="502"} 0
# HELP by_status_window Requests. Matched lines over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE by_status_window gauge
by_status_window{status="500",window="1m"} %[2]v
by_status_window{status="502",window="1m"} 0
# HELP errors_total Requests. Matched lines since the exporter started.
# TYPE errors_total counter
errors_total %[1]v
# HELP errors_window Requests. Matched lines over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE errors_window gauge
errors_window{window="1m"} %[2]v
`
	names := []string{"errors_total", "errors_window", "by_status_total", "by_status_window"}
	if err := testutil.GatherAndCompare(scraped(c), strings.NewReader(fmt.Sprintf(want, 0, 0)), names...); err != nil {
		t.Errorf("before any line: %v", err)
	}
	k := set.NewSink()
	feed(k, []line{{now: start}, {rule: 1, labels: []string{"500"}, now: start}})
	if err := testutil.GatherAndCompare(scraped(c), strings.NewReader(fmt.Sprintf(want, 1, 1)), names...); err != nil {
		t.Errorf("after a line: %v", err)
	}
	now = start + 86400
	if err := testutil.GatherAndCompare(scraped(c), strings.NewReader(fmt.Sprintf(want, 1, 0)), names...); err != nil {
		t.Errorf("a day later: %v", err)
	}
	// Two of three places are initial: one more label set fits, the next folds.
	feed(k, []line{{rule: 1, labels: []string{"404"}, now: now}, {rule: 1, labels: []string{"418"}, now: now}})
	got := gather(t, c, "by_status_total")
	if got[`status="404"`] != 1 || got[`status="__overflow__"`] != 1 || len(got) != 4 {
		t.Errorf("totals %v, want 500, 502, 404 and the overflow series", got)
	}
}

// BenchmarkKeptCounter measures the heap a label set holds with its wheels (default
// windows) and once they are released and only its counter is kept, per label set.
// The budget bounds both: the benchmark ends with a full budget of kept counters
// and a burst of new label sets, and checks the series never pass it.
func BenchmarkKeptCounter(b *testing.B) {
	const n = 10000
	labels := func(i int) []string { return []string{"GET", fmt.Sprintf("/api/v1/items/%d", i), "200"} }
	for b.Loop() {
		runtime.GC()
		var m0, m1, m2 runtime.MemStats
		runtime.ReadMemStats(&m0)
		set := mustSet(b, storetest.TTLConfig(n, 0, storetest.CountRule("http_requests", storetest.DefaultWindows, "method", "path", "status")), nil)
		k := set.NewSink()
		for i := range n {
			feed(k, []line{{labels: labels(i), now: start}})
		}
		now := int64(start)
		c := collectorAt(fixed(set), &now)
		mustCount(b, c, "http_requests_total")
		runtime.GC()
		runtime.ReadMemStats(&m1)
		now = start + 86400 + 1 // idle past 24h: windows released
		set.Expire(now, now)
		if got := mustCount(b, c, "http_requests_total"); got != n {
			b.Fatalf("%d counters, want %d", got, n)
		}
		runtime.GC()
		runtime.ReadMemStats(&m2)
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "B/live-series")
		b.ReportMetric(float64(m2.HeapAlloc-m0.HeapAlloc)/n, "B/kept-counter")
		for i := range n {
			feed(k, []line{{labels: labels(n + i), now: now}})
		}
		if all := set.Rule(0).Snapshot(nil); len(all) > n+1 {
			b.Fatalf("%d series after a burst of new label sets, budget %d", len(all), n)
		}
		runtime.KeepAlive(set)
	}
}
