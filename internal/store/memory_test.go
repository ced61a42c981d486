package store

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// start is the exporter's start second in every test.
const start = storetest.Start

// memoryRules returns n counting rules by path, each with a budget of budget series.
func memoryRules(n, budget int) *config.Config {
	var rules []*config.Rule
	for i := range n {
		rules = append(rules, storetest.CountRule(fmt.Sprintf("requests_%d", i), storetest.DefaultWindows, "path"))
	}
	return storetest.Config(budget, rules...)
}

// fillRules writes labelSets label sets into every rule of set, one line each.
func fillRules(set *Set, rules, labelSets int) {
	k := set.NewSink()
	k.SetNow(start, start)
	for j := range labelSets {
		for r := range rules {
			k.Event(storetest.Event(r, 0, 0, fmt.Sprintf("/api/v1/items/%d", j)))
		}
	}
}

// heap is the live heap after a collection.
func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMaxBytes: past the process-wide bound, new label sets fold into the overflow series
// in every rule, counted as memory folds; the series' estimated bytes stay within the bound
// (plus one overflow series per rule), the heap they take is what the estimate says (within
// 25 %), the per-rule budget still holds below the bound, and expiry gives the room back.
func TestMaxBytes(t *testing.T) {
	const rules, labelSets = 20, 1000
	one := memoryRules(1, 10).Rules[0]
	oneSeries := storetest.MustLayout(one.Windows, one.Options()).SeriesBytes()
	bound := int64(rules * labelSets / 2 * (oneSeries + 200))
	base := heap()
	set, err := NewSetWith(memoryRules(rules, labelSets), nil, SetOptions{MaxBytes: bound})
	if err != nil {
		t.Fatal(err)
	}
	fillRules(set, rules, labelSets)
	grown := int64(heap() - base)
	used := set.mem.used.Load()
	overflowSeries := int64(rules) * (seriesOverhead + int64(set.rules[0].store.wheelBytes) + 64)
	if used > bound+overflowSeries {
		t.Errorf("series take %d bytes, past the bound %d", used, bound)
	}
	if used < bound*9/10 {
		t.Errorf("series take %d bytes, well below the bound %d: folded too early", used, bound)
	}
	if float64(grown) > float64(used)*1.25 || float64(grown) < float64(used)*0.75 {
		t.Errorf("the heap grew by %d bytes, the estimate says %d", grown, used)
	}
	held, folded := 0, uint64(0)
	for i := range set.rules {
		st := set.rules[i].store
		if st.memFolds.Load() == 0 || st.series[st.overflowKey] == nil {
			t.Errorf("rule %d: no label set folded into its overflow series", i)
		}
		if st.memFolds.Load() != st.folds.Load() {
			t.Errorf("rule %d: %d memory folds of %d folds, with room in its budget", i, st.memFolds.Load(), st.folds.Load())
		}
		held += len(st.series)
		folded += st.memFolds.Load()
	}
	if held+int(folded) != rules*labelSets+rules {
		t.Errorf("%d series and %d folded lines, want %d lines", held, folded, rules*labelSets)
	}
	t.Logf("bound %d B: %d series held (%d B estimated, heap +%d B), %d label sets folded", bound, held, used, grown, folded)

	// The per-rule budget still holds where memory is plenty.
	small, err := NewSetWith(memoryRules(2, 10), nil, SetOptions{MaxBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	fillRules(small, 2, 50)
	for i := range small.rules {
		if st := small.rules[i].store; st.normal != 10 || st.memFolds.Load() != 0 || st.folds.Load() != 40 {
			t.Errorf("rule %d under a budget of 10: %d series, %d folds (%d by memory)", i, st.normal, st.folds.Load(), st.memFolds.Load())
		}
	}

	// A day later the idle series release their wheels and the next label sets fit again.
	later := int64(start + 86400 + 1)
	set.Expire(later, later)
	if after := set.mem.used.Load(); after >= used/2 {
		t.Errorf("after expiry the series take %d bytes, before %d", after, used)
	}
	k := set.NewSink()
	k.SetNow(later, later)
	k.Event(storetest.Event(0, 0, 0, "/new"))
	if st := set.rules[0].store; st.series["/new"] == nil {
		t.Error("a new label set folded although expiry made room")
	}
}

// TestMaxBytesAcrossReloads: a reload keeps the accounting of the stores it takes over and
// gives back that of the rules it drops.
func TestMaxBytesAcrossReloads(t *testing.T) {
	set, err := NewSetWith(memoryRules(2, 100), nil, SetOptions{MaxBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	fillRules(set, 2, 50)
	both := set.mem.used.Load()
	kept := set.rules[0].store.used.Load()
	next, err := NewSetWith(storetest.Config(100, set.rules[0].rule), set, SetOptions{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if got := next.mem.used.Load(); got != kept || got >= both {
		t.Errorf("after dropping a rule the series take %d bytes, want the kept rule's %d (both took %d)", got, kept, both)
	}
	if next.mem.max.Load() != 1<<20 {
		t.Errorf("the reload's bound is %d", next.mem.max.Load())
	}
}

// BenchmarkMaxBytes20Rules shows the default bound (512 MiB) holding a config of 20 rules
// each offered 10,000 label sets (200,000 series would take about 730 MB): the estimate,
// the heap the series take, and how many were folded.
func BenchmarkMaxBytes20Rules(b *testing.B) {
	const rules, labelSets = 20, 10000
	const bound = 512 << 20
	for b.Loop() {
		base := heap()
		set, err := NewSetWith(memoryRules(rules, labelSets), nil, SetOptions{MaxBytes: bound})
		if err != nil {
			b.Fatal(err)
		}
		fillRules(set, rules, labelSets)
		grown := heap() - base
		held, folded := 0, uint64(0)
		for i := range set.rules {
			held += len(set.rules[i].store.series)
			folded += set.rules[i].store.memFolds.Load()
		}
		b.ReportMetric(float64(set.mem.used.Load())/(1<<20), "estimated-MiB")
		b.ReportMetric(float64(grown)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(held), "series")
		b.ReportMetric(float64(folded), "folded")
		runtime.KeepAlive(set)
	}
}
