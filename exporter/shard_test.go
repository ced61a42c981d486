package exporter

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/common/expfmt"

	"github.com/logwindow/logwindow_exporter/config"
)

// shardRules has a rule of every kind a series' parts are merged for: counts, sums with
// events and extrema, quantiles and a histogram, distinct items, top values.
const shardRules = `
global: {windows: [1m, 5m], max_series_per_rule: 100, counter_ttl: 20m}
rules:
  - name: requests
    match: '^(?P<status>[0-9]+) (?P<time>[^ ]+) (?P<client>[^ ]+) (?P<path>[^ ]+)$'
    labels: {status: '${status}'}
  - name: request_seconds
    match: '^(?P<status>[0-9]+) (?P<time>[^ ]+) (?P<client>[^ ]+) (?P<path>[^ ]+)$'
    value: time
    labels: {status: '${status}'}
    aggregations: [window, per_second, events, max, min, mean, quantiles]
    quantiles: [0.5, 0.99]
    buckets: [0.5, 1]
  - name: clients
    match: '^(?P<status>[0-9]+) (?P<time>[^ ]+) (?P<client>[^ ]+) (?P<path>[^ ]+)$'
    labels: {status: '${status}'}
    distinct: '${client}'
    aggregations: [window]
  - name: paths
    match: '^(?P<status>[0-9]+) (?P<time>[^ ]+) (?P<client>[^ ]+) (?P<path>[^ ]+)$'
    labels: {path: '${path}'}
    top: {label: path, k: 3}
`

// TestShardsMergeAtRead: lines written through several sinks (shards of the series) and
// the same lines through one give the same scrape, at every instant read and after
// expiry: totals, matched lines, windows, rates, extrema, quantiles, histograms, distinct
// counts and top values. Values are multiples of 1/8 and there are fewer items than any
// summary's capacity, so that merged parts are exact and the texts equal byte for byte.
// A series written by one sink gets no table of other parts.
func TestShardsMergeAtRead(t *testing.T) {
	for _, sinks := range []int{2, 3, maxShards + 1} { // the last: two sinks share a shard
		t.Run(fmt.Sprintf("%d sinks", sinks), func(t *testing.T) {
			p, one := parserSet(t, shardRules)
			cfg, err := config.Parse([]byte(shardRules), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			many, err := NewSetWith(cfg, nil, SetOptions{shards: maxShards})
			if err != nil {
				t.Fatal(err)
			}
			k1 := one.NewSink()
			ks := make([]*Sink, sinks)
			for i := range ks {
				ks[i] = many.NewSink()
			}
			rng := rand.New(rand.NewPCG(uint64(sinks), 7))
			statuses := []string{"200", "404", "500", "503"}
			for sec := int64(start); sec < start+400; sec++ {
				k1.SetNow(sec, sec)
				for _, k := range ks {
					k.SetNow(sec, sec)
				}
				for range rng.IntN(6) {
					line := fmt.Sprintf("%s %g 10.0.0.%d /p%d", statuses[rng.IntN(len(statuses))],
						float64(rng.IntN(24))/8, rng.IntN(40), rng.IntN(6))
					// 503 only ever comes through the last sink, so that some series have
					// one part that is not the first sink's.
					k := ks[rng.IntN(len(ks))]
					if strings.HasPrefix(line, "503") {
						k = ks[len(ks)-1]
					}
					p.Parse("app", []byte(line), k1)
					p.Parse("app", []byte(line), k)
				}
			}
			for _, r := range one.rules {
				all, _ := r.store.snapshot(nil)
				for _, s := range all {
					if s.others.Load() != nil {
						t.Errorf("rule %s: a series written by one sink has other parts", r.rule.Name)
					}
				}
			}
			for _, at := range []int64{start + 399, start + 430, start + 700, start + 1600} {
				now := at
				want := scrapeText(t, collectorAt(fixed(one), &now))
				if got := scrapeText(t, collectorAt(fixed(many), &now)); got != want {
					t.Errorf("at +%ds, %d sinks scrape\n%s\none sink\n%s", at-start, sinks, got, want)
				}
				one.Expire(at, at)
				many.Expire(at, at)
				if got := scrapeText(t, collectorAt(fixed(many), &now)); got != want {
					t.Errorf("at +%ds after Expire, %d sinks scrape\n%s\none sink before\n%s", at-start, sinks, got, want)
				}
				checkCharges(t, many)
			}
		})
	}
}

// scrapeText is a scrape of c as text, without the series' bytes, which differ with the
// number of parts.
func scrapeText(t *testing.T, c *Collector) string {
	t.Helper()
	mfs, err := scraped(c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if mf.GetName() == "logwindow_series_bytes" {
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// checkCharges fails unless what the stores charged, line by line, is what their series
// hold now, and the process' count their sum.
func checkCharges(t *testing.T, set *Set) {
	t.Helper()
	var all int64
	for _, r := range set.rules {
		st := r.store
		st.lockAll()
		var held int64
		for _, s := range st.series {
			held += st.heldBytes(s)
		}
		st.unlockAll()
		if used := st.used.Load(); used != held {
			t.Errorf("rule %s charged %d bytes, its series hold %d", r.rule.Name, used, held)
		}
		all += held
	}
	if used := set.mem.used.Load(); used != all {
		t.Errorf("the process charged %d bytes, the stores hold %d", used, all)
	}
}

// TestShardsConcurrent: sinks on every shard, two of them sharing one, write the same label
// sets at once (new ones too, so that series are made, folded at the budget and reaped)
// while scrapes read and Expire releases wheels and removes counters past the TTL, each
// sink's clock running ahead so that parts idle, expire and come back. Every line is
// counted once in the matched lines, and the memory charged is what the series hold.
func TestShardsConcurrent(t *testing.T) {
	cfg := testConfig(20, countRule("requests", oneMin, "status"), valueRule("seconds", tenSec, "status"))
	cfg.Global.CounterTTL = 2 * time.Minute
	set, err := NewSetWith(cfg, nil, SetOptions{shards: maxShards})
	if err != nil {
		t.Fatal(err)
	}
	const sinks, perSink = maxShards + 1, 4000
	var clock sync.Mutex
	latest := int64(start)
	var writers sync.WaitGroup
	for i := range sinks {
		k := set.NewSink()
		writers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for j := range perSink {
				// 400 s of lines per sink, sinks 20 s apart: Expire, at the newest second,
				// releases the parts of sinks a minute behind, which their next lines renew.
				now := int64(start + j/10 + i*20)
				clock.Lock()
				latest = max(latest, now)
				clock.Unlock()
				status := fmt.Sprint(200 + rng.IntN(8))
				if rng.IntN(50) == 0 {
					status = fmt.Sprintf("new-%d-%d", i, j) // past the budget: folded, or room reaped
				}
				k.SetNow(now, now)
				k.Event(line{rule: j % 2, labels: []string{status}, value: 0.5}.event())
			}
		})
	}
	done := make(chan struct{})
	var side sync.WaitGroup
	side.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			clock.Lock()
			now := latest
			clock.Unlock()
			set.Expire(now, now)
			var b bytes.Buffer
			if err := collectorAt(fixed(set), &now).WriteText(&b, nil, nil); err != nil {
				t.Error(err)
				return
			}
		}
	})
	writers.Wait()
	close(done)
	side.Wait()
	var matched uint64
	for _, r := range set.rules {
		all, n := r.store.snapshot(nil)
		for _, s := range all {
			n += s.lines()
		}
		matched += n
	}
	if matched != sinks*perSink {
		t.Errorf("%d lines matched, %d written", matched, sinks*perSink)
	}
	checkCharges(t, set)
	// Once everything is idle past the TTL, nothing is left, nor charged.
	end := latest + 1000
	set.Expire(end, end)
	for _, r := range set.rules {
		if n := r.store.count(); n != 0 {
			t.Errorf("rule %s: %d series left", r.rule.Name, n)
		}
	}
	if used := set.mem.used.Load(); used != 0 {
		t.Errorf("%d bytes charged with no series", used)
	}
}

// TestPartLayout: what writers of different shards change is in cache lines of its own: a
// series' inline part starts a cache line and a series is a whole number of them (so the
// allocator's size class places it at a multiple of its size), as are the other parts and
// the shards' locks and the sinks.
func TestPartLayout(t *testing.T) {
	for _, c := range []struct {
		name         string
		size, offset uintptr
	}{
		{"series", unsafe.Sizeof(series{}), unsafe.Offsetof(series{}.own)},
		{"farPart", unsafe.Sizeof(farPart{}), 0},
		{"shardLock", unsafe.Sizeof(shardLock{}), 0},
		{"Sink", unsafe.Sizeof(Sink{}), 0},
	} {
		if c.size%cacheLine != 0 || c.offset%cacheLine != 0 || c.size > 2*cacheLine {
			t.Errorf("%s: %d bytes, part at %d: not cache lines of their own", c.name, c.size, c.offset)
		}
	}
}

// TestSinksOwnLines: sinks made one after the other, as a process makes its inputs', share
// no cache line, neither in the Sink nor in its per-rule last series, which each input
// writes on its own core.
func TestSinksOwnLines(t *testing.T) {
	for _, rules := range []int{1, 8, 9, 17} {
		t.Run(fmt.Sprintf("rules=%d", rules), func(t *testing.T) {
			var rs []*config.Rule
			for i := range rules {
				rs = append(rs, countRule(fmt.Sprintf("r%d", i), []time.Duration{time.Minute}, "status"))
			}
			set := mustSet(t, testConfig(10, rs...), nil)
			owner := map[uintptr]int{} // cache line → sink
			for n := range 8 {
				k := set.NewSink()
				madeSinks = append(madeSinks, k) // on the heap, as an input's
				last := unsafe.SliceData(k.last[:cap(k.last)])
				for _, b := range []struct{ addr, bytes uintptr }{
					{uintptr(unsafe.Pointer(k)), unsafe.Sizeof(*k)},
					{uintptr(unsafe.Pointer(last)), uintptr(cap(k.last)) * unsafe.Sizeof(last)},
				} {
					for line := b.addr / cacheLine; line <= (b.addr+b.bytes-1)/cacheLine; line++ {
						if other, ok := owner[line]; ok && other != n {
							t.Fatalf("sink %d shares a cache line with sink %d", n, other)
						}
						owner[line] = n
					}
				}
			}
		})
	}
}

// madeSinks keeps TestSinksOwnLines' sinks where an input's are, on the heap rather than
// on the test's stack.
var madeSinks []*Sink
