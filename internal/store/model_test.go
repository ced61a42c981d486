package store_test

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// model is what the package documentation says a store does with the lines of counting
// rules with one label, written naively: lists of seconds per label set, every question
// answered by walking them. It is fed one line per second of the rule's clock, so that
// every new label set at a full budget reaps first (the store rate-limits reaps to one per
// second). A line of an event-time rule is placed at its own second, or at the clock's
// when it is ahead of it, and in no window when older than the longest; whatever its own
// second, it is active (for the counter TTL and the eviction order) at the processing
// second it comes, whatever the wall clock does. After the wall clock stepped back past
// every second a series was written at, by more than every window, its windows hold
// nothing.
type model struct {
	rules []*modelRule
	// maxBytes is the memory bound (0: none) and used what the series of every rule take:
	// a series costs its rule's cost with wheels, less wheelBytes without. The budget test
	// leaves them 0.
	maxBytes, used int64
}

type modelRule struct {
	limit            int
	ttl              int64   // the counter TTL, in seconds; 0 keeps counters forever
	windows          []int64 // in seconds, ascending
	cost, wheelBytes int64
	series           map[string]*modelSeries
	lines            uint64
	folds, memFolds  uint64
	// late and future count the lines older than every window and ahead of the clock.
	late, future uint64
}

type modelSeries struct {
	lines  []int64 // the processing seconds its lines came at, since it was made
	placed []int64 // the seconds its lines in the windows were placed at
	wheels bool
	pinned bool
}

// last is the processing second the series was last active at: its newest line's.
func (s *modelSeries) last() int64 {
	if len(s.lines) == 0 {
		return math.MinInt64
	}
	return slices.Max(s.lines)
}

func newModelRule(limit int, ttl time.Duration, ws []time.Duration, initial [][]string) *modelRule {
	r := &modelRule{limit: limit, ttl: int64(ttl / time.Second), series: map[string]*modelSeries{}}
	for _, w := range ws {
		r.windows = append(r.windows, int64(w/time.Second))
	}
	for _, values := range initial {
		r.series[values[0]] = &modelSeries{wheels: true, pinned: true}
	}
	return r
}

// live: the series had a line within its longest window, so it exports its windows.
func (r *modelRule) live(s *modelSeries, now int64) bool {
	return s.pinned || len(s.placed) > 0 && slices.Max(s.placed) >= now-r.longest()
}

func (r *modelRule) longest() int64 { return r.windows[len(r.windows)-1] }

// gone: the series is a kept counter at now idle for longer than the counter TTL at
// processing second active.
func (r *modelRule) gone(s *modelSeries, now, active int64) bool {
	return !s.pinned && r.ttl > 0 && !r.live(s, now) && s.last() < active-r.ttl
}

// normal counts the series the budget limits: all but the overflow series.
func (r *modelRule) normal() int {
	n := len(r.series)
	if r.series[store.OverflowValue] != nil {
		n--
	}
	return n
}

func (m *model) remove(r *modelRule, key string) {
	m.used -= r.cost
	if !r.series[key].wheels {
		m.used += r.wheelBytes
	}
	delete(r.series, key)
}

// settle releases the wheels of a series idle past its longest window and removes it when
// idle past the TTL; it reports whether the series is left as a kept counter.
func (m *model) settle(r *modelRule, key string, now, active int64) bool {
	s := r.series[key]
	if s.pinned {
		return false
	}
	if r.live(s, now) {
		return false
	}
	if s.wheels {
		s.wheels = false
		m.used -= r.wheelBytes
	}
	if r.gone(s, now, active) {
		m.remove(r, key)
		return false
	}
	return true
}

func (m *model) expire(now, active int64) {
	for _, r := range m.rules {
		for key := range r.series {
			m.settle(r, key, now, active)
		}
	}
}

// add counts a line of key that came at processing second active, placed at second at
// unless late.
func (m *model) add(r *modelRule, key string, active, at int64, late bool) {
	s := r.series[key]
	if s == nil {
		s = &modelSeries{}
		r.series[key] = s
		m.used += r.cost - r.wheelBytes
	}
	if !late && !s.wheels {
		s.wheels = true
		m.used += r.wheelBytes
	}
	s.lines = append(s.lines, active)
	if !late {
		s.placed = append(s.placed, at)
	}
}

// line is a line of label set key of rule i at second now of the rule's clock and second
// active of the processing clock; at is the line's own second (at == now == active for a
// processing-time rule).
func (m *model) line(i int, key string, now, at, active int64) {
	r := m.rules[i]
	r.lines++
	late := now-at >= r.longest()
	switch {
	case late:
		r.late++
	case at > now:
		r.future++
		at = now
	}
	if s := r.series[key]; s != nil && r.gone(s, now, active) {
		m.remove(r, key) // a label set idle past the TTL is a new one
	}
	if r.series[key] != nil || key == store.OverflowValue { // the overflow series is outside the budget
		m.add(r, key, active, at, late)
		return
	}
	memFull := func() bool { return m.maxBytes > 0 && m.used+r.cost > m.maxBytes }
	overBudget, overMemory := r.normal() >= r.limit, memFull()
	if late && (overBudget || overMemory) {
		return // a late line of a new label set at a full budget has no series to go to
	}
	if overBudget || overMemory {
		// Room is made first: idle series release their wheels and go past the TTL,
		// then the least recently active kept counter gives way: one, or as many as
		// the rule holds past its budget (a reload lowered it), at most a quarter budget.
		var kept []string
		for key := range r.series {
			if key != store.OverflowValue && m.settle(r, key, now, active) {
				kept = append(kept, key)
			}
		}
		evict := max(r.normal()-r.limit+1, 0)
		if overMemory {
			evict = max(evict, 1)
		}
		slices.SortFunc(kept, func(a, b string) int {
			return cmp.Or(cmp.Compare(r.series[a].last(), r.series[b].last()), cmp.Compare(a, b))
		})
		for _, key := range kept[:min(evict, max(r.limit/4, 1), len(kept))] {
			m.remove(r, key)
		}
		overBudget, overMemory = r.normal() >= r.limit, memFull()
	}
	if overBudget || overMemory {
		r.folds++
		if !overBudget {
			r.memFolds++
		}
		key = store.OverflowValue
		if s := r.series[key]; s != nil && r.gone(s, now, active) {
			m.remove(r, key)
		}
	}
	m.add(r, key, active, at, late)
}

// steppedBack is the wall clock stepping back past every second any series was written
// at, by more than every window: no series' windows hold anything.
func (m *model) steppedBack() {
	for _, r := range m.rules {
		for _, s := range r.series {
			s.placed = nil
		}
	}
}

// view is what a scrape at now, with the processing clock at active, shows of rule i.
func (m *model) view(i int, now, active int64) map[string]series {
	r := m.rules[i]
	out := map[string]series{}
	for key, s := range r.series {
		if r.gone(s, now, active) {
			continue
		}
		v := series{total: float64(len(s.lines))}
		if r.live(s, now) {
			v.windows = make([]float64, len(r.windows))
			for w, sec := range r.windows {
				for _, t := range s.placed {
					if t > now-sec {
						v.windows[w]++
					}
				}
			}
		}
		out[key] = v
	}
	return out
}

// check fails unless set shows at now, with the processing clock at active, what m says,
// for every rule.
func (m *model) check(t *testing.T, set *store.Set, now, active int64, what string) {
	t.Helper()
	for i, r := range m.rules {
		got := readAt(set, i, now, active)
		if d := diff(got.series, m.view(i, now, active)); d != "" {
			t.Fatalf("%s, rule %d at %d: series:%s", what, i, now, d)
		}
		if got.matched != r.lines || got.drops.Folds != r.folds || got.drops.MemoryFolds != r.memFolds ||
			got.drops.Late != r.late || got.drops.Future != r.future {
			t.Fatalf("%s, rule %d at %d: %d matched lines, %d folds (%d by memory), %d late, %d future; want %d, %d (%d), %d, %d",
				what, i, now, got.matched, got.drops.Folds, got.drops.MemoryFolds, got.drops.Late, got.drops.Future,
				r.lines, r.folds, r.memFolds, r.late, r.future)
		}
	}
	if m.maxBytes > 0 && set.MemoryUsed() != m.used {
		t.Fatalf("%s at %d: the series take %d bytes, want %d", what, now, set.MemoryUsed(), m.used)
	}
}

// step is a random gap between two lines: mostly seconds, sometimes past a window or
// the counter TTL.
func step(rng *rand.Rand) int64 {
	switch n := rng.IntN(10); {
	case n < 7:
		return 1 + rng.Int64N(20)
	case n < 9:
		return 21 + rng.Int64N(100)
	default:
		return 200 + rng.Int64N(1000)
	}
}

// TestBudgetAgainstModel: over random streams of label sets of a rule, with random
// budgets, counter TTLs, windows and initial label sets, long idle gaps and Expires at
// random, every scrape shows what the model says: which label sets are shown, their
// totals and windows (or none for kept counters), the matched lines and the folds. So the
// budget (kept counters give way least recently active first, live series never), the
// overflow series, idle expiry and the counter TTL are as documented, and a scrape does
// not depend on when Expire ran.
func TestBudgetAgainstModel(t *testing.T) {
	windowSets := [][]time.Duration{storetest.OneMin, storetest.TenSec, storetest.MinFive}
	ttls := []time.Duration{0, 30 * time.Second, 90 * time.Second, 5 * time.Minute, 15 * time.Minute}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 23))
		limit := 1 + rng.IntN(10)
		ttl := ttls[rng.IntN(len(ttls))]
		ws := windowSets[rng.IntN(len(windowSets))]
		keys := make([]string, limit+1+rng.IntN(6))
		for i := range keys {
			keys[i] = fmt.Sprint("k", i)
		}
		rule := storetest.CountRule("r", ws, "k")
		for i := range rng.IntN(min(2, limit) + 1) {
			rule.Initial = append(rule.Initial, []string{keys[i]})
		}
		what := fmt.Sprintf("seed %d (budget %d, ttl %v, windows %v, %d initial)", seed, limit, ttl, ws, len(rule.Initial))
		set := newSet(t, storetest.TTLConfig(limit, ttl, rule), nil)
		m := &model{rules: []*modelRule{newModelRule(limit, ttl, ws, rule.Initial)}}
		k := set.NewSink()
		now := int64(start)
		for range 300 {
			now += step(rng)
			key := keys[rng.IntN(len(keys))]
			if rng.IntN(40) == 0 {
				key = store.OverflowValue // a line whose label reads __overflow__
			}
			write(k, line{labels: []string{key}, now: now})
			m.line(0, key, now, now, now)
			if rng.IntN(6) == 0 {
				set.Expire(now, now)
				m.expire(now, now)
			}
			if rng.IntN(3) == 0 {
				m.check(t, set, now, now, what)
			}
		}
		m.check(t, set, now, now, what)
	}
}

// TestEventTimeAgainstModel is TestBudgetAgainstModel for an event-time rule, whose lines
// come with times of their own: mostly within the windows, some at their edge, some far
// in the past (late: counted, in no window) and some ahead of the wall clock, a little or
// by years (future: placed at the current second); in half the runs under a memory bound
// too, with reloads that change the budget, the TTL and the bound (the rule keeps its
// series) or the windows (it starts over). However far a line's time, the series, totals,
// windows, late and future lines, folds and the memory the series take are the model's:
// a label set is active when its lines come, on the processing clock, so a line from the
// future does not keep it from the TTL or from the budget's eviction, the old lines of a
// log read from its beginning stay in its `_total`, and the wall clock stepping back or
// forward (past every window and TTL) moves no label set's activity; a budget lowered below what the rule holds is reached
// again a quarter budget of kept counters at a time, least recently active first.
func TestEventTimeAgainstModel(t *testing.T) {
	windowSets := [][]time.Duration{storetest.OneMin, storetest.TenSec, storetest.MinFive}
	ttls := []time.Duration{0, 30 * time.Second, 90 * time.Second, 5 * time.Minute, 15 * time.Minute}
	// What a series of the windows costs, read through the API: the bytes one takes.
	costs := map[int]int64{}
	for i, ws := range windowSets {
		one := newSet(t, storetest.Config(10, storetest.EventRule("r", ws, "k")), nil)
		write(one.NewSink(), line{labels: []string{key(0)}, now: start, at: start})
		costs[i] = one.MemoryUsed()
	}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 31))
		limit := 1 + rng.IntN(10)
		ttl := ttls[rng.IntN(len(ttls))]
		w := rng.IntN(len(windowSets))
		ws := windowSets[w]
		longest := int64(ws[len(ws)-1] / time.Second)
		keys := make([]string, limit+1+rng.IntN(6))
		for i := range keys {
			keys[i] = key(i)
		}
		rule := storetest.EventRule("r", ws, "k")
		for i := range rng.IntN(min(2, limit) + 1) {
			rule.Initial = append(rule.Initial, []string{keys[i]})
		}
		m := &model{}
		if rng.IntN(2) == 0 {
			m.maxBytes = costs[w] * int64(len(rule.Initial)+1+rng.IntN(limit+2))
		}
		what := fmt.Sprintf("seed %d (bound %d B, %d initial): budget %d, ttl %v, windows %v", seed, m.maxBytes, len(rule.Initial), limit, ttl, ws)
		var set *store.Set
		var k *store.Sink
		// reload builds the Set from the one before: the rule keeps its store unless its
		// windows changed (a new fingerprint), and takes the budget and TTL given.
		reload := func(changed bool) {
			if changed || set == nil {
				r := newModelRule(limit, ttl, ws, rule.Initial)
				r.cost = costs[w]
				m.rules = []*modelRule{r}
				m.used = r.cost * int64(len(rule.Initial))
			}
			r := m.rules[0]
			r.limit, r.ttl = limit, int64(ttl/time.Second)
			var err error
			// One shard: the sink after a reload writes the parts of the one before.
			set, err = store.NewSetWith(storetest.TTLConfig(limit, ttl, rule), set, store.SetOptions{MaxBytes: m.maxBytes, Shards: 1})
			if err != nil {
				t.Fatal(err)
			}
			r.wheelBytes = int64(set.Rule(0).Layout().SeriesBytes())
			k = set.NewSink()
		}
		reload(true)
		// The wall clock starts far enough ahead to step back a few times by more than all
		// the seconds a run spans.
		wall := int64(start) + 1e7
		// The processing clock moves as time passes, not as the wall clock is set.
		processing := int64(start)
		for range 300 {
			if rng.IntN(40) == 0 {
				limit, ttl = max(1+rng.IntN(10), len(rule.Initial)), ttls[rng.IntN(len(ttls))]
				if m.maxBytes > 0 {
					m.maxBytes = costs[w] * int64(len(rule.Initial)+1+rng.IntN(limit+2))
				}
				changed := rng.IntN(3) == 0
				if changed {
					w = rng.IntN(len(windowSets))
					ws = windowSets[w]
					longest = int64(ws[len(ws)-1] / time.Second)
					initial := rule.Initial
					rule = storetest.EventRule("r", ws, "k")
					rule.Initial, rule.Fingerprint = initial, fmt.Sprint("r", wall)
				}
				reload(changed)
				what += fmt.Sprintf("; at %d: budget %d, ttl %v, windows %v (changed %v), bound %d B", wall, limit, ttl, ws, changed, m.maxBytes)
			}
			gap := step(rng)
			wall += gap
			processing += gap
			switch rng.IntN(60) {
			case 0:
				wall -= 1e6 + rng.Int64N(1e5)
				m.steppedBack()
				what += fmt.Sprintf("; the wall clock stepped back to %d", wall)
			case 1:
				wall += 1e5 + rng.Int64N(1e5)
				what += fmt.Sprintf("; the wall clock stepped forward to %d", wall)
			}
			at := wall
			switch n := rng.IntN(20); {
			case n < 12:
				at = wall - rng.Int64N(longest) // in the windows
			case n < 14:
				at = wall - longest + rng.Int64N(2) // at the windows' edge
			case n < 16:
				at = wall - longest - 1 - rng.Int64N(2000) // late
			case n < 18:
				at = wall + 1 + rng.Int64N(longest) // a little ahead
			default:
				at = wall + 1 + rng.Int64N(1e9) // far ahead
			}
			if at == 0 {
				at = wall // 0 is no time
			}
			key := keys[rng.IntN(len(keys))]
			if rng.IntN(40) == 0 {
				key = store.OverflowValue // a line whose label reads __overflow__
			}
			write(k, line{labels: []string{key}, now: processing, wall: wall, at: at})
			m.line(0, key, wall, at, processing)
			if rng.IntN(6) == 0 {
				set.Expire(processing, wall)
				m.expire(wall, processing)
			}
			if rng.IntN(3) == 0 {
				m.check(t, set, wall, processing, what)
			}
		}
		m.check(t, set, wall, processing, what)
	}
}

// TestMaxBytesAgainstModel: over random streams of label sets of three rules sharing a
// memory bound, with idle gaps and Expires at random, what the series take is what the
// model charges them (a series with its wheels, a kept counter without), new label sets
// past the bound fold in every rule (counted as memory folds, unless the rule's budget is
// full too), and a reap at the bound makes room from the rule's kept counters first.
// Label values are as long as OverflowValue, so that every series of a rule costs the same.
// There is no counter TTL: TestBudgetAgainstModel has it.
func TestMaxBytesAgainstModel(t *testing.T) {
	windowSets := [][]time.Duration{storetest.OneMin, storetest.TenSec}
	// What a series of a rule costs, read through the API: the bytes one takes.
	costs := map[int]int64{}
	for i, ws := range windowSets {
		one := newSet(t, storetest.Config(10, storetest.CountRule("r", ws, "k")), nil)
		write(one.NewSink(), line{labels: []string{key(0)}, now: start})
		costs[i] = one.MemoryUsed()
	}
	if len(key(0)) != len(store.OverflowValue) {
		t.Fatal("label values and the overflow series' differ in length, and so in cost")
	}
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 29))
		var rules []*config.Rule
		m := &model{}
		limit := 2 + rng.IntN(11) // max_series_per_rule is one for all rules
		for i := range 3 {
			w := rng.IntN(len(windowSets))
			rule := storetest.CountRule(fmt.Sprint("r", i), windowSets[w], "k")
			r := newModelRule(limit, 0, windowSets[w], nil)
			r.cost = costs[w]
			m.rules = append(m.rules, r)
			rules = append(rules, rule)
		}
		m.maxBytes = m.rules[0].cost * int64(4+rng.IntN(22))
		what := fmt.Sprintf("seed %d (budget %d, bound %d B)", seed, limit, m.maxBytes)
		set, err := store.NewSetWith(storetest.Config(limit, rules...), nil, store.SetOptions{MaxBytes: m.maxBytes})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range m.rules {
			r.wheelBytes = int64(set.Rule(i).Layout().SeriesBytes())
		}
		k := set.NewSink()
		now := int64(start)
		for range 400 {
			now += step(rng)
			i, v := rng.IntN(len(rules)), key(rng.IntN(15))
			write(k, line{rule: i, labels: []string{v}, now: now})
			m.line(i, v, now, now, now)
			if rng.IntN(6) == 0 {
				set.Expire(now, now)
				m.expire(now, now)
			}
			if rng.IntN(3) == 0 {
				m.check(t, set, now, now, what)
			}
		}
		m.check(t, set, now, now, what)
	}
}

// key is the label value i, as long as OverflowValue.
func key(i int) string { return fmt.Sprintf("k%011d", i) }
