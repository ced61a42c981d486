package windows

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

var defaultWindows = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour}

// referenceLayouts cover every wheel, windows on both sides of each wheel's limit, windows
// that are not a whole number of slots, unsorted and duplicate windows, and every option.
var referenceLayouts = []struct {
	name    string
	windows []time.Duration
}{
	{"defaults", defaultWindows},
	{"seconds only", []time.Duration{time.Minute, 5 * time.Minute}},
	{"one day", []time.Duration{24 * time.Hour}},
	{"wheel limits", []time.Duration{
		time.Second, 7 * time.Second, 299 * time.Second, 300 * time.Second, 301 * time.Second,
		17*time.Minute + 13*time.Second, 5 * time.Hour, 5*time.Hour + time.Second,
		7 * 24 * time.Hour, 300 * time.Hour, 300*time.Hour + time.Second, MaxWindow,
	}},
	{"unsorted", []time.Duration{time.Hour, 90 * time.Second, time.Hour, 10 * time.Minute, 2 * time.Second}},
}

var allOptions = []Options{{}, {Events: true}, {Extrema: true}, {Events: true, Extrema: true}}

// windowEnds are both ends a window may have: the current second, or the last complete
// one (Options.LastComplete).
var windowEnds = []struct {
	name         string
	lastComplete bool
}{{"current second", false}, {"last complete second", true}}

// gen builds one random stream for a layout whose longest window is longest seconds.
type gen func(r *rand.Rand, longest int64) []op

var generators = []struct {
	name string
	gen  gen
}{
	{"random", genRandom},
	{"slot edges", genEdges},
	{"idle then one", genIdle},
	{"out of order", genOutOfOrder},
	{"clock steps back", genStepBack},
	{"clock ahead and back", genAheadAndBack},
	{"filling second", genFilling},
	{"log read behind", genBehind},
	{"edges of time", genFarthest},
}

// TestReferenceModel compares every window of the wheels with the naive model over
// thousands of random and adversarial streams.
func TestReferenceModel(t *testing.T) {
	cases := 60
	if testing.Short() || race.Enabled {
		cases = 4
	}
	n := 0 // numbers the subtests, of which race.Runs says which run
	for _, g := range generators {
		for _, lay := range referenceLayouts {
			for _, opts := range allOptions {
				for _, end := range windowEnds {
					opts := opts
					opts.LastComplete = end.lastComplete
					if n++; !race.Runs(n) {
						continue
					}
					t.Run(g.name+"/"+lay.name+"/"+optName(opts)+"/"+end.name, func(t *testing.T) {
						t.Parallel()
						l, err := NewLayout(lay.windows, opts)
						if err != nil {
							t.Fatal(err)
						}
						for c := range cases {
							r := rand.New(rand.NewPCG(uint64(c), uint64(len(g.name)*131+len(lay.name))))
							ops := g.gen(r, l.Longest())
							if !opts.Events {
								for i := range ops {
									ops[i].v = 1
								}
							}
							since := ops[0].now - r.Int64N(2*l.Longest())
							if r.IntN(4) == 0 {
								since = ops[0].now + r.Int64N(1000)
							}
							if err := replay(l, since, ops); err != nil {
								t.Fatalf("case %d (since %d): %v", c, since, err)
							}
						}
					})
				}
			}
		}
	}
}

func optName(o Options) string {
	switch {
	case o.Events && o.Extrema:
		return "events+extrema"
	case o.Events:
		return "events"
	case o.Extrema:
		return "extrema"
	}
	return "sum"
}

// baseTime is a start second: usually now-ish, sometimes around or before 1970 so that
// negative seconds align like others.
func baseTime(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return r.Int64N(200000) - 100000
	case 1:
		return -1_000_000_000 + r.Int64N(1_000_000)
	}
	return 1_700_000_000 + r.Int64N(100_000_000)
}

// value is a multiple of 1/8, so that sums in any order are exact and the exact windows
// can be compared with ==.
func value(r *rand.Rand) float64 { return float64(r.IntN(161)-40) / 8 }

// gap draws how far the clock moves: mostly not or a little, sometimes about a slot of each
// wheel, sometimes longer than every wheel.
func gap(r *rand.Rand) int64 {
	switch x := r.IntN(100); {
	case x < 50:
		return 0
	case x < 75:
		return 1 + r.Int64N(3)
	case x < 85:
		return 55 + r.Int64N(10)
	case x < 91:
		return 3590 + r.Int64N(20)
	case x < 95:
		return 86390 + r.Int64N(20)
	case x < 98:
		return r.Int64N(2_000_000)
	}
	return 30_000_000 + r.Int64N(10_000_000)
}

// genRandom mixes everything: gaps of all sizes, events a little or a lot in the past, in
// the future, at the Late edge, stale nows from racing callers, reads ahead of the clock.
func genRandom(r *rand.Rand, longest int64) []op {
	now := baseTime(r)
	ops := make([]op, 0, 300)
	for range 300 {
		now += gap(r)
		o := op{now: now, at: now, v: value(r)}
		switch x := r.IntN(100); {
		case x < 20:
			o.read = true
			switch r.IntN(3) {
			case 0:
				o.now += r.Int64N(2 * longest)
			case 1:
				o.now -= r.Int64N(5)
			}
		case x < 40:
			o.at -= r.Int64N(10)
		case x < 45:
			o.at += 1 + r.Int64N(5)
		case x < 50:
			o.at = now - longest + r.Int64N(3) - 1
		case x < 55:
			o.at -= r.Int64N(longest + 100)
		case x < 60:
			o.now -= 1 + r.Int64N(5)
			o.at = o.now - r.Int64N(3)
		}
		ops = append(ops, o)
	}
	return ops
}

// genEdges puts events and reads on the last and first seconds of minutes, hours and
// days, and reads where a window's old edge falls on a slot edge.
func genEdges(r *rand.Rand, longest int64) []op {
	steps := []int64{60, 3600, 86400}
	now := floorDiv(baseTime(r), 86400) * 86400
	ops := make([]op, 0, 400)
	for range 100 {
		step := steps[r.IntN(len(steps))]
		edge := (floorDiv(now, step) + 1 + r.Int64N(3)) * step
		for d := int64(-1); d <= 1; d++ {
			now = max(now, edge+d)
			for range 1 + r.IntN(5) {
				ops = append(ops, op{now: now, at: now - r.Int64N(2), v: value(r)})
			}
		}
		w := []int64{60, 300, 900, 3600, 86400, longest}[r.IntN(6)]
		ops = append(ops,
			op{read: true, now: edge + w - 1},
			op{read: true, now: edge + w},
			op{read: true, now: edge + w - 2},
			op{read: true, now: now})
	}
	return ops
}

// genIdle fills the wheels, idles for hours to a year, adds one event and reads around it.
func genIdle(r *rand.Rand, longest int64) []op {
	now := baseTime(r)
	var ops []op
	for range 3 {
		for range 20 + r.IntN(50) {
			now += r.Int64N(3)
			ops = append(ops, op{now: now, at: now, v: value(r)})
		}
		ops = append(ops, op{read: true, now: now})
		idle := []int64{3 * 3600, 25 * 3600, 8 * 86400, 400 * 86400}[r.IntN(4)]
		ops = append(ops, op{read: true, now: now + idle/2})
		now += idle + r.Int64N(3600)
		ops = append(ops, op{now: now, at: now, v: value(r)})
		for range 10 {
			ops = append(ops, op{read: true, now: now + r.Int64N(longest+2)})
		}
	}
	return ops
}

// genOutOfOrder is a busy stream whose events arrive up to ten seconds late, read often.
func genOutOfOrder(r *rand.Rand, longest int64) []op {
	now := baseTime(r)
	ops := make([]op, 0, 600)
	for range 600 {
		if r.IntN(3) == 0 {
			now++
		}
		if r.IntN(8) == 0 {
			ops = append(ops, op{read: true, now: now})
			continue
		}
		ops = append(ops, op{now: now, at: now - r.Int64N(11), v: value(r)})
	}
	return ops
}

// genStepBack fills the wheels, then steps the clock back (as a wall clock does after an
// NTP correction) by less than, exactly, or more than the longest window, and goes on
// adding and reading from there.
func genStepBack(r *rand.Rand, longest int64) []op {
	now := baseTime(r)
	var ops []op
	for range 3 {
		for range 30 + r.IntN(60) {
			now += r.Int64N(3)
			ops = append(ops, op{now: now, at: now - r.Int64N(3), v: value(r)})
		}
		back := []int64{1 + r.Int64N(10), longest - 1 - r.Int64N(longest/2), longest, longest + 1 + r.Int64N(3600), 2 * 3600}[r.IntN(5)]
		now -= back
		ops = append(ops, op{read: true, now: now}, op{read: true, now: now + r.Int64N(longest+2)})
		for range 10 + r.IntN(20) {
			now += r.Int64N(3)
			ops = append(ops, op{now: now, at: now + r.Int64N(3) - 1, v: value(r)})
			if r.IntN(4) == 0 {
				ops = append(ops, op{read: true, now: now})
			}
		}
	}
	return ops
}

// genAheadAndBack is a clock that jumps ahead of the events' own times, which go on as
// they were, by less than, about or more than a wheel's length, and comes back (an event-
// time rule's wall clock set wrong and corrected while its log comes from elsewhere);
// reads while it is ahead, as it comes back and after.
func genAheadAndBack(r *rand.Rand, longest int64) []op {
	real := baseTime(r)
	var ops []op
	for range 3 {
		ahead := []int64{1 + r.Int64N(10), 300 + r.Int64N(3) - 1, longest/2 + r.Int64N(longest/2), longest - 1, 3600 + r.Int64N(60)}[r.IntN(5)]
		for _, skew := range []int64{0, ahead, 0} {
			for range 20 + r.IntN(40) {
				real += r.Int64N(3)
				ops = append(ops, op{now: real + skew, at: real - r.Int64N(3) + r.Int64N(2), v: value(r)})
				if r.IntN(5) == 0 {
					ops = append(ops, op{read: true, now: real + skew - r.Int64N(2)})
				}
			}
		}
	}
	return ops
}

// genBehind is a log read after it was written: runs of lines of one second, up to the
// longest window behind the clock, which moves under a run now and then by a second or
// across a slot of each wheel, so that the next line of the run goes to a slot found
// anew (and sometimes a line of the earliest second comes then); between runs the lines'
// second moves on, stays, or jumps.
func genBehind(r *rand.Rand, longest int64) []op {
	now := baseTime(r)
	at := now - r.Int64N(longest+10)
	ops := make([]op, 0, 600)
	for range 100 {
		for range 1 + r.IntN(8) {
			if r.IntN(4) == 0 {
				now += []int64{1, 9, 10, 59, 60, 3599, 3600}[r.IntN(7)]
				if r.IntN(4) == 0 {
					// The earliest second, which is the memo's "none", is late, also when the
					// memo holds none since the clock moved (the first of the two moved it).
					late := op{now: now, at: math.MinInt64, v: value(r)}
					ops = append(ops, late, late)
				}
			}
			ops = append(ops, op{now: now, at: at, v: value(r)})
			if r.IntN(5) == 0 {
				ops = append(ops, op{read: true, now: now})
			}
		}
		switch x := r.IntN(10); {
		case x < 6:
			at += r.Int64N(3)
		case x < 9:
			at = now - r.Int64N(longest+10)
		default:
			at = now + r.Int64N(3)
		}
	}
	return ops
}

// genFilling is a stream read during the second it fills, and in the next: bursts at the
// current second around the edges of 10-second, minute and hour slots, with the last
// second of the previous slot and the first of the next both busy and both read.
func genFilling(r *rand.Rand, longest int64) []op {
	steps := []int64{10, 60, 3600}
	now := baseTime(r)
	ops := make([]op, 0, 600)
	for range 60 {
		step := steps[r.IntN(len(steps))]
		edge := (floorDiv(now, step) + 1 + r.Int64N(2)) * step
		if r.IntN(3) == 0 {
			edge += r.Int64N(longest)
		}
		for now = max(now, edge-2); now <= edge+1; now++ {
			for range r.IntN(4) {
				ops = append(ops, op{now: now, at: now, v: value(r)}, op{read: true, now: now})
			}
			ops = append(ops, op{read: true, now: now + 1})
		}
		// One late event at the oldest second a window ending at the last complete second
		// still holds, and the reads either side of it.
		ops = append(ops, op{now: now, at: now - longest, v: value(r)},
			op{read: true, now: now}, op{read: true, now: now + longest - 1}, op{read: true, now: now + longest})
	}
	return ops
}

// genFarthest runs the clock up to where times are clamped (±2^50 s) and past it, with
// events and reads from the ends of int64 and far ahead of the clock.
func genFarthest(r *rand.Rand, longest int64) []op {
	edge := int64(farthest)
	if r.IntN(2) == 0 {
		edge = -farthest
	}
	now := edge - r.Int64N(3*longest)
	ends := []int64{math.MinInt64, math.MinInt64 + 1, math.MaxInt64 - 1, math.MaxInt64}
	ops := make([]op, 0, 300)
	for range 300 {
		now += []int64{0, 0, 1, 3, 59, 3600, longest, 1 << 40}[r.IntN(8)]
		o := op{now: now, at: now - r.Int64N(longest+3), v: value(r)}
		switch x := r.IntN(10); {
		case x < 2:
			o.read = true
			o.now += r.Int64N(2 * longest)
			if x == 0 {
				o.now = ends[r.IntN(len(ends))]
			}
		case x < 4:
			o.at = ends[r.IntN(len(ends))]
		case x < 5:
			o.at = now + r.Int64N(1<<52)
		case x < 6:
			o.now = ends[r.IntN(len(ends))]
		}
		ops = append(ops, o)
	}
	return ops
}
