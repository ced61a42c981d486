package sketch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/internal/testutil/reference"
	"github.com/logwindow/logwindow_exporter/windows"
)

var defaultWindows = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour}

// tick is one second of a stream: the values added at it (at times up to a few seconds
// back), and whether the windows are read after them.
type tick struct {
	now  int64
	adds []timed
	read bool
}

type timed struct {
	at int64
	v  float64
}

// windowBounds are the histogram bounds TestWindowedQuantiles counts values in.
var windowBounds = []float64{0.005, 0.01, 0.1, 1, 10}

// windowStreams are the adversarial streams of the reference test, each a few hours long.
var windowStreams = []struct {
	name string
	gen  func(r *rand.Rand) []tick
	// seeds is how many seeds the stream runs on. Bursts at slot edges runs on one: its
	// reads each check some 100,000 values, so that one seed of it costs as much as all
	// the other streams' three. Broken merges, bounds and roll-ups died on each of its
	// seeds within its first minutes, or lived through all three, while some lived
	// through one seed of another stream and died on the next.
	seeds int
}{
	{"random", func(r *rand.Rand) []tick {
		return stream(r, 0, 3*3600, func(now int64) []timed {
			vs := make([]timed, r.IntN(4))
			for i := range vs {
				vs[i] = timed{now - r.Int64N(5), logUniform(r, 1e-3, 10)}
			}
			return vs
		})
	}, 3},
	{"late into sealed slots of every wheel", func(r *rand.Rand) []tick {
		return stream(r, 0, 3*3600, func(now int64) []timed {
			vs := make([]timed, r.IntN(6))
			for i := range vs {
				at := now
				switch x := r.IntN(10); {
				case x == 0:
					at -= 10 + r.Int64N(400) // a sealed 10 s slot, a minute's
				case x == 1:
					at -= r.Int64N(20 * 3600) // an hour's
				}
				vs[i] = timed{at, logUniform(r, 1e-3, 10)}
			}
			return vs
		})
	}, 3},
	{"level changes every 20s", func(r *rand.Rand) []tick {
		return stream(r, 0, 2*3600, func(now int64) []timed {
			level := []float64{0.002, 0.5, 8, 0.03}[now/20%4]
			return []timed{{now, level * (1 + r.Float64()/10)}, {now, level}}
		})
	}, 3},
	{"bursts at slot edges", func(r *rand.Rand) []tick {
		return stream(r, 0, 3*3600, func(now int64) []timed {
			var vs []timed
			for _, step := range []int64{10, 60, 3600} {
				if m := now % step; m == 0 || m == step-1 {
					for range 20 + r.IntN(50) {
						vs = append(vs, timed{now, float64(step) * logUniform(r, 0.1, 10)})
					}
				}
			}
			return vs
		})
	}, 1},
	{"gaps longer than the wheel", func(r *rand.Rand) []tick {
		var out []tick
		for burst := range int64(4) {
			from := burst * (26*3600 + r.Int64N(3600))
			out = append(out, stream(r, from, 600, func(now int64) []timed {
				return []timed{{now, logUniform(r, 1e-3, 10)}}
			})...)
			out = append(out, tick{now: base + from + 600 + 13*3600, read: true})
		}
		return out
	}, 3},
	{"zeros and negatives", func(r *rand.Rand) []tick {
		return stream(r, 0, 2*3600, func(now int64) []timed {
			v := []float64{0, -logUniform(r, 1e-3, 100), logUniform(r, 1e-3, 10), 0}[r.IntN(4)]
			return []timed{{now, v}}
		})
	}, 3},
	{"on bucket bounds", func(r *rand.Rand) []tick {
		// Values at the bounds TestWindowedQuantiles counts in, a float either side of them,
		// signed zeros, and out of order.
		return stream(r, 0, 2*3600, func(now int64) []timed {
			vs := make([]timed, r.IntN(4))
			for i := range vs {
				v := windowBounds[r.IntN(len(windowBounds))]
				switch r.IntN(5) {
				case 0:
					v = math.Nextafter(v, 0)
				case 1:
					v = math.Nextafter(v, math.Inf(1))
				case 2:
					v = math.Copysign(0, float64(r.IntN(2)*2-1))
				}
				vs[i] = timed{now - r.Int64N(12), v}
			}
			return vs
		})
	}, 3},
	{"one value repeated", func(r *rand.Rand) []tick {
		return stream(r, 0, 2*3600, func(now int64) []timed {
			return slices.Repeat([]timed{{now, 0.042}}, 1+r.IntN(40))
		})
	}, 3},
}

// base is where streams start: on a day boundary, so that every slot edge is at a round
// offset from it.
const base = 1_700_000_000 / 86400 * 86400

// stream runs secs seconds from base+from, adding what add returns for each second and
// reading the windows now and then and around slot edges.
func stream(r *rand.Rand, from, secs int64, add func(now int64) []timed) []tick {
	out := make([]tick, 0, secs)
	for now := base + from; now < base+from+secs; now++ {
		m := now % 600
		out = append(out, tick{now: now, adds: add(now), read: r.IntN(60) == 0 || m == 0 || m == 9 || m == 599})
	}
	return out
}

// TestWindowedQuantiles is the reference model for the windowed quantiles: every value is
// stored with its second, and each read compares every window's quantiles (and bucket
// counts) with the exact rank ⌈q·n⌉ among the values from the start of the window's edge
// slot (as documented: up to 10 s for windows ≤ 5m, 1 min ≤ 1h, 1 h beyond) through now.
func TestWindowedQuantiles(t *testing.T) {
	l, err := windows.NewLayout(defaultWindows, windows.Options{Summaries: []windows.SummaryKind{QuantilesKind, BucketsKind(windowBounds)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range windowStreams {
		seeds := st.seeds
		if testing.Short() || race.Enabled {
			seeds = 1
		}
		for seed := range seeds {
			t.Run(st.name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(seed), 11))
				s := l.NewSeries()
				var held []timed
				ticks := st.gen(r)
				if testing.Short() || race.Enabled {
					ticks = ticks[:len(ticks)/4]
				}
				dst := l.NewSummaries()
				reads := 0
				for _, tk := range ticks {
					for _, a := range tk.adds {
						if p := s.Add(tk.now, a.at, a.v); p != windows.Placed {
							t.Fatalf("add at %d of %d: %v", a.at, tk.now, p)
						}
						held = append(held, a)
					}
					if !tk.read {
						continue
					}
					reads++
					held = slices.DeleteFunc(held, func(h timed) bool { return h.at <= tk.now-25*3600 })
					s.ReadSummaries(tk.now, dst)
					if err := checkWindows(dst, held, tk.now, windowBounds); err != nil {
						t.Fatalf("read at %d: %v", tk.now, err)
					}
				}
				if reads < 5 {
					t.Fatalf("only %d reads", reads)
				}
			})
		}
	}
}

func checkWindows(dst []windows.Summary, held []timed, now int64, bounds []float64) error {
	for i, w := range defaultWindows {
		edge := reference.SummaryEdge(now, w)
		var vs []float64
		sum := 0.0
		for _, h := range held {
			if h.at >= edge && h.at <= now {
				vs = append(vs, h.v)
				sum += h.v
			}
		}
		slices.Sort(vs)
		q, b := dst[2*i].(*Quantiles), dst[2*i+1].(*Buckets)
		if q.Count() != uint64(len(vs)) || b.Count() != uint64(len(vs)) {
			return fmt.Errorf("window %v: counts %d, %d, want %d", w, q.Count(), b.Count(), len(vs))
		}
		if len(vs) == 0 {
			if !math.IsNaN(q.Quantile(0.5)) {
				return fmt.Errorf("window %v: empty window has a median %v", w, q.Quantile(0.5))
			}
			continue
		}
		for _, p := range probes {
			if got, want := q.Quantile(p), exactRank(vs, p); !withinBound(got, want) {
				return fmt.Errorf("window %v: q%v = %v, exact %v (n=%d)", w, p, got, want, len(vs))
			}
		}
		if math.Abs(b.Sum()-sum) > 1e-9*(1+math.Abs(sum)) {
			return fmt.Errorf("window %v: sum %v, want %v", w, b.Sum(), sum)
		}
		var err error
		b.Cumulative(func(le float64, n uint64) {
			if want, _ := slices.BinarySearch(vs, math.Nextafter(le, math.Inf(1))); n != uint64(want) && err == nil {
				err = fmt.Errorf("window %v: bucket le=%v holds %d, want %d", w, le, n, want)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}
