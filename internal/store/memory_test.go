package store

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
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

// heap is the live heap after two collections: what the first leaves for the next (a
// sync.Pool's victims, what a finalizer or cleanup held) is not counted against a later
// test's growth.
func heap() uint64 {
	runtime.GC()
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

// TestMaxBytesCountsLongLabels: the memory counted for a series' label values is the
// heap they take (not 5 % less, nor 10 % more), however many and long they are (and
// wherever the allocator's size classes put them), valid UTF-8 or not, for live series and
// kept counters alike. The values of a label set are copied into one string, which grew
// by appending them one after another to a capacity up to a quarter past its length and
// was charged its length: a line's 10 labels of 1 KB each took 20 % more heap than
// counted, which --series.max-bytes then bounded less. Invalid bytes are replaced by
// longer ones, past the length the key was made at.
func TestMaxBytesCountsLongLabels(t *testing.T) {
	for _, tc := range []struct {
		labels, length int
		invalid        bool
	}{
		{1, 1000, false},
		{10, 1000, false},
		{40, 1000, false},
		{3, 11_000, false}, // keys past the largest size class, rounded to pages
		{10, 1000, true},
	} {
		t.Run(fmt.Sprintf("%d×%d invalid=%v", tc.labels, tc.length, tc.invalid), func(t *testing.T) {
			names := make([]string, tc.labels)
			for i := range names {
				names[i] = fmt.Sprint("l", i)
			}
			fill := "x"
			if tc.invalid {
				fill = "x\xff" // each \xff replaced by the 3 bytes of U+FFFD
			}
			cfg := storetest.Config(100_000, storetest.CountRule("r", storetest.OneMin, names...))
			base := heap()
			set, err := NewSetWith(cfg, nil, SetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			k := set.NewSink()
			k.SetNow(start, start)
			values := make([]string, tc.labels)
			for j := range 500 {
				for i := range values {
					values[i] = fmt.Sprintf("%d-%d-", j, i) + strings.Repeat(fill, tc.length/len(fill))
				}
				k.Event(storetest.Event(0, 0, 0, values...))
			}
			for _, phase := range []string{"live", "kept counters"} {
				if phase == "kept counters" {
					set.Expire(start+120, start+120)
				}
				grown, used := int64(heap()-base), set.MemoryUsed()
				if d := float64(used-grown) / float64(grown); d > 0.1 || d < -0.05 {
					t.Errorf("%s: the store counts %d bytes, the series take %d of heap: %+.1f %%", phase, used, grown, 100*d)
				}
			}
			runtime.KeepAlive(set)
		})
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

// TestMaxBytesAfterDroppingReload: what a sink of the Set before a reload writes into a
// rule the reload dropped (the lines in flight at the swap, held by a batch sink until
// its read ends) is not charged to the bound the next Set shares: the dropped store is
// never read nor expired again, so each reload would otherwise leave its charge for good.
func TestMaxBytesAfterDroppingReload(t *testing.T) {
	for _, tc := range []struct {
		name string
		sink func(*Set) *Sink
	}{{"batch sink", (*Set).NewBatchSink}, {"sink", (*Set).NewSink}} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := NewSetWith(memoryRules(2, 100), nil, SetOptions{MaxBytes: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			fillRules(set, 2, 10)
			k := tc.sink(set)
			next, err := NewSetWith(storetest.Config(100, set.rules[0].rule), set, SetOptions{MaxBytes: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			before := next.mem.used.Load()
			k.SetNow(start, start)
			for j := range 50 {
				k.Event(storetest.Event(1, 0, 0, fmt.Sprintf("/in/flight/%d", j)))
			}
			k.Flush()
			set.rules[1].store.settlePending()
			if got := next.mem.used.Load(); got != before {
				t.Errorf("the series take %d bytes after the old sink wrote to the dropped rule, %d before", got, before)
			}
		})
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

// sketchRules are the reproduction's rules, by host: three quantile rules (value rules
// keeping every aggregation), a top rule of paths and a distinct rule of clients, all
// timed by their lines, with the default windows.
const sketchRules = `
global: {max_series_per_rule: 100000}
rules:
  - {name: latency_one, match: '^(?P<t>\S+) (?P<host>\S+) (?P<v>\S+) (?P<item>\S+)$', timestamp: {capture: t, layout: '2006-01-02T15:04:05Z07:00'}, value: v, labels: {host: '${host}'}, aggregations: [window, events, quantiles], quantiles: [0.5, 0.99]}
  - {name: latency_two, match: '^(?P<t>\S+) (?P<host>\S+) (?P<v>\S+) (?P<item>\S+)$', timestamp: {capture: t, layout: '2006-01-02T15:04:05Z07:00'}, value: v, labels: {host: '${host}'}, aggregations: [window, events, quantiles], quantiles: [0.5, 0.99]}
  - {name: latency_three, match: '^(?P<t>\S+) (?P<host>\S+) (?P<v>\S+) (?P<item>\S+)$', timestamp: {capture: t, layout: '2006-01-02T15:04:05Z07:00'}, value: v, labels: {host: '${host}'}, aggregations: [window, events, quantiles], quantiles: [0.5, 0.99]}
  - {name: paths, match: '^(?P<t>\S+) (?P<host>\S+) (?P<v>\S+) (?P<item>\S+)$', timestamp: {capture: t, layout: '2006-01-02T15:04:05Z07:00'}, labels: {host: '${host}', path: '${item}'}, top: {label: path, k: 10}}
  - {name: clients, match: '^(?P<t>\S+) (?P<host>\S+) (?P<v>\S+) (?P<item>\S+)$', timestamp: {capture: t, layout: '2006-01-02T15:04:05Z07:00'}, labels: {host: '${host}'}, distinct: '${item}', aggregations: [window]}
`

// sketchLoad is how much of each kind the reproduction writes.
type sketchLoad struct {
	quantileHosts        int // hosts of each quantile rule
	topHosts, topItems   int // hosts of the top rule, and different 1 KB paths per slot
	distinctHosts        int
	distinctItemsPerSlot int
}

// slotTimes are the event times that put a line in every summary slot of the default
// windows at second now: each 10 s slot of the last 5 minutes, each minute of the last
// hour and each hour of the last day, oldest first (the first not older than the day, for
// a line that old makes a kept counter, without windows).
func slotTimes(now int64) []int64 {
	var ts []int64
	for h := int64(24); h >= 1; h-- {
		ts = append(ts, now-h*3600+1)
	}
	for m := int64(60); m >= 6; m-- {
		ts = append(ts, now-m*60)
	}
	for s := int64(30); s >= 0; s-- {
		ts = append(ts, now-s*10)
	}
	return ts
}

// writeSketchLoad writes ld into set at wall second now, slot by slot (every host of every
// rule in each), so that the kinds grow side by side: per quantile series four lines a
// slot, of values 1e-17, 6e16, -1e-17 and -6e16, whose bins span the whole range of either
// sign; per top series topItems paths of 1 KB never seen before; per distinct series
// distinctItemsPerSlot clients never seen before.
func writeSketchLoad(t testing.TB, cfg *config.Config, set *Set, now int64, ld sketchLoad) {
	k := set.NewSink()
	k.SetNow(now, now)
	top, distinct := cfg.Rules[3], cfg.Rules[4]
	path := make([]byte, 1024)
	item := make([]byte, 8)
	event := func(rule int, host string, at int64, v float64, itemAt int, it []byte) {
		e := storetest.Event(rule, at, v, host)
		if itemAt > 0 {
			e.Items = make([][]byte, itemAt)
			e.Items[itemAt-1] = it
		}
		k.Event(e)
	}
	n := 0
	for _, at := range slotTimes(now) {
		for h := range ld.quantileHosts {
			host := fmt.Sprintf("host-%d", h)
			for r := range 3 {
				for _, v := range []float64{1e-17, 6e16, -1e-17, -6e16} {
					event(r, host, at, v, 0, nil)
				}
			}
		}
		for h := range ld.topHosts {
			host := fmt.Sprintf("host-%d", h)
			for range ld.topItems {
				n++
				binary.LittleEndian.PutUint64(path, uint64(n))
				event(3, host, at, 1, top.Top.Item, path)
			}
		}
		for h := range ld.distinctHosts {
			host := fmt.Sprintf("host-%d", h)
			for range ld.distinctItemsPerSlot {
				n++
				binary.LittleEndian.PutUint64(item, uint64(n))
				event(4, host, at, 1, distinct.DistinctItem, item)
			}
		}
	}
}

// TestMaxBytesCountsSketches is the reproduction of summaries growing outside the bound:
// quantile sketches whose bins span every magnitude, top summaries of long paths never
// seen twice and distinct counts past their sparse sets, in every slot of a day, each kind
// alone and the three together. With --series.max-bytes set, the heap the series take
// stays within 1.5× of the bound, and the memory the store counts (logwindow_series_bytes)
// within 20 % of that heap; a day later, expiry gives it all back. Before summaries were
// counted, the heap grew to many times the bound while the count stayed near the floats'
// share.
func TestMaxBytesCountsSketches(t *testing.T) {
	const MiB = 1 << 20
	type load struct {
		name  string
		bound int64
		ld    sketchLoad
	}
	cases := []load{
		{"quantiles", 64 * MiB, sketchLoad{quantileHosts: 1000}},
		{"top", 64 * MiB, sketchLoad{topHosts: 3, topItems: 1000}},
		{"distinct", 16 * MiB, sketchLoad{distinctHosts: 3, distinctItemsPerSlot: 13000}},
		{"all three", 64 * MiB, sketchLoad{quantileHosts: 1000, topHosts: 3, topItems: 1000, distinctHosts: 2, distinctItemsPerSlot: 13000}},
	}
	if testing.Short() || race.Enabled {
		cases = []load{
			{"quantiles", 8 * MiB, sketchLoad{quantileHosts: 150}},
			{"top", 8 * MiB, sketchLoad{topHosts: 2, topItems: 200}},
			{"distinct", 4 * MiB, sketchLoad{distinctHosts: 3, distinctItemsPerSlot: 3000}},
			{"all three", 8 * MiB, sketchLoad{quantileHosts: 150, topHosts: 2, topItems: 200, distinctHosts: 3, distinctItemsPerSlot: 3000}},
		}
	}
	cfg, err := config.Parse([]byte(sketchRules), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const now = 1_700_000_000
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := heap()
			set, err := NewSetWith(cfg, nil, SetOptions{MaxBytes: tc.bound})
			if err != nil {
				t.Fatal(err)
			}
			writeSketchLoad(t, cfg, set, now, tc.ld)
			grown := int64(heap() - base)
			used := set.MemoryUsed()
			held, folded := 0, uint64(0)
			for i := range set.rules {
				held += len(set.rules[i].store.series)
				folded += set.rules[i].store.memFolds.Load()
			}
			t.Logf("bound %.1f MiB: heap +%.1f MiB, counted %.1f MiB (%.2f of the heap); %d series, %d lines folded",
				mib(tc.bound), mib(grown), mib(used), float64(used)/float64(grown), held, folded)
			if float64(grown) > 1.5*float64(tc.bound) {
				t.Errorf("the series take %.1f MiB of heap, past 1.5× the bound of %.1f MiB", mib(grown), mib(tc.bound))
			}
			if d := float64(used-grown) / float64(grown); d > 0.2 || d < -0.2 {
				t.Errorf("the store counts %.1f MiB, the series take %.1f MiB of heap: %+.0f %%", mib(used), mib(grown), 100*d)
			}
			// Past the longest window every series is a kept counter: label set and total.
			set.Expire(now+2*86400, now+2*86400)
			if after := set.MemoryUsed(); after > int64(held)*400 {
				t.Errorf("after expiry the store counts %d bytes for %d kept counters", after, held)
			}
			runtime.KeepAlive(set)
		})
	}
}

// BenchmarkMaxBytesSketches is TestMaxBytesCountsSketches' full load, one kind at a time
// and the three together (run one per process, as -bench 'Sketches/top' does, for the
// RSS): the bound, what the store counts, the heap the series take, and the process' RSS
// above what it was before, now and at its peak.
func BenchmarkMaxBytesSketches(b *testing.B) {
	const MiB = 1 << 20
	cfg, err := config.Parse([]byte(sketchRules), "rules.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		bound int64
		ld    sketchLoad
	}{
		{"quantiles", 64 * MiB, sketchLoad{quantileHosts: 1000}},
		{"top", 64 * MiB, sketchLoad{topHosts: 3, topItems: 1000}},
		{"distinct", 16 * MiB, sketchLoad{distinctHosts: 3, distinctItemsPerSlot: 13000}},
		{"all_three", 64 * MiB, sketchLoad{quantileHosts: 1000, topHosts: 3, topItems: 1000, distinctHosts: 2, distinctItemsPerSlot: 13000}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				rss0, _ := rss()
				base := heap()
				set, err := NewSetWith(cfg, nil, SetOptions{MaxBytes: tc.bound})
				if err != nil {
					b.Fatal(err)
				}
				writeSketchLoad(b, cfg, set, 1_700_000_000, tc.ld)
				grown := heap() - base
				now, peak := rss()
				b.ReportMetric(mib(tc.bound), "bound-MiB")
				b.ReportMetric(mib(set.MemoryUsed()), "counted-MiB")
				b.ReportMetric(mib(int64(grown)), "heap-MiB")
				b.ReportMetric(mib(now-rss0), "rss-MiB")
				b.ReportMetric(mib(peak-rss0), "peak-rss-MiB")
				runtime.KeepAlive(set)
			}
		})
	}
}

// rss is the process' resident memory now and at its peak (VmRSS, VmHWM), 0 where /proc
// does not say.
func rss() (now, peak int64) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for line := range strings.Lines(string(status)) {
		var kb int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			now = kb << 10
		}
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
			peak = kb << 10
		}
	}
	return now, peak
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// TestDropRacingCharge: a charge a writer makes while the reload that drops its store
// gives that store's bytes back is given back too, whichever of the two comes first, so
// that no reload leaves bytes charged to the bound the next Set shares.
func TestDropRacingCharge(t *testing.T) {
	for range 2000 {
		set, err := NewSetWith(memoryRules(2, 100), nil, SetOptions{MaxBytes: 1 << 30, Shards: 1})
		if err != nil {
			t.Fatal(err)
		}
		st := set.rules[1].store
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
					st.charge(8)
				}
			}
		}()
		for at := st.used.Load(); st.used.Load() == at; {
			runtime.Gosched()
		}
		next, err := NewSetWith(storetest.Config(100, set.rules[0].rule), set, SetOptions{MaxBytes: 1 << 30})
		close(stop)
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if got, want := next.mem.used.Load(), set.rules[0].store.used.Load(); got != want {
			t.Fatalf("the series take %d bytes after the reload, the rule kept %d", got, want)
		}
	}
}
