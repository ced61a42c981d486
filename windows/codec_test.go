package windows

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// The bag of the reference model is a Codec, so that restored series are checked against
// the model too.

func (b *bag) AppendKind(dst []byte) []byte { return wire.AppendBool(append(dst, "bag"...), b.items) }

func (b *bag) AppendBinary(dst []byte) ([]byte, error) {
	dst = wire.AppendBool(dst, b.sealed)
	dst = wire.AppendUvarint(dst, uint64(len(b.vs)))
	for _, v := range b.vs {
		dst = wire.AppendFloat(dst, v)
	}
	return dst, nil
}

func (b *bag) UnmarshalBinary(data []byte) error {
	r := wire.NewReader(data)
	b.sealed = r.Bool()
	n := r.Count(math.MaxInt, 1)
	for range n {
		b.vs = append(b.vs, r.Float())
	}
	return r.Done()
}

// restored encodes s and decodes it with l, checking that the copy encodes the same.
func restored(l *Layout, s *Series) (*Series, error) {
	enc, err := s.AppendBinary(nil)
	if err != nil {
		return nil, err
	}
	c, rest, err := l.DecodeSeries(append(enc, "tail"...))
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if string(rest) != "tail" {
		return nil, fmt.Errorf("decode left %q, want the tail", rest)
	}
	if again, _ := c.AppendBinary(nil); !bytes.Equal(again, enc) {
		return nil, fmt.Errorf("restored series encodes as %x, the original as %x", again, enc)
	}
	return c, nil
}

// replayRestoring runs ops on a series and on a copy restored from its encoding at random
// steps (every step with every = 1): the copy must place every event and read every
// window as the original does, and as the model says.
func replayRestoring(l *Layout, since int64, ops []op, r *rand.Rand, every int) error {
	orig, cp, m := l.NewSeries(), l.NewSeries(), newModel(l)
	var want, got []Stats
	wantSums, gotSums := l.NewSummaries(), l.NewSummaries()
	for i, o := range ops {
		if r.IntN(every) == 0 {
			var err error
			if cp, err = restored(l, cp); err != nil {
				return fmt.Errorf("op %d: %w", i, err)
			}
		}
		if o.read {
			want, got = orig.Read(o.now, since, want), cp.Read(o.now, since, got)
			if !slices.EqualFunc(got, want, sameStats) {
				return fmt.Errorf("op %d read at %d: restored %v, original %v", i, o.now, got, want)
			}
			if err := m.check(l, got, o.now, since); err != nil {
				return fmt.Errorf("op %d (read at %d): %w", i, o.now, err)
			}
			if len(gotSums) > 0 {
				orig.ReadSummaries(o.now, wantSums)
				cp.ReadSummaries(o.now, gotSums)
				if err := m.checkSummaries(l, gotSums, o.now); err != nil {
					return fmt.Errorf("op %d (read at %d): %w", i, o.now, err)
				}
			}
			continue
		}
		item := [][]byte{strconv.AppendFloat(nil, o.v, 'g', -1, 64)}
		m.add(o.now, o.at, o.v)
		if p, q := orig.AddItems(o.now, o.at, o.v, item), cp.AddItems(o.now, o.at, o.v, item); p != q {
			return fmt.Errorf("op %d add(now %d, at %d): restored %v, original %v", i, o.now, o.at, q, p)
		}
		if p, q := orig.LastAdd(), cp.LastAdd(); p != q {
			return fmt.Errorf("op %d: restored LastAdd %d, original %d", i, q, p)
		}
	}
	return nil
}

func sameStats(a, b Stats) bool {
	return same(a.Sum, b.Sum) && same(a.Events, b.Events) && same(a.Max, b.Max) && same(a.Min, b.Min) && same(a.PerSecond, b.PerSecond)
}

// TestCodecReferenceModel restores series at random steps of the reference streams, over
// every layout, with and without summaries: a restored series goes on exactly as the
// original and the model.
func TestCodecReferenceModel(t *testing.T) {
	cases := 4
	if testing.Short() || race.Enabled {
		cases = 1
	}
	kinds := []struct {
		name  string
		kinds []SummaryKind
	}{{"floats", nil}, {"summaries", []SummaryKind{bagOfValues, bagOfItems}}}
	n := 0 // numbers the subtests, of which race.Runs says which run
	for _, g := range generators {
		for _, lay := range referenceLayouts {
			for _, k := range kinds {
				for _, end := range windowEnds {
					if n++; !race.Runs(n) {
						continue
					}
					t.Run(g.name+"/"+lay.name+"/"+k.name+"/"+end.name, func(t *testing.T) {
						t.Parallel()
						l, err := NewLayout(lay.windows, Options{Events: true, Extrema: true, Summaries: k.kinds, LastComplete: end.lastComplete})
						if err != nil {
							t.Fatal(err)
						}
						for c := range cases {
							r := rand.New(rand.NewPCG(uint64(c), uint64(len(g.name)*17+len(lay.name))))
							ops := g.gen(r, l.Longest())
							since := ops[0].now - r.Int64N(2*l.Longest())
							if err := replayRestoring(l, since, ops, r, 1+c%8); err != nil {
								t.Fatalf("case %d: %v", c, err)
							}
						}
					})
				}
			}
		}
	}
}

// TestCodecLayoutMismatch refuses the series of every other layout with ErrLayout, and
// accepts those of a layout of the same geometry.
func TestCodecLayoutMismatch(t *testing.T) {
	layout := func(ws []time.Duration, opts Options) *Layout {
		l, err := NewLayout(ws, opts)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	base := layout(defaultWindows, Options{Events: true})
	s := base.NewSeries()
	s.Add(1000, 1000, 2)
	enc, err := s.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		l    *Layout
		want error
	}{
		{"same geometry", layout(slices.Clone(defaultWindows), Options{Events: true, Account: nopAccount{}}), nil},
		{"other windows", layout(defaultWindows[:4], Options{Events: true}), ErrLayout},
		{"other order", layout([]time.Duration{5 * time.Minute, time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour}, Options{Events: true}), ErrLayout},
		{"no events", layout(defaultWindows, Options{}), ErrLayout},
		{"extrema", layout(defaultWindows, Options{Events: true, Extrema: true}), ErrLayout},
		{"last complete", layout(defaultWindows, Options{Events: true, LastComplete: true}), ErrLayout},
		{"summaries", layout(defaultWindows, Options{Events: true, Summaries: []SummaryKind{bagOfValues}}), ErrLayout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tc.l.DecodeSeries(enc)
			if !errors.Is(err, tc.want) {
				t.Fatalf("decode: %v, want %v", err, tc.want)
			}
		})
	}
}

// opaque is a Summary that is not a Codec.
type opaque struct{ n int }

func (o *opaque) Add(float64, []byte) { o.n++ }
func (o *opaque) Merge(from Summary)  { o.n += from.(*opaque).n }
func (o *opaque) Reset()              { o.n = 0 }
func (o *opaque) Bytes() int          { return 16 }

type nopAccount struct{}

func (nopAccount) Charge(int64) {}
func (nopAccount) Room() int64  { return math.MaxInt64 }

// TestCodecNoCodec refuses to encode summaries that cannot be.
func TestCodecNoCodec(t *testing.T) {
	l, err := NewLayout(defaultWindows, Options{Summaries: []SummaryKind{{New: func() Summary { return new(opaque) }}}})
	if err != nil {
		t.Fatal(err)
	}
	s := l.NewSeries()
	s.Add(1000, 1000, 2)
	if _, err := s.AppendBinary(nil); !errors.Is(err, ErrNoCodec) {
		t.Fatalf("encode: %v, want ErrNoCodec", err)
	}
}

// TestCodecTruncated refuses every proper prefix of an encoding, and every encoding with
// a byte changed is refused or decodes to a series that works.
func TestCodecTruncated(t *testing.T) {
	l, err := NewLayout(defaultWindows, Options{Events: true, Extrema: true, Summaries: []SummaryKind{bagOfValues}})
	if err != nil {
		t.Fatal(err)
	}
	s := l.NewSeries()
	for i := range int64(50) {
		s.AddItems(1000+i*37, 1000+i*37-i%5, float64(i), nil)
	}
	enc, err := s.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(enc) {
		if _, _, err := l.DecodeSeries(enc[:n]); !errors.Is(err, wire.ErrCorrupt) {
			t.Fatalf("prefix of %d of %d bytes: %v, want ErrCorrupt", n, len(enc), err)
		}
	}
	for i := range enc {
		b := slices.Clone(enc)
		b[i] ^= 0x5a
		exercise(l, b)
	}
}

// exercise decodes b and, if it is a series, adds to it and reads it: neither may panic.
func exercise(l *Layout, b []byte) {
	s, _, err := l.DecodeSeries(b)
	if err != nil {
		return
	}
	sums := l.NewSummaries()
	t := max(s.t, 0)
	for i := range int64(5) {
		s.Read(t+i*7, t, nil)
		s.ReadSummaries(t+i*7, sums)
		s.Add(t+i*7, t-i*i*100, 1)
	}
	s.Read(t+100000, t, nil)
}

// FuzzDecodeSeries decodes any bytes into every reference layout without panicking; a
// series that decodes works and encodes to what was decoded.
func FuzzDecodeSeries(f *testing.F) {
	for _, lay := range referenceLayouts[:3] {
		l, err := NewLayout(lay.windows, Options{Events: true, Extrema: true, Summaries: []SummaryKind{bagOfValues}})
		if err != nil {
			f.Fatal(err)
		}
		s := l.NewSeries()
		for i := range int64(20) {
			s.Add(1000+i*i*i, 1000+i*i*i-i, float64(i))
		}
		enc, err := s.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
	}
	layouts := make([]*Layout, len(referenceLayouts))
	for i, lay := range referenceLayouts {
		var err error
		if layouts[i], err = NewLayout(lay.windows, Options{Events: true, Extrema: true, Summaries: []SummaryKind{bagOfValues}}); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, l := range layouts {
			s, rest, err := l.DecodeSeries(b)
			if err != nil {
				continue
			}
			enc, err := s.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc, b[:len(b)-len(rest)]) {
				t.Fatalf("decoded %x, encodes as %x", b[:len(b)-len(rest)], enc)
			}
			exercise(l, b)
		}
	})
}

// TestCodecConcurrent encodes a series while events are added to it and it is read: each
// encoding is of one moment of the series, and decodes (the race detector checks the
// locking).
func TestCodecConcurrent(t *testing.T) {
	l, err := NewLayout(defaultWindows, Options{Events: true, Summaries: []SummaryKind{bagOfValues}})
	if err != nil {
		t.Fatal(err)
	}
	s := l.NewSeries()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range int64(2000) {
			s.Add(1000+i/10, 1000+i/10, 1)
			s.Read(1000+i/10, 1000, nil)
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		enc, err := s.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := l.DecodeSeries(enc)
		if err != nil {
			t.Fatal(err)
		}
		// Events come ten a second: the copy's newest second says how many it holds.
		last := c.LastAdd()
		if last == math.MinInt64 {
			continue
		}
		lo, hi := float64(10*(last-1000)+1), float64(10*(last-1000)+10)
		if st := c.Read(1200, 1000, nil); st[4].Events < lo || st[4].Events > hi {
			t.Fatalf("copy of last add %d holds %v events, want %v to %v", last, st[4].Events, lo, hi)
		}
	}
}

// TestCodecRefusesNonFinite: a slot's sum is of values the store admitted, finite, and an
// extremum is a value or, in a slot without one, infinite: a NaN or an infinite sum is an
// edited file, refused rather than restored and read as the window's sum.
func TestCodecRefusesNonFinite(t *testing.T) {
	l, err := NewLayout(defaultWindows, Options{Events: true, Extrema: true})
	if err != nil {
		t.Fatal(err)
	}
	s := l.NewSeries()
	lo, hi := 1.1, 2.2 // of long encodings, found nowhere else
	s.Add(1000, 1000, lo)
	s.Add(1000, 1000, hi)
	enc, err := s.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.DecodeSeries(enc); err != nil {
		t.Fatalf("unspoilt: %v", err)
	}
	for _, tc := range []struct {
		field string
		v     float64 // the field's value, which every wheel's slot holds
	}{{"sum", lo + hi}, {"max", hi}, {"min", lo}} {
		was := wire.AppendFloat(nil, tc.v)
		if n := bytes.Count(enc, was); n != len(l.wheels) {
			t.Fatalf("%s found %d times, want once per wheel (%d)", tc.field, n, len(l.wheels))
		}
		for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			if tc.field != "sum" && !math.IsNaN(bad) {
				continue // an extremum may be infinite
			}
			t.Run(fmt.Sprint(tc.field, " ", bad), func(t *testing.T) {
				b := bytes.ReplaceAll(enc, was, wire.AppendFloat(nil, bad))
				if _, _, err := l.DecodeSeries(b); !errors.Is(err, wire.ErrCorrupt) {
					t.Errorf("decoded: %v, want ErrCorrupt", err)
				}
			})
		}
	}
}

// TestCodecRefusesImpossibleSlots: a written slot holds at least one event, each counted
// one at a time, and its extrema are values of them: a count that is not a whole number
// of at least one, or an extremum that is infinite (the mark of a slot without events) or
// past the other, is an edited file, refused rather than restored and read as the
// window's events, mean, max or min.
func TestCodecRefusesImpossibleSlots(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		// spoil changes a written slot, of its layout.
		spoil func(l *Layout, d []float64)
	}{
		{"negative count", Options{Events: true}, func(l *Layout, d []float64) { d[l.events] = -d[l.events] }},
		{"fractional count", Options{Events: true}, func(l *Layout, d []float64) { d[l.events] += 0.5 }},
		{"no events", Options{Events: true}, func(l *Layout, d []float64) { d[l.events] = 0 }},
		{"infinite count", Options{Events: true}, func(l *Layout, d []float64) { d[l.events] = math.Inf(1) }},
		{"no events, extrema kept", Options{Events: true, Extrema: true}, func(l *Layout, d []float64) { d[l.events] = 0 }},
		{"infinite max", Options{Events: true, Extrema: true}, func(l *Layout, d []float64) { d[l.extrema] = math.Inf(1) }},
		{"max of no events", Options{Events: true, Extrema: true}, func(l *Layout, d []float64) { d[l.extrema] = math.Inf(-1) }},
		{"infinite min", Options{Events: true, Extrema: true}, func(l *Layout, d []float64) { d[l.extrema+1] = math.Inf(-1) }},
		{"min of no events", Options{Events: true, Extrema: true}, func(l *Layout, d []float64) { d[l.extrema+1] = math.Inf(1) }},
		{"min past max", Options{Events: true, Extrema: true}, func(l *Layout, d []float64) {
			d[l.extrema], d[l.extrema+1] = d[l.extrema+1], d[l.extrema]
		}},
		{"min of no events, extrema alone", Options{Extrema: true}, func(l *Layout, d []float64) { d[l.extrema+1] = math.Inf(1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLayout(defaultWindows, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			s := l.NewSeries()
			s.Add(1000, 1000, 1.5)
			s.Add(1000, 1000, -2)
			enc, err := s.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := l.DecodeSeries(enc); err != nil {
				t.Fatalf("unspoilt: %v", err)
			}
			spoilt := 0
			for i := 0; i < len(s.data); i += l.stride {
				if !s.cleared(i) {
					tc.spoil(l, s.data[i:i+l.stride])
					spoilt++
				}
			}
			if spoilt == 0 {
				t.Fatal("no slot written")
			}
			if enc, err = s.AppendBinary(nil); err != nil {
				t.Fatal(err)
			}
			if _, _, err := l.DecodeSeries(enc); !errors.Is(err, wire.ErrCorrupt) {
				t.Errorf("decoded: %v, want ErrCorrupt", err)
			}
		})
	}
}
