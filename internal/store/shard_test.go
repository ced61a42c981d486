package store

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/windows"
)

// TestShardsCharges: lines written through several sinks (shards of the series) are
// charged for what their series hold, at every instant and after expiry, and a series
// written by one sink gets no table of other parts. TestShardsMergeAtRead (in the
// exporter) checks that the same lines read the same through one sink and several.
func TestShardsCharges(t *testing.T) {
	cfg, p := storetest.ParseRules(t, storetest.ShardRules)
	for _, n := range []int{1, 2, 3, MaxShards + 1} { // the last: two sinks share a shard
		set := storetest.Must(NewSetWith(cfg, nil, SetOptions{Shards: MaxShards}))
		var sinks []*Sink
		for range n {
			sinks = append(sinks, set.NewSink())
		}
		storetest.ShardLines(n, func(sec int64, sink int, line []byte) {
			sinks[sink].SetNow(sec, sec)
			p.Parse("app", line, sinks[sink])
		})
		for _, r := range set.rules {
			all := r.store.snapshot(nil)
			for _, s := range all {
				if n == 1 && s.others.Load() != nil {
					t.Errorf("rule %s: a series written by one sink has other parts", r.rule.Name)
				}
			}
		}
		checkCharges(t, set)
		for _, at := range []int64{start + 399, start + 430, start + 700, start + 1600} {
			set.Expire(at, at)
			checkCharges(t, set)
		}
	}
}

// checkCharges fails unless what the stores charged, line by line, is what their series
// hold now, and the process' count their sum.
func checkCharges(t *testing.T, set *Set) {
	t.Helper()
	var all int64
	for _, r := range set.rules {
		st := r.store
		st.settlePending()
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

// TestShardsChargeInBatches: with more than one shard of writers, what a shard's summaries
// grow by is gathered in its account and reaches the counters every writer shares
// (chargeBatch at a time) only while the memory bound is far, so that writers on two cores
// do not move those counters' cache line between them on every line; near the bound every
// growth is charged at once. Either way, the count settled is what the series hold.
func TestShardsChargeInBatches(t *testing.T) {
	const rules = `
global: {windows: [1m, 5m]}
rules:
  - name: clients
    match: '^(?P<client>[^ ]+)$'
    distinct: '${client}'
    aggregations: [window]
`
	cfg, p := storetest.ParseRules(t, rules)
	for _, c := range []struct {
		name     string
		maxBytes int64
		batched  bool
	}{
		{"no bound", 0, true},
		{"bound far", 1 << 30, true},
		{"bound near", roomyBytes / 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := storetest.Must(NewSetWith(cfg, nil, SetOptions{Shards: 2, MaxBytes: c.maxBytes}))
			k := set.NewSink()
			k.SetNow(start, start)
			p.Parse("app", []byte("10.0.0.0"), k)
			made := set.mem.used.Load() // the series, its wheels and empty summaries
			for i := 1; i < 300; i++ {
				p.Parse("app", fmt.Appendf(nil, "10.0.%d.%d", i/256, i%256), k)
			}
			shared := set.mem.used.Load()
			settled := set.MemoryUsed()
			if settled <= made || settled-made >= chargeBatch {
				t.Fatalf("the summaries grew by %d bytes; the test needs growth under %d", settled-made, chargeBatch)
			}
			want := settled
			if c.batched {
				want = made
			}
			if shared != want {
				t.Errorf("the shared count is %d bytes before settling, want %d (%d once settled)", shared, want, settled)
			}
			checkCharges(t, set)
		})
	}
}

// TestShardsConcurrent: sinks on every shard, two of them sharing one, write the same label
// sets at once (new ones too, so that series are made, folded at the budget and reaped)
// while readers read as a scrape does and Expire releases wheels and removes counters past the TTL, each
// sink's clock running ahead so that parts idle, expire and come back. Every line is
// counted once in the matched lines, and the memory charged is what the series hold;
// whether the sinks write each event at once or batch them (flushed every 100 events).
func TestShardsConcurrent(t *testing.T) {
	for _, batched := range []bool{false, true} {
		t.Run(fmt.Sprintf("batched=%v", batched), func(t *testing.T) { shardsConcurrent(t, batched) })
	}
}

func shardsConcurrent(t *testing.T, batched bool) {
	cfg := storetest.Config(20, storetest.CountRule("requests", storetest.OneMin, "status"), storetest.ValueRule("seconds", storetest.TenSec, "status"))
	cfg.Global.CounterTTL = 2 * time.Minute
	set, err := NewSetWith(cfg, nil, SetOptions{Shards: MaxShards})
	if err != nil {
		t.Fatal(err)
	}
	const sinks, perSink = MaxShards + 1, 4000
	var clock sync.Mutex
	latest := int64(start)
	var writers sync.WaitGroup
	for i := range sinks {
		k := set.NewSink()
		if batched {
			k = set.NewBatchSink()
		}
		writers.Go(func() {
			defer k.Flush()
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
				k.Event(storetest.Event(j%2, 0, 0.5, status))
				if j%100 == 99 {
					k.Flush()
				}
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
			readAll(set, now)
		}
	})
	writers.Wait()
	close(done)
	side.Wait()
	var matched uint64
	for _, r := range set.rules {
		// The lines of the series, retired and of none come to what the rule says it
		// matched.
		n := r.store.retired + r.store.lateUnseated.Load()
		for _, s := range r.store.snapshot(nil) {
			n += s.lines()
		}
		if n != r.Matched() {
			t.Errorf("rule %s: %d lines in its series, %d matched", r.rule.Name, n, r.Matched())
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
		{"Series", unsafe.Sizeof(Series{}), unsafe.Offsetof(Series{}.own)},
		{"farPart", unsafe.Sizeof(farPart{}), 0},
		{"shardLock", unsafe.Sizeof(shardLock{}), 0},
		{"Sink", unsafe.Sizeof(Sink{}), 0},
		{"shardAccount", unsafe.Sizeof(shardAccount{}), 0},
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
				rs = append(rs, storetest.CountRule(fmt.Sprintf("r%d", i), []time.Duration{time.Minute}, "status"))
			}
			set := storetest.Must(NewSetWith(storetest.Config(10, rs...), nil, SetOptions{}))
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

// readAll reads every series of set at now through the read API, as a scrape does.
func readAll(set *Set, now int64) {
	var stats, more []windows.Stats
	var moreSums []windows.Summary
	for i := range set.NumRules() {
		r := set.Rule(i)
		sums := r.Layout().NewSummaries()
		all := r.Snapshot(nil)
		for _, s := range all {
			if r.Gone(s, now, now) {
				continue
			}
			_ = r.Total(s)
			if r.Live(s, now) {
				stats = r.Read(s, now, start, stats, &more)
				r.ReadSummaries(s, now, sums, &moreSums)
			}
		}
	}
}

// count returns the number of series (with wheels or kept counters), the overflow series
// included.
func (st *store) count() int {
	defer st.rlock().RUnlock()
	return len(st.series)
}
