package sketch

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/internal/testutil/reference"
	"github.com/logwindow/logwindow_exporter/windows"
)

// naiveRegisters are the HyperLogLog registers of items at precision q, by the paper: the
// first q bits of an item's xxHash64 index its register, whose value is the largest
// position, from 1, of the first 1-bit among the 64−q bits after them (64−q+1 when they are
// all 0), 0 for a register no item reaches.
func naiveRegisters(items [][]byte, q uint8) []uint8 {
	regs := make([]uint8, 1<<q)
	for _, it := range items {
		h := xxhash.Sum64(it)
		rank := uint8(64 - int(q) + 1)
		if rest := h << q; rest != 0 {
			rank = uint8(bits.LeadingZeros64(rest)) + 1
		}
		regs[h>>(64-q)] = max(regs[h>>(64-q)], rank)
	}
	return regs
}

// randomItems are n items of random bytes and lengths (0 to 23), some repeated.
func randomItems(r *rand.Rand, n int) [][]byte {
	items := make([][]byte, n)
	for i := range items {
		if i > 0 && r.IntN(10) == 0 {
			items[i] = items[r.IntN(i)]
			continue
		}
		b := make([]byte, r.IntN(24))
		for k := range b {
			b[k] = byte(r.Uint32())
		}
		items[i] = b
	}
	return items
}

// TestDistinctRegisters: the registers a sketch exports at precision q are, register by
// register, those of a sketch built at q from the same items (naiveRegisters), whether it
// is sparse, dense, held to fewer registers by a cap, or merged from several; a sketch
// capped below q exports none.
func TestDistinctRegisters(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	build := func(items [][]byte, limit int) *Distinct {
		d := NewDistinct()
		capped(d, limit, func() {
			for _, it := range items {
				d.Add(0, it)
			}
		})
		return d
	}
	for _, tc := range []struct {
		name  string
		n     int
		limit int
		// dense is the precision the sketch ends at, 0 for sparse.
		dense int
	}{
		{"empty", 0, 0, 0},
		{"one item", 1, 0, 0},
		{"sparse", 3000, 0, 0},
		{"sparse, nearly full", 12000, 0, 0},
		{"dense", 40000, 0, DistinctPrecision},
		{"dense, many", 300000, 0, DistinctPrecision},
		{"capped to precision 12", 20000, distinctBytes + 1<<12, 12},
	} {
		items := randomItems(r, tc.n)
		d := build(items, tc.limit)
		if d.Precision() != tc.dense {
			t.Fatalf("%s: precision %d, want %d", tc.name, d.Precision(), tc.dense)
		}
		for q := uint8(MinRegisterPrecision); q <= MaxRegisterPrecision; q++ {
			t.Run(fmt.Sprintf("%s/m=%d", tc.name, 1<<q), func(t *testing.T) {
				got, ok := d.Registers(q, nil)
				if tc.dense != 0 && int(q) > tc.dense {
					if ok || len(got) != 0 {
						t.Fatalf("a sketch at precision %d exported %d registers at %d", tc.dense, len(got), q)
					}
					return
				}
				want := naiveRegisters(items, q)
				if !ok || !slices.Equal(got, want) {
					t.Fatalf("registers differ from those built at precision %d (ok %v): %s", q, ok, firstDiff(got, want))
				}
			})
		}
	}
	t.Run("merged sparse and dense", func(t *testing.T) {
		a, b, c := randomItems(r, 5000), randomItems(r, 50000), randomItems(r, 7000)
		w := NewDistinct()
		for _, items := range [][][]byte{a, b, c} {
			w.Merge(build(items, 0))
		}
		all := slices.Concat(a, b, c)
		for _, q := range []uint8{6, 10, 14} {
			got, ok := w.Registers(q, nil)
			if want := naiveRegisters(all, q); !ok || !slices.Equal(got, want) {
				t.Fatalf("m=%d: %s", 1<<q, firstDiff(got, want))
			}
		}
	})
	t.Run("dst reused", func(t *testing.T) {
		items := randomItems(r, 100)
		dst := slices.Repeat([]uint8{9}, 5000)
		got, _ := build(items, 0).Registers(10, dst)
		if want := naiveRegisters(items, 10); !slices.Equal(got, want) {
			t.Fatalf("over a used buffer: %s", firstDiff(got, want))
		}
	})
}

// firstDiff says where two register arrays first differ.
func firstDiff(got, want []uint8) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d registers, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Sprintf("register %d is %d, want %d", i, got[i], want[i])
		}
	}
	return "equal"
}

// TestFleetRegistersWindowed: the registers each of several pods exports for a window,
// merged by their maximum as the fleet query does, are those of the union of the items
// every pod placed in that window's slots, register by register, at every precision the
// pods can export: sparse and dense windows, items shared between pods, late by up to a
// slot and a half or into sealed slots of every wheel, reads at the seconds a slot rolls
// up and around them.
func TestFleetRegistersWindowed(t *testing.T) {
	ws := []time.Duration{time.Minute, 5 * time.Minute, time.Hour}
	l, err := windows.NewLayout(ws, windows.Options{Summaries: []windows.SummaryKind{DistinctKind(1)}})
	if err != nil {
		t.Fatal(err)
	}
	type placed struct {
		at   int64
		item []byte
	}
	const pods = 3
	r := rand.New(rand.NewPCG(3, 9))
	series := make([]*windows.Series, pods)
	dsts := make([][]windows.Summary, pods)
	for p := range series {
		series[p], dsts[p] = l.NewSeries(), l.NewSummaries()
	}
	var log []placed
	shared := randomItems(r, 3000)
	secs := int64(1500)
	if testing.Short() || race.Enabled {
		secs = 700
	}
	start := int64(1_700_000_000) - 7 // a few seconds before a 10-second slot's edge
	reads, dense := 0, 0
	for now := start; now < start+secs; now++ {
		for p, s := range series {
			n := r.IntN(8)
			if now%600 == 599 && p == 1 {
				n = 14000 // a burst: the pod's slots, and the fleet's windows, turn dense
			}
			for i := range n {
				at := now
				switch x := r.IntN(40); {
				case x < 10:
					at -= r.Int64N(16) // late, across a 10-second slot's edge
				case x < 11:
					at -= r.Int64N(400) // into a sealed slot, and a minute's
				}
				item := shared[r.IntN(len(shared))]
				if r.IntN(3) == 0 || n > 100 {
					item = fmt.Appendf(nil, "pod%d-%d-%d", p, now, i)
				}
				if pl := s.AddItems(now, at, 1, [][]byte{item}); pl != windows.Placed {
					t.Fatalf("pod %d: add at %d of %d: %v", p, at, now, pl)
				}
				log = append(log, placed{at, item})
			}
		}
		if m := now % 10; m != 0 && m != 9 && m != 1 && r.IntN(20) != 0 {
			continue
		}
		reads++
		for p, s := range series {
			s.ReadSummaries(now, dsts[p])
		}
		for i, w := range ws {
			edge := reference.SummaryEdge(now, w)
			var items [][]byte
			for _, e := range log {
				if e.at >= edge {
					items = append(items, e.item)
				}
			}
			for _, q := range []uint8{MinRegisterPrecision, 10, MaxRegisterPrecision} {
				fleet := make([]uint8, 1<<q)
				for p := range series {
					d := dsts[p][i].(*Distinct)
					if d.Precision() != 0 && q == MinRegisterPrecision {
						dense++
					}
					regs, ok := d.Registers(q, nil)
					if !ok {
						t.Fatalf("read at %d, window %v, pod %d: no registers at m=%d", now, w, p, 1<<q)
					}
					for j, v := range regs {
						fleet[j] = max(fleet[j], v)
					}
				}
				if want := naiveRegisters(items, q); !slices.Equal(fleet, want) {
					t.Fatalf("read at %d, window %v, m=%d: the pods' registers merged differ from the union's: %s", now, w, 1<<q, firstDiff(fleet, want))
				}
			}
		}
	}
	if reads < 50 || dense < 10 {
		t.Fatalf("only %d reads, %d of a dense window", reads, dense)
	}
}
