package store_test

import (
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// TestExpiry: a series idle for longer than its longest window releases its windows and
// stays a kept counter (its `_total` only) until idle for longer than the counter TTL; a
// line revives a kept counter, and a label set idle past the TTL starts a new counter.
// What a scrape shows does not depend on whether Expire ran: each step is read before and
// after an Expire at its second, and Expire only frees what the store holds.
func TestExpiry(t *testing.T) {
	byStatus := storetest.CountRule("r", storetest.OneMin, "status")
	type step struct {
		now   int64
		lines []string // label sets of lines at now, before the read
		// expire: Expire at now after the first read; the second read must be the same.
		expire bool
		want   map[string]series
		held   int // the series the store holds after the step
	}
	// overflowIdle: a live series holds the budget of one, a label set folds, the overflow
	// series idles past the TTL (2m), and another label set folds into it, after an Expire
	// at that second or not.
	overflowIdle := func(expire bool) []step {
		a := func(total float64, window ...float64) series { return series{total, window} }
		steps := []step{
			{now: 1000, lines: []string{"a", "b"}, want: map[string]series{"a": a(1, 1), store.OverflowValue: a(1, 1)}, held: 2},
			{now: 1060, lines: []string{"a"}, want: map[string]series{"a": a(2, 1), store.OverflowValue: a(1, 0)}, held: 2},
			{now: 1118, lines: []string{"a"}, want: map[string]series{"a": a(3, 2), store.OverflowValue: {1, nil}}, held: 2},
		}
		if expire {
			steps = append(steps, step{now: 1121, expire: true, want: map[string]series{"a": a(3, 1)}, held: 1})
		}
		return append(steps, step{now: 1121, lines: []string{"c"}, want: map[string]series{"a": a(3, 1), store.OverflowValue: a(1, 1)}, held: 2})
	}
	cases := []struct {
		name   string
		rule   *config.Rule
		budget int
		ttl    time.Duration
		steps  []step
	}{{
		name: "windows go after the longest window, the counter after the TTL",
		rule: byStatus, budget: 10, ttl: 10 * time.Minute,
		steps: []step{
			{now: 1000, lines: []string{"500"}, want: map[string]series{"500": {1, []float64{1}}}, held: 1},
			{now: 1010, lines: []string{"500"}, expire: true, want: map[string]series{"500": {2, []float64{2}}}, held: 1},
			{now: 1070, expire: true, want: map[string]series{"500": {2, []float64{0}}}, held: 1}, // idle 60 s: not past 1m
			{now: 1071, expire: true, want: map[string]series{"500": {2, nil}}, held: 1},
			{now: 1610, expire: true, want: map[string]series{"500": {2, nil}}, held: 1}, // idle 600 s: not past the TTL
			{now: 1611, want: map[string]series{}, held: 1},                              // gone, held until Expire
			{now: 1611, expire: true, want: map[string]series{}, held: 0},
		},
	}, {
		name: "counter_ttl 0 keeps counters forever",
		rule: byStatus, budget: 10,
		steps: []step{
			{now: 1000, lines: []string{"500"}, want: map[string]series{"500": {1, []float64{1}}}, held: 1},
			{now: 1000 + 400*86400, expire: true, want: map[string]series{"500": {1, nil}}, held: 1},
		},
	}, {
		name: "a windowed series is live until idle past its longest window",
		rule: storetest.CountRule("r", storetest.MinFive, "status"), budget: 10, ttl: time.Hour,
		steps: []step{
			{now: 1000, lines: []string{"500"}, want: map[string]series{"500": {1, []float64{1, 1}}}, held: 1},
			{now: 1100, expire: true, want: map[string]series{"500": {1, []float64{0, 1}}}, held: 1},
			{now: 1299, expire: true, want: map[string]series{"500": {1, []float64{0, 1}}}, held: 1},
			{now: 1300, expire: true, want: map[string]series{"500": {1, []float64{0, 0}}}, held: 1},
			{now: 1301, expire: true, want: map[string]series{"500": {1, nil}}, held: 1},
		},
	}, {
		name: "a kept counter revives with new windows, its total going on",
		rule: byStatus, budget: 10, ttl: time.Hour,
		steps: []step{
			{now: 1000, lines: []string{"500"}, want: map[string]series{"500": {1, []float64{1}}}, held: 1},
			{now: 1100, expire: true, want: map[string]series{"500": {1, nil}}, held: 1},
			{now: 1200, lines: []string{"500"}, expire: true, want: map[string]series{"500": {2, []float64{1}}}, held: 1},
		},
	}, {
		name: "a label set idle past the TTL starts a new counter, Expire or not",
		rule: byStatus, budget: 10, ttl: 2 * time.Minute,
		steps: []step{
			{now: 1000, lines: []string{"500", "500"}, want: map[string]series{"500": {2, []float64{2}}}, held: 1},
			{now: 1121, lines: []string{"500"}, expire: true, want: map[string]series{"500": {1, []float64{1}}}, held: 1},
		},
	}, {
		name: "pinned series never expire",
		rule: storetest.CountRule("r", storetest.OneMin), budget: 10, ttl: time.Minute,
		steps: []step{
			{now: 1000, lines: []string{""}, want: map[string]series{"": {1, []float64{1}}}, held: 1},
			{now: 1000 + 86400, expire: true, want: map[string]series{"": {1, []float64{0}}}, held: 1},
		},
	}, {
		name: "the overflow series idle past the TTL starts a new counter",
		rule: byStatus, budget: 1, ttl: 2 * time.Minute,
		steps: overflowIdle(false),
	}, {
		name: "the overflow series idle past the TTL and expired starts a new counter",
		rule: byStatus, budget: 1, ttl: 2 * time.Minute,
		steps: overflowIdle(true),
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := newSet(t, storetest.TTLConfig(tc.budget, tc.ttl, tc.rule), nil)
			k := set.NewSink()
			var lines uint64
			for _, st := range tc.steps {
				for _, v := range st.lines {
					var labels []string
					if v != "" {
						labels = []string{v}
					}
					write(k, line{labels: labels, now: st.now})
					lines++
				}
				reads := []view{read(set, 0, st.now)}
				if st.expire {
					set.Expire(st.now, st.now)
					reads = append(reads, read(set, 0, st.now))
				}
				for i, got := range reads {
					if d := diff(got.series, st.want); d != "" {
						t.Fatalf("at %d, read %d of %d: series:%s", st.now, i+1, len(reads), d)
					}
					if got.matched != lines {
						t.Fatalf("at %d: %d matched lines, want %d", st.now, got.matched, lines)
					}
				}
				if got := reads[len(reads)-1]; got.held != st.held {
					t.Fatalf("at %d: %d series held, want %d", st.now, got.held, st.held)
				}
			}
		})
	}
}

// TestExpireClocks: Expire releases the windows of processing-time rules on the processing
// clock and those of event-time rules on the wall clock, the clock their lines' times come
// from; what it releases is what the series' windows take.
func TestExpireClocks(t *testing.T) {
	const processing, wall = 100_000, 200_000
	cases := []struct {
		name                      string
		processingAt, wallAt      int64 // Expire's clocks
		eventLive, processingLive bool
	}{
		{"neither clock past the window", processing + 60, wall + 60, true, true},
		{"processing past the window", processing + 61, wall, true, false},
		{"wall past the window", processing, wall + 61, false, true},
		{"both", processing + 61, wall + 61, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := newSet(t, storetest.Config(10, storetest.EventRule("events", storetest.OneMin, "status"), storetest.CountRule("requests", storetest.OneMin, "status")), nil)
			write(set.NewSink(),
				line{rule: 0, labels: []string{"200"}, now: processing, wall: wall, at: wall},
				line{rule: 1, labels: []string{"200"}, now: processing, wall: wall})
			before := set.MemoryUsed()
			set.Expire(tc.processingAt, tc.wallAt)
			var released int64
			for i, live := range []bool{tc.eventLive, tc.processingLive} {
				now := []int64{tc.wallAt, tc.processingAt}[i]
				got := read(set, i, now).series["200"]
				if (got.windows != nil) != live || got.total != 1 {
					t.Errorf("rule %d at %d: %v, want live %v", i, now, got, live)
				}
				if !live {
					released += int64(set.Rule(i).Layout().SeriesBytes())
				}
			}
			if got := before - set.MemoryUsed(); got != released {
				t.Errorf("Expire released %d bytes, the windows released take %d", got, released)
			}
		})
	}
}
