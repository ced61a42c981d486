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
			p.seed = maphash.MakeSeed()
			var sc flushScratch
			for cycle := range 30 {
				type ekey struct {
					key     string
					now, at int64
				}
				var order []ekey
				want := map[ekey][]refEvent{}
				labels := map[ekey][]string{}
				for range rng.IntN(3000) {
					k := rng.IntN(tc.keys)
					if rng.IntN(4) > 0 {
						k = k % 3
					}
					c := int64(rng.IntN(tc.clocks))
					key := fmt.Sprintf("k%d\xffc%d", k, cycle)
					e := event.Event{Key: []byte(key), Labels: [][]byte{[]byte(fmt.Sprint("k", k)), []byte(fmt.Sprint("c", cycle))}, Value: float64(rng.IntN(100))}
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
					ek := ekey{key, 100 + c, 50 + c}
					if _, ok := want[ek]; !ok {
						order = append(order, ek)
						labels[ek] = []string{string(e.Labels[0]), string(e.Labels[1])}
					}
					want[ek] = append(want[ek], refEvent{e.Value, items})
				}
				values, items := p.layout(&sc)
				if p.used != len(order) {
					t.Fatalf("cycle %d: %d entries, want %d", cycle, p.used, len(order))
				}
				for i, ek := range order {
					ent := &p.entries[i]
					if string(ent.key) != ek.key || ent.now != ek.now || ent.at != ek.at {
						t.Fatalf("cycle %d: entry %d is %q %d %d, want %v", cycle, i, ent.key, ent.now, ent.at, ek)
					}
					var gotLabels []string
					for _, l := range ent.labels {
						gotLabels = append(gotLabels, string(l))
					}
					if !slices.Equal(gotLabels, labels[ek]) {
						t.Fatalf("cycle %d: entry %d labels %q, want %q", cycle, i, gotLabels, labels[ek])
					}
					if ent.n != len(want[ek]) {
						t.Fatalf("cycle %d: entry %d has %d events, want %d", cycle, i, ent.n, len(want[ek]))
					}
					for j, w := range want[ek] {
						if v := values[ent.from+j]; v != w.value {
							t.Fatalf("cycle %d: entry %d event %d value %v, want %v", cycle, i, j, v, w.value)
						}
						for m, it := range w.items {
							if got := string(items[(ent.from+j)*p.itemsPer+m]); got != it {
								t.Fatalf("cycle %d: entry %d event %d item %d %q, want %q", cycle, i, j, m, got, it)
							}
						}
					}
				}
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
