package store_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/windows"
)

// TestSeriesPerLabelSet: every label set of a rule is a series of its own, counting its
// lines (or summing its values) in its `_total` and its windows; a rule without labels has
// its one series from the start.
func TestSeriesPerLabelSet(t *testing.T) {
	cases := []struct {
		name  string
		rule  *config.Rule
		lines []line
		now   int64
		want  map[string]series
	}{{
		name: "one series per label set",
		rule: storetest.CountRule("r", storetest.OneMin, "method", "status"),
		lines: []line{
			{labels: []string{"GET", "200"}, now: 1000},
			{labels: []string{"GET", "200"}, now: 1001},
			{labels: []string{"POST", "200"}, now: 1001},
			{labels: []string{"GET", "500"}, now: 1002},
		},
		now:  1002,
		want: map[string]series{"GET|200": {2, []float64{2}}, "POST|200": {1, []float64{1}}, "GET|500": {1, []float64{1}}},
	}, {
		name: "label values are whole: a, bc is not ab, c",
		rule: storetest.CountRule("r", storetest.OneMin, "x", "y"),
		lines: []line{
			{labels: []string{"a", "bc"}, now: 1000},
			{labels: []string{"ab", "c"}, now: 1000},
		},
		now:  1000,
		want: map[string]series{"a|bc": {1, []float64{1}}, "ab|c": {1, []float64{1}}},
	}, {
		name: "label sets equal once invalid UTF-8 is replaced are one series",
		rule: storetest.CountRule("r", storetest.OneMin, "path"),
		lines: []line{
			{labels: []string{"\xfe"}, now: 1000},
			{labels: []string{"\xfd"}, now: 1000},
			{labels: []string{"\uFFFD"}, now: 1000},
		},
		now:  1000,
		want: map[string]series{"\uFFFD": {3, []float64{3}}},
	}, {
		name: "a rule without labels has its series before any line",
		rule: storetest.CountRule("r", storetest.OneMin),
		now:  1000,
		want: map[string]series{"": {0, []float64{0}}},
	}, {
		name:  "a rule without labels counts every line in its series",
		rule:  storetest.CountRule("r", storetest.OneMin),
		lines: []line{{now: 1000}, {now: 1030}},
		now:   1030,
		want:  map[string]series{"": {2, []float64{2}}},
	}, {
		name: "a value rule sums the values",
		rule: storetest.ValueRule("r", storetest.TenSec, "method"),
		lines: []line{
			{labels: []string{"GET"}, now: 1000, value: 0.25},
			{labels: []string{"GET"}, now: 1055, value: 0.5},
		},
		now:  1059,
		want: map[string]series{"GET": {0.75, []float64{0.5, 0.75}}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := newSet(t, storetest.Config(10, tc.rule), nil)
			write(set.NewSink(), tc.lines...)
			got := read(set, 0, tc.now)
			if d := diff(got.series, tc.want); d != "" {
				t.Errorf("series:%s", d)
			}
			if got.matched != uint64(len(tc.lines)) || got.held != len(tc.want) {
				t.Errorf("%d matched lines in %d series, want %d in %d", got.matched, got.held, len(tc.lines), len(tc.want))
			}
		})
	}
}

// TestInitialSeries: a rule's initial label sets are series from the start, at 0, that
// never expire and count against the rule's budget.
func TestInitialSeries(t *testing.T) {
	cases := []struct {
		name     string
		budget   int
		ttl      time.Duration
		lines    []line
		expireAt int64 // 0: no Expire
		now      int64
		want     map[string]series
	}{{
		name:   "at 0 before any line",
		budget: 10,
		now:    start,
		want:   map[string]series{"500": {0, []float64{0}}, "502": {0, []float64{0}}},
	}, {
		name:   "a line counts in its initial series",
		budget: 10,
		lines:  []line{{labels: []string{"500"}, now: 1000}},
		now:    1000,
		want:   map[string]series{"500": {1, []float64{1}}, "502": {0, []float64{0}}},
	}, {
		name:     "kept with their windows a day later, past the counter TTL and an Expire",
		budget:   10,
		ttl:      time.Minute,
		lines:    []line{{labels: []string{"500"}, now: 1000}},
		expireAt: 1000 + 86400,
		now:      1000 + 86400,
		want:     map[string]series{"500": {1, []float64{0}}, "502": {0, []float64{0}}},
	}, {
		name:   "they count against the budget: of three places one is left",
		budget: 3,
		lines:  []line{{labels: []string{"404"}, now: 1000}, {labels: []string{"418"}, now: 1000}},
		now:    1000,
		want: map[string]series{"500": {0, []float64{0}}, "502": {0, []float64{0}}, "404": {1, []float64{1}},
			store.OverflowValue: {1, []float64{1}}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rule := storetest.CountRule("by_status", storetest.OneMin, "status")
			rule.Initial = [][]string{{"500"}, {"502"}}
			set := newSet(t, storetest.TTLConfig(tc.budget, tc.ttl, rule), nil)
			write(set.NewSink(), tc.lines...)
			if tc.expireAt != 0 {
				set.Expire(tc.expireAt, tc.expireAt)
			}
			if d := diff(read(set, 0, tc.now).series, tc.want); d != "" {
				t.Errorf("series:%s", d)
			}
		})
	}
}

// TestPlacement: a line with a time of its own is judged on the wall clock: within the
// longest window it is placed at its second; older, it is late, in its series' `_total`
// only (a new label set's series starts as a kept counter, or has none when the budget is
// full); ahead of the clock, it is future and placed at the current second. Sink.Judge
// says beforehand what Event does.
func TestPlacement(t *testing.T) {
	const processing, wall = 1500, 2000 // the processing clock places no event-time line
	events := storetest.EventRule("r", storetest.OneMin, "status")
	cases := []struct {
		name         string
		rule         *config.Rule
		budget       int
		oneSeries    bool   // a memory bound that the series of the lines before fill
		before       []line // written first
		line         line
		fate         store.Fate
		late, future uint64
		want         map[string]series
	}{{
		name: "in its window",
		rule: events, budget: 10,
		line: line{labels: []string{"a"}, at: wall - 10},
		fate: store.Fate{Placement: windows.Placed, Now: wall},
		want: map[string]series{"a": {1, []float64{1}}},
	}, {
		name: "at its window's old edge",
		rule: events, budget: 10,
		line: line{labels: []string{"a"}, at: wall - 59},
		fate: store.Fate{Placement: windows.Placed, Now: wall},
		want: map[string]series{"a": {1, []float64{1}}},
	}, {
		name: "older than every window: late, a new label set's series is a kept counter",
		rule: events, budget: 10,
		line: line{labels: []string{"a"}, at: wall - 60},
		fate: store.Fate{Placement: windows.Late, Now: wall},
		late: 1,
		want: map[string]series{"a": {1, nil}},
	}, {
		name: "ahead of the clock: future, placed at the current second",
		rule: events, budget: 10,
		line:   line{labels: []string{"a"}, at: wall + 5},
		fate:   store.Fate{Placement: windows.Future, Now: wall},
		future: 1,
		want:   map[string]series{"a": {1, []float64{1}}},
	}, {
		name: "a late line of a live series counts in its _total only",
		rule: events, budget: 10,
		before: []line{{labels: []string{"a"}, at: wall}},
		line:   line{labels: []string{"a"}, at: 1000},
		fate:   store.Fate{Placement: windows.Late, Now: wall},
		late:   1,
		want:   map[string]series{"a": {2, []float64{1}}},
	}, {
		name: "a late line of a new label set at a full budget has no series",
		rule: events, budget: 1,
		before: []line{{labels: []string{"b"}, at: wall}},
		line:   line{labels: []string{"a"}, at: 1000},
		fate:   store.Fate{Placement: windows.Late, Now: wall},
		late:   1,
		want:   map[string]series{"b": {1, []float64{1}}},
	}, {
		name: "a placed line of a new label set at a full budget folds",
		rule: events, budget: 1,
		before: []line{{labels: []string{"b"}, at: wall}},
		line:   line{labels: []string{"a"}, at: wall - 1},
		fate:   store.Fate{Placement: windows.Placed, Now: wall, Folded: true},
		want:   map[string]series{"b": {1, []float64{1}}, store.OverflowValue: {1, []float64{1}}},
	}, {
		name: "a placed line of a new label set at the memory bound folds",
		rule: events, budget: 10, oneSeries: true,
		before: []line{{labels: []string{"b"}, at: wall}},
		line:   line{labels: []string{"a"}, at: wall - 1},
		fate:   store.Fate{Placement: windows.Placed, Now: wall, Folded: true, Memory: true},
		want:   map[string]series{"b": {1, []float64{1}}, store.OverflowValue: {1, []float64{1}}},
	}, {
		name: "a placed line of a new label set at a full budget and the memory bound folds by the budget",
		rule: events, budget: 1, oneSeries: true,
		before: []line{{labels: []string{"b"}, at: wall}},
		line:   line{labels: []string{"a"}, at: wall - 1},
		fate:   store.Fate{Placement: windows.Placed, Now: wall, Folded: true},
		want:   map[string]series{"b": {1, []float64{1}}, store.OverflowValue: {1, []float64{1}}},
	}, {
		name: "a line without a time of its own is placed at the processing second",
		rule: storetest.CountRule("r", storetest.OneMin, "status"), budget: 10,
		line: line{labels: []string{"a"}},
		fate: store.Fate{Placement: windows.Placed, Now: processing},
		want: map[string]series{"a": {1, []float64{1}}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var bound int64
			if tc.oneSeries {
				one := newSet(t, storetest.Config(tc.budget, tc.rule), nil)
				write(one.NewSink(), line{labels: []string{"b"}, now: processing, wall: wall, at: wall})
				bound = one.MemoryUsed()
			}
			set, err := store.NewSetWith(storetest.Config(tc.budget, tc.rule), nil, store.SetOptions{MaxBytes: bound})
			if err != nil {
				t.Fatal(err)
			}
			k := set.NewSink()
			for _, l := range tc.before {
				l.now, l.wall = processing, wall
				write(k, l)
			}
			l := tc.line
			l.now, l.wall = processing, wall
			k.SetNow(processing, wall)
			if fate := k.Judge(l.event()); fate != tc.fate {
				t.Errorf("Judge: %+v, want %+v", fate, tc.fate)
			}
			write(k, l)
			now := int64(wall)
			if tc.rule.Timestamp == nil {
				now = processing
			}
			got := read(set, 0, now)
			if d := diff(got.series, tc.want); d != "" {
				t.Errorf("series:%s", d)
			}
			if got.drops.Late != tc.late || got.drops.Future != tc.future {
				t.Errorf("%d late and %d future lines, want %d and %d", got.drops.Late, got.drops.Future, tc.late, tc.future)
			}
			if n := uint64(len(tc.before) + 1); got.matched != n {
				t.Errorf("%d matched lines, want %d", got.matched, n)
			}
		})
	}
}

// TestBackfillSink: a warm start's lines go into the windows of event-time rules only: not
// into a `_total`, the matched lines or the drop counters, and not into processing-time
// rules.
func TestBackfillSink(t *testing.T) {
	const now = 2000
	cases := []struct {
		name  string
		line  line
		want  [2]map[string]series // by rule: event time, processing time
		drops store.Drops
		ahead uint64 // the lines the sink says it left out as ahead of the clock
	}{{
		name: "an event-time line in its window",
		line: line{labels: []string{"a"}, at: now - 10},
		want: [2]map[string]series{{"a": {0, []float64{1}}}, {"": {0, []float64{0}}}},
	}, {
		name: "a late event-time line is neither placed nor counted, and makes no label set",
		line: line{labels: []string{"a"}, at: now - 600},
		want: [2]map[string]series{{}, {"": {0, []float64{0}}}},
	}, {
		name: "a processing-time line is not written",
		line: line{rule: 1},
		want: [2]map[string]series{{}, {"": {0, []float64{0}}}},
	}, {
		// Placed at now, as a live line ahead is, it would be in the 1m window.
		name:  "an event-time line ahead of the clock is left out, and makes no label set",
		line:  line{labels: []string{"a"}, at: now + 3600},
		want:  [2]map[string]series{{}, {"": {0, []float64{0}}}},
		ahead: 1,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := newSet(t, storetest.Config(10, storetest.EventRule("events", storetest.OneMin, "status"), storetest.CountRule("requests", storetest.OneMin)), nil)
			l := tc.line
			l.now = now
			k := set.NewBackfillSink()
			write(k, l)
			if got := k.LeftAhead(); got != tc.ahead {
				t.Errorf("LeftAhead %d, want %d", got, tc.ahead)
			}
			for i, want := range tc.want {
				got := read(set, i, now)
				if d := diff(got.series, want); d != "" {
					t.Errorf("rule %d series:%s", i, d)
				}
				if got.matched != 0 || got.drops != (store.Drops{}) {
					t.Errorf("rule %d: %d matched lines, drops %+v, want none", i, got.matched, got.drops)
				}
			}
		})
	}
}

// TestBackfillValues: a warm start's sink places a value rule's events in the windows
// and leaves the `_total` alone: the lines were counted when the exporter read them before.
func TestBackfillValues(t *testing.T) {
	const now = 2000
	cases := []struct {
		name   string
		values []float64
	}{
		{"one event", []float64{0.5}},
		{"several events of one label set", []float64{0.5, 0.25, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rule := storetest.ValueRule("seconds", storetest.OneMin, "status")
			rule.Timestamp = &config.Timestamp{CaptureName: "time", Layout: time.RFC3339}
			set := newSet(t, storetest.Config(10, rule), nil)
			k := set.NewBackfillSink()
			var sum float64
			for _, v := range tc.values {
				write(k, line{labels: []string{"a"}, now: now, at: now - 10, value: v})
				sum += v
			}
			got := read(set, 0, now)
			if d := diff(got.series, map[string]series{"a": {0, []float64{sum}}}); d != "" {
				t.Errorf("series:%s", d)
			}
		})
	}
}

// TestConcurrentSinks: sinks on every shard (two of them sharing one) write the same label
// sets at once while a reader reads as a scrape does and Expire runs; every line is in its
// label set's `_total` and windows once, as a sum over the lines computes them, and the
// matched lines a reader sees never go back.
func TestConcurrentSinks(t *testing.T) {
	cfg := storetest.Config(100, storetest.CountRule("requests", storetest.MinFive, "status"), storetest.ValueRule("seconds", storetest.MinFive, "status"))
	set, err := store.NewSetWith(cfg, nil, store.SetOptions{Shards: store.MaxShards})
	if err != nil {
		t.Fatal(err)
	}
	const sinks, perSink, seconds = store.MaxShards + 1, 3000, 200
	end := int64(start + seconds - 1)
	// Each sink's lines run over the same seconds, fewer than the longest window (a part
	// written by two sinks whose clocks were further apart would start over, as after a
	// clock step back); values are multiples of 1/8, so that any order sums them exactly.
	lines := make([][]line, sinks)
	want := [2]map[string]series{{}, {}}
	for i := range lines {
		rng := rand.New(rand.NewPCG(uint64(i), 3))
		for j := range perSink {
			l := line{rule: j % 2, labels: []string{fmt.Sprint(200 + rng.IntN(5))}, now: int64(start + j*seconds/perSink), value: float64(1+rng.IntN(16)) / 8}
			if l.rule == 0 {
				l.value = 1 // as the parser gives a counting rule's events
			}
			lines[i] = append(lines[i], l)
			v := l.value
			s := want[l.rule][l.labels[0]]
			if s.windows == nil {
				s.windows = []float64{0, 0}
			}
			s.total += v
			for w, sec := range []int64{60, 300} {
				if l.now > end-sec {
					s.windows[w] += v
				}
			}
			want[l.rule][l.labels[0]] = s
		}
	}
	var clock atomic.Int64 // the newest second written
	clock.Store(start)
	var writers sync.WaitGroup
	for i := range sinks {
		k := set.NewSink()
		writers.Go(func() {
			for _, l := range lines[i] {
				raise(&clock, l.now)
				write(k, l)
			}
		})
	}
	done := make(chan struct{})
	var reader sync.WaitGroup
	reader.Go(func() {
		var matched [2]uint64
		for {
			select {
			case <-done:
				return
			default:
			}
			now := clock.Load()
			set.Expire(now, now)
			for i := range matched {
				got := read(set, i, now)
				if got.matched < matched[i] {
					t.Errorf("rule %d: matched lines went back from %d to %d", i, matched[i], got.matched)
					return
				}
				matched[i] = got.matched
			}
		}
	})
	writers.Wait()
	close(done)
	reader.Wait()
	for i := range want {
		got := read(set, i, end)
		if d := diff(got.series, want[i]); d != "" {
			t.Errorf("rule %d series:%s", i, d)
		}
		if got.matched != sinks*perSink/2 {
			t.Errorf("rule %d: %d matched lines, want %d", i, got.matched, sinks*perSink/2)
		}
	}
}

// raise moves c forward to v.
func raise(c *atomic.Int64, v int64) {
	for {
		old := c.Load()
		if v <= old || c.CompareAndSwap(old, v) {
			return
		}
	}
}

// TestTwoSinksClockBack: an event-time rule's label set written by two inputs (two sinks,
// two shards of its series) while the host's wall clock runs half an hour ahead of the
// lines' own times, and by one of them alone once the clock is set right. A scrape must
// read the label set as one series written by both would be: the lines since the clock
// came back are in its 1m and 5m windows, rather than held out of them, at the second the
// clock ran ahead to, for as long as the other input writes none of it.
func TestTwoSinksClockBack(t *testing.T) {
	const ahead = 1800
	cfg := storetest.Config(10, storetest.EventRule("events", []time.Duration{time.Minute, 5 * time.Minute, time.Hour}, "status"))
	set, err := store.NewSetWith(cfg, nil, store.SetOptions{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	sinks := []*store.Sink{set.NewSink(), set.NewSink()}
	real := int64(start)
	for i := range 40 {
		write(sinks[i%2], line{labels: []string{"200"}, now: real, wall: real + ahead, at: real})
		real++
	}
	for range 10 {
		write(sinks[0], line{labels: []string{"200"}, now: real, at: real})
		real++
	}
	got := read(set, 0, real-1)
	want := map[string]series{"200": {50, []float64{10, 10, 50}}}
	if d := diff(got.series, want); d != "" {
		t.Errorf("series:%s", d)
	}
}
