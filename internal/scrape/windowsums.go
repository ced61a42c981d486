package scrape

import (
	"math"
	"time"

	"github.com/logwindow/logwindow_exporter/windows"
)

// WindowSums is one rule's windows read over its series, one number per window and
// family that is one over series: its `_window`, `_window_per_second` and
// `_window_events` samples summed, the largest of its `_window_max` and the smallest of
// its `_window_min`. Which of them the rule exports is its aggregations' to say; the
// others hold what the wheels keep, or nothing.
type WindowSums struct {
	Rule string
	// Windows are the rule's windows, ascending; Totals[i] is over Windows[i]: Sum,
	// Events and PerSecond summed over the series, Max and Min their largest and
	// smallest, NaN when no series has a value in the window.
	Windows []time.Duration
	Totals  []windows.Stats
	// Series is how many series the sums are over: those a scrape exports now.
	Series int
}

// WindowSums reads every rule of the Set in use as a scrape would at this instant (the same
// clocks, the same series) and sums its samples per window (see WindowSums). The work is
// that of reading the windowed families of every rule: bounded by the series the rules
// may hold.
func (c *Collector) WindowSums() []WindowSums {
	set := c.opts.Set()
	if set == nil {
		return nil
	}
	v := c.view(set, 1)
	defer c.release(v)
	var stats, more []windows.Stats
	out := make([]WindowSums, 0, set.NumRules())
	for i := range v.rules {
		r, rv := set.Rule(i), &v.rules[i]
		ws := r.Layout().Windows()
		sums := WindowSums{Rule: r.Config().Name, Windows: ws, Totals: make([]windows.Stats, len(ws)), Series: len(rv.series)}
		for j := range sums.Totals {
			sums.Totals[j].Max, sums.Totals[j].Min = math.NaN(), math.NaN()
		}
		for _, s := range rv.series {
			if !r.Live(s, rv.now) {
				continue // a kept counter: its windows hold nothing
			}
			if stats = r.Read(s, rv.now, rv.since, stats[:0], &more); len(stats) != len(ws) {
				continue
			}
			for j, st := range stats {
				t := &sums.Totals[j]
				t.Sum += st.Sum
				t.Events += st.Events
				t.PerSecond += st.PerSecond
				// NaN, a window without a value, is passed over by both comparisons.
				if st.Max > t.Max || math.IsNaN(t.Max) {
					t.Max = st.Max
				}
				if st.Min < t.Min || math.IsNaN(t.Min) {
					t.Min = st.Min
				}
			}
		}
		out = append(out, sums)
	}
	return out
}
