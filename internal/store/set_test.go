package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/parser/event"
)

// reloadRules are the rules of the config a reload starts from, and reloadLines their lines
// (at 1000 and 1001), with a parser drop of each rule after them.
func reloadRules() []*config.Rule {
	return []*config.Rule{
		storetest.CountRule("kept", storetest.OneMin, "status"),
		storetest.ValueRule("changed", storetest.TenSec, "method"),
		storetest.CountRule("removed", storetest.OneMin, "path"),
	}
}

var reloadLines = []line{
	{rule: 0, labels: []string{"200"}, now: 1000},
	{rule: 0, labels: []string{"200"}, now: 1001},
	{rule: 0, labels: []string{"500"}, now: 1001},
	{rule: 1, labels: []string{"GET"}, now: 1001, value: 0.5},
	{rule: 2, labels: []string{"/a"}, now: 1001},
}

// TestReload: a reload keeps the series, windows, totals and drop counters of every rule
// whose fingerprint did not change, wherever the rule moved, and under the new budget;
// a rule whose definition changed and a new rule start with no series but their pinned
// ones. What the new Set holds, and charges, is what a fresh Set of the new config holds
// after the lines of the rules it kept.
func TestReload(t *testing.T) {
	kept := map[string]series{"200": {2, []float64{2}}, "500": {1, []float64{1}}}
	cases := []struct {
		name   string
		budget int
		next   func(prev []*config.Rule) []*config.Rule
		// want are the rules' series by name; kept names the rules of the new config that
		// keep a store (and the index of their rule in the old one).
		want map[string]map[string]series
		kept map[int]int
	}{{
		name:   "the same config",
		budget: 10,
		next:   func(prev []*config.Rule) []*config.Rule { return prev },
		want:   map[string]map[string]series{"kept": kept, "changed": {"GET": {0.5, []float64{0.5, 0.5}}}, "removed": {"/a": {1, []float64{1}}}},
		kept:   map[int]int{0: 0, 1: 1, 2: 2},
	}, {
		name:   "a rule moved behind a new one, its help changed: kept; a rule removed",
		budget: 10,
		next: func(prev []*config.Rule) []*config.Rule {
			moved := *prev[0]
			moved.Help = "Other help."
			return []*config.Rule{storetest.CountRule("new", storetest.OneMin), &moved}
		},
		want: map[string]map[string]series{"new": {"": {0, []float64{0}}}, "kept": kept},
		kept: map[int]int{1: 0},
	}, {
		name:   "a changed definition starts empty",
		budget: 10,
		next: func(prev []*config.Rule) []*config.Rule {
			changed := *prev[1]
			changed.Fingerprint += "'"
			return []*config.Rule{prev[0], &changed}
		},
		want: map[string]map[string]series{"kept": kept, "changed": {}},
		kept: map[int]int{0: 0},
	}, {
		name:   "the new budget applies to a kept rule: its series stay, new label sets fold",
		budget: 1,
		next:   func(prev []*config.Rule) []*config.Rule { return prev[:1] },
		want:   map[string]map[string]series{"kept": kept},
		kept:   map[int]int{0: 0},
	}, {
		name:   "of two rules with one fingerprint, the first keeps the store",
		budget: 10,
		next: func(prev []*config.Rule) []*config.Rule {
			twin := *prev[0]
			twin.Name = "twin"
			return []*config.Rule{prev[0], &twin}
		},
		want: map[string]map[string]series{"kept": kept, "twin": {}},
		kept: map[int]int{0: 0},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prev := newSet(t, storetest.TTLConfig(10, time.Hour, reloadRules()...), nil)
			old := prev.NewSink()
			write(old, reloadLines...)
			for i := range 3 {
				old.Drop(i, event.BadNumber)
			}
			cfg := storetest.TTLConfig(tc.budget, time.Hour, tc.next(reloadRules())...)
			next := newSet(t, cfg, prev)
			// The same lines in a fresh Set of the new config, for the rules kept, under the
			// old budget, which they were written under.
			freshCfg := *cfg
			freshCfg.Global.MaxSeriesPerRule = 10
			fresh := newSet(t, &freshCfg, nil)
			k := fresh.NewSink()
			for i, from := range tc.kept {
				for _, l := range reloadLines {
					if l.rule == from {
						l.rule = i
						write(k, l)
					}
				}
				k.Drop(i, event.BadNumber)
			}
			for i := range next.NumRules() {
				r := next.Rule(i)
				got, want := read(next, i, 1001), read(fresh, i, 1001)
				if d := diff(got.series, tc.want[r.Config().Name]); d != "" {
					t.Errorf("rule %s series:%s", r.Config().Name, d)
				}
				if got.matched != want.matched || got.drops != want.drops || got.held != want.held {
					t.Errorf("rule %s: %d matched lines, %d held, drops %+v; a fresh Set: %d, %d, %+v",
						r.Config().Name, got.matched, got.held, got.drops, want.matched, want.held, want.drops)
				}
				if r.Limit() != tc.budget {
					t.Errorf("rule %s: budget %d, want %d", r.Config().Name, r.Limit(), tc.budget)
				}
			}
			if next.MemoryUsed() != fresh.MemoryUsed() {
				t.Errorf("the reloaded series take %d bytes, those of a fresh Set %d", next.MemoryUsed(), fresh.MemoryUsed())
			}
			// A new label set of a kept rule meets the new budget.
			write(next.NewSink(), line{rule: 0, labels: []string{"new"}, now: 1001})
			if _, folded := read(next, 0, 1001).series[store.OverflowValue]; folded != (tc.budget < 3) {
				t.Errorf("with a budget of %d, a third label set folded: %v", tc.budget, folded)
			}
		})
	}
}

// TestReloadOldSink: a writer still holding a sink of the previous Set keeps counting into
// the rules the new Set kept; its lines to a rule that changed are lost with that rule's
// old store.
func TestReloadOldSink(t *testing.T) {
	prev := newSet(t, storetest.Config(10, reloadRules()...), nil)
	old := prev.NewSink()
	write(old, reloadLines...)
	rules := reloadRules()
	rules[1].Fingerprint += "'"
	next := newSet(t, storetest.Config(10, rules[:2]...), prev)
	write(old, line{rule: 0, labels: []string{"200"}, now: 1001}, line{rule: 1, labels: []string{"GET"}, now: 1001, value: 1})
	if got := read(next, 0, 1001).series["200"].total; got != 3 {
		t.Errorf("the kept rule's 200: %v, want 3", got)
	}
	if got := read(next, 1, 1001); len(got.series) != 0 || got.matched != 0 {
		t.Errorf("the changed rule: %v and %d matched lines, want none", got.series, got.matched)
	}
}

// TestReloadFails: a config the store cannot build returns an error and leaves the Set it
// was to replace as it was, charges included; a reload's memory bound is every Set's. So
// does one whose build panics (a bug, which the pipeline makes a failed reload): the
// stores built before the panic charged the bound every Set shares, for good.
func TestReloadFails(t *testing.T) {
	prev := newSet(t, storetest.Config(10, reloadRules()...), nil)
	write(prev.NewSink(), reloadLines...)
	used := prev.MemoryUsed()
	withInitial := storetest.CountRule("new", storetest.OneMin, "status")
	withInitial.Initial = [][]string{{"500"}} // charged when built, given back on failure
	for _, tc := range []struct {
		name   string
		broken *config.Rule
		want   string
	}{
		{"refused", storetest.CountRule("broken", nil), `rule "broken": no windows`},
		{"panicked", nil, "nil pointer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if v := recover(); v != nil {
						err = fmt.Errorf("panic: %v", v)
					}
				}()
				_, err = store.NewSetWith(storetest.Config(10, withInitial, tc.broken), prev, store.SetOptions{})
			}()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if prev.MemoryUsed() != used {
				t.Errorf("a failed reload left %d bytes charged, before %d", prev.MemoryUsed(), used)
			}
			if got := read(prev, 0, 1001).series["200"].total; got != 2 {
				t.Errorf("after a failed reload the kept rule's 200 is %v, want 2", got)
			}
		})
	}
	next, err := store.NewSetWith(storetest.Config(10, reloadRules()...), prev, store.SetOptions{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if prev.MaxBytes() != 1<<20 || next.MaxBytes() != 1<<20 {
		t.Errorf("bounds after the reload %d and %d, want %d", prev.MaxBytes(), next.MaxBytes(), 1<<20)
	}
}
