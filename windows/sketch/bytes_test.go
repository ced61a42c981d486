package sketch

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/windows"
)

// liveHeap is the live heap after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// sizedItem is the i-th of a stream of different items of n bytes.
func sizedItem(i, n int) []byte {
	b := make([]byte, max(n, 8))
	binary.LittleEndian.PutUint64(b, uint64(i))
	return b[:n]
}

// bytesCases are summaries in the states a slot's goes through: empty, a few values, many
// values spread over the sketch's whole range, sealed, absorbed into another, held to a
// cap, and reset.
var bytesCases = []struct {
	name string
	make func(r *rand.Rand) windows.Summary
}{
	{"quantiles/empty", func(*rand.Rand) windows.Summary { return new(Quantiles) }},
	{"quantiles/one value", func(*rand.Rand) windows.Summary { q := new(Quantiles); q.Add(0.25, nil); return q }},
	{"quantiles/1000 latencies", func(r *rand.Rand) windows.Summary { return latencies(r, 1000) }},
	{"quantiles/1000 latencies sealed", func(r *rand.Rand) windows.Summary { q := latencies(r, 1000); q.Seal(); return q }},
	{"quantiles/every magnitude of both signs", func(*rand.Rand) windows.Summary { return spread(new(Quantiles), 100) }},
	{"quantiles/absorbed", func(r *rand.Rand) windows.Summary {
		q := latencies(r, 100)
		q.Absorb(spread(new(Quantiles), 3))
		return q
	}},
	{"quantiles/capped", func(*rand.Rand) windows.Summary {
		q := new(Quantiles)
		q.Cap(300)
		spread(q, 100)
		q.Cap(0)
		return q
	}},
	{"quantiles/reset", func(*rand.Rand) windows.Summary { q := spread(new(Quantiles), 3); q.Reset(); return q }},
	{"distinct/empty", func(*rand.Rand) windows.Summary { return NewDistinct() }},
	{"distinct/10 items", func(*rand.Rand) windows.Summary { return distinctOf(NewDistinct(), 10) }},
	{"distinct/5000 items", func(*rand.Rand) windows.Summary { return distinctOf(NewDistinct(), 5000) }},
	{"distinct/5000 items sealed", func(*rand.Rand) windows.Summary { d := distinctOf(NewDistinct(), 5000); d.Seal(); return d }},
	{"distinct/dense", func(*rand.Rand) windows.Summary { return distinctOf(NewDistinct(), 13000) }},
	{"distinct/capped", func(*rand.Rand) windows.Summary {
		d := NewDistinct()
		d.Cap(5000)
		distinctOf(d, 13000)
		d.Cap(0)
		return d
	}},
	{"top/10 items", func(*rand.Rand) windows.Summary { return topOf(NewTop(100), 10, 20) }},
	{"top/1000 short items", func(*rand.Rand) windows.Summary { return topOf(NewTop(1000), 1000, 20) }},
	{"top/3000 1 KB items", func(*rand.Rand) windows.Summary { return topOf(NewTop(1000), 3000, 1024) }},
	{"top/3000 1 KB items sealed", func(*rand.Rand) windows.Summary { t := topOf(NewTop(1000), 3000, 1024); t.Seal(); return t }},
	{"top/merged", func(*rand.Rand) windows.Summary {
		t := topOf(NewTop(1000), 100, 100)
		t.Merge(topOf(NewTop(1000), 500, 100))
		return t
	}},
	{"top/capped", func(*rand.Rand) windows.Summary {
		t := NewTop(1000)
		t.Cap(100_000)
		topOf(t, 3000, 1024)
		t.Cap(0)
		return t
	}},
	{"top/reset", func(*rand.Rand) windows.Summary { t := topOf(NewTop(1000), 500, 100); t.Reset(); return t }},
	{"buckets", func(*rand.Rand) windows.Summary {
		b := bucketsKind.New()
		b.Add(0.3, nil)
		return b
	}},
}

// bucketsKind's bounds are shared by its summaries (and not in their Bytes).
var bucketsKind = BucketsKind([]float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10})

// latencies is a sketch of n log-uniform values from 1 ms to 10 s.
func latencies(r *rand.Rand, n int) *Quantiles {
	q := new(Quantiles)
	for range n {
		q.Add(logUniform(r, 1e-3, 10), nil)
	}
	return q
}

// spread adds to q n values of each of the extreme magnitudes of both signs, so that the
// runs span every bin.
func spread(q *Quantiles, n int) *Quantiles {
	for range n {
		for _, v := range []float64{1e-17, 6e16, -1e-17, -6e16, 1} {
			q.Add(v, nil)
		}
	}
	return q
}

func distinctOf(d *Distinct, n int) *Distinct {
	for i := range n {
		d.Add(1, sizedItem(i, 8))
	}
	return d
}

func topOf(t *Top, n, size int) *Top {
	for i := range n {
		t.Add(float64(1+i%7), sizedItem(i, size))
	}
	return t
}

// TestBytesIsTheHeap: what each kind's Bytes says is the heap many such summaries take,
// within 10 % (5 % for the larger), in every state a slot's summary goes through; and up
// to a 16-byte block more for the allocator's tiny objects, which Bytes counts whole.
func TestBytesIsTheHeap(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector's shadow memory is not the heap")
	}
	for _, tc := range bytesCases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			// Enough summaries that what the test itself allocates is lost in them.
			n := min(max(2_000_000/tc.make(r).Bytes(), 100), 5_000)
			if testing.Short() {
				n = max(n/10, 50)
			}
			keep := make([]windows.Summary, n)
			liveHeap()
			base := liveHeap()
			said := 0
			for i := range keep {
				keep[i] = tc.make(r)
				said += keep[i].Bytes()
			}
			// Interface values holding pointers take no heap of their own.
			grown := liveHeap() - base
			runtime.KeepAlive(keep)
			perHeap, perSaid := float64(grown)/float64(n), float64(said)/float64(n)
			t.Logf("Bytes %.0f, heap %.0f per summary (%.3f)", perSaid, perHeap, perSaid/perHeap)
			tolerance := 0.10
			if perHeap > 4096 {
				tolerance = 0.05
			}
			if d := perSaid - perHeap; d > tolerance*perHeap+16 || -d > tolerance*perHeap {
				t.Errorf("Bytes says %.0f bytes, the heap grew by %.0f per summary", perSaid, perHeap)
			}
		})
	}
}
