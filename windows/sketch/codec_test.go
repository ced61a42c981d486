package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/windows"
	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// codecBounds are the buckets of the codec tests, around the values of codecValue.
var codecBounds = []float64{-1, 0, 0.005, 0.05, 0.5, 1, 5}

// codecEvent is one event of a codec stream: its time, value and items (a distinct count
// reads the first, a top summary the second).
type codecEvent struct {
	at    int64
	v     float64
	items [][]byte
}

// codecStream returns ticks seconds of events from base: mostly a few a second, some late
// by minutes or more than a day, with gaps of up to hours; dense adds, now and then, a
// second with more different items than a sparse distinct count holds.
func codecStream(r *rand.Rand, ticks int, dense bool) (nows []int64, events [][]codecEvent) {
	now := int64(base) + r.Int64N(86400)
	for range ticks {
		switch p := r.IntN(100); {
		case p < 3:
			now += r.Int64N(20000)
		case p < 20:
			now += r.Int64N(60)
		case p < 80:
			now++
		}
		var evs []codecEvent
		for range r.IntN(6) {
			at := now
			switch p := r.IntN(100); {
			case p < 5:
				at -= r.Int64N(2 * 86400)
			case p < 20:
				at -= r.Int64N(600)
			case p < 22:
				at += r.Int64N(100) // future
			}
			v := logUniform(r, 1e-3, 10)
			switch p := r.IntN(100); {
			case p < 10:
				v = -v
			case p < 15:
				v = 0
			}
			top := min(int(r.ExpFloat64()*8), 60)
			evs = append(evs, codecEvent{at, v, [][]byte{
				strconv.AppendInt(nil, r.Int64N(300), 10),
				fmt.Appendf(nil, "/item/%d", top),
			}})
		}
		if dense && r.IntN(100) == 0 {
			for i := range 13000 {
				evs = append(evs, codecEvent{now, 1, [][]byte{fmt.Appendf(nil, "burst-%d-%d", now, i), []byte("/burst")}})
			}
		}
		nows, events = append(nows, now), append(events, evs)
	}
	return nows, events
}

// view is what a read tells of a summary, for a comparison; Top values are compared apart
// when pruned (topClose).
func view(s windows.Summary) string {
	var b strings.Builder
	switch s := s.(type) {
	case *Quantiles:
		fmt.Fprintf(&b, "quantiles n=%d zeros=%d", s.Count(), s.Zeros())
		for _, neg := range []bool{true, false} {
			s.Bins(neg, func(i int32, c uint64) { fmt.Fprintf(&b, " %t/%d:%d", neg, i, c) })
		}
		fmt.Fprintf(&b, " p50=%v p99=%v", s.Quantile(0.5), s.Quantile(0.99))
	case *Buckets:
		fmt.Fprintf(&b, "buckets n=%d sum=%v", s.Count(), s.Sum())
		s.Cumulative(func(le float64, n uint64) { fmt.Fprintf(&b, " %v:%d", le, n) })
	case *Distinct:
		fmt.Fprintf(&b, "distinct %d at precision %d", s.Count(), s.Precision())
	case *Top:
		fmt.Fprintf(&b, "top total=%v bound=%v %v", s.Total(), s.Bound(), s.TopShared(1000, 0, nil))
	}
	return b.String()
}

// topClose checks two top summaries of the same events that pruned in other orders: the
// same total, and every value within the larger bound of both, held or not.
func topClose(a, b *Top) error {
	if a.Total() != b.Total() {
		return fmt.Errorf("total %v and %v", a.Total(), b.Total())
	}
	bound := max(a.Bound(), b.Bound())*(1+1e-9) + 1e-9
	sums := func(t *Top) map[string]float64 {
		m := map[string]float64{}
		for _, v := range t.TopShared(1000, 0, nil) {
			m[v.Item] = v.Sum
		}
		return m
	}
	sa, sb := sums(a), sums(b)
	for item := range sa {
		if d := math.Abs(sa[item] - sb[item]); d > bound {
			return fmt.Errorf("%q: %v and %v, more than %v apart", item, sa[item], sb[item], bound)
		}
	}
	for item := range sb {
		if _, ok := sa[item]; !ok && sb[item] > bound {
			return fmt.Errorf("%q: %v in one, absent from the other (bound %v)", item, sb[item], bound)
		}
	}
	return nil
}

// roomless is an account with no room: every summary is capped to what it holds.
type roomless struct{}

func (roomless) Charge(int64) {}
func (roomless) Room() int64  { return 0 }

// TestCodecSeries restores series of every summary kind from their encodings at random
// steps of random streams, and runs the restored series beside the original: every add
// and every read, of the floats and of the summaries, must be the same. Under a cap the
// summaries of a restored series hold only what they use, where the original's buffers
// may have room to spare, and a capped sketch collapses by the room it has: there the
// copy is restored from the original before every step, and reads compared right after.
func TestCodecSeries(t *testing.T) {
	short := []time.Duration{10 * time.Second, time.Minute, 7 * time.Minute}
	all := []windows.SummaryKind{QuantilesKind, BucketsKind(codecBounds), DistinctKind(1), TopKind(100, 2)}
	for _, tc := range []struct {
		name    string
		windows []time.Duration
		opts    windows.Options
		dense   bool
		// pruned: capped top summaries prune by the room each has, which a restored one's
		// buffers leave otherwise: compared by topClose. Uncapped, a restored summary prunes
		// as the original does, and reads the same.
		pruned   bool
		fromOrig bool // restored from the original at every step
	}{
		{name: "floats", windows: defaultWindows, opts: windows.Options{Events: true, Extrema: true}},
		{name: "quantiles", windows: defaultWindows, opts: windows.Options{Summaries: []windows.SummaryKind{QuantilesKind}}},
		{name: "buckets", windows: short, opts: windows.Options{Summaries: []windows.SummaryKind{BucketsKind(codecBounds)}}},
		{name: "distinct", windows: defaultWindows, opts: windows.Options{Summaries: []windows.SummaryKind{DistinctKind(1)}}},
		{name: "distinct dense", windows: short, opts: windows.Options{Summaries: []windows.SummaryKind{DistinctKind(1)}}, dense: true},
		{name: "top", windows: defaultWindows, opts: windows.Options{Summaries: []windows.SummaryKind{TopKind(100, 2)}}},
		{name: "top pruned", windows: short, opts: windows.Options{Summaries: []windows.SummaryKind{TopKind(3, 2)}}},
		{name: "all kinds last complete", windows: defaultWindows, opts: windows.Options{Events: true, Extrema: true, Summaries: all, LastComplete: true}},
		{name: "all kinds capped", windows: short, opts: windows.Options{Summaries: all, Account: roomless{}}, dense: true, pruned: true, fromOrig: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, err := windows.NewLayout(tc.windows, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			cases, ticks := 3, 400
			if testing.Short() || race.Enabled {
				cases, ticks = 1, 150
			}
			for c := range cases {
				r := rand.New(rand.NewPCG(uint64(c), uint64(len(tc.name))))
				nows, events := codecStream(r, ticks, tc.dense)
				if err := runRestoring(l, nows, events, r, tc.pruned, tc.fromOrig); err != nil {
					t.Fatalf("case %d: %v", c, err)
				}
			}
		})
	}
}

// runRestoring runs a stream on a series and on a copy restored now and then (see
// TestCodecSeries), reading both after every second.
func runRestoring(l *windows.Layout, nows []int64, events [][]codecEvent, r *rand.Rand, pruned, fromOrig bool) error {
	orig, cp := l.NewSeries(), l.NewSeries()
	want, got := l.NewSummaries(), l.NewSummaries()
	for i, now := range nows {
		if fromOrig || r.IntN(5) == 0 {
			src := cp
			if fromOrig {
				src = orig
			}
			enc, err := src.AppendBinary(nil)
			if err != nil {
				return err
			}
			if cp, _, err = l.DecodeSeries(enc); err != nil {
				return fmt.Errorf("second %d: decode: %w", i, err)
			}
		}
		for _, e := range events[i] {
			p, q := orig.AddItems(now, e.at, e.v, e.items), cp.AddItems(now, e.at, e.v, e.items)
			if p != q {
				return fmt.Errorf("second %d add at %d: restored %v, original %v", i, e.at, q, p)
			}
		}
		if p, q := orig.LastAdd(), cp.LastAdd(); p != q {
			return fmt.Errorf("second %d: restored LastAdd %d, original %d", i, q, p)
		}
		for _, at := range []int64{now, now + r.Int64N(100), now + r.Int64N(100000)} {
			if w, g := orig.Read(at, now-3600, nil), cp.Read(at, now-3600, nil); fmt.Sprint(w) != fmt.Sprint(g) {
				return fmt.Errorf("second %d read at %d: restored %v, original %v", i, at, g, w)
			}
			orig.ReadSummaries(at, want)
			cp.ReadSummaries(at, got)
			for k := range want {
				if tw, ok := want[k].(*Top); ok && pruned {
					if err := topClose(tw, got[k].(*Top)); err != nil {
						return fmt.Errorf("second %d read at %d summary %d: %w", i, at, k, err)
					}
					continue
				}
				if w, g := view(want[k]), view(got[k]); w != g {
					return fmt.Errorf("second %d read at %d summary %d:\nrestored %s\noriginal %s", i, at, k, g, w)
				}
			}
		}
	}
	return nil
}

// codecSummaries are summaries of every kind in the states a slot may hold: empty, a few
// values, sealed, reset, merged, dense, capped, with negative values.
func codecSummaries() map[string][]windows.Summary {
	r := rand.New(rand.NewPCG(7, 7))
	fill := func(kind windows.SummaryKind, n int, capTo int) windows.Summary {
		s := kind.New()
		if capTo > 0 {
			s.(windows.Capper).Cap(capTo)
		}
		for i := range n {
			v := logUniform(r, 1e-4, 1e4)
			if i%7 == 0 {
				v = -v
			}
			s.Add(v, fmt.Appendf(nil, "item-%d", r.IntN(n)))
		}
		if capTo > 0 {
			s.(windows.Capper).Cap(0)
		}
		return s
	}
	out := map[string][]windows.Summary{}
	for name, kind := range map[string]windows.SummaryKind{
		"quantiles": QuantilesKind, "buckets": BucketsKind(codecBounds), "distinct": DistinctKind(1), "top": TopKind(5, 1),
	} {
		sealed := fill(kind, 40, 0)
		if s, ok := sealed.(windows.Sealer); ok {
			s.Seal()
		}
		reset := fill(kind, 40, 0)
		reset.Reset()
		merged := fill(kind, 30, 0)
		merged.Merge(fill(kind, 30, 0))
		out[name] = []windows.Summary{kind.New(), fill(kind, 1, 0), fill(kind, 40, 0), sealed, reset, merged, fill(kind, 15000, 0)}
		if _, ok := kind.New().(windows.Capper); ok {
			out[name] = append(out[name], fill(kind, 3000, 200))
		}
	}
	return out
}

// TestCodecSummaries round-trips every kind in every state, refuses every proper prefix
// of an encoding, and survives every single-byte change: refused, or a summary that works.
func TestCodecSummaries(t *testing.T) {
	for name, sums := range codecSummaries() {
		t.Run(name, func(t *testing.T) {
			kind := sums[0]
			for i, s := range sums {
				enc, err := s.(windows.Codec).AppendBinary(nil)
				if err != nil {
					t.Fatal(err)
				}
				got := newLike(kind)
				if err := got.(windows.Codec).UnmarshalBinary(enc); err != nil {
					t.Fatalf("state %d: %v", i, err)
				}
				if w, g := view(s), view(got); w != g {
					t.Fatalf("state %d restored:\n%s\nwant\n%s", i, g, w)
				}
				for n := range len(enc) {
					if err := newLike(kind).(windows.Codec).UnmarshalBinary(enc[:n]); !errors.Is(err, wire.ErrCorrupt) {
						t.Fatalf("state %d: prefix of %d of %d bytes: %v, want ErrCorrupt", i, n, len(enc), err)
					}
				}
				if len(enc) > 2000 {
					continue // the flips of the small states reach every field
				}
				for j := range enc {
					b := slices.Clone(enc)
					b[j] ^= 1 << (j % 8)
					exerciseSummary(kind, b)
				}
			}
		})
	}
}

// newLike returns an empty summary of the kind of s.
func newLike(s windows.Summary) windows.Summary {
	switch s := s.(type) {
	case *Buckets:
		return BucketsKind(s.bounds).New()
	case *Top:
		return NewTop(s.capacity)
	case *Distinct:
		return NewDistinct()
	}
	return new(Quantiles)
}

// exerciseSummary decodes b into a summary of the kind of like and, if it decodes, uses it
// every way the wheels and the exposition do: none may panic.
func exerciseSummary(like windows.Summary, b []byte) {
	s := newLike(like)
	if s.(windows.Codec).UnmarshalBinary(b) != nil {
		return
	}
	view(s)
	into := newLike(like)
	into.Merge(s)
	if a, ok := into.(windows.Absorber); ok {
		a.Absorb(s)
	}
	for i := range 50 {
		s.Add(float64(i)*1.5-10, fmt.Appendf(nil, "x%d", i%9))
	}
	s.Merge(into)
	if c, ok := s.(windows.Capper); ok {
		c.Cap(64)
		s.Add(1e9, []byte("long item long item long item long item"))
		c.Cap(0)
	}
	if sl, ok := s.(windows.Sealer); ok {
		sl.Seal()
		s.Add(3, []byte("late"))
	}
	view(s)
	s.Bytes()
	s.Reset()
	s.Add(1, []byte("again"))
	view(s)
}

// fuzzSummary fuzzes the decoder of a kind, seeded with its encodings in codecSummaries.
func fuzzSummary(f *testing.F, name string) {
	sums := codecSummaries()[name]
	for _, s := range sums {
		enc, err := s.(windows.Codec).AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		if len(enc) < 4096 {
			f.Add(enc)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := newLike(sums[0])
		if s.(windows.Codec).UnmarshalBinary(b) != nil {
			return
		}
		// What decodes encodes to bytes that decode to the same summary.
		enc, err := s.(windows.Codec).AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		again := newLike(sums[0])
		if err := again.(windows.Codec).UnmarshalBinary(enc); err != nil {
			t.Fatalf("re-encoding refused: %v", err)
		}
		if view(again) != view(s) {
			t.Fatalf("re-encoding reads %s, want %s", view(again), view(s))
		}
		exerciseSummary(sums[0], b)
	})
}

func FuzzUnmarshalQuantiles(f *testing.F) { fuzzSummary(f, "quantiles") }
func FuzzUnmarshalBuckets(f *testing.F)   { fuzzSummary(f, "buckets") }
func FuzzUnmarshalDistinct(f *testing.F)  { fuzzSummary(f, "distinct") }
func FuzzUnmarshalTop(f *testing.F)       { fuzzSummary(f, "top") }

// FuzzDecodeSketchSeries decodes any bytes as a series of every kind at once: refused, or a
// series that reads and adds, and whose encoding is a fixed point of decoding and encoding.
func FuzzDecodeSketchSeries(f *testing.F) {
	l, err := windows.NewLayout([]time.Duration{10 * time.Second, time.Minute, 7 * time.Minute},
		windows.Options{Events: true, Extrema: true, Summaries: []windows.SummaryKind{QuantilesKind, BucketsKind(codecBounds), DistinctKind(1), TopKind(3, 2)}})
	if err != nil {
		f.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	nows, events := codecStream(r, 40, false)
	s := l.NewSeries()
	for i, now := range nows {
		for _, e := range events[i] {
			s.AddItems(now, e.at, e.v, e.items)
		}
		if i%10 == 9 {
			enc, err := s.AppendBinary(nil)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(enc)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, rest, err := l.DecodeSeries(b)
		if err != nil {
			return
		}
		enc, err := s.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		// The encoding of what decodes is a fixed point: it decodes, whole, to a series
		// that encodes to it again.
		again, left, err := l.DecodeSeries(enc)
		if err != nil {
			t.Fatalf("re-encoding refused: %v", err)
		}
		if len(left) != 0 {
			t.Fatalf("re-encoding leaves %d bytes undecoded", len(left))
		}
		if enc2, err := again.AppendBinary(nil); err != nil || !bytes.Equal(enc2, enc) {
			t.Fatalf("re-encoding %x decodes to a series that encodes as %x (%v)", enc, enc2, err)
		}
		sums := l.NewSummaries()
		now := nows[len(nows)-1]
		for i := range int64(4) {
			s.ReadSummaries(now+i*i*30, sums)
			s.Read(now+i*i*30, now, nil)
			s.AddItems(now+i*i*30, now-i*50, float64(i), [][]byte{{byte(i)}, []byte("x")})
		}
		if !bytes.Equal(rest, b[len(b)-len(rest):]) {
			t.Fatal("rest is not the tail of the input")
		}
	})
}

// TestTopRestoredByAnotherProcess: a top summary's table hashes its items with a seed of
// the process, which a snapshot does not carry; a series restored by a process of another
// seed, and run on, reads what the series run on without a stop reads, pruning as it.
func TestTopRestoredByAnotherProcess(t *testing.T) {
	l, err := windows.NewLayout([]time.Duration{10 * time.Second, time.Minute, 7 * time.Minute},
		windows.Options{Summaries: []windows.SummaryKind{TopKind(3, 2), TopKind(100, 2)}})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 11))
	nows, events := codecStream(r, 300, false)
	defer func(seed maphash.Seed) { topSeed = seed }(topSeed)
	// run reads the series at every second, restoring it from its encoding at second stop
	// (none when negative) in a process of another seed.
	run := func(stop int) []string {
		s, dst := l.NewSeries(), l.NewSummaries()
		var reads []string
		for i, now := range nows {
			if i == stop {
				enc, err := s.AppendBinary(nil)
				if err != nil {
					t.Fatal(err)
				}
				topSeed = maphash.MakeSeed()
				if s, _, err = l.DecodeSeries(enc); err != nil {
					t.Fatalf("second %d: %v", i, err)
				}
			}
			for _, e := range events[i] {
				s.AddItems(now, e.at, e.v, e.items)
			}
			s.ReadSummaries(now, dst)
			for _, d := range dst {
				reads = append(reads, view(d))
			}
		}
		return reads
	}
	want := run(-1)
	if !slices.ContainsFunc(want, func(v string) bool { return !strings.Contains(v, "bound=0 ") }) {
		t.Fatal("no read of a pruned summary")
	}
	for _, stop := range []int{1, len(nows) / 3, len(nows) / 2, len(nows) - 1} {
		got := run(stop)
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("restored at second %d: read %d is\n%s\nwant\n%s", stop, j, got[j], want[j])
			}
		}
	}
}

// TestCodecRefusesNonFiniteSums: a sum a summary keeps never is NaN or an infinity (the
// store admits no value that would make one), so an encoding that holds one is an edited
// file, refused rather than restored and exported.
func TestCodecRefusesNonFiniteSums(t *testing.T) {
	top := func(total, kept, loss, count float64) []byte {
		b := wire.AppendFloat(nil, total)
		b = wire.AppendFloat(b, kept)
		b = wire.AppendFloat(b, loss)
		b = wire.AppendBytes(b, []byte("GET"))
		b = wire.AppendUvarint(b, 1)
		b = wire.AppendFloat(b, count)
		b = wire.AppendUvarint(b, 0)
		return wire.AppendUvarint(b, 3)
	}
	buckets := func(sum float64) []byte {
		b := wire.AppendFloat(wire.AppendUvarint(nil, 1), sum)
		b = wire.AppendUvarint(b, 1) // the one value, in the first bucket
		for range codecBounds[1:] {
			b = wire.AppendUvarint(b, 0)
		}
		return b
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, tc := range []struct {
			name string
			kind windows.Codec
			enc  []byte
		}{
			{"buckets sum", BucketsKind(codecBounds).New().(*Buckets), buckets(bad)},
			{"top total", NewTop(4), top(bad, 2, 0, 2)},
			{"top kept", NewTop(4), top(2, bad, 0, 2)},
			{"top loss", NewTop(4), top(2, 2, bad, 2)},
			{"top count", NewTop(4), top(2, 2, 0, bad)},
		} {
			t.Run(fmt.Sprint(tc.name, " ", bad), func(t *testing.T) {
				if err := tc.kind.UnmarshalBinary(tc.enc); !errors.Is(err, wire.ErrCorrupt) {
					t.Errorf("decoded: %v, want ErrCorrupt", err)
				}
			})
		}
	}
	// The same encodings with finite sums decode: what is refused is the sum alone.
	if err := BucketsKind(codecBounds).New().(*Buckets).UnmarshalBinary(buckets(2.5)); err != nil {
		t.Errorf("finite buckets: %v", err)
	}
	if err := NewTop(4).UnmarshalBinary(top(2, 2, 0, 2)); err != nil {
		t.Errorf("finite top: %v", err)
	}
}
