package store

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/logwindow/logwindow_exporter/parser/event"
)

// refEvent is one event as the naive model of a pending table keeps it.
type refEvent struct {
	value float64
	items []string
}

// TestPendingLayoutMatchesModel: the events a pending table takes, laid out at a flush,
// are per entry (key, now, at, in the order of their first events) the events of that
// entry in the order they came, with their items and labels as they were, across cycles
// of reset and an arena that grows.
func TestPendingLayoutMatchesModel(t *testing.T) {
	for _, tc := range []struct {
		name          string
		keys, clocks  int
		per           int
		itemLen, seed int
	}{
		{"one entry", 1, 1, 1, 5, 1},
		{"alternating", 2, 1, 2, 5, 2},
		{"many entries", 40, 3, 1, 3, 3},
		{"past max entries", 90, 2, 0, 0, 4},
		{"arena grows", 8, 2, 2, 900, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.seed), 9))
			var p pending
			p.seed, p.counts = maphash.MakeSeed(), &sinkCounts{slot: make([]int32, 1)}
			var sc flushScratch
			for cycle := range 30 {
				m := newPendingModel()
				for range rng.IntN(3000) {
					k := rng.IntN(tc.keys)
					if rng.IntN(4) > 0 {
						k = k % 3
					}
					c := int64(rng.IntN(tc.clocks))
					key := fmt.Sprintf("k%d\xffc%d", k, cycle)
					labels := []string{fmt.Sprint("k", k), fmt.Sprint("c", cycle)}
					e := event.Event{Key: []byte(key), Labels: [][]byte{[]byte(labels[0]), []byte(labels[1])}, Value: float64(rng.IntN(100))}
					var items []string
					for range tc.per {
						it := make([]byte, rng.IntN(tc.itemLen+1))
						for i := range it {
							it[i] = byte('a' + rng.IntN(26))
						}
						items = append(items, string(it))
						e.Items = append(e.Items, it)
					}
					if !p.add(&e, 100+c, 50+c, 100+c) {
						break
					}
					// What the table copied must not depend on the event's buffers.
					for _, it := range e.Items {
						clear(it)
					}
					m.add(pendingKey{key, 100 + c, 50 + c, 100 + c}, labels, refEvent{e.Value, items})
				}
				m.check(t, &p, &sc)
				p.reset()
			}
		})
	}
}

// TestSameKey holds sameKey to bytes.Equal for keys of every length up to past its word
// compares, equal and differing in any one byte, in a byte of a word's overlap, or in
// their length alone.
func TestSameKey(t *testing.T) {
	for n := range 41 {
		a := make([]byte, n)
		for i := range a {
			a[i] = byte('a' + i)
		}
		check := func(what string, b []byte) {
			t.Helper()
			if got, want := sameKey(a, b), bytes.Equal(a, b); got != want {
				t.Errorf("%d bytes, %s: sameKey %v, bytes.Equal %v", n, what, got, want)
			}
		}
		check("the same", slices.Clone(a))
		check("a byte more", append(slices.Clone(a), 'x'))
		if n > 0 {
			check("a byte less", a[:n-1])
		}
		for i := range n {
			b := slices.Clone(a)
			b[i] ^= 0x80
			check(fmt.Sprintf("byte %d differs", i), b)
		}
	}
}

// FuzzPendingMatchesModel: a pending table against a naive model, its events drawn from
// the input: label sets of every length about sameKey's word compares (0 to 24 bytes,
// differing from one another in any one byte, or in length alone), each passed in a
// buffer the caller overwrites after add as the parser does, at clocks of which now, at
// and active move each on its own (an event's second, the wall clock, the processing
// second), and resets (flushes) at any point. An event that repeats the previous
// event's entry but for one clock, or one byte of its key, opens or returns to another.
func FuzzPendingMatchesModel(f *testing.F) {
	// An op is a key's index (keys of n > 0 bytes from 1+4(n-1): as they are, then one
	// byte changed, the first, the middle one, the last) and its clocks (bit 0 now, bit 1
	// at, bit 2 active) with bit 7 a reset before it; the first byte is the items an event.
	// A key of 12 bytes, then one of its last byte changed, then each clock moved alone:
	f.Add([]byte{0, 45, 0, 48, 0, 45, 0, 45, 4, 45, 0, 45, 1, 45, 2, 45, 0})
	// The empty key, keys of 1 and 8 bytes, items, a reset amid a run:
	f.Add([]byte{1, 0, 0, 0, 0, 1, 0, 2, 0, 29, 7, 32, 7, 29, 7, 29, 135, 0, 0})
	// Keys past 16 bytes that differ in the middle only, two items:
	f.Add([]byte{2, 81, 3, 83, 3, 81, 3, 83, 5, 93, 5, 94, 5})
	var keys [][]byte
	for n := range 25 {
		base := []byte("abcdefghijklmnopqrstuvwx")[:n]
		keys = append(keys, base)
		for _, i := range []int{0, n / 2, n - 1} {
			if n > 0 {
				k := slices.Clone(base)
				k[i] ^= 0x20
				keys = append(keys, k)
			}
		}
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		per := int(ops[0] % 3)
		ops = ops[1:]
		var p pending
		p.seed, p.counts = maphash.MakeSeed(), &sinkCounts{slot: make([]int32, 1)}
		var sc flushScratch
		m := newPendingModel()
		buf := make([]byte, 64)
		for x := 0; x+1 < len(ops); x += 2 {
			key, c := keys[int(ops[x])%len(keys)], ops[x+1]
			if c&0x80 != 0 {
				m.check(t, &p, &sc)
				p.reset()
				m = newPendingModel()
			}
			now, at, active := int64(100+c&1), int64(50+c>>1&1), int64(100+c>>2&1)
			// The key at the end of the caller's buffer, overwritten after add.
			k := buf[len(buf)-len(key):]
			copy(k, key)
			e := event.Event{Key: k, Labels: [][]byte{k}, Value: float64(x)}
			var items []string
			for i := range per {
				it := []byte(fmt.Sprint(x, ".", i, string(key)))
				items = append(items, string(it))
				e.Items = append(e.Items, it)
			}
			if !p.add(&e, now, at, active) {
				// The sink flushes the rule and adds the event again (Sink.Event).
				m.check(t, &p, &sc)
				p.reset()
				m = newPendingModel()
				if !p.add(&e, now, at, active) {
					t.Fatalf("op %d: an empty table refused an event", x)
				}
			}
			for i := range buf {
				buf[i] = 0xff
			}
			for _, it := range e.Items {
				clear(it)
			}
			m.add(pendingKey{string(key), now, at, active}, []string{string(key)}, refEvent{float64(x), items})
		}
		m.check(t, &p, &sc)
	})
}

// pendingKey is an entry of a pending table as pendingModel keeps it.
type pendingKey struct {
	key             string
	now, at, active int64
}

// pendingModel is what a pending table should hold: its entries in the order of their
// first events, each's label values and events.
type pendingModel struct {
	order  []pendingKey
	events map[pendingKey][]refEvent
	labels map[pendingKey][]string
}

func newPendingModel() *pendingModel {
	return &pendingModel{events: map[pendingKey][]refEvent{}, labels: map[pendingKey][]string{}}
}

func (m *pendingModel) add(k pendingKey, labels []string, e refEvent) {
	if _, ok := m.events[k]; !ok {
		m.order = append(m.order, k)
		m.labels[k] = labels
	}
	m.events[k] = append(m.events[k], e)
}

// check holds p's layout to the model's.
func (m *pendingModel) check(t *testing.T, p *pending, sc *flushScratch) {
	t.Helper()
	values, items := p.layout(sc)
	if p.used != len(m.order) {
		t.Fatalf("%d entries, want %d", p.used, len(m.order))
	}
	for i, k := range m.order {
		ent := &p.entries[i]
		if got := (pendingKey{string(ent.key), ent.now, ent.at, ent.active}); got != k {
			t.Fatalf("entry %d is %+v, want %+v", i, got, k)
		}
		var labels []string
		for _, l := range ent.labels {
			labels = append(labels, string(l))
		}
		if !slices.Equal(labels, m.labels[k]) {
			t.Fatalf("entry %d labels %q, want %q", i, labels, m.labels[k])
		}
		if ent.n != len(m.events[k]) {
			t.Fatalf("entry %d (%+v) has %d events, want %d", i, k, ent.n, len(m.events[k]))
		}
		for j, w := range m.events[k] {
			if v := values[ent.from+j]; v != w.value {
				t.Fatalf("entry %d (%+v) event %d value %v, want %v", i, k, j, v, w.value)
			}
			for n, it := range w.items {
				if got := string(items[(ent.from+j)*p.itemsPer+n]); got != it {
					t.Fatalf("entry %d event %d item %d %q, want %q", i, j, n, got, it)
				}
			}
		}
	}
}
