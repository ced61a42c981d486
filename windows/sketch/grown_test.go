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

// TestQuantilesAddRunIsAddGrown holds Quantiles.AddRun, whose loop counts the common
// values itself, to AddGrown value by value: two sketches fed one random stream, one a run
// at a time by AddRun and one a value at a time by AddGrown, agree after every call of
// AddRun on their Bytes and counts, and AddRun stops after the value whose
// AddGrown changed Bytes, saying the same before and after, and on their encoding before
// every seal, reset or merge and at random. The values are those the loop
// must leave to AddGrown or count apart (NaN, ±Inf, subnormals, zeros of both signs,
// negatives, the clamped ends) mixed with values of the run's bins, of bins just outside it
// (the run grows in the middle of a run of values) and at bins' edges, and one value
// repeated (its count widens); the sketches are capped, sealed, reset and merged into
// (8-byte counts) along the way.
func TestQuantilesAddRunIsAddGrown(t *testing.T) {
	odd := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1),
		5e-324, -5e-324, 0x1p-1022, math.Nextafter(0x1p-1022, 0), -0x1p-1022,
		math.MaxFloat64, -math.MaxFloat64, 0x1p1023, math.Nextafter(0x1p1023, 2)}
	value := func(r *rand.Rand, at float64) float64 {
		switch r.IntN(8) {
		case 0:
			return odd[r.IntN(len(odd))]
		case 1: // a subnormal of any size
			return math.Float64frombits(r.Uint64N(1<<52-1)+1) * float64(1-2*r.IntN(2))
		case 2: // at, or next to, a bin's edge near at
			e := edges[r.IntN(len(edges))] * math.Exp2(math.Round(math.Log2(at)))
			return []float64{e, math.Nextafter(e, 0), math.Nextafter(e, math.Inf(1))}[r.IntN(3)]
		case 3: // anywhere, either sign: most outside the run
			return float64(1-2*r.IntN(2)) * logUniform(r, 1e-300, 1e300)
		case 4: // the value the stream repeats
			return at
		default: // near at: mostly the run's bins, some just past its ends
			return at * logUniform(r, 0.5, 2)
		}
	}
	for _, tc := range []struct {
		name string
		cap  int
	}{{"uncapped", 0}, {"capped small", 64}, {"capped", 300}} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(13, uint64(tc.cap)))
			ref, got := new(Quantiles), new(Quantiles)
			ref.Cap(tc.cap)
			got.Cap(tc.cap)
			at := 1.0
			for i := 0; i < 20_000; {
				if r.IntN(50) == 0 {
					at = logUniform(r, 1e-5, 1e5)
				}
				values := make([]float64, 1+r.IntN(1+r.IntN(300)))
				for j := range values {
					values[j] = value(r, at)
				}
				for done := 0; done < len(values); {
					n, b, a := got.AddRun(values[done:])
					want, wb, wa := len(values)-done, 0, 0
					for j, v := range values[done:] {
						if before, after := ref.AddGrown(v, nil); before != after {
							want, wb, wa = j+1, before, after
							break
						}
					}
					if n != want || b != wb || a != wa {
						t.Fatalf("values %d…: AddRun added %d, Bytes %d → %d; AddGrown %d, %d → %d (%v)", i+done, n, b, a, want, wb, wa, values[done:done+want])
					}
					done += n
					if got.Bytes() != ref.Bytes() || got.Count() != ref.Count() || got.Zeros() != ref.Zeros() {
						t.Fatalf("after value %d: Bytes %d, count %d, zeros %d; AddGrown's %d, %d, %d", i+done, got.Bytes(), got.Count(), got.Zeros(), ref.Bytes(), ref.Count(), ref.Zeros())
					}
				}
				i += len(values)
				// A count told wrong stays so until a reset: the encodings (large for a
				// run over every octave) are compared before each and now and then.
				op := r.IntN(40)
				if op < 4 || r.IntN(8) == 0 || i >= 20_000 {
					sameEncoding(t, i, ref, got)
				}
				switch op {
				case 0:
					ref.Seal()
					got.Seal()
				case 1:
					ref.Reset()
					got.Reset()
				case 2: // 8-byte counts, which the loop leaves to AddGrown
					from := new(Quantiles)
					for range 1 + r.IntN(20) {
						from.Add(value(r, at), nil)
					}
					ref.Merge(from)
					got.Merge(from)
				case 3:
					from := new(Quantiles)
					for range 1 + r.IntN(20) {
						from.Add(value(r, at), nil)
					}
					ref.Absorb(from)
					got.Absorb(from)
				}
			}
		})
	}
}
