package scrape

import (
	"time"

	"github.com/logwindow/logwindow_exporter/windows"
)

// WindowSums is one rule's `_window` family summed over its series: the lines it matched
// in each window, or the sum of its value. It is additive over series whatever else the
// rule computes, so one number per window says how much the rule saw.
type WindowSums struct {
	Rule string
	// Windows are the rule's windows, ascending; Sums[i] is the sum over Windows[i].
	Windows []time.Duration
	Sums    []float64
	// Series is how many series the sums are over: those a scrape exports now.
	Series int
}

// WindowSums reads every rule of the Set in use as a scrape would at this instant (the same
// clocks, the same series) and sums its `_window` samples per window. The work is that of
// reading the `_window` family of every rule: bounded by the series the rules may hold.
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
		sums := WindowSums{Rule: r.Config().Name, Windows: ws, Sums: make([]float64, len(ws)), Series: len(rv.series)}
		for _, s := range rv.series {
			if !r.Live(s, rv.now) {
				continue // a kept counter: its windows hold nothing
			}
			if stats = r.Read(s, rv.now, rv.since, stats[:0], &more); len(stats) != len(ws) {
				continue
			}
			for j := range stats {
				sums.Sums[j] += stats[j].Sum
			}
		}
		out = append(out, sums)
	}
	return out
}
