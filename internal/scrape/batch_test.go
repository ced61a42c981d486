package scrape

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/parser/event"
)

// batchRules have a rule of every kind a batching sink holds events of: processing-time
// and event-time counts, sums with events, extrema, quantiles and a histogram, distinct
// items, top values. The events are made by the test, not parsed.
const batchRules = `
global: {windows: [1m, 5m], max_series_per_rule: %d, counter_ttl: %s}
rules:
  - name: requests
    match: '^(?P<status>\S+) (?P<ts>\S+) (?P<v>\S+) (?P<client>\S+) (?P<path>\S+)$'
    labels: {status: '${status}'}
  - name: stamped
    match: '^(?P<status>\S+) (?P<ts>\S+) (?P<v>\S+) (?P<client>\S+) (?P<path>\S+)$'
    labels: {status: '${status}', path: '${path}'}
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
  - name: request_seconds
    match: '^(?P<status>\S+) (?P<ts>\S+) (?P<v>\S+) (?P<client>\S+) (?P<path>\S+)$'
    value: v
    labels: {status: '${status}'}
    aggregations: [window, per_second, events, max, min, mean, quantiles]
    quantiles: [0.5, 0.99]
    buckets: [0.5, 1]
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
  - name: sizes
    match: '^(?P<status>\S+) (?P<ts>\S+) (?P<v>\S+) (?P<client>\S+) (?P<path>\S+)$'
    value: v
    labels: {status: '${status}'}
  - name: clients
    match: '^(?P<status>\S+) (?P<ts>\S+) (?P<v>\S+) (?P<client>\S+) (?P<path>\S+)$'
    labels: {status: '${status}'}
    distinct: '${client}'
    aggregations: [window]
  - name: paths
    match: '^(?P<status>\S+) (?P<ts>\S+) (?P<v>\S+) (?P<client>\S+) (?P<path>\S+)$'
    labels: {path: '${path}'}
    top: {label: path, k: 3}
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
`

// twoItemsRule is a rule whose events have two items (a distinct client and a top path),
// for the cases of TestBatchSinkMatchesDirect that add it to batchRules.
const twoItemsRule = `
  - name: clients_and_paths
    match: '^(?P<status>\S+) (?P<ts>\S+) (?P<v>\S+) (?P<client>\S+) (?P<path>\S+)$'
    labels: {status: '${status}', path: '${path}'}
    distinct: '${client}'
    top: {label: path, k: 3}
    aggregations: [window]
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
`

// batchCase is a kind of event stream for TestBatchSinkMatchesDirect.
type batchCase struct {
	name   string
	budget int
	// ttl is the counter TTL. A late line of a label set past it revives the label set or
	// not by the order of its label set's lines (as between two inputs), so that cases
	// whose lines interleave and come late keep counters forever.
	ttl      string
	maxBytes int64
	sinks    int
	// grouped: the events of one label set and second of a rule come one after the other,
	// and the rules one after the other, as a flush writes them, so that the budget and the
	// memory bound (shared by the rules) decide alike. Otherwise label sets and seconds
	// interleave and the budget must not be reached.
	grouped bool
	// statuses and paths are how many label values (and items) there are.
	statuses, paths int
	// huge, invalid, late and future are the shares of events with a value past what a
	// sink holds, a label value that is not UTF-8, a time older than every window, a time
	// ahead of the clock.
	huge, invalid, late, future float64
	// flushEvery is how many reads (clock readings) pass between flushes.
	flushEvery int
	// perRead bounds the events of a read (300 when 0); pad lengthens paths by as many
	// bytes.
	perRead, pad int
	// twoItems adds twoItemsRule to the rules.
	twoItems bool
}

// TestBatchSinkMatchesDirect: events through batching sinks (NewBatchSink, flushed now and
// then) and the same events through sinks that write each at once give the same scrape,
// byte for byte, at every flush and after: totals, matched lines, windows, rates, extrema,
// quantiles, histograms, distinct counts, top values, drops, folds and the bytes held.
// Values are multiples of 1/8 and values past 2^955, so that sums are exact in any order.
// Expire runs on both at flushes, with the clock jumping past windows and the counter TTL
// between reads.
func TestBatchSinkMatchesDirect(t *testing.T) {
	for i, c := range []batchCase{
		{name: "few label sets", budget: 100, sinks: 1, statuses: 4, paths: 5, flushEvery: 1},
		{name: "held across reads", budget: 100, late: 0.05, sinks: 1, statuses: 4, paths: 5, flushEvery: 3},
		{name: "late and future", budget: 100, ttl: "0s", sinks: 1, statuses: 4, paths: 5, late: 0.1, future: 0.1, flushEvery: 1},
		{name: "huge values and invalid labels", budget: 100, sinks: 1, statuses: 4, paths: 5, huge: 0.05, invalid: 0.05, flushEvery: 2},
		{name: "many label sets", budget: 1000, ttl: "0s", sinks: 1, statuses: 10, paths: 90, late: 0.02, flushEvery: 1},
		{name: "two sinks", budget: 100, ttl: "0s", sinks: 2, statuses: 4, paths: 5, late: 0.05, future: 0.05, flushEvery: 1},
		{name: "budget full", budget: 6, sinks: 1, grouped: true, statuses: 12, paths: 40, late: 0.05, huge: 0.02, invalid: 0.02, flushEvery: 1},
		{name: "budget full held across reads", budget: 6, sinks: 1, grouped: true, statuses: 12, paths: 40, late: 0.05, flushEvery: 4},
		{name: "past what a sink holds", budget: 1000, ttl: "0s", sinks: 1, statuses: 4, paths: 5, perRead: 6000, flushEvery: 8},
		{name: "long label values", budget: 1000, ttl: "0s", sinks: 1, statuses: 4, paths: 30, pad: 1000, flushEvery: 2},
		{name: "memory bound", budget: 1000, maxBytes: 600 << 10, sinks: 1, grouped: true, statuses: 20, paths: 90, flushEvery: 1},
		// A rule's events of one label set, at the seconds of a read in turn.
		{name: "one label set, seconds alternating", budget: 100, sinks: 1, statuses: 1, paths: 1, late: 0.05, future: 0.05, flushEvery: 1},
		{name: "one label set, seconds alternating, held across reads", budget: 100, sinks: 1, statuses: 1, paths: 1, flushEvery: 5},
		// More label sets a read than a rule's table holds.
		{name: "more label sets than a table holds", budget: 100000, ttl: "0s", sinks: 1, statuses: 10, paths: 100, perRead: 1500, flushEvery: 1},
		{name: "more label sets than a table holds, grouped", budget: 100000, ttl: "0s", sinks: 1, grouped: true, statuses: 10, paths: 100, perRead: 1500, flushEvery: 1},
		// Rules of no item, one and two.
		{name: "two items an event", budget: 1000, ttl: "0s", sinks: 1, statuses: 4, paths: 20, late: 0.02, flushEvery: 2, twoItems: true},
		{name: "two items an event, two sinks", budget: 1000, ttl: "0s", sinks: 2, statuses: 4, paths: 20, pad: 300, flushEvery: 1, twoItems: true},
	} {
		if !race.Runs(i) {
			// The sinks and sets run in this one goroutine: the detector is given a
			// sample of the cases, and .ci/run runs them all without it.
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			rules := fmt.Sprintf(batchRules, c.budget, cmp.Or(c.ttl, "10m"))
			if c.twoItems {
				rules += twoItemsRule
			}
			cfg, _ := storetest.ParseRules(t, rules)
			opts := store.SetOptions{Shards: c.sinks, MaxBytes: c.maxBytes}
			batched := storetest.Must(store.NewSetWith(cfg, nil, opts))
			direct := storetest.Must(store.NewSetWith(cfg, nil, opts))
			var bs, ds []*store.Sink
			for range c.sinks {
				bs = append(bs, batched.NewBatchSink())
				ds = append(ds, direct.NewSink())
			}
			rng := rand.New(rand.NewPCG(uint64(len(c.name)), 11))
			now := int64(start)
			compare := func(when string) {
				t.Helper()
				want := scrapeText(t, collectorAt(fixed(direct), &now))
				if got := scrapeText(t, collectorAt(fixed(batched), &now)); got != want {
					t.Fatalf("%s at +%ds: the batched sinks' scrape differs from the direct ones' in\n%s", when, now-start, firstDiff([]byte(got), []byte(want)))
				}
			}
			var held []timedEvent
			reads := 60
			if testing.Short() || race.Enabled {
				reads = 20
			}
			for read := 1; read <= reads; read++ {
				now += []int64{0, 0, 1, 1, 1, 2, 7, 70, 700}[rng.IntN(9)]
				for _, e := range c.events(rng, cfg, now) {
					held = append(held, timedEvent{now: now, sink: rng.IntN(c.sinks), e: e})
				}
				if read%c.flushEvery != 0 {
					continue
				}
				if c.grouped {
					held = inFlushOrder(held)
				}
				for _, te := range held {
					bs[te.sink].SetNow(te.now, te.now)
					ds[te.sink].SetNow(te.now, te.now)
					bs[te.sink].Event(te.e)
					ds[te.sink].Event(te.e)
				}
				held = held[:0]
				for _, k := range bs {
					k.Flush()
				}
				compare(fmt.Sprintf("read %d", read))
				if rng.IntN(4) == 0 {
					batched.Expire(now, now)
					direct.Expire(now, now)
					compare(fmt.Sprintf("read %d, expired", read))
				}
			}
			for _, k := range bs {
				k.Flush()
			}
			for _, later := range []int64{0, 30, 400, 2000} {
				now += later
				batched.Expire(now, now)
				direct.Expire(now, now)
				compare("after the last read")
			}
		})
	}
}

// events are one read's events at second now: some hundreds, of every rule, with c's
// share of each oddity.
func (c batchCase) events(rng *rand.Rand, cfg *config.Config, now int64) []*event.Event {
	var out []*event.Event
	n := rng.IntN(cmp.Or(c.perRead, 300))
	for len(out) < n {
		e := c.event(rng, cfg, now)
		out = append(out, e)
		if c.grouped {
			// The label set's other events of this second: a flush writes them at once.
			for range rng.IntN(20) {
				more := *e
				more.Value = c.value(rng, cfg.Rules[e.Rule])
				more.Items = c.items(rng, cfg.Rules[e.Rule])
				out = append(out, &more)
			}
		}
	}
	return out
}

// timedEvent is an event, the second of the read it came in and the sink it goes to.
type timedEvent struct {
	now  int64
	sink int
	e    *event.Event
}

// inFlushOrder orders events as a flush writes them: by rule, and within a rule by the
// first event of their label set at their clocks.
func inFlushOrder(events []timedEvent) []timedEvent {
	first := map[string]int{}
	entry := func(te timedEvent) int {
		k := fmt.Sprintf("%d %d %d %d %q", te.sink, te.e.Rule, te.now, te.e.Time, te.e.Key)
		if _, ok := first[k]; !ok {
			first[k] = len(first)
		}
		return first[k]
	}
	for _, te := range events {
		entry(te)
	}
	slices.SortStableFunc(events, func(a, b timedEvent) int {
		return cmp.Or(cmp.Compare(a.e.Rule, b.e.Rule), cmp.Compare(entry(a), entry(b)))
	})
	return events
}

// event is an event of a random rule at second now.
func (c batchCase) event(rng *rand.Rand, cfg *config.Config, now int64) *event.Event {
	i := rng.IntN(len(cfg.Rules))
	r := cfg.Rules[i]
	var at int64
	if r.Timestamp != nil {
		at = now - int64(rng.IntN(3))
		switch p := rng.Float64(); {
		case p < c.late:
			at = now - 300 - int64(rng.IntN(1000))
		case p < c.late+c.future:
			at = now + 1 + int64(rng.IntN(5))
		}
	}
	var labels []string
	for _, l := range r.Labels {
		v := fmt.Sprintf("%d", 200+rng.IntN(c.statuses))
		if l.Name == "path" {
			v = fmt.Sprintf("/p%d%s", rng.IntN(c.paths), strings.Repeat("x", c.pad))
		}
		if rng.Float64() < c.invalid {
			v = "\xfe" + v + "\xc3"
		}
		labels = append(labels, v)
	}
	e := storetest.Event(i, at, c.value(rng, r), labels...)
	e.Items = c.items(rng, r)
	return e
}

// value is a value of rule r: 1 for a count, else a multiple of 1/8 or a value past what a
// sink holds.
func (c batchCase) value(rng *rand.Rand, r *config.Rule) float64 {
	switch {
	case !r.IsValueRule():
		return 1
	case rng.Float64() < c.huge:
		return []float64{0x1p1000, -0x1p1000, 0x1p1019}[rng.IntN(3)]
	}
	return float64(rng.IntN(24)) / 8
}

// items are an event's items for rule r: its distinct client or top path.
func (c batchCase) items(rng *rand.Rand, r *config.Rule) [][]byte {
	var items [][]byte
	for range r.Items {
		items = append(items, fmt.Appendf(nil, "/p%d%s", rng.IntN(c.paths), strings.Repeat("x", c.pad)))
	}
	return items
}
