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
	quantiles, distinct, top, buckets := QuantilesKind, DistinctKind(1), TopKind(50, 1), bucketsKind
	odd := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 5e-324, -5e-324, math.MaxFloat64, -math.MaxFloat64, 1e-300, 1e300}
	for _, tc := range []struct {
		name string
		kind windows.SummaryKind
		// event returns the i-th event of the stream.
		event func(r *rand.Rand, i int) (float64, []byte)
		seal  bool // seal every 1,000 events
		cap   int  // held to this many bytes, 0 for no cap
	}{
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
	} {
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
