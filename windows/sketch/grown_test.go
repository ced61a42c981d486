package sketch

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/logwindow/logwindow_exporter/windows"
)

// encoded is a summary whose state its encoding shows.
type encoded interface {
	windows.Summary
	AppendBinary(dst []byte) ([]byte, error)
}

// TestAddGrown holds each kind's AddGrown (windows.SummaryKind), which the wheels add
// with, to Add and Bytes, its reference: fed the same stream, a summary added to with
// AddGrown encodes as one added to with Add, and AddGrown
// returns what Bytes was before and after each add whenever that changed, two equal
// numbers otherwise. The streams are random and adversarial: values the sketches ignore,
// zeros, both signs, extreme and subnormal magnitudes, one count widened again and again,
// items past the sparse set's size and the top summary's capacity; summaries sealed and
// added to late, and held to a cap.
func TestAddGrown(t *testing.T) {
	for _, tc := range grownStreams() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(9, uint64(len(tc.name))))
			ref, got := tc.kind.New().(encoded), tc.kind.New().(encoded)
			if tc.cap > 0 {
				for _, s := range []encoded{ref, got} {
					s.(windows.Capper).Cap(tc.cap)
				}
			}
			for i := range 20_000 {
				v, item := tc.event(r, i)
				before := ref.Bytes()
				ref.Add(v, item)
				after := ref.Bytes()
				b, a := tc.kind.AddGrown(got, v, item)
				if after != before && (b != before || a != after) || after == before && b != a {
					t.Fatalf("event %d (%v, %q): AddGrown says %d → %d, Bytes went %d → %d", i, v, item, b, a, before, after)
				}
				if tc.seal && i%1000 == 999 {
					ref.(windows.Sealer).Seal()
					got.(windows.Sealer).Seal()
				}
				if i%997 == 0 || i == 19_999 {
					sameEncoding(t, i, ref, got)
				}
			}
		})
	}
}

// grownStream is a stream of events for one kind's summary.
type grownStream struct {
	name string
	kind windows.SummaryKind
	// event returns the i-th event of the stream.
	event func(r *rand.Rand, i int) (float64, []byte)
	seal  bool // seal every 1,000 events
	cap   int  // held to this many bytes, 0 for no cap
}

// grownStreams are the streams TestAddGrown and TestAddRun feed each kind.
func grownStreams() []grownStream {
	quantiles, distinct, top, buckets := QuantilesKind, DistinctKind(1), TopKind(50, 1), bucketsKind
	odd := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 5e-324, -5e-324, math.MaxFloat64, -math.MaxFloat64, 1e-300, 1e300}
	return []grownStream{
		{"quantiles/latencies", quantiles, func(r *rand.Rand, _ int) (float64, []byte) { return logUniform(r, 1e-3, 10), nil }, false, 0},
		{"quantiles/odd values", quantiles, func(r *rand.Rand, _ int) (float64, []byte) { return odd[r.IntN(len(odd))], nil }, false, 0},
		{"quantiles/both signs, growing outward", quantiles, func(r *rand.Rand, i int) (float64, []byte) {
			return float64(1-2*(i%2)) * math.Pow(1.5, float64(i%1500)-750), nil
		}, false, 0},
		{"quantiles/one count widened", quantiles, func(*rand.Rand, int) (float64, []byte) { return 0.25, nil }, false, 0},
		{"quantiles/sealed", quantiles, func(r *rand.Rand, _ int) (float64, []byte) { return logUniform(r, 1e-3, 10), nil }, true, 0},
		{"quantiles/capped", quantiles, func(r *rand.Rand, _ int) (float64, []byte) { return logUniform(r, 1e-9, 1e9), nil }, false, 200},
		{"buckets/random", buckets, func(r *rand.Rand, _ int) (float64, []byte) { return odd[r.IntN(len(odd))] + r.Float64()*20, nil }, false, 0},
		{"distinct/new items past sparse", distinct, func(_ *rand.Rand, i int) (float64, []byte) { return 1, sizedItem(i, 8) }, false, 0},
		{"distinct/repeats", distinct, func(r *rand.Rand, _ int) (float64, []byte) { return 1, sizedItem(r.IntN(300), 5) }, false, 0},
		{"distinct/sealed", distinct, func(r *rand.Rand, _ int) (float64, []byte) { return 1, sizedItem(r.IntN(3000), 8) }, true, 0},
		{"distinct/capped", distinct, func(_ *rand.Rand, i int) (float64, []byte) { return 1, sizedItem(i, 8) }, false, 3000},
		{"top/zipf", top, func(r *rand.Rand, _ int) (float64, []byte) { return 1, sizedItem(zipfDraw(r, 1.1, 5000), 12) }, false, 0},
		{"top/new items", top, func(r *rand.Rand, i int) (float64, []byte) { return float64(1 + r.IntN(9)), sizedItem(i, i%40) }, false, 0},
		{"top/odd weights", top, func(r *rand.Rand, _ int) (float64, []byte) { return odd[r.IntN(len(odd))], sizedItem(r.IntN(70), 3) }, false, 0},
		{"top/sealed", top, func(r *rand.Rand, _ int) (float64, []byte) { return 1, sizedItem(zipfDraw(r, 1.3, 500), 9) }, true, 0},
		{"top/capped", top, func(r *rand.Rand, i int) (float64, []byte) { return 1, sizedItem(i, 30) }, false, 1500},
		{"top/invalid UTF-8", top, func(r *rand.Rand, _ int) (float64, []byte) {
			return 1, []byte{0xff, byte(r.IntN(200)), 0xc3, byte(r.IntN(3))}
		}, false, 0},
		{"top/huge weights", top, func(r *rand.Rand, _ int) (float64, []byte) {
			return math.MaxFloat64 / float64(1+r.IntN(4)), sizedItem(r.IntN(3000), 7)
		}, false, 0},
		{"distinct/invalid UTF-8", distinct, func(r *rand.Rand, _ int) (float64, []byte) {
			return 1, []byte{0xfe, byte(r.IntN(256)), byte(r.IntN(256)), 0x80}
		}, true, 0},
	}
}

// TestAddRun holds each kind's AddRun (windows.SummaryKind), which a series adds a run of
// one second's events with, to Add and Bytes as TestAddGrown holds AddGrown: fed the same
// stream cut in runs of random lengths, with a second item beside the one the kind reads,
// a summary added to with AddRun encodes as one added to with Add event by event, and
// AddRun stops right after each add that changed Bytes, saying what Bytes was before and
// after it, and otherwise adds the whole run.
func TestAddRun(t *testing.T) {
	for _, tc := range grownStreams() {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, uint64(len(tc.name))))
			ref, got := tc.kind.New().(encoded), tc.kind.New().(encoded)
			if tc.cap > 0 {
				for _, s := range []encoded{ref, got} {
					s.(windows.Capper).Cap(tc.cap)
				}
			}
			const events = 20_000
			for i := 0; i < events; {
				// A run ends at the next seal, which falls between seconds.
				end := min(i+1+r.IntN(1+r.IntN(200)), events, (i/1000+1)*1000)
				var values []float64
				var items [][]byte
				var changed []int // the events of the run, from its start, whose add changed Bytes
				var grew [][2]int // Bytes before and after each of those
				for j := i; j < end; j++ {
					v, item := tc.event(r, j)
					decoy := []byte{byte(j)}
					pair := [][]byte{item, decoy}
					if tc.kind.Item == 2 {
						pair[0], pair[1] = decoy, item
					}
					values, items = append(values, v), append(items, pair...)
					before := ref.Bytes()
					ref.Add(v, item)
					if after := ref.Bytes(); after != before {
						changed = append(changed, j-i)
						grew = append(grew, [2]int{before, after})
					}
				}
				for done := 0; done < len(values); {
					n, b, a := tc.kind.AddRun(got, values[done:], items[2*done:])
					want, wb, wa := len(values)-done, 0, 0
					if len(changed) > 0 {
						want, wb, wa = changed[0]+1-done, grew[0][0], grew[0][1]
						changed, grew = changed[1:], grew[1:]
					}
					if n != want || b != wb || a != wa || n < 1 {
						t.Fatalf("run of events %d to %d, from %d: AddRun added %d, Bytes %d → %d; want %d, %d → %d", i, end, i+done, n, b, a, want, wb, wa)
					}
					done += n
				}
				if tc.seal && end%1000 == 0 {
					ref.(windows.Sealer).Seal()
					got.(windows.Sealer).Seal()
				}
				if r.IntN(20) == 0 || end == events {
					sameEncoding(t, end, ref, got)
				}
				i = end
			}
		})
	}
}

// sameEncoding fails the test unless the two summaries encode alike.
func sameEncoding(t *testing.T, i int, want, got encoded) {
	t.Helper()
	w, err := want.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := got.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w, g) {
		t.Fatalf("after event %d: AddGrown's summary encodes as %d bytes differing from Add's %d", i, len(g), len(w))
	}
}
