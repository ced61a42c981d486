package store_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

// foldLog is what a test reads of a logged fold.
type foldLog struct {
	Rule     string            `json:"rule"`
	Reason   string            `json:"reason"`
	Budget   int               `json:"max_series_per_rule"`
	MaxBytes int64             `json:"series_max_bytes"`
	Folded   uint64            `json:"folded_lines"`
	Labels   map[string]string `json:"labels"`
}

// TestFoldLogged: a rule's first fold into its overflow series is logged at once, naming
// the rule, its budget (or the memory bound) and the label set folded; its further folds
// are logged again only once FoldLogEvery seconds have passed. Before, no fold was logged.
// The lines folded it says are the rule's, those its sink did not publish yet among them
// (a deferred sink's, flushed after each line here and never published).
func TestFoldLogged(t *testing.T) {
	rules := []*config.Rule{
		storetest.CountRule("r0", storetest.MinFive, "path"),
		storetest.CountRule("r1", storetest.MinFive, "path"),
	}
	one := newSet(t, storetest.Config(10, rules[0]), nil)
	write(one.NewSink(), line{labels: []string{key(0)}, now: start})
	cost := one.MemoryUsed() // of one series
	const later = start + store.FoldLogEvery
	budget := func(rule string, folded uint64, path string) foldLog {
		return foldLog{Rule: rule, Reason: "max_series_per_rule", Budget: 2, Folded: folded, Labels: map[string]string{"path": path}}
	}
	cases := []struct {
		name   string
		budget int
		bound  int64
		// writes come after two label sets of each rule, key(0) and key(1), which are
		// written again at each write's second so that they stay active.
		writes []line
		want   []foldLog
	}{
		{"within the budget: nothing", 100, 0, []line{
			{rule: 0, labels: []string{key(2)}, now: start},
			{rule: 0, labels: []string{key(3)}, now: start + 1},
		}, nil},
		{"once per rule within the hour", 2, 0, []line{
			{rule: 0, labels: []string{key(2)}, now: start},
			{rule: 0, labels: []string{key(3)}, now: start + 1},
			{rule: 0, labels: []string{key(2)}, now: start + 2},
			{rule: 1, labels: []string{key(4)}, now: start + 2},
			{rule: 0, labels: []string{key(5)}, now: later - 1},
		}, []foldLog{budget("r0", 1, key(2)), budget("r1", 1, key(4))}},
		{"again an hour later while folds go on", 2, 0, []line{
			{rule: 0, labels: []string{key(2)}, now: start},
			{rule: 0, labels: []string{key(3)}, now: later - 1},
			{rule: 0, labels: []string{key(4)}, now: later},
			{rule: 0, labels: []string{key(5)}, now: later + 1},
		}, []foldLog{budget("r0", 1, key(2)), budget("r0", 3, key(4))}},
		{"past --series.max-bytes", 100, 4 * cost, []line{
			{rule: 1, labels: []string{key(2)}, now: start},
			{rule: 1, labels: []string{key(3)}, now: start},
		}, []foldLog{{Rule: "r1", Reason: "series.max-bytes", Budget: 100, MaxBytes: 4 * cost, Folded: 1, Labels: map[string]string{"path": key(2)}}}},
	}
	for _, tc := range cases {
		for _, sink := range []struct {
			name string
			make func(*store.Set) *store.Sink
		}{{"sink", (*store.Set).NewSink}, {"deferred", (*store.Set).NewDeferredSink}} {
			t.Run(tc.name+"/"+sink.name, func(t *testing.T) {
				var out bytes.Buffer
				log := slog.New(slog.NewJSONHandler(&out, nil))
				set, err := store.NewSetWith(storetest.Config(tc.budget, rules...), nil, store.SetOptions{MaxBytes: tc.bound, Logger: log})
				if err != nil {
					t.Fatal(err)
				}
				k := sink.make(set)
				put := func(ls ...line) {
					for _, l := range ls {
						write(k, l)
						k.Flush()
					}
				}
				active := func(now int64) {
					for r := range rules {
						put(line{rule: r, labels: []string{key(0)}, now: now}, line{rule: r, labels: []string{key(1)}, now: now})
					}
				}
				active(start)
				for _, l := range tc.writes {
					active(l.now)
					put(l)
				}
				var got []foldLog
				for _, text := range strings.Split(strings.TrimSpace(out.String()), "\n") {
					if text == "" {
						continue
					}
					var rec struct {
						Level, Msg string
						foldLog
					}
					if err := json.Unmarshal([]byte(text), &rec); err != nil {
						t.Fatal(err)
					}
					if rec.Level != "WARN" || !strings.Contains(rec.Msg, store.OverflowValue) {
						t.Errorf("logged %s %q, want a warning naming %s", rec.Level, rec.Msg, store.OverflowValue)
					}
					got = append(got, rec.foldLog)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("logged\n%+v\nwant\n%+v\n%s", got, tc.want, out.String())
				}
			})
		}
	}
}

// TestFoldLoggedOnceAcrossSinks: sinks folding at the same time log the rule's fold once.
func TestFoldLoggedOnceAcrossSinks(t *testing.T) {
	var out syncbuf.Buffer
	set, err := store.NewSetWith(storetest.Config(1, storetest.CountRule("r0", storetest.OneMin, "path")), nil,
		store.SetOptions{Shards: 4, Logger: slog.New(slog.NewJSONHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	write(set.NewSink(), line{labels: []string{key(0)}, now: start})
	var wg sync.WaitGroup
	for i := range 4 {
		k := set.NewSink()
		wg.Go(func() {
			for j := range 100 {
				write(k, line{labels: []string{key(1 + i*100 + j)}, now: start})
			}
		})
	}
	wg.Wait()
	if n := strings.Count(out.String(), "\n"); n != 1 {
		t.Errorf("%d folds logged, want 1:\n%s", n, out.String())
	}
}

// TestFoldLoggedAfterClockStepsBack: an event-time rule's folds are logged by the wall
// clock; after it stepped back by more than FoldLogEvery, a fold is logged at once rather
// than once the clock is back where it was, and then again at most once per FoldLogEvery.
func TestFoldLoggedAfterClockStepsBack(t *testing.T) {
	var out bytes.Buffer
	set, err := store.NewSetWith(storetest.Config(1, storetest.EventRule("r0", storetest.OneMin, "path")), nil,
		store.SetOptions{Logger: slog.New(slog.NewJSONHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	const ahead = start + 3*store.FoldLogEvery
	k := set.NewSink()
	for i, l := range []struct {
		wall   int64
		logged int // folds logged after the line
	}{
		{ahead, 1},
		{ahead + 1, 1},
		{start, 2}, // the clock stepped back three hours
		{start + 1, 2},
		{start + store.FoldLogEvery, 3},
	} {
		// The budget's one label set stays active; another folds.
		write(k, line{labels: []string{"/"}, now: start, wall: l.wall, at: l.wall})
		write(k, line{labels: []string{fmt.Sprint("/", i)}, now: start, wall: l.wall, at: l.wall})
		if n := strings.Count(out.String(), "\n"); n != l.logged {
			t.Fatalf("after a line at %d: %d folds logged, want %d:\n%s", l.wall, n, l.logged, out.String())
		}
	}
}

// TestFoldLoggedOnceAcrossSinkSeconds: sinks whose clocks are a few seconds apart (each was
// set by its own read, and a batch is written after it was read) log the rule's fold once
// within the hour: a sink behind the one that logged is not a clock that stepped back.
func TestFoldLoggedOnceAcrossSinkSeconds(t *testing.T) {
	var out bytes.Buffer
	set, err := store.NewSetWith(storetest.Config(1, storetest.CountRule("r0", storetest.OneMin, "path")), nil,
		store.SetOptions{Shards: 2, Logger: slog.New(slog.NewJSONHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ahead, behind := set.NewSink(), set.NewSink()
	write(ahead, line{labels: []string{key(0)}, now: start + 5})
	write(ahead, line{labels: []string{key(1)}, now: start + 5})
	write(behind, line{labels: []string{key(2)}, now: start})
	if n := strings.Count(out.String(), "\n"); n != 1 {
		t.Errorf("%d folds logged, want 1:\n%s", n, out.String())
	}
}
