package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/logwindow/logwindow_exporter/internal/sketch"
	"github.com/logwindow/logwindow_exporter/windows"
)

// Aggregations selects the families a rule exports besides `_total`.
type Aggregations struct {
	Window    bool
	PerSecond bool
	Events    bool
	Max       bool
	Min       bool
	Mean      bool
	Quantiles bool
	// Distinct is set by the rule's `distinct:` key, not listed in `aggregations:`.
	Distinct bool
}

// aggregation is one row of the table every use of an aggregation is derived from: the
// name in `aggregations:`, the families it adds, whether it needs a value rule, what the
// wheels must keep for it and its flag in Aggregations.
type aggregation struct {
	name string
	// suffixes are the families it adds to the rule name; nil for quantiles, whose
	// families depend on the rule's quantiles (quantileSuffix).
	suffixes []string
	// value: the aggregation means something only for a value rule.
	value bool
	// keep adds to opts what the wheels must keep for it.
	keep func(opts *windows.Options)
	flag func(a *Aggregations) *bool
	// key names the rule key that turns the aggregation on (it needs more than a name, as
	// `distinct:` its template); such a row is not an `aggregations:` value.
	key string
	// what says what its family holds, for HELP (see Rule.WindowFamilies), and read gives
	// a window's value of it from what the wheels keep, false when the window has none.
	what func(r *Rule) string
	read func(st *windows.Stats) (float64, bool)
	// summarised, for an aggregation read from a per-slot summary instead (what and read
	// are then nil), gives its families; summary is the index of its summary kind among a
	// window's summaries.
	summarised func(r *Rule, summary int) []Family
}

// aggregationTable lists the aggregations in the order their families are listed.
var aggregationTable = []aggregation{
	{name: "window", suffixes: []string{"_window"}, flag: func(a *Aggregations) *bool { return &a.Window },
		what: (*Rule).quantity, read: func(st *windows.Stats) (float64, bool) { return st.Sum, true }},
	{name: "per_second", suffixes: []string{"_window_per_second"}, flag: func(a *Aggregations) *bool { return &a.PerSecond },
		what: func(r *Rule) string {
			q := r.quantity()
			return "Per-second rate of " + strings.ToLower(q[:1]) + q[1:] + " (divided by the seconds observed while fewer than the window)"
		},
		read: func(st *windows.Stats) (float64, bool) { return st.PerSecond, true }},
	{name: "events", suffixes: []string{"_window_events"}, value: true, keep: keepEvents, flag: func(a *Aggregations) *bool { return &a.Events },
		what: func(*Rule) string { return "Matched lines" },
		read: func(st *windows.Stats) (float64, bool) { return st.Events, true }},
	// An empty window has no largest, smallest or mean value: the sample is left out rather
	// than exported as NaN, which dashboards draw badly. Max and Min are NaN exactly then.
	{name: "max", suffixes: []string{"_window_max"}, value: true, keep: keepExtrema, flag: func(a *Aggregations) *bool { return &a.Max },
		what: func(r *Rule) string { return "Largest " + r.ValueName + absent },
		read: func(st *windows.Stats) (float64, bool) { return st.Max, !math.IsNaN(st.Max) }},
	{name: "min", suffixes: []string{"_window_min"}, value: true, keep: keepExtrema, flag: func(a *Aggregations) *bool { return &a.Min },
		what: func(r *Rule) string { return "Smallest " + r.ValueName + absent },
		read: func(st *windows.Stats) (float64, bool) { return st.Min, !math.IsNaN(st.Min) }},
	{name: "mean", suffixes: []string{"_window_mean"}, value: true, keep: keepEvents, flag: func(a *Aggregations) *bool { return &a.Mean },
		what: func(r *Rule) string { return "Mean " + r.ValueName + absent },
		read: func(st *windows.Stats) (float64, bool) { return st.Sum / st.Events, st.Events > 0 }},
	{name: "quantiles", value: true, keep: keepQuantiles, flag: func(a *Aggregations) *bool { return &a.Quantiles },
		summarised: quantileFamilies},
	{name: "distinct", suffixes: []string{DistinctSuffix}, key: "distinct", flag: func(a *Aggregations) *bool { return &a.Distinct },
		summarised: distinctFamilies},
}

// absent ends the HELP of a family that has no sample for an empty window.
const absent = " (absent while the window holds no line)"

// sliding ends the HELP of every windowed family.
const sliding = " over the sliding window in the window label, computed by the exporter at scrape time"

func keepEvents(o *windows.Options)    { o.Events = true }
func keepExtrema(o *windows.Options)   { o.Extrema = true }
func keepQuantiles(o *windows.Options) { o.Summaries = append(o.Summaries, sketch.QuantilesKind) }

// quantileFamilies are a gauge per quantile of r, read from its sketch; a window without a
// value has none.
func quantileFamilies(r *Rule, summary int) []Family {
	var out []Family
	for _, q := range r.Quantiles {
		out = append(out, Family{
			Suffix: QuantileSuffix(q),
			Help: r.windowHelp(fmt.Sprintf("Quantile %v of %s (the value of rank ⌈%v·n⌉ among the window's n values, within 1%%; absent while the window holds no line)",
				q, r.ValueName, q)),
			Summary: summary,
			SummaryValue: func(s windows.Summary) (float64, bool) {
				x, ok := s.(*sketch.Quantiles)
				if !ok || x.Count() == 0 {
					return 0, false
				}
				return x.Quantile(q), true
			},
		})
	}
	return out
}

// HistogramSuffix is the family of a rule with `buckets:`: the window's values as a
// histogram (its _bucket, _sum and _count series). SPEC names it _window_histogram, which
// promtool check metrics flags on a histogram ("metric name should not include type").
const HistogramSuffix = "_window_distribution"

// histogramSeries are the suffixes of the histogram family's series names.
var histogramSeries = []string{"_bucket", "_sum", "_count"}

// DefaultQuantiles are a rule's quantiles when it lists `quantiles` among its aggregations
// without a `quantiles:` key.
var DefaultQuantiles = []float64{0.5, 0.9, 0.99}

// Suffix returns the family suffix of the aggregation of this `aggregations:` name, as the
// table has it ("max" → "_window_max"), for code that writes queries over the families;
// "" for a name whose families depend on the rule (quantiles) or that is not in the table.
func Suffix(aggregation string) string {
	for _, a := range aggregationTable {
		if a.name == aggregation && len(a.suffixes) == 1 {
			return a.suffixes[0]
		}
	}
	return ""
}

// aggregationNames are the `aggregations:` values, in table order.
func aggregationNames() []string {
	var names []string
	for _, a := range aggregationTable {
		if a.key == "" {
			names = append(names, a.name)
		}
	}
	return names
}

// QuantileSuffix names the gauge family of quantile q by its percent, the point written
// as _: 0.5 → _window_p50, 0.999 → _window_p99_9, 0.05 → _window_p5. It works on the
// shortest decimal text of q, so no rounding of q·100 can merge two quantiles.
func QuantileSuffix(q float64) string {
	s := strconv.FormatFloat(q, 'f', -1, 64) // q is in (0, 1): "0.xyz"
	frac, _ := strings.CutPrefix(s, "0.")
	for len(frac) < 2 {
		frac += "0"
	}
	whole := strings.TrimLeft(frac[:2], "0")
	if whole == "" {
		whole = "0"
	}
	if rest := frac[2:]; rest != "" {
		return "_window_p" + whole + "_" + rest
	}
	return "_window_p" + whole
}

// gaugeSuffixes lists the suffix of every gauge family of r, whether it exports the family
// or not (so that turning an aggregation on never makes a valid file invalid): those of
// the table, one per quantile of the rule (the default quantiles when it lists none) and
// the top values'.
func (r *Rule) gaugeSuffixes() []string {
	var out []string
	for _, a := range aggregationTable {
		out = append(out, a.suffixes...)
	}
	qs := r.Quantiles
	if len(qs) == 0 {
		qs = DefaultQuantiles
	}
	for _, q := range qs {
		out = append(out, QuantileSuffix(q))
	}
	return append(out, TopSuffix)
}

// options returns what the wheels of r must keep for its aggregations, and for its buckets
// (a summary of their own, whatever the aggregations).
func (r *Rule) options() windows.Options {
	var o windows.Options
	for _, a := range aggregationTable {
		if *a.flag(&r.Aggregations) && a.keep != nil {
			a.keep(&o)
		}
	}
	if len(r.Buckets) > 0 {
		o.Summaries = append(o.Summaries, sketch.BucketsKind(r.Buckets))
	}
	if r.Top != nil {
		o.Summaries = append(o.Summaries, sketch.TopKind(r.Top.Capacity, r.Top.Item))
	}
	if r.Aggregations.Distinct {
		o.Summaries = append(o.Summaries, sketch.DistinctKind(r.DistinctItem))
	}
	return o
}

// distribution reads `quantiles:` and `buckets:`, which shape a value rule's distribution
// families: the quantiles exported (DefaultQuantiles unless listed) and the bounds of the
// window histogram.
func (rd *ruleDecoder) distribution(entries []entry, r *Rule, isValue bool) {
	if e, ok := find(entries, "quantiles"); ok {
		qs, ok := rd.numbers(e, "quantiles")
		switch {
		case !isValue:
			rd.add(e.key.Line, rd.subject, "quantiles: needs a value: capture (the quantiles are of the values)")
		case !r.Aggregations.Quantiles:
			rd.add(e.key.Line, rd.subject, "quantiles: add quantiles to aggregations to export them")
		default:
			for i, q := range qs {
				switch {
				case !(q > 0 && q < 1):
					rd.add(e.key.Line, rd.subject, "quantiles: %v is not between 0 and 1 (exclusive); write e.g. 0.99 for p99", q)
					ok = false
				case slices.Contains(qs[:i], q):
					rd.add(e.key.Line, rd.subject, "quantiles: %v is listed twice", q)
					ok = false
				}
			}
			if ok {
				r.Quantiles = qs
			}
		}
	}
	if r.Aggregations.Quantiles && r.Quantiles == nil {
		r.Quantiles = slices.Clone(DefaultQuantiles)
	}
	if e, ok := find(entries, "buckets"); ok {
		bs, ok := rd.numbers(e, "buckets")
		if !isValue {
			rd.add(e.key.Line, rd.subject, "buckets: needs a value: capture (the buckets count the values)")
			return
		}
		for i, b := range bs {
			switch {
			case math.IsInf(b, 0):
				rd.add(e.key.Line, rd.subject, "buckets: %v: every bound must be finite (the +Inf bucket is always there)", b)
				ok = false
			case i > 0 && b == bs[i-1]:
				rd.add(e.key.Line, rd.subject, "buckets: %v is listed twice", b)
				ok = false
			case i > 0 && b < bs[i-1]:
				rd.add(e.key.Line, rd.subject, "buckets: %v comes after %v; list the bounds in ascending order", b, bs[i-1])
				ok = false
			}
		}
		if ok && len(bs) == 0 {
			rd.add(e.key.Line, rd.subject, "buckets: the list is empty; give the upper bounds (e.g. [0.01, 0.1, 1])")
			ok = false
		}
		if ok {
			r.Buckets = bs
		}
	}
}

// numbers reads a list of numbers.
func (rd *ruleDecoder) numbers(e entry, what string) ([]float64, bool) {
	texts, ok := rd.list(e, rd.subject, what)
	out := make([]float64, 0, len(texts))
	for _, t := range texts {
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsNaN(f) {
			rd.add(e.key.Line, rd.subject, "%s: %q is not a number", what, t)
			ok = false
			continue
		}
		out = append(out, f)
	}
	return out, ok
}

// Family is one windowed family of a rule, derived from the aggregation table (and the
// rule's buckets): its name after the rule's, its HELP and how a window's value is read.
// Every family has the rule's labels and the window label.
type Family struct {
	Suffix string
	Help   string
	// Stat reads the value from a window's Stats; false: the window has none (no sample).
	// Nil for a family read from a summary.
	Stat func(st *windows.Stats) (float64, bool)
	// Summary is the index, among a window's summaries in the layout's kind order, of the
	// summary read by SummaryValue or, for the Histogram, as a BucketsReader.
	Summary      int
	SummaryValue func(s windows.Summary) (float64, bool)
	// Histogram: the family is the window histogram (HistogramSuffix).
	Histogram bool
	// Top is set for the top values' family (TopSuffix): per window, the K values of the
	// ranked label with the largest sums, the label's pair added to the series' pairs.
	Top *Top
}

// WindowFamilies are the windowed families r exports, in table order, then the histogram
// and the top values.
// The summaries are numbered as options() adds their kinds, so Family.Summary indexes a
// window's summaries of r.Layout.
func (r *Rule) WindowFamilies() []Family {
	var out []Family
	var o windows.Options
	var keyed []aggregation
	for _, a := range aggregationTable {
		if !*a.flag(&r.Aggregations) {
			continue
		}
		if a.key != "" {
			keyed = append(keyed, a) // options() adds their kinds after top's
			continue
		}
		kinds := len(o.Summaries)
		if a.keep != nil {
			a.keep(&o) // as options() does, so that kinds is the summary's index
		}
		switch {
		case a.value && !r.IsValueRule():
			continue
		case a.summarised != nil:
			out = append(out, a.summarised(r, kinds)...)
		default:
			out = append(out, Family{Suffix: a.suffixes[0], Help: r.windowHelp(a.what(r)), Stat: a.read})
		}
	}
	if len(r.Buckets) > 0 {
		out = append(out, Family{Suffix: HistogramSuffix, Summary: len(o.Summaries), Histogram: true,
			Help: strings.TrimSpace(r.help() + " " + r.ValueName + " of the lines" + sliding +
				", as a gauge histogram: the buckets count the window's values, so never apply rate() or increase() to it;" +
				" sum it by le across instances for histogram_quantile.")})
		o.Summaries = append(o.Summaries, windows.SummaryKind{})
	}
	if t := r.Top; t != nil {
		quantity := "most matched lines"
		if r.IsValueRule() {
			quantity = "largest sum of " + r.ValueName
		}
		text := fmt.Sprintf("%s The %d values of %s with the %s%s", r.help(), t.K, t.Label, quantity, sliding)
		if t.Min > 0 {
			text += fmt.Sprintf(", of those at least %v", t.Min)
		}
		text += fmt.Sprintf("; each at most the window's total/%d below its true sum, never above it.", t.Capacity+1)
		out = append(out, Family{Suffix: TopSuffix, Summary: len(o.Summaries), Top: t, Help: strings.TrimSpace(text)})
		o.Summaries = append(o.Summaries, windows.SummaryKind{})
	}
	for _, a := range keyed {
		out = append(out, a.summarised(r, len(o.Summaries))...)
		o.Summaries = append(o.Summaries, windows.SummaryKind{})
	}
	return out
}

// distinctFamilies is the count of different texts of the rule's distinct: template; 0
// while the window holds no line, as its _window count is.
func distinctFamilies(r *Rule, summary int) []Family {
	return []Family{{
		Suffix:  DistinctSuffix,
		Help:    r.windowHelp("Different values of the rule's distinct: template among the lines (within max(2, 2%) of the exact count)"),
		Summary: summary,
		SummaryValue: func(s windows.Summary) (float64, bool) {
			x, ok := s.(*sketch.Distinct)
			if !ok {
				return 0, false
			}
			return float64(x.Count()), true
		},
	}}
}

// TotalHelp is the HELP of the rule's _total counter.
func (r *Rule) TotalHelp() string {
	return strings.TrimSpace(r.help() + " " + r.quantity() + " since the exporter started.")
}

// help is the rule's own HELP text as a sentence, or empty.
func (r *Rule) help() string {
	h := strings.TrimSpace(r.Help)
	if h != "" && !strings.HasSuffix(h, ".") {
		h += "."
	}
	return h
}

// quantity is what the rule counts.
func (r *Rule) quantity() string {
	if r.IsValueRule() {
		return "Sum of " + r.ValueName
	}
	return "Matched lines"
}

// windowHelp is the HELP of a windowed family holding what.
func (r *Rule) windowHelp(what string) string {
	return strings.TrimSpace(r.help() + " " + what + sliding + ".")
}
