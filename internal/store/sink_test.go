package store

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/parser/event"
	"github.com/logwindow/logwindow_exporter/windows"
)

// TestSinkLastSeriesRemoved: a sink keeps the series of its rule's last event to spare the
// lookup of the next; once that series was removed (here by a reap at the budget, which
// evicts a kept counter), the next line of its label set goes where a lookup sends it.
func TestSinkLastSeriesRemoved(t *testing.T) {
	set := storetest.Must(NewSetWith(storetest.TTLConfig(1, 0, storetest.CountRule("http_requests", []time.Duration{time.Minute}, "status")), nil, SetOptions{}))
	first, second := set.NewSink(), set.NewSink()
	// The second line finds the series in the store's map, and the sink keeps it.
	first.SetNow(start, start)
	first.Event(storetest.Event(0, 0, 0, "500"))
	first.Event(storetest.Event(0, 0, 0, "500"))
	now := int64(start + 120) // 500 idle past its window: a kept counter, evicted first
	second.SetNow(now, now)
	second.Event(storetest.Event(0, 0, 0, "404"))
	if first.last[0] == nil || !first.last[0].removed {
		t.Fatal("the sink does not hold the evicted series: the test no longer tests its removal")
	}
	first.SetNow(now, now)
	first.Event(storetest.Event(0, 0, 0, "500"))
	// 404 holds the budget, so the next 500 folds into the overflow series; added to the
	// evicted series it would be in no _total.
	r := set.Rule(0)
	got := map[string]float64{}
	all := r.Snapshot(nil)
	for _, s := range all {
		if !r.Gone(s, now, now) {
			got[s.Labels()[0]] = r.Total(s)
		}
	}
	want := map[string]float64{"404": 1, OverflowValue: 1}
	if !maps.Equal(got, want) {
		t.Errorf("totals %v, want %v", got, want)
	}
}

// TestBatchSinkArenaBound holds a batching sink's tables to their bound of bytes: one
// takes no event once its arena holds maxArenaBytes, so that it holds at most that and one
// event's key, label values and items, with events that bring new bytes either way: items
// on every event of one label set, and label sets of long values, one new each event,
// without items. Never flushed but by the sink itself.
func TestBatchSinkArenaBound(t *testing.T) {
	const rules = `
global: {windows: [1m], max_series_per_rule: 1000}
rules:
  - {name: requests, match: '^(?P<m>\S+) (?P<c>\S+)$', labels: {method: '${m}'}}
  - {name: clients, match: '^(?P<m>\S+) (?P<c>\S+)$', labels: {method: '${m}'}, distinct: '${c}', aggregations: [window]}
`
	long := func(i, n int) string { return fmt.Sprintf("%0*d", n, i) }
	for _, tc := range []struct {
		name  string
		event func(i int) *event.Event
	}{
		{"items", func(i int) *event.Event {
			e := storetest.Event(1, 0, 0, "GET")
			e.Items = [][]byte{[]byte(long(i, 700))}
			return e
		}},
		{"label sets", func(i int) *event.Event { return storetest.Event(0, 0, 0, long(i, 900)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := storetest.ParseRules(t, rules)
			k := storetest.Must(NewSetWith(cfg, nil, SetOptions{})).NewBatchSink()
			k.SetNow(start, start)
			for i := range 1000 {
				e := tc.event(i)
				k.Event(e)
				one := len(e.Key)
				for _, b := range slices.Concat(e.Labels, e.Items) {
					one += len(b)
				}
				if got := len(k.pending[e.Rule].arena); got > maxArenaBytes+one {
					t.Fatalf("event %d: the table's arena holds %d bytes, past %d and an event's %d", i, got, maxArenaBytes, one)
				}
			}
		})
	}
}

// TestBatchSinkIsSink: a batching sink leaves every series as a sink that writes each event
// at once does (totals, lines, windows and distinct counts alike), for events that mostly
// repeat their rule's last entry (taken by Event's own check) and otherwise change it, with
// items short and long (which reach the arena's bound), keys short and past 16 bytes, the
// clocks moving, events of their own time among them, and flushes at random, sometimes
// none for long enough that the tables reach their bound of events. The values are whole
// numbers, whose sums no order of adding rounds.
func TestBatchSinkIsSink(t *testing.T) {
	const rules = `
global: {windows: [1m, 5m, 1h], max_series_per_rule: 1000}
rules:
  - {name: requests, match: '^(?P<m>\S+) (?P<s>\S+) (?P<c>\S+) (?P<p>\S+)$', labels: {method: '${m}', status: '${s}'}}
  - {name: bytes, match: '^(?P<m>\S+) (?P<s>\S+) (?P<c>\S+) (?P<p>\S+)$', value: s, labels: {path: '${p}'}}
  - {name: clients, match: '^(?P<m>\S+) (?P<s>\S+) (?P<c>\S+) (?P<p>\S+)$', labels: {status: '${s}'}, distinct: '${c}', aggregations: [window]}
`
	cfg, _ := storetest.ParseRules(t, rules)
	batched, plain := storetest.Must(NewSetWith(cfg, nil, SetOptions{})), storetest.Must(NewSetWith(cfg, nil, SetOptions{}))
	kb, kp := batched.NewBatchSink(), plain.NewSink()
	rng := rand.New(rand.NewPCG(3, 5))
	methods := []string{"GET", "POST", "PROPFIND-LONGER-THAN-16"}
	statuses := []string{"200", "404", "503"}
	paths := []string{"/", "/api/v1/users/12345/orders", "/index.html", "/a"}
	now := int64(start)
	var m, s, p string
	for i := range 40_000 {
		if i%1000 == 0 || rng.IntN(300) == 0 {
			now += int64(1 + rng.IntN(3))
			kb.SetNow(now, now)
			kp.SetNow(now, now)
		}
		if m == "" || rng.IntN(4) == 0 {
			m, s, p = methods[rng.IntN(len(methods))], statuses[rng.IntN(len(statuses))], paths[rng.IntN(len(paths))]
		}
		at := int64(0)
		if rng.IntN(5) == 0 {
			at = now - int64(rng.IntN(3))
		}
		client := fmt.Appendf(nil, "10.0.0.%d", rng.IntN(300))
		if i/5000%2 == 1 {
			client = append(client, bytes.Repeat([]byte("x"), 200)...) // the arena's bound
		}
		events := []*event.Event{
			storetest.Event(0, at, 0, m, s),
			storetest.Event(1, at, float64(rng.IntN(1000)), p),
			storetest.Event(2, at, 0, s),
		}
		events[2].Items = [][]byte{client}
		for _, e := range events {
			kb.Event(e)
			kp.Event(e)
		}
		// Half the time no flush for 6,000 lines: past the tables' bound of events.
		if i/6000%2 == 0 && rng.IntN(50) == 0 {
			kb.Flush()
		}
	}
	kb.Flush()
	for i := range batched.NumRules() {
		rb, rp := batched.Rule(i), plain.Rule(i)
		want := map[string]*Series{}
		all := rp.Snapshot(nil)
		for _, s := range all {
			want[s.key] = s
		}
		got := rb.Snapshot(nil)
		if len(got) != len(want) {
			t.Fatalf("rule %d: %d series batched, %d written at once", i, len(got), len(want))
		}
		for _, sb := range got {
			sp := want[sb.key]
			if sp == nil {
				t.Fatalf("rule %d: series %q batched only", i, sb.key)
			}
			if rb.Total(sb) != rp.Total(sp) || sb.lines() != sp.lines() {
				t.Errorf("rule %d, %q: total %v of %d lines batched, %v of %d at once", i, sb.key, rb.Total(sb), sb.lines(), rp.Total(sp), sp.lines())
			}
			var mb, mp []windows.Stats
			if b, p := rb.Read(sb, now, start, nil, &mb), rp.Read(sp, now, start, nil, &mp); fmt.Sprint(b, mb) != fmt.Sprint(p, mp) {
				t.Errorf("rule %d, %q: windows %v batched, %v at once", i, sb.key, b, p)
			}
			sumB, sumP := rb.Layout().NewSummaries(), rp.Layout().NewSummaries()
			var moreB, moreP []windows.Summary
			rb.ReadSummaries(sb, now, sumB, &moreB)
			rp.ReadSummaries(sp, now, sumP, &moreP)
			for j := range sumB {
				type counter interface{ Count() uint64 }
				if b, p := sumB[j].(counter).Count(), sumP[j].(counter).Count(); b != p {
					t.Errorf("rule %d, %q: summary %d counts %d batched, %d at once", i, sb.key, j, b, p)
				}
			}
		}
	}
}

// TestSinkMatchedPublished: a sink counts the lines it writes in their rules' matched
// lines, and those it drops, folds, or places late or future in their drop counters, as
// it writes them (NewSink), as it flushes them (NewBatchSink), or only once its caller
// publishes them (NewDeferredSink), which the pipeline does after the lines count as
// read: counted at the flush, a scrape in between showed more lines matched than read,
// and counted as the parser dropped them, more dropped.
func TestSinkMatchedPublished(t *testing.T) {
	// The counts: rule a's matched lines, lines without a value and folds; b's matched
	// lines, late and future.
	type counts [6]uint64
	all := counts{3, 1, 1, 4, 2, 1}
	for _, tc := range []struct {
		name string
		sink func(*Set) *Sink
		// The counts after the drop, after the events that follow it, after Flush, after
		// Publish: each checked on its own, so that neither the drop nor the events of
		// a sink that does not batch wait for the other to be counted.
		dropped, written, flushed, published counts
	}{
		{"sink", (*Set).NewSink, counts{1: 1}, all, all, all},
		{"batching", (*Set).NewBatchSink, counts{}, counts{}, all, all},
		{"deferred", (*Set).NewDeferredSink, counts{}, counts{}, counts{}, all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := storetest.Must(NewSetWith(storetest.Config(1,
				storetest.CountRule("a", storetest.DefaultWindows, "status"),
				storetest.EventRule("b", storetest.DefaultWindows, "status")), nil, SetOptions{}))
			k := tc.sink(set)
			check := func(when string, want counts) {
				t.Helper()
				a, b := set.Rule(0), set.Rule(1)
				got := counts{a.Matched(), a.Drops().Parser[event.NoValue], a.Drops().Folds, b.Matched(), b.Drops().Late, b.Drops().Future}
				if got != want {
					t.Errorf("%s: counted %v, want %v", when, got, want)
				}
			}
			k.Drop(0, event.NoValue)
			check("dropped", tc.dropped)
			k.SetNow(start, start)
			for _, e := range []*event.Event{
				storetest.Event(0, 0, 0, "200"), storetest.Event(0, 0, 0, "200"),
				storetest.Event(1, start, 0, "200"), storetest.Event(1, start-2*86400, 0, "200"), storetest.Event(1, start+60, 0, "200"),
				storetest.Event(1, start-2*86400, 0, "500"), // late, of a label set past the budget: no series
				storetest.Event(0, 0, 0, "404"),             // past the budget of 1: folded
			} {
				k.Event(e)
			}
			check("written", tc.written)
			k.Flush()
			check("flushed", tc.flushed)
			k.Publish()
			check("published", tc.published)
			k.Publish() // nothing twice
			check("published again", tc.published)
		})
	}
}

// TestSinkPublishBeforeFlush: a deferred sink published before it flushed (which the
// pipeline does not do) publishes what it counted so far, and its events held still
// reach their series and their rules' matched lines at the next flush and publish: the
// rules a publish visits are those the sink noted, which it must not forget while it
// holds their events.
func TestSinkPublishBeforeFlush(t *testing.T) {
	set := storetest.Must(NewSetWith(storetest.Config(100,
		storetest.CountRule("a", storetest.DefaultWindows, "status"),
		storetest.CountRule("b", storetest.DefaultWindows, "status")), nil, SetOptions{}))
	k := set.NewDeferredSink()
	k.SetNow(start, start)
	k.Event(storetest.Event(0, 0, 0, "200"))
	k.Drop(1, event.NoValue)
	k.Publish()
	if m, d := set.Rule(0).Matched(), set.Rule(1).Drops().Parser[event.NoValue]; m != 0 || d != 1 {
		t.Errorf("published before the flush: %d matched, %d dropped; want 0 (held) and 1", m, d)
	}
	k.Flush()
	k.Publish()
	if m := set.Rule(0).Matched(); m != 1 {
		t.Errorf("flushed and published: %d matched, want 1", m)
	}
	if s := set.Rule(0).Snapshot(nil); len(s) != 1 || s[0].Lines() != 1 {
		t.Errorf("flushed: series %v, want one of 1 line", s)
	}
}
