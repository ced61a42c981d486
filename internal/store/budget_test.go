package store_test

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// TestOverflow: past max_series_per_rule a new label set folds into the rule's overflow
// series, unless a kept counter gives way (least recently active first; a live series
// never does); the overflow series is outside the budget.
func TestOverflow(t *testing.T) {
	byStatus := storetest.CountRule("r", storetest.OneMin, "status")
	cases := []struct {
		name   string
		budget int
		rule   *config.Rule
		lines  []line
		now    int64
		want   map[string]series
		folds  uint64
	}{{
		name:   "label sets past the budget fold into the overflow series",
		budget: 2,
		rule:   byStatus,
		lines: []line{
			{labels: []string{"200"}, now: 1000},
			{labels: []string{"404"}, now: 1000},
			{labels: []string{"500"}, now: 1001},
			{labels: []string{"200"}, now: 1001},
			{labels: []string{"503"}, now: 1002},
			{labels: []string{"500"}, now: 1002},
		},
		now:   1002,
		want:  map[string]series{"200": {2, []float64{2}}, "404": {1, []float64{1}}, store.OverflowValue: {3, []float64{3}}},
		folds: 3,
	}, {
		name:   "every label of the overflow series reads __overflow__",
		budget: 1,
		rule:   storetest.CountRule("r", storetest.OneMin, "status", "path"),
		lines:  []line{{labels: []string{"200", "/"}, now: 1000}, {labels: []string{"404", "/x"}, now: 1000}},
		now:    1000,
		want:   map[string]series{"200|/": {1, []float64{1}}, store.OverflowValue + "|" + store.OverflowValue: {1, []float64{1}}},
		folds:  1,
	}, {
		name:   "a line whose labels read __overflow__ is the overflow series, not a fold",
		budget: 1,
		rule:   byStatus,
		lines: []line{
			{labels: []string{store.OverflowValue}, now: 1000},
			{labels: []string{"200"}, now: 1000},
			{labels: []string{"500"}, now: 1000},
			{labels: []string{store.OverflowValue}, now: 1000},
		},
		now:   1000,
		want:  map[string]series{"200": {1, []float64{1}}, store.OverflowValue: {3, []float64{3}}},
		folds: 1,
	}, {
		name:   "a rule without labels never folds",
		budget: 1,
		rule:   storetest.CountRule("r", storetest.OneMin),
		lines:  []line{{now: 1000}, {now: 1000}, {now: 1001}},
		now:    1001,
		want:   map[string]series{"": {3, []float64{3}}},
	}, {
		name:   "live series are never evicted",
		budget: 2,
		rule:   byStatus,
		lines: []line{
			{labels: []string{"a"}, now: 1000},
			{labels: []string{"b"}, now: 1030},
			{labels: []string{"c"}, now: 1060}, // a was active 60 s ago: still live
		},
		now:   1060,
		want:  map[string]series{"a": {1, []float64{0}}, "b": {1, []float64{1}}, store.OverflowValue: {1, []float64{1}}},
		folds: 1,
	}, {
		name:   "kept counters give way to new label sets, least recently active first",
		budget: 3,
		rule:   byStatus,
		lines: []line{
			{labels: []string{"a"}, now: 1000},
			{labels: []string{"b"}, now: 1005},
			{labels: []string{"c"}, now: 1003},
			{labels: []string{"d"}, now: 1100}, // all idle past 1m: a goes (1000), then c (1003)
			{labels: []string{"e"}, now: 1101},
		},
		now:  1101,
		want: map[string]series{"b": {1, nil}, "d": {1, []float64{1}}, "e": {1, []float64{1}}},
	}, {
		name:   "a folded label set gets a series once a kept counter gives way",
		budget: 1,
		rule:   byStatus,
		lines: []line{
			{labels: []string{"a"}, now: 1000},
			{labels: []string{"b"}, now: 1001},
			{labels: []string{"b"}, now: 1100},
		},
		now:   1100,
		want:  map[string]series{"b": {1, []float64{1}}, store.OverflowValue: {1, nil}},
		folds: 1,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := newSet(t, storetest.Config(tc.budget, tc.rule), nil)
			write(set.NewSink(), tc.lines...)
			got := read(set, 0, tc.now)
			if d := diff(got.series, tc.want); d != "" {
				t.Errorf("series:%s", d)
			}
			if got.drops.Folds != tc.folds || got.drops.MemoryFolds != 0 {
				t.Errorf("%d folds (%d by memory), want %d (0)", got.drops.Folds, got.drops.MemoryFolds, tc.folds)
			}
			if got.matched != uint64(len(tc.lines)) {
				t.Errorf("%d matched lines, want %d", got.matched, len(tc.lines))
			}
		})
	}
}

// TestReapRateLimit: a new label set at a full budget reaps at most once per second, or
// once per quarter budget of label sets folded since, and a reap then evicts as many kept
// counters as label sets asked for room since the last one (at most a quarter budget), so
// a burst of new label sets neither walks the series on every line nor folds more than it
// must.
func TestReapRateLimit(t *testing.T) {
	const budget = 8 // a quarter budget: 2
	set := newSet(t, storetest.Config(budget, storetest.CountRule("r", storetest.OneMin, "k")), nil)
	k := set.NewSink()
	for i, v := range []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"} {
		write(k, line{labels: []string{v}, now: int64(1000 + i)}) // kept counters from 1068 on
	}
	steps := []struct {
		label string
		now   int64
		held  string // the label sets shown after the line, sorted
		folds uint64
	}{
		{"n0", 1100, "k1 k2 k3 k4 k5 k6 k7 n0", 0},              // reaps: k0 gives way
		{"n1", 1100, "__overflow__ k1 k2 k3 k4 k5 k6 k7 n0", 1}, // reaped this second: folds
		{"n2", 1100, "__overflow__ k3 k4 k5 k6 k7 n0 n2", 1},    // a quarter budget folded: reaps two
		{"n3", 1100, "__overflow__ k3 k4 k5 k6 k7 n0 n2 n3", 1}, // room left by that reap
		{"n4", 1100, "__overflow__ k3 k4 k5 k6 k7 n0 n2 n3", 2}, // folds
		{"n5", 1100, "__overflow__ k5 k6 k7 n0 n2 n3 n5", 2},    // reaps two
		{"n6", 1101, "__overflow__ k5 k6 k7 n0 n2 n3 n5 n6", 2}, // room
		{"n7", 1101, "__overflow__ k6 k7 n0 n2 n3 n5 n6 n7", 2}, // a new second: reaps one
		{"n8", 1101, "__overflow__ k6 k7 n0 n2 n3 n5 n6 n7", 3}, // folds
		{"n9", 1101, "__overflow__ n0 n2 n3 n5 n6 n7 n9", 3},    // reaps the last two
		{"nA", 1101, "__overflow__ n0 n2 n3 n5 n6 n7 n9 nA", 3}, // room
		{"nB", 1102, "__overflow__ n0 n2 n3 n5 n6 n7 n9 nA", 4}, // nothing kept: folds
	}
	for _, st := range steps {
		write(k, line{labels: []string{st.label}, now: st.now})
		got := read(set, 0, st.now)
		held := strings.Join(slices.Sorted(maps.Keys(got.series)), " ")
		if held != st.held || got.drops.Folds != st.folds {
			t.Fatalf("after %s at %d: %s and %d folds, want %s and %d", st.label, st.now, held, got.drops.Folds, st.held, st.folds)
		}
	}
}

// TestMaxBytesFolds: past the process-wide bound, new label sets fold into the overflow series
// of every rule, counted as memory folds, while the rules' budgets have room; the series
// take no more than the bound plus the overflow series; once Expire removed counters past
// the TTL, new label sets have series again.
func TestMaxBytesFolds(t *testing.T) {
	rules := []*config.Rule{
		storetest.CountRule("r0", storetest.OneMin, "k"),
		storetest.CountRule("r1", storetest.OneMin, "k"),
		storetest.CountRule("r2", storetest.OneMin, "k"),
	}
	one := newSet(t, storetest.Config(10, rules[0]), nil)
	write(one.NewSink(), line{labels: []string{key(0)}, now: start})
	cost := one.MemoryUsed() // of one series; label values as long as OverflowValue cost the same
	cases := []struct {
		name       string
		budget     int
		bound      int64
		labelSets  int // per rule, written rule after rule
		held       []int
		memoryFold bool
	}{
		{"five series fit: the rest fold in every rule", 100, 5 * cost, 4, []int{2, 2, 1}, true},
		{"the budget folds first where it is smaller", 1, 5 * cost, 4, []int{1, 1, 1}, false},
		{"no bound", 100, 0, 4, []int{4, 4, 4}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, err := store.NewSetWith(storetest.TTLConfig(tc.budget, time.Hour, rules...), nil, store.SetOptions{MaxBytes: tc.bound})
			if err != nil {
				t.Fatal(err)
			}
			k := set.NewSink()
			for j := range tc.labelSets {
				for i := range rules {
					write(k, line{rule: i, labels: []string{key(j)}, now: start})
				}
			}
			for i := range rules {
				got := read(set, i, start)
				held := len(got.series)
				overflow := got.series[store.OverflowValue]
				if overflow.total > 0 {
					held--
				}
				folds := uint64(tc.labelSets - held)
				if held != tc.held[i] || overflow.total != float64(folds) || got.drops.Folds != folds {
					t.Errorf("rule %d: %d series and %v lines in the overflow series, %d folds; want %d, %d, %d", i, held, overflow.total, got.drops.Folds, tc.held[i], folds, folds)
				}
				if memFolds := got.drops.MemoryFolds; memFolds != folds && tc.memoryFold || memFolds != 0 && !tc.memoryFold {
					t.Errorf("rule %d: %d of %d folds by memory", i, memFolds, folds)
				}
			}
			if tc.bound > 0 && set.MemoryUsed() > tc.bound+int64(len(rules))*cost {
				t.Errorf("the series take %d bytes, past the bound %d and an overflow series per rule", set.MemoryUsed(), tc.bound)
			}
			later := int64(start + 3600 + 61) // past the TTL: every counter goes
			set.Expire(later, later)
			if set.MemoryUsed() != 0 {
				t.Errorf("%d bytes held after every series expired", set.MemoryUsed())
			}
			write(k, line{labels: []string{key(100)}, now: later})
			if _, ok := read(set, 0, later).series[key(100)]; !ok {
				t.Error("a new label set folded after expiry made room")
			}
		})
	}
}

// TestGoneLabelSetReapsAtBound: a label set idle past the counter TTL is a new one, and at
// the memory bound it has a reap make room first as a label set never seen does, instead
// of folding while idle series could give way.
func TestGoneLabelSetReapsAtBound(t *testing.T) {
	rule := storetest.CountRule("r", storetest.OneMin, "k")
	one := newSet(t, storetest.Config(10, rule), nil)
	write(one.NewSink(), line{labels: []string{key(0)}, now: start})
	cost := one.MemoryUsed() // of one series; label values as long as OverflowValue cost the same
	for _, returning := range []string{key(0), key(9)} {
		t.Run(returning, func(t *testing.T) {
			set, err := store.NewSetWith(storetest.TTLConfig(10, 2*time.Minute, rule), nil, store.SetOptions{MaxBytes: 2 * cost})
			if err != nil {
				t.Fatal(err)
			}
			k := set.NewSink()
			// Two series fill the bound; a third label set folds.
			write(k, line{labels: []string{key(0)}, now: start}, line{labels: []string{key(1)}, now: start}, line{labels: []string{key(2)}, now: start})
			if folds := read(set, 0, start).drops.Folds; folds != 1 {
				t.Fatalf("%d folds at the bound, want 1", folds)
			}
			later := int64(start + 121) // every series idle past the TTL
			write(k, line{labels: []string{returning}, now: later})
			got := read(set, 0, later)
			if want := map[string]series{returning: {1, []float64{1}}}; diff(got.series, want) != "" {
				t.Errorf("series:%s", diff(got.series, want))
			}
			if got.drops.Folds != 1 {
				t.Errorf("%d folds, want the first only", got.drops.Folds)
			}
		})
	}
}

// TestBudgetsPastBound: a max_series_per_rule whose series would hold more than the
// memory bound before a label value is written is a budget no rule reaches: the bound
// stops the rule first, and from then on every rule's new label sets fold. It is warned
// of, naming the rules and the budget that fits, without overflowing on a huge value;
// a budget that fits, or no bound, is not.
func TestBudgetsPastBound(t *testing.T) {
	small := storetest.CountRule("small", storetest.OneMin, "status")
	long := []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 24 * time.Hour}
	wide := storetest.CountRule("wide", long, "status", "path")
	wide2 := storetest.CountRule("wide2", long, "status", "path")
	// A rule without labels, or whose labels are text alone, holds one label set whatever
	// its budget: it never reaches one, however large.
	bare := storetest.CountRule("bare", long)
	fixed := storetest.CountRule("fixed", long, "job")
	fixed.Labels[0].Template = config.Template{{Literal: "nginx", Capture: -1}}
	const bound = 512 << 20
	for _, c := range []struct {
		name     string
		budget   int
		maxBytes int64
		rules    []*config.Rule
		want     []string // substrings of the one warning; none for no warning
	}{
		{"the default budget", config.DefaultMaxSeriesPerRule, bound, []*config.Rule{small, wide}, nil},
		{"no bound", 1 << 40, 0, []*config.Rule{small, wide}, nil},
		{"a budget past the bound for one rule", 200000, bound, []*config.Rule{small, wide},
			[]string{`max_series_per_rule (200000) series of rule "wide" hold at least`, "more than --series.max-bytes (512MiB)"}},
		{"a huge budget", 1<<63 - 1, bound, []*config.Rule{small, wide},
			[]string{`max_series_per_rule (9223372036854775807) series of rule "wide" hold at least`, `also rule "small"`}},
		{"rules of one label set", 1 << 40, bound, []*config.Rule{bare, fixed}, nil},
		{"a rule of one label set beside one past the bound", 200000, bound, []*config.Rule{bare, wide, fixed},
			[]string{`max_series_per_rule (200000) series of rule "wide" hold at least`, "more than --series.max-bytes (512MiB): the rule"}},
		{"a bound under one series", 1, 1000, []*config.Rule{wide},
			[]string{`max_series_per_rule (1) series of rule "wide"`, "not one series of it fits: raise --series.max-bytes"}},
		{"two rules of series as large", 200000, bound, []*config.Rule{small, wide, wide2},
			[]string{`max_series_per_rule (200000) series of rule "wide" hold at least`, `also rule "wide2"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := store.BudgetsPastBound(storetest.Config(c.budget, c.rules...), c.maxBytes)
			if len(c.want) == 0 {
				if len(got) != 0 {
					t.Fatalf("warnings %q; want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("warnings %q; want one", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("warning %q lacks %q", got[0], w)
				}
			}
			if c.budget == 1 {
				return // no budget fits
			}
			// The budget it says fits does, and is the largest that does.
			m := regexp.MustCompile(`lower max_series_per_rule to (\d+) or less`).FindStringSubmatch(got[0])
			if m == nil {
				t.Fatalf("warning %q says no budget that fits", got[0])
			}
			fits, _ := strconv.Atoi(m[1])
			if fits <= 0 || fits >= c.budget || len(store.BudgetsPastBound(storetest.Config(fits, c.rules...), c.maxBytes)) != 0 ||
				len(store.BudgetsPastBound(storetest.Config(fits+1, c.rules...), c.maxBytes)) == 0 {
				t.Errorf("the budget said to fit, %d, does not, or is not the largest that does", fits)
			}
		})
	}
	t.Run("a bound of one series exactly", func(t *testing.T) {
		each := regexp.MustCompile(`\((\d+) bytes each before their label values\)`)
		m := each.FindStringSubmatch(strings.Join(store.BudgetsPastBound(storetest.Config(1<<40, wide), bound), ""))
		if m == nil {
			t.Fatal("no warning of the bytes of a series")
		}
		cost, _ := strconv.ParseInt(m[1], 10, 64)
		got := store.BudgetsPastBound(storetest.Config(2, wide), cost)
		if len(got) != 1 || !strings.Contains(got[0], "lower max_series_per_rule to 1 or less") {
			t.Errorf("a bound of %d bytes, one series of them: warnings %q, want one saying a budget of 1 fits", cost, got)
		}
	})
}

// TestBudgetEstimateIsCharge: the bytes a series takes before its label values, as the
// warning at load says them, are what the store charges for a series whose values are
// empty, to the byte: both round the key and the values' headers as the allocator does.
// A series with values is charged more, never less, as the warning's "at least" says.
func TestBudgetEstimateIsCharge(t *testing.T) {
	long := []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 24 * time.Hour}
	each := regexp.MustCompile(`\((\d+) bytes each before their label values\)`)
	for _, c := range []struct {
		name string
		rule *config.Rule
	}{
		{"one label", storetest.CountRule("r", storetest.OneMin, "status")},
		{"two labels", storetest.CountRule("r", storetest.OneMin, "status", "method")},
		{"three labels, long windows", storetest.CountRule("r", long, "status", "method", "path")},
		{"a value rule of five labels", storetest.ValueRule("r", long, "a", "b", "c", "d", "e")},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := storetest.Config(1<<40, c.rule)
			warnings := store.BudgetsPastBound(cfg, 1<<30)
			if len(warnings) != 1 {
				t.Fatalf("warnings %q; want one", warnings)
			}
			m := each.FindStringSubmatch(warnings[0])
			if m == nil {
				t.Fatalf("warning %q says no bytes per series", warnings[0])
			}
			estimate, _ := strconv.ParseInt(m[1], 10, 64)
			for _, values := range [][]string{make([]string, len(c.rule.Labels)), slices.Repeat([]string{"value"}, len(c.rule.Labels))} {
				set := newSet(t, cfg, nil)
				write(set.NewSink(), line{labels: values, now: start})
				charged := set.MemoryUsed()
				empty := values[0] == ""
				if empty && charged != estimate || !empty && charged < estimate {
					t.Errorf("values %q: the store charges %d bytes, the estimate at load is %d", values, charged, estimate)
				}
			}
		})
	}
}
