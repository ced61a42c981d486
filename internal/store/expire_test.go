package store_test

import (
	"fmt"
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

// TestEventTimeActivity: a label set of an event-time rule is active when its lines come,
// on the wall clock, whatever their own time: its counter TTL and its place in the
// budget's eviction order go by that, not by a line stamped years ahead, and the late
// lines of a log read from its beginning stay in its `_total`, whether its windows were
// still held or not. Every case is run with an Expire before each step's lines and
// without any: what a read shows does not depend on when Expire ran.
func TestEventTimeActivity(t *testing.T) {
	rule := storetest.EventRule("r", storetest.OneMin, "k")
	type step struct {
		wall  int64
		lines []line // at wall; at is the line's own second
		// backfill are lines of a warm start, written before lines
		backfill []line
		want     map[string]series
	}
	at := func(k string, at int64) line { return line{labels: []string{k}, at: at} }
	kept := func(total float64) series { return series{total: total} }
	cases := []struct {
		name   string
		budget int
		ttl    time.Duration
		steps  []step
	}{{
		name: "a line from the future goes with the TTL after the current second",
		// Idle past the window (60 s) and the TTL (120 s) after the wall second it came at,
		// the label set is gone, and its next line starts a new counter.
		budget: 10, ttl: 2 * time.Minute,
		steps: []step{
			{wall: 1000, lines: []line{at("a", 1000+1e9)}, want: map[string]series{"a": {1, []float64{1}}}},
			{wall: 1120, want: map[string]series{"a": kept(1)}},
			{wall: 1121, want: map[string]series{}},
			{wall: 1121, lines: []line{at("a", 1121)}, want: map[string]series{"a": {1, []float64{1}}}},
		},
	}, {
		name: "a line from the future does not keep its label set from eviction",
		// a was active at 1000, b at 1010: the new label set c takes a's room.
		budget: 2,
		steps: []step{
			{wall: 1000, lines: []line{at("a", 1000+1e9)}, want: map[string]series{"a": {1, []float64{1}}}},
			{wall: 1010, lines: []line{at("b", 1010)}, want: map[string]series{"a": {1, []float64{1}}, "b": {1, []float64{1}}}},
			{wall: 2000, lines: []line{at("c", 2000)}, want: map[string]series{"b": kept(1), "c": {1, []float64{1}}}},
		},
	}, {
		name: "a late line keeps a counter whose windows are idle",
		// a's windows are idle from 1061; its late line, which came at 1500, keeps its
		// counter until 2100.
		budget: 10, ttl: 10 * time.Minute,
		steps: []step{
			{wall: 1000, lines: []line{at("a", 1000)}, want: map[string]series{"a": {1, []float64{1}}}},
			{wall: 1500, lines: []line{at("a", 1400)}, want: map[string]series{"a": kept(2)}},
			{wall: 2100, want: map[string]series{"a": kept(2)}},
			{wall: 2101, want: map[string]series{}},
		},
	}, {
		name: "the old lines of a log read from its beginning stay in its total",
		// Lines hours older than the window and the TTL, read at 10000, count in one
		// `_total`, which goes with the TTL after they came.
		budget: 10, ttl: 2 * time.Minute,
		steps: []step{
			{wall: 10000, lines: []line{at("a", 1000), at("b", 2000), at("a", 5000), at("a", 9990)}, want: map[string]series{"a": {3, []float64{1}}, "b": kept(1)}},
			{wall: 10120, want: map[string]series{"a": kept(3), "b": kept(1)}},
			{wall: 10121, want: map[string]series{}},
		},
	}, {
		name: "after the wall clock stepped back past every window, idle series give way",
		// The clock was a day ahead when a and b came: their windows read nothing at the
		// right time, so they are kept counters, and the new label set c takes a's room.
		budget: 2, ttl: 2 * time.Minute,
		steps: []step{
			{wall: 87400, lines: []line{at("a", 87400)}, want: map[string]series{"a": {1, []float64{1}}}},
			{wall: 87401, lines: []line{at("b", 87401)}, want: map[string]series{"a": {1, []float64{1}}, "b": {1, []float64{1}}}},
			{wall: 1000, want: map[string]series{"a": kept(1), "b": kept(1)}},
			{wall: 1001, lines: []line{at("c", 1001)}, want: map[string]series{"b": kept(1), "c": {1, []float64{1}}}},
		},
	}, {
		name: "a label set of a warm start's lines goes with the TTL after them",
		// Its lines, which came before the start, are in its windows, not its total; once
		// they are idle, it is a kept counter until the TTL after their own time.
		budget: 10, ttl: 2 * time.Minute,
		steps: []step{
			{wall: 1000, backfill: []line{at("a", 990)}, want: map[string]series{"a": {0, []float64{1}}}},
			{wall: 1051, want: map[string]series{"a": kept(0)}},
			{wall: 1110, want: map[string]series{"a": kept(0)}},
			{wall: 1111, want: map[string]series{}},
		},
	}, {
		name: "a warm start's line older than every window makes no label set",
		// It places nothing and counts in no total: a label set it alone brings would be a
		// `_total` of 0 until the TTL after the line's own time.
		budget: 10, ttl: 2 * time.Minute,
		steps: []step{
			{wall: 1000, backfill: []line{at("a", 900)}, want: map[string]series{}},
			{wall: 1001, lines: []line{at("b", 1001)}, want: map[string]series{"b": {1, []float64{1}}}},
		},
	}, {
		name:   "a warm start's line older than every window makes no label set, kept forever or not",
		budget: 10,
		steps: []step{
			{wall: 1000, backfill: []line{at("a", 900)}, want: map[string]series{}},
		},
	}, {
		name: "a late line of the overflow series at a full budget is counted in it",
		// The overflow series is outside the budget: a line whose label reads
		// __overflow__ goes to it, late or not, whether its old counter is held or gone.
		budget: 1, ttl: 2 * time.Minute,
		steps: []step{
			{wall: 1000, lines: []line{at("x", 1000), at("y", 1000)}, want: map[string]series{"x": {1, []float64{1}}, store.OverflowValue: {1, []float64{1}}}},
			{wall: 1100, lines: []line{at("x", 1100)}, want: map[string]series{"x": {2, []float64{1}}, store.OverflowValue: kept(1)}},
			{wall: 1130, lines: []line{at("x", 1130), at(store.OverflowValue, 1070)}, want: map[string]series{"x": {3, []float64{2}}, store.OverflowValue: kept(1)}},
		},
	}}
	for _, tc := range cases {
		for _, expire := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/expire=%v", tc.name, expire), func(t *testing.T) {
				set := newSet(t, storetest.TTLConfig(tc.budget, tc.ttl, rule), nil)
				k, warm := set.NewSink(), set.NewBackfillSink()
				var clock processingClock
				for _, st := range tc.steps {
					processing := clock.second(st.wall)
					if expire {
						set.Expire(processing, st.wall)
					}
					for _, l := range st.backfill {
						l.now, l.wall = processing, st.wall
						write(warm, l)
					}
					for _, l := range st.lines {
						l.now, l.wall = processing, st.wall
						write(k, l)
					}
					if d := diff(readAt(set, 0, st.wall, processing).series, st.want); d != "" {
						t.Fatalf("at %d: series:%s", st.wall, d)
					}
				}
			})
		}
	}
}

// TestWallClockStepCounters: an event-time label set is active when its lines come on
// the processing clock, which a step back of the wall clock (here a day, past every
// window) does not move back and a step forward does not move on: the label sets last
// active before a step back go with the counter TTL after their last line, keep their
// order in the budget's eviction, and give way to label sets active since, rather than
// staying until the wall clock catches up and being the newest until then; a label set
// with a line after the step is active then. A step forward past the TTL (the clock set
// right after running a day behind) removes no counter whose last line came a second
// before, which its next line would restart at 1: a counter that goes down while the
// process lives. With several parts, the latest goes by the same clock.
func TestWallClockStepCounters(t *testing.T) {
	rule := storetest.EventRule("r", storetest.OneMin, "k")
	type step struct {
		wall   int64
		sink   int      // the sink the lines are written by: each on a shard of its own
		lines  []string // label sets of lines at wall, of their own time wall
		expire bool     // Expire at wall before the lines
		set    bool     // the wall clock was set to wall: no time passed
		want   map[string]series
	}
	kept := func(total float64) series { return series{total: total} }
	cases := []struct {
		name   string
		budget int
		ttl    time.Duration
		steps  []step
	}{{
		name:   "a kept counter goes with the TTL after the step",
		budget: 10, ttl: 2 * time.Minute,
		steps: []step{
			{wall: 87400, lines: []string{"a"}, want: map[string]series{"a": {1, []float64{1}}}},
			{wall: 1000, expire: true, want: map[string]series{"a": kept(1)}},
			{wall: 1120, want: map[string]series{"a": kept(1)}},
			{wall: 1121, want: map[string]series{}},
		},
	}, {
		name:   "a label set with a line after the step goes with the TTL after that line",
		budget: 10, ttl: 2 * time.Minute,
		steps: []step{
			{wall: 87400, lines: []string{"a"}, want: map[string]series{"a": {1, []float64{1}}}},
			{wall: 87410, want: map[string]series{"a": {1, []float64{1}}}},
			{wall: 1000, lines: []string{"a"}, want: map[string]series{"a": {2, []float64{1}}}},
			{wall: 1005, expire: true, want: map[string]series{"a": {2, []float64{1}}}},
			{wall: 1120, want: map[string]series{"a": kept(2)}},
			{wall: 1121, want: map[string]series{}},
		},
	}, {
		name:   "parts of two shards",
		budget: 10, ttl: 2 * time.Minute,
		steps: []step{
			{wall: 87400, sink: 0, lines: []string{"a"}, want: map[string]series{"a": {1, []float64{1}}}},
			{wall: 1000, sink: 1, lines: []string{"a"}, want: map[string]series{"a": {2, []float64{1}}}},
			{wall: 1000, expire: true, want: map[string]series{"a": {2, []float64{1}}}},
			{wall: 1120, want: map[string]series{"a": kept(2)}},
			{wall: 1121, want: map[string]series{}},
		},
	}, {
		name: "kept counters from before the step keep their order",
		// b was active before a: the new label set d takes b's room, whatever their keys.
		budget: 3, ttl: 2 * time.Minute,
		steps: []step{
			{wall: 87400, lines: []string{"b"}, want: map[string]series{"b": {1, []float64{1}}}},
			{wall: 87500, lines: []string{"a"}, want: map[string]series{"a": {1, []float64{1}}, "b": kept(1)}},
			{wall: 1000, expire: true, want: map[string]series{"a": kept(1), "b": kept(1)}},
			{wall: 1001, lines: []string{"c"}, want: map[string]series{"a": kept(1), "b": kept(1), "c": {1, []float64{1}}}},
			{wall: 1002, lines: []string{"d"}, want: map[string]series{"a": kept(1), "c": {1, []float64{1}}, "d": {1, []float64{1}}}},
			{wall: 1120, want: map[string]series{"a": kept(1), "c": {1, nil}, "d": {1, nil}}},
			{wall: 1121, want: map[string]series{"c": {1, nil}, "d": {1, nil}}},
		},
	}, {
		name:   "a kept counter from before the step gives way to one active since",
		budget: 2,
		steps: []step{
			{wall: 87400, lines: []string{"a"}, want: map[string]series{"a": {1, []float64{1}}}},
			{wall: 1000, expire: true, want: map[string]series{"a": kept(1)}},
			{wall: 1010, lines: []string{"b"}, want: map[string]series{"a": kept(1), "b": {1, []float64{1}}}},
			{wall: 2000, lines: []string{"c"}, want: map[string]series{"b": kept(1), "c": {1, []float64{1}}}},
		},
	}, {
		name:   "a step forward past the TTL removes no counter",
		budget: 10, ttl: 2 * time.Minute,
		steps: []step{
			{wall: 1000, lines: []string{"a", "a", "a"}, want: map[string]series{"a": {3, []float64{3}}}},
			{wall: 87400, set: true, expire: true, want: map[string]series{"a": kept(3)}},
			{wall: 87401, lines: []string{"a"}, want: map[string]series{"a": {4, []float64{1}}}},
		},
	}, {
		name:   "a step back and forward again removes no counter",
		budget: 10, ttl: 2 * time.Minute,
		steps: []step{
			{wall: 87400, lines: []string{"a", "a"}, want: map[string]series{"a": {2, []float64{2}}}},
			{wall: 1000, set: true, expire: true, want: map[string]series{"a": kept(2)}},
			{wall: 1005, expire: true, want: map[string]series{"a": kept(2)}},
			{wall: 87410, set: true, expire: true, want: map[string]series{"a": kept(2)}},
			{wall: 87411, lines: []string{"a"}, want: map[string]series{"a": {3, []float64{1}}}},
		},
	}, {
		name: "a step back by less than every window keeps the windows and not the counter",
		// The windows are read as the step's seconds older until the wall clock catches
		// up; the counter goes with the TTL after its line, 179 processing seconds before
		// wall 1120.
		budget: 10, ttl: 2 * time.Minute,
		steps: []step{
			{wall: 1000, lines: []string{"a"}, want: map[string]series{"a": {1, []float64{1}}}},
			{wall: 941, expire: true, want: map[string]series{"a": {1, []float64{1}}}},
			{wall: 1000, expire: true, want: map[string]series{"a": {1, []float64{1}}}},
			{wall: 1120, expire: true, want: map[string]series{}},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, err := store.NewSetWith(storetest.TTLConfig(tc.budget, tc.ttl, rule), nil, store.SetOptions{Shards: 2})
			if err != nil {
				t.Fatal(err)
			}
			sinks := []*store.Sink{set.NewSink(), set.NewSink()}
			var clock processingClock
			for _, st := range tc.steps {
				var processing int64
				if st.set {
					processing = clock.set(st.wall)
				} else {
					processing = clock.second(st.wall)
				}
				if st.expire {
					set.Expire(processing, st.wall)
				}
				for _, v := range st.lines {
					write(sinks[st.sink], line{labels: []string{v}, now: processing, wall: st.wall, at: st.wall})
				}
				if d := diff(readAt(set, 0, st.wall, processing).series, st.want); d != "" {
					t.Fatalf("at %d: series:%s", st.wall, d)
				}
			}
		})
	}
}

// TestLateLineOfLabelSetPastTTL: a late line of a label set idle past the counter TTL makes
// it active as any line does, so that, with room in the budget, its `_total` holds the
// late line and the one in the windows whatever their order, batched or not. At a full
// budget the label set is a new one that may find no series: a late line coming before the
// line that makes room is counted late only, as DESIGN.md says of a batching sink, which
// writes a label set's lines of each second of their own together.
func TestLateLineOfLabelSetPastTTL(t *testing.T) {
	rule := storetest.EventRule("r", storetest.OneMin, "k")
	for _, tc := range []struct {
		budget    int
		lateFirst bool
		total     float64
	}{
		{budget: 10, lateFirst: true, total: 2},
		{budget: 10, lateFirst: false, total: 2},
		{budget: 1, lateFirst: true, total: 1},
		{budget: 1, lateFirst: false, total: 2},
	} {
		for _, batch := range []bool{false, true} {
			t.Run(fmt.Sprintf("budget %d, late first %v, batch %v", tc.budget, tc.lateFirst, batch), func(t *testing.T) {
				set := newSet(t, storetest.TTLConfig(tc.budget, 2*time.Minute, rule), nil)
				// a is idle past the TTL from 1121; b, kept until 1220, holds a budget of one.
				write(set.NewSink(), line{labels: []string{"a"}, now: 1000, at: 1000}, line{labels: []string{"b"}, now: 1100, at: 1100})
				k := set.NewSink()
				if batch {
					k = set.NewBatchSink()
				}
				late, on := line{labels: []string{"a"}, now: 1200, at: 900}, line{labels: []string{"a"}, now: 1200, at: 1200}
				if tc.lateFirst {
					write(k, late, on)
				} else {
					write(k, on, late)
				}
				k.Flush()
				got := read(set, 0, 1200)
				if a := got.series["a"]; a.total != tc.total || got.drops.Late != 1 || got.matched != 4 {
					t.Errorf("a: %v, %d late, %d matched; want a total of %v, 1 late, 4 matched", a, got.drops.Late, got.matched, tc.total)
				}
			})
		}
	}
}

// TestSinksActiveByProcessing: whether a sink holds its events until Flush or writes each
// at once, and whatever its sinks' wall clock says, an event-time line makes its label set
// active at the processing second it came at: a wall clock set far ahead of processing
// (stepped, or a line read long after the time it was stamped with) keeps no label set
// from the counter TTL.
func TestSinksActiveByProcessing(t *testing.T) {
	const ttl = 2 * time.Minute
	const ahead = 1e6 // the wall clock's lead on processing
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch %v", batch), func(t *testing.T) {
			set := newSet(t, storetest.TTLConfig(10, ttl, storetest.EventRule("r", storetest.OneMin, "k")), nil)
			k := set.NewSink()
			if batch {
				k = set.NewBatchSink()
			}
			write(k, line{labels: []string{"a"}, now: start, wall: start + ahead, at: start + ahead})
			k.Flush()
			for _, c := range []struct {
				after int64
				gone  bool
			}{{60, false}, {int64(ttl/time.Second) + 61, true}} {
				processing := int64(start) + c.after
				set.Expire(processing, processing+ahead)
				_, there := readAt(set, 0, processing+ahead, processing).series["a"]
				if there == c.gone {
					t.Errorf("%d s after its line: a is there %v; want %v", c.after, there, !c.gone)
				}
			}
		})
	}
}
