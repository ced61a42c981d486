package scrape

import (
	"fmt"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"weak"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/logwindow/logwindow_exporter/config"
)

func TestReload(t *testing.T) {
	// The new rule has no labels: its series is there from the start.
	const newRule = `
# HELP new_rule_total Requests. Matched lines since the exporter started.
# TYPE new_rule_total counter
new_rule_total 0
`
	kept := func(help string) string {
		return newRule + strings.ReplaceAll(`
# HELP request_seconds_total Request time. Sum of request_time since the exporter started.
# TYPE request_seconds_total counter
request_seconds_total{method="GET"} 3
# HELP request_seconds_window Request time. Sum of request_time over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE request_seconds_window gauge
request_seconds_window{method="GET",window="10s"} 3
request_seconds_window{method="GET",window="1m"} 3
`, "Request time.", help)
	}
	cases := []struct {
		name   string
		change func(r *config.Rule)
		want   string // without request_seconds: the rule restarted with no series
	}{
		{"same definition", func(*config.Rule) {}, kept("Request time.")},
		{"help changed, fingerprint kept", func(r *config.Rule) { r.Help = "Upstream time." }, kept("Upstream time.")},
		{"fingerprint changed", func(r *config.Rule) { r.Fingerprint += "'" }, newRule},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := storetest.ValueRule("request_seconds", storetest.TenSec, "method")
			prev := mustSet(t, storetest.Config(10, old), nil)
			feed(prev.NewSink(), []line{
				{labels: []string{"GET"}, now: 1295, value: 1},
				{labels: []string{"GET"}, now: 1296, value: 2},
			})
			changed := *old
			tc.change(&changed)
			// The rule moves to another index, behind a new rule.
			next := mustSet(t, storetest.Config(10, storetest.CountRule("new_rule", storetest.OneMin), &changed), prev)
			now := int64(1300)
			names := []string{"request_seconds_total", "request_seconds_window", "new_rule_total"}
			if err := testutil.GatherAndCompare(scraped(collectorAt(fixed(next), &now)), strings.NewReader(tc.want), names...); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestReloadWhileWriting: a writer still holding the previous store.Set's sink keeps counting
// into the rules the new store.Set kept.
func TestReloadWhileWriting(t *testing.T) {
	prev := mustSet(t, storetest.Config(10, storetest.CountRule("kept", storetest.OneMin), storetest.CountRule("changed", storetest.OneMin), storetest.CountRule("removed", storetest.OneMin)), nil)
	old := prev.NewSink()
	feed(old, []line{{rule: 0, now: 1000}, {rule: 1, now: 1000}, {rule: 2, now: 1000}})

	changed := storetest.CountRule("changed", storetest.OneMin)
	changed.Fingerprint = "changed v2"
	next := mustSet(t, storetest.Config(10, changed, storetest.CountRule("kept", storetest.OneMin)), prev)
	feed(old, []line{{rule: 0, now: 1001}, {rule: 1, now: 1001}, {rule: 2, now: 1001}})
	feed(next.NewSink(), []line{{rule: 0, now: 1001}, {rule: 1, now: 1001}})

	now := int64(1001)
	want := `
# HELP changed_total Requests. Matched lines since the exporter started.
# TYPE changed_total counter
changed_total 1
# HELP kept_total Requests. Matched lines since the exporter started.
# TYPE kept_total counter
kept_total 3
`
	if err := testutil.GatherAndCompare(scraped(collectorAt(fixed(next), &now)), strings.NewReader(want), "changed_total", "kept_total", "removed_total"); err != nil {
		t.Error(err)
	}
}

// TestConcurrentWritersScrapesReloads runs writers, scrapes and reloads at once (meant for
// -race) and checks that a rule kept across every reload lost no line.
func TestConcurrentWritersScrapesReloads(t *testing.T) {
	const (
		writers = 4
		lines   = 20000
		budget  = 50
	)
	kept := storetest.CountRule("kept", storetest.TenSec, "k")
	configs := [2]*config.Config{
		storetest.Config(budget, kept, storetest.ValueRule("flip", storetest.OneMin, "k")),
		storetest.Config(budget, storetest.CountRule("flip", storetest.TenSec, "k"), kept),
	}
	configs[1].Rules[0].Fingerprint = "flip v2"
	keptIndex := [2]int{0, 1}

	type generation struct {
		set  *store.Set
		kept int
	}
	var current atomic.Pointer[generation]
	current.Store(&generation{set: mustSet(t, configs[0], nil), kept: keptIndex[0]})
	var clock atomic.Int64
	clock.Store(start)
	c := NewCollector(Options{
		Set:   func() *store.Set { return current.Load().set },
		Now:   clock.Load,
		Start: start,
	})

	var written atomic.Uint64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			var g *generation
			var k *store.Sink
			for i := range lines {
				if next := current.Load(); next != g {
					g, k = next, next.set.NewSink()
				}
				now := clock.Load()
				k.SetNow(now, now)
				// Up to 2×budget label sets: some fold into overflow, some expire.
				l := line{rule: rng.IntN(2), labels: []string{fmt.Sprint(rng.IntN(2 * budget))}, value: 0.5}
				if i%7 == 0 {
					l.at = clock.Load() - int64(rng.IntN(20)) // some late, some in the window
				}
				k.Event(l.event())
				if l.rule == g.kept {
					written.Add(1)
				}
			}
		})
	}
	done := make(chan struct{})
	var side sync.WaitGroup
	side.Go(func() { // scrapes, moving the clock so that series expire
		for {
			select {
			case <-done:
				return
			default:
			}
			clock.Add(3)
			if _, err := testutil.GatherAndCount(scraped(c)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	side.Go(func() { // reloads, flipping one rule's definition
		for i := 1; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			prev := current.Load()
			set, err := store.NewSetWith(configs[i%2], prev.set, store.SetOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			current.Store(&generation{set: set, kept: keptIndex[i%2]})
			runtime.Gosched()
		}
	})
	wg.Wait()
	close(done)
	side.Wait()

	now := clock.Load()
	want := fmt.Sprintf(`
# HELP logwindow_rule_matched_lines_total Lines matched by the rule, including lines too old for any window (those of a label set with no live series are in no _total).
# TYPE logwindow_rule_matched_lines_total counter
logwindow_rule_matched_lines_total{rule="kept"} %d
`, written.Load())
	// Only the kept rule's count is exact: lines written to the other through a sink of a
	// replaced store.Set are lost by design. A last reload keeps just that rule.
	final := mustSet(t, storetest.Config(budget, kept), current.Load().set)
	if err := testutil.GatherAndCompare(scraped(collectorAt(fixed(final), &now)), strings.NewReader(want), "logwindow_rule_matched_lines_total"); err != nil {
		t.Error(err)
	}
	if all := final.Rule(0).Snapshot(nil); len(all) > budget+1 {
		t.Errorf("kept rule holds %d series, budget %d plus overflow", len(all), budget)
	}
}

// TestReloadLetsGoOfReplacedStores: a rule's store that a reload replaced (its
// definition changed) or removed goes once no scrape reads it: the readers kept between
// scrapes keep the merged summaries of the rules they read, but not what they were read
// from. A layout reaches its store, and with it every series: a kept reader held each
// replaced summary rule's series for good, a reload after another.
func TestReloadLetsGoOfReplacedStores(t *testing.T) {
	const requests = `
  - name: requests
    match: '^(?P<path>\S+) (?P<time>\S+)$'
    labels: {path: '${path}'}
`
	const rules = `
global: {windows: [1m]}
rules:
  - name: latency
    match: '^(?P<path>\S+) (?P<time>\S+)$'
    labels: {path: '${path}'}
    value: time
    aggregations: [window, quantiles]` + requests
	p, set := parserSet(t, rules)
	k := set.NewSink()
	k.SetNow(start, start)
	for i := range 100 {
		p.Parse("app", fmt.Appendf(nil, "/p%d 0.%d", i, i), k)
	}
	var cur atomic.Pointer[store.Set]
	cur.Store(set)
	now := int64(start)
	c := NewCollector(Options{Set: func() *store.Set { return cur.Load() }, Now: func() int64 { return now }, Start: start})
	scrapeKept(t, c, nil)
	all := set.Rule(0).Snapshot(nil)
	if set.Rule(0).Config().Name != "latency" || len(all) == 0 {
		t.Fatalf("rule 0 is %s, of %d series", set.Rule(0).Config().Name, len(all))
	}
	gone := weak.Make(all[0])
	// The latency rule's windows change: a new store; then it is removed.
	cfg, _ := storetest.ParseRules(t, strings.Replace(rules, "windows: [1m]", "windows: [5m]", 1))
	cur.Store(mustSet(t, cfg, set))
	scrapeKept(t, c, nil)
	cfg, _ = storetest.ParseRules(t, "global: {windows: [1m]}\nrules:"+requests)
	all, set, k = nil, nil, nil
	cur.Store(mustSet(t, cfg, cur.Load()))
	scrapeKept(t, c, nil)
	runtime.GC()
	runtime.GC()
	if gone.Value() != nil {
		t.Error("a series of a store two reloads replaced is still reachable, after scrapes of the rules in use")
	}
	runtime.KeepAlive(c) // and with it the readers it keeps
}
