// Package quantity is the table of what a rule can compute over its windows: the names
// accepted in `aggregations:`, the families each adds with their HELP, whether it needs a
// value rule, what the wheels must keep for it and how a window's value is read from what
// they keep. config validates rules against it, the store sizes each rule's wheels from
// it, and the exposition and the dashboard name and read the families by it, so that a
// new quantity is one row here.
package quantity

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/logwindow/logwindow_exporter/windows"
	"github.com/logwindow/logwindow_exporter/windows/sketch"
)

// Spec is what one rule computes per series beyond its `_total`, as config validated it:
// everything its families, their HELP and its wheels' layout derive from.
type Spec struct {
	// Help is the rule's HELP text as written (config fills in a default); ValueName is
	// the capture a value rule sums, empty for a rule that counts lines.
	Help      string
	ValueName string
	// Aggregations are the families exported besides `_total`.
	Aggregations Aggregations
	// Quantiles are the quantiles exported with Aggregations.Quantiles, in (0, 1), as
	// listed; Buckets are the ascending upper bounds of the window histogram, nil for none.
	Quantiles []float64
	Buckets   []float64
	// Top is nil unless the rule ranks the values of one of its labels (`top:`).
	Top *Top
	// DistinctItem n ≥ 1: the rule's n-th item is the text `distinct:` counts per window
	// (with Aggregations.Distinct); 0 for none.
	DistinctItem int
	// DistinctRegisters m > 0: the distinct count's HyperLogLog registers are exported
	// too, m of them per series and window (DistinctRegisterSuffix); 0 for none.
	DistinctRegisters int
	// NativeHistogram: the window's values are also exported as a native histogram, read
	// from a quantile sketch per slot (kept for it when the rule lists no quantiles).
	NativeHistogram bool
}

// IsValue reports whether the rule sums a value rather than counting lines.
func (s *Spec) IsValue() bool { return s.ValueName != "" }

// Top is a rule's `top:`: one of its labels is ranked rather than kept as series. The
// label leaves the rule's labels, so the store keys the rule's series by its other labels
// and their `_total` and `_window` sum over all of its values; the label's template
// becomes the rule's Item-th item (rendered as a label value), which a top-values summary
// per series ranks, and the exposition puts the label back, under Label, on the
// `_window_top` samples only.
type Top struct {
	// Label is the ranked label's name.
	Label string
	// Item is the 1-based index of its template among the rule's items
	// (windows.SummaryKind.Item).
	Item int
	// K is how many values are exported per window and label set, those with the largest
	// sums; Min is the smallest sum exported (the hot threshold, 0 for none).
	K   int
	Min float64
	// Capacity is the summary's counters; its sums err by at most the window's
	// total/(Capacity+1).
	Capacity int
}

// TopSuffix is the family of a rule with `top:`: the top values of each window.
const TopSuffix = "_window_top"

// DistinctSuffix is the family of a rule with `distinct:`: how many different texts its
// template rendered over the window's lines.
const DistinctSuffix = "_window_distinct"

// DistinctRegisterSuffix is the family of a rule with `distinct_registers: m`: the m
// HyperLogLog registers of each window's distinct count, one gauge each under the
// RegisterLabel, which merge across instances by their maximum.
const DistinctRegisterSuffix = "_window_distinct_register"

// RegisterLabel names the label of a register's index ("0" to "m-1").
const RegisterLabel = "register"

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
	// keep adds to opts what the wheels must keep for it (nil: nothing).
	keep func(s *Spec, opts *windows.Options)
	flag func(a *Aggregations) *bool
	// key names the rule key that turns the aggregation on (it needs more than a name, as
	// `distinct:` its template); such a row is not an `aggregations:` value.
	key string
	// what says what its family holds, for HELP (see Rule.WindowFamilies), and read gives
	// a window's value of it from what the wheels keep, false when the window has none.
	// short names what it holds in a few words, for Describe.
	what  func(s *Spec) string
	short func(s *Spec) string
	read  func(st *windows.Stats) (float64, bool)
	// summarised, for an aggregation read from a per-slot summary instead (what and read
	// are then nil), gives its families; summary is the index of its summary kind among a
	// window's summaries.
	summarised func(s *Spec, summary int) []Family
}

// aggregationTable lists the aggregations in the order their families are listed.
var aggregationTable = []aggregation{
	{name: "window", suffixes: []string{"_window"}, flag: func(a *Aggregations) *bool { return &a.Window },
		what: (*Spec).quantity, short: (*Spec).WindowQuantity,
		read: func(st *windows.Stats) (float64, bool) { return st.Sum, true }},
	{name: "per_second", suffixes: []string{"_window_per_second"}, flag: func(a *Aggregations) *bool { return &a.PerSecond },
		what: func(s *Spec) string {
			return "Per-second rate of " + s.WindowQuantity() + " (divided by the seconds observed while fewer than the window)"
		},
		short: func(*Spec) string { return "per-second rate" },
		read:  func(st *windows.Stats) (float64, bool) { return st.PerSecond, true }},
	{name: "events", suffixes: []string{"_window_events"}, value: true, keep: keepEvents, flag: func(a *Aggregations) *bool { return &a.Events },
		what: func(*Spec) string { return "Matched lines" }, short: func(*Spec) string { return "matched lines" },
		read: func(st *windows.Stats) (float64, bool) { return st.Events, true }},
	// An empty window has no largest, smallest or mean value: the sample is left out rather
	// than exported as NaN, which dashboards draw badly. Max and Min are NaN exactly then.
	{name: "max", suffixes: []string{"_window_max"}, value: true, keep: keepExtrema, flag: func(a *Aggregations) *bool { return &a.Max },
		what: func(s *Spec) string { return "Largest " + s.ValueName + absent }, short: func(s *Spec) string { return "largest " + s.ValueName },
		read: func(st *windows.Stats) (float64, bool) { return st.Max, !math.IsNaN(st.Max) }},
	{name: "min", suffixes: []string{"_window_min"}, value: true, keep: keepExtrema, flag: func(a *Aggregations) *bool { return &a.Min },
		what: func(s *Spec) string { return "Smallest " + s.ValueName + absent }, short: func(s *Spec) string { return "smallest " + s.ValueName },
		read: func(st *windows.Stats) (float64, bool) { return st.Min, !math.IsNaN(st.Min) }},
	{name: "mean", suffixes: []string{"_window_mean"}, value: true, keep: keepEvents, flag: func(a *Aggregations) *bool { return &a.Mean },
		what: func(s *Spec) string { return "Mean " + s.ValueName + absent }, short: func(s *Spec) string { return "mean " + s.ValueName },
		read: func(st *windows.Stats) (float64, bool) { return st.Sum / st.Events, st.Events > 0 }},
	{name: "quantiles", value: true, keep: keepQuantiles, flag: func(a *Aggregations) *bool { return &a.Quantiles },
		summarised: quantileFamilies, short: func(s *Spec) string {
			var ps []string
			for _, q := range s.Quantiles {
				ps = append(ps, strings.TrimPrefix(QuantileSuffix(q), "_window_"))
			}
			return strings.Join(ps, " ") + " of " + s.ValueName
		}},
	{name: "distinct", suffixes: []string{DistinctSuffix}, key: "distinct", keep: keepDistinct, flag: func(a *Aggregations) *bool { return &a.Distinct },
		summarised: distinctFamilies, short: func(*Spec) string { return "different distinct: values" }},
}

// absent ends the HELP of a family that has no sample for an empty window.
const absent = " (absent while the window holds no line)"

// sliding ends the HELP of every windowed family.
const sliding = " over the sliding window in the window label, computed by the exporter at scrape time"

func keepEvents(_ *Spec, o *windows.Options)  { o.Events = true }
func keepExtrema(_ *Spec, o *windows.Options) { o.Extrema = true }
func keepQuantiles(_ *Spec, o *windows.Options) {
	o.Summaries = append(o.Summaries, sketch.QuantilesKind)
}
func keepDistinct(s *Spec, o *windows.Options) {
	o.Summaries = append(o.Summaries, sketch.DistinctKind(s.DistinctItem))
}

// quantileFamilies are a gauge per quantile of s, read from its sketch; a window without a
// value has none.
func quantileFamilies(s *Spec, summary int) []Family {
	var out []Family
	for _, q := range s.Quantiles {
		out = append(out, Family{
			Suffix: QuantileSuffix(q),
			Help: s.windowHelp(fmt.Sprintf("Quantile %v of %s (the value of rank ⌈%v·n⌉ among the window's n values, within 1%%; absent while the window holds no line)",
				q, s.ValueName, q)),
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
// histogram (its _bucket, _sum and _count series). Not _window_histogram, which promtool
// check metrics flags on a histogram ("metric name should not include type").
const HistogramSuffix = "_window_distribution"

// HistogramSeries are the suffixes of the histogram family's series names.
var HistogramSeries = []string{"_bucket", "_sum", "_count"}

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

// Names are the `aggregations:` values, in table order.
func Names() []string {
	var names []string
	for _, a := range aggregationTable {
		if a.key == "" {
			names = append(names, a.name)
		}
	}
	return names
}

// Aggregation is one row of the table as config reads it to validate `aggregations:`.
type Aggregation struct{ row *aggregation }

// Lookup finds the row of an `aggregations:` name or rule key.
func Lookup(name string) (Aggregation, bool) {
	for i := range aggregationTable {
		if aggregationTable[i].name == name {
			return Aggregation{&aggregationTable[i]}, true
		}
	}
	return Aggregation{}, false
}

// Key names the rule key that turns the aggregation on, when it needs more than its name
// (as `distinct:` its template): such a row is not an `aggregations:` value.
func (a Aggregation) Key() string { return a.row.key }

// NeedsValue reports whether the aggregation means something only for a value rule.
func (a Aggregation) NeedsValue() bool { return a.row.value }

// In returns the aggregation's flag in aggs.
func (a Aggregation) In(aggs *Aggregations) *bool { return a.row.flag(aggs) }

// Flags lists every flag of aggs in table order, for a fingerprint of the selection.
func (aggs *Aggregations) Flags() []bool {
	out := make([]bool, len(aggregationTable))
	for i, a := range aggregationTable {
		out[i] = *a.flag(aggs)
	}
	return out
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

// gaugeSuffixes lists the suffix of every gauge family of s, whether it exports the family
// or not (so that turning an aggregation on never makes a valid file invalid): those of
// the table, one per quantile of the rule (the default quantiles when it lists none) and
// the top values'.
func (s *Spec) gaugeSuffixes() []string {
	var out []string
	for _, a := range aggregationTable {
		out = append(out, a.suffixes...)
	}
	qs := s.Quantiles
	if len(qs) == 0 {
		qs = DefaultQuantiles
	}
	for _, q := range qs {
		out = append(out, QuantileSuffix(q))
	}
	return append(out, TopSuffix, DistinctRegisterSuffix)
}

// KeepsNativeSketch reports whether s keeps a quantile sketch for its native histogram
// alone: it has one, and no quantile family keeps a sketch it could read.
func (s *Spec) KeepsNativeSketch() bool { return s.NativeHistogram && !s.Aggregations.Quantiles }

// Options returns what the wheels of s must keep for its aggregations, and for its
// buckets, top values and distinct count (summaries of their own): what WindowFamilies
// adds while it numbers the summaries its families read.
func (s *Spec) Options() windows.Options {
	o, _ := s.layout()
	return o
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
	// Histogram: the family is the window histogram (HistogramSuffix) with the rule's
	// buckets. Native: it is also (or, without buckets, only) a native histogram read from
	// the quantile sketch that is the NativeSummary-th summary.
	Histogram     bool
	Native        bool
	NativeSummary int
	// Top is set for the top values' family (TopSuffix): per window, the K values of the
	// ranked label with the largest sums, the label's pair added to the series' pairs.
	Top *Top
	// The readers of the families not read as one number, each from its summary (the
	// Summary-th; NativeSummary's for NativeSketch): Buckets of the Histogram, TopValues
	// of the Top family (their items are the summary's own text, valid until it next
	// changes: a reader copies them, or keeps the summary), NativeSketch of a Native
	// histogram.
	Buckets      func(s windows.Summary, dst []float64)
	TopValues    func(s windows.Summary, dst []sketch.TopValue) []sketch.TopValue
	NativeSketch func(s windows.Summary) *sketch.Quantiles
	// Registers m > 0: the family is the distinct count's registers (DistinctRegisterSuffix),
	// m per series and window, each under RegisterLabel; RegisterValues reads them into
	// dst, false for a window that has none to export.
	Registers      int
	RegisterValues func(s windows.Summary, dst []uint8) ([]uint8, bool)
}

// readBuckets sets h to a window histogram: the cumulative counts of the bounds, the count
// (the +Inf bucket) and the sum; zeros for a summary that holds none. The summary is taken
// as the concrete sketch.Buckets, not an interface, so that the callback below stays on
// the stack: a scrape reads one histogram per series and window.
func readBuckets(s windows.Summary, h []float64) {
	b, ok := s.(*sketch.Buckets)
	if !ok {
		clear(h)
		return
	}
	i := 0
	b.Cumulative(func(_ float64, n uint64) {
		if i < len(h)-2 {
			h[i] = float64(n)
			i++
		}
	})
	h[len(h)-2], h[len(h)-1] = float64(b.Count()), b.Sum()
}

// nativeSketch is the quantile sketch a native histogram is made of, an empty one for a
// summary that is none.
func nativeSketch(s windows.Summary) *sketch.Quantiles {
	if q, ok := s.(*sketch.Quantiles); ok {
		return q
	}
	return new(sketch.Quantiles)
}

// topValues reads the top values of a window, with the rule's K and Min, without copying
// their items (sketch.Top.TopShared).
func (t *Top) topValues(s windows.Summary, dst []sketch.TopValue) []sketch.TopValue {
	if top, ok := s.(*sketch.Top); ok {
		return top.TopShared(t.K, t.Min, dst)
	}
	return dst
}

// WindowFamilies are the windowed families s exports, in table order, then the histogram,
// the top values and the distinct count. Family.Summary indexes a window's summaries of a
// layout made with Options: both come from one walk (layout), which numbers a summary as
// it adds its kind.
func (s *Spec) WindowFamilies() []Family {
	_, out := s.layout()
	return out
}

// layout is what the wheels of s keep and the families read from it.
func (s *Spec) layout() (windows.Options, []Family) {
	var out []Family
	var o windows.Options
	var keyed []aggregation
	native := -1 // the quantile sketch's summary
	for _, a := range aggregationTable {
		if !*a.flag(&s.Aggregations) {
			continue
		}
		if a.key != "" {
			keyed = append(keyed, a) // their kinds go after top's
			continue
		}
		kinds := len(o.Summaries)
		if a.keep != nil {
			a.keep(s, &o) // so that kinds is the summary's index
		}
		if a.flag(&s.Aggregations) == &s.Aggregations.Quantiles {
			native = kinds
		}
		switch {
		case a.value && !s.IsValue():
			continue
		case a.summarised != nil:
			out = append(out, a.summarised(s, kinds)...)
		default:
			out = append(out, Family{Suffix: a.suffixes[0], Help: s.windowHelp(a.what(s)), Stat: a.read})
		}
	}
	if s.KeepsNativeSketch() {
		native = len(o.Summaries)
		keepQuantiles(s, &o)
	}
	if len(s.Buckets) > 0 || s.NativeHistogram {
		// The text formats show only the buckets: their HELP is the one they always had.
		sum := " sum it by le across instances for histogram_quantile."
		if len(s.Buckets) == 0 {
			sum = " sum it across instances for histogram_quantile (a native histogram, within 2%)."
		}
		f := Family{Suffix: HistogramSuffix, Summary: len(o.Summaries), Histogram: len(s.Buckets) > 0,
			Native: s.NativeHistogram, NativeSummary: native, Buckets: readBuckets, NativeSketch: nativeSketch,
			Help: strings.TrimSpace(s.help() + " " + s.ValueName + " of the lines" + sliding +
				", as a gauge histogram: the buckets count the window's values, so never apply rate() or increase() to it;" + sum)}
		if f.Histogram {
			o.Summaries = append(o.Summaries, sketch.BucketsKind(s.Buckets))
		}
		out = append(out, f)
	}
	if t := s.Top; t != nil {
		quantity := "most matched lines"
		if s.IsValue() {
			quantity = "largest sum of " + s.ValueName
		}
		text := fmt.Sprintf("%s The %d values of %s with the %s%s", s.help(), t.K, t.Label, quantity, sliding)
		if t.Min > 0 {
			text += fmt.Sprintf(", of those at least %v", t.Min)
		}
		text += fmt.Sprintf("; each at most the window's total/%d below its true sum (more once --series.max-bytes is reached and the summaries are pruned harder), never above it.", t.Capacity+1)
		out = append(out, Family{Suffix: TopSuffix, Summary: len(o.Summaries), Top: t, TopValues: t.topValues, Help: strings.TrimSpace(text)})
		o.Summaries = append(o.Summaries, sketch.TopKind(t.Capacity, t.Item))
	}
	for _, a := range keyed {
		out = append(out, a.summarised(s, len(o.Summaries))...)
		a.keep(s, &o)
	}
	return o, out
}

// distinctFamilies is the count of different texts of the rule's distinct: template; 0
// while the window holds no line, as its _window count is.
func distinctFamilies(s *Spec, summary int) []Family {
	out := []Family{{
		Suffix:  DistinctSuffix,
		Help:    s.windowHelp("Different values of the rule's distinct: template among the lines (within max(2, 2%) of the exact count)"),
		Summary: summary,
		SummaryValue: func(s windows.Summary) (float64, bool) {
			x, ok := s.(*sketch.Distinct)
			if !ok {
				return 0, false
			}
			return float64(x.Count()), true
		},
	}}
	if m := s.DistinctRegisters; m > 0 {
		out = append(out, Family{
			Suffix: DistinctRegisterSuffix,
			Help: s.windowHelp(fmt.Sprintf("HyperLogLog registers, %d of them (a standard error of %.2g%%, 1.04/√%d), of the different values of the rule's distinct: template, in the register label: "+
				"each the rank of the first 1-bit of a value's hash past the register's index bits, 0 while no value reached it, and their max by (register) across instances the registers of their union;", m, 104/math.Sqrt(float64(m)), m)),
			Summary:        summary,
			Registers:      m,
			RegisterValues: distinctRegisters(m),
		})
	}
	return out
}

// distinctRegisters reads a window's registers at m registers; a summary that is not a
// distinct count, or is one capped to fewer registers (sketch.Distinct.Cap), has none.
func distinctRegisters(m int) func(s windows.Summary, dst []uint8) ([]uint8, bool) {
	q := uint8(bits.TrailingZeros(uint(m)))
	return func(s windows.Summary, dst []uint8) ([]uint8, bool) {
		x, ok := s.(*sketch.Distinct)
		if !ok {
			return dst[:0], false
		}
		return x.Registers(q, dst)
	}
}

// Describe says in a few words what the rule computes, for people reading a list of
// rules: what its `_total` counts, then what each of its windows holds, in the order of
// its families ("counts lines; per window: matched lines, top 10 path by matched lines").
func (s *Spec) Describe() string {
	text := "counts lines"
	if s.IsValue() {
		text = "sums " + s.ValueName
	}
	var per []string
	for _, a := range aggregationTable {
		if *a.flag(&s.Aggregations) && (!a.value || s.IsValue()) && a.key == "" {
			per = append(per, a.short(s))
		}
	}
	if len(s.Buckets) > 0 {
		per = append(per, fmt.Sprintf("distribution of %s over %d buckets", s.ValueName, len(s.Buckets)+1))
	}
	if t := s.Top; t != nil {
		per = append(per, fmt.Sprintf("top %d %s by %s", t.K, t.Label, s.WindowQuantity()))
	}
	for _, a := range aggregationTable {
		if *a.flag(&s.Aggregations) && a.key != "" {
			per = append(per, a.short(s))
		}
	}
	if len(per) > 0 {
		text += "; per window: " + strings.Join(per, ", ")
	}
	return text
}

// TotalHelp is the HELP of the rule's _total counter.
func (s *Spec) TotalHelp() string {
	return strings.TrimSpace(s.help() + " " + s.quantity() + " since the exporter started.")
}

// WindowQuantity is what the rule's `_window` family holds, to go inside a sentence
// ("matched lines", "sum of bytes").
func (s *Spec) WindowQuantity() string {
	q := s.quantity()
	return strings.ToLower(q[:1]) + q[1:]
}

// help is the rule's own HELP text as a sentence, or empty.
func (s *Spec) help() string {
	h := strings.TrimSpace(s.Help)
	if h != "" && !strings.HasSuffix(h, ".") {
		h += "."
	}
	return h
}

// quantity is what the rule counts.
func (s *Spec) quantity() string {
	if s.IsValue() {
		return "Sum of " + s.ValueName
	}
	return "Matched lines"
}

// windowHelp is the HELP of a windowed family holding what.
func (s *Spec) windowHelp(what string) string {
	return strings.TrimSpace(s.help() + " " + what + sliding + ".")
}

// OpenMetricsSeries are the series names OpenMetrics gives a rule's families beyond
// FamilyNames: its counter's _created (OpenMetrics names the counter's family the rule's
// name) and the gauge histogram's _gcount and _gsum. Another rule's family named so makes
// a scrape that strict OpenMetrics parsers refuse: config checks them for clashes too.
func (s *Spec) OpenMetricsSeries(rule string) []string {
	h := rule + HistogramSuffix
	return []string{rule + "_created", h + "_gcount", h + "_gsum"}
}

// FamilyNames are the names of every family a rule of this name may export, whether it
// exports it or not: _total first, the gauges, the histogram, then the histogram's
// series names. config checks them for clashes between rules and with the linter.
func (s *Spec) FamilyNames(rule string) []string {
	out := []string{rule + "_total"}
	for _, suffix := range s.gaugeSuffixes() {
		out = append(out, rule+suffix)
	}
	out = append(out, rule+HistogramSuffix)
	for _, series := range HistogramSeries {
		out = append(out, rule+HistogramSuffix+series)
	}
	return out
}
