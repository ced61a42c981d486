package exporter

import (
	"bytes"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protodelim"

	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/windows"
	"github.com/logwindow/logwindow_exporter/windows/sketch"
)

// The rule families are written here straight from the stores, in the text format,
// OpenMetrics or protobuf (proto.go), not through the registry: a dto.Metric per sample,
// the registry's consistency checks and its sort cost several times the text itself and
// leave tens of MB of garbage per scrape of 10,000 series. The registry still gathers the
// self-metrics and the Go and process collectors, and Encode merges its families in by
// name, written by expfmt's encoder for the format, so the whole is what promhttp would
// have written of the registry (the golden replay files did not change), but for what
// expfmt cannot write: OpenMetrics' _gcount and _gsum, and native gauge histograms.

// flushAt is the size at which the text buffered so far goes to the writer.
const flushAt = 32 << 10

// WriteText writes, in the Prometheus text format (0.0.4), the families of every rule of
// the Set in use, read at the current time of each rule's clock, merged by name with
// gathered (sorted by name, as a Gatherer returns them). keep, when not nil, says which
// families to write (by name). It does not change any state: series idle past their
// windows are written as kept counters and those past the counter TTL left out, whether
// Expire released them yet or not.
func (c *Collector) WriteText(w io.Writer, gathered []*dto.MetricFamily, keep func(name string) bool) error {
	return c.Read(keep).Write(w, gathered)
}

// Scrape is the rule families read at one instant, until they are written.
type Scrape struct {
	c     *Collector
	rules []ruleText
	reads map[*store.Rule]*ruleRead
	// spare holds the reads, handed back to the Collector once written.
	spare *[]*ruleRead
	// proto: the rules were read for a protobuf scrape, their label pairs encoded and
	// their native histograms made.
	proto bool
}

// Read reads every rule that has a family keep passes (all when keep is nil), now, for a
// scrape in the text formats; Write writes them. A handler reads the rules before it
// gathers the self-metrics, so that in one scrape the inputs' and rules' counters never lag
// the rule families'.
func (c *Collector) Read(keep func(name string) bool) *Scrape { return c.ReadFor(keep, expfmt.FmtText) }

// ReadFor is Read for a scrape in format, which Encode then writes: a protobuf format
// needs the native histograms, which the text formats have no room for.
func (c *Collector) ReadFor(keep func(name string) bool, format expfmt.Format) *Scrape {
	s := &Scrape{c: c, reads: map[*store.Rule]*ruleRead{}, proto: isProto(format)}
	s.spare = c.reads.get(func() *[]*ruleRead { return new([]*ruleRead) })
	set := c.opts.Set()
	if set == nil {
		return s
	}
	free := *s.spare
	plan := c.plan(set)
	// Rules whose families cannot be named are left out, counted once per scrape.
	c.failed.Add(uint64(plan.unnamed))
	for _, rt := range plan.rules {
		if keep != nil && !keep(rt.name) {
			continue
		}
		s.rules = append(s.rules, rt)
		if s.reads[rt.rule] != nil {
			continue
		}
		var x *ruleRead
		if n := len(free); n > 0 {
			x, free = free[n-1], free[:n-1]
		} else {
			x = new(ruleRead)
			*s.spare = append(*s.spare, x)
		}
		c.read(set, x, rt.rule, rt.fam, s.proto)
		s.reads[rt.rule] = x
	}
	return s
}

// isProto reports whether format is one of the protobuf ones.
func isProto(format expfmt.Format) bool {
	switch format.FormatType() {
	case expfmt.TypeProtoDelim, expfmt.TypeProtoText, expfmt.TypeProtoCompact:
		return true
	}
	return false
}

// Write writes the families read in the text format (0.0.4), merged by name with gathered
// (sorted by name, as a Gatherer returns them), and hands the read back.
func (s *Scrape) Write(w io.Writer, gathered []*dto.MetricFamily) error {
	return s.Encode(w, gathered, expfmt.FmtText)
}

// Encode writes the families read in format (one expfmt.NegotiateAccept returns among
// expfmt.DefaultOpenMetricsAcceptedFormats), merged by name with gathered (sorted by name,
// as a Gatherer returns them), which are written as expfmt.NewEncoder writes them, and
// hands the read back. A scrape in protobuf gets native histograms only when read for it
// (ReadFor).
func (s *Scrape) Encode(w io.Writer, gathered []*dto.MetricFamily, format expfmt.Format) error {
	defer s.release()
	switch format.FormatType() {
	case expfmt.TypeTextPlain, expfmt.TypeOpenMetrics:
		t := &textWriter{w: w, om: format.FormatType() == expfmt.TypeOpenMetrics}
		t.buf = s.c.bufs.get(newTextBuf)
		defer s.c.putBuf(t.buf)
		return s.merge(t, gathered, format)
	case expfmt.TypeProtoDelim:
		p := &protoWriter{w: w}
		p.buf = s.c.bufs.get(newTextBuf)
		defer s.c.putBuf(p.buf)
		return s.merge(p, gathered, format)
	}
	// The protobuf text formats, for people reading a scrape: the delimited protobuf,
	// decoded and written as expfmt writes them.
	var b bytes.Buffer
	p := &protoWriter{w: &b}
	p.buf = s.c.bufs.get(newTextBuf)
	defer s.c.putBuf(p.buf)
	if err := s.merge(p, gathered, expfmt.FmtProtoDelim); err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, format)
	for b.Len() > 0 {
		mf := &dto.MetricFamily{}
		if err := protodelim.UnmarshalFrom(&b, mf); err != nil {
			return err
		}
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// release hands the reads back to the Collector.
func (s *Scrape) release() {
	for _, x := range *s.spare {
		clear(x.series) // removed series may go
		x.series = x.series[:0]
		clear(x.tops)
		x.tops = x.tops[:0]
	}
	s.c.reads.put(s.spare)
}

func (c *Collector) putBuf(b *[]byte) {
	*b = (*b)[:0]
	c.bufs.put(b)
}

// merge writes the rule families through fw and gathered through expfmt's encoder for
// format, in name order.
func (s *Scrape) merge(fw familyWriter, gathered []*dto.MetricFamily, format expfmt.Format) error {
	enc := expfmt.NewEncoder(fw.writer(), format)
	rules := s.rules
	for len(rules) > 0 || len(gathered) > 0 {
		if len(gathered) == 0 || len(rules) > 0 && rules[0].name < gathered[0].GetName() {
			rt := &rules[0]
			rules = rules[1:]
			fw.family(rt, s.reads[rt.rule])
			continue
		}
		mf := gathered[0]
		gathered = gathered[1:]
		if err := fw.flush(); err != nil {
			return err
		}
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	if err := fw.flush(); err != nil {
		return err
	}
	// Only OpenMetrics has an end (# EOF): its encoder writes it.
	if closer, ok := enc.(expfmt.Closer); ok {
		return closer.Close()
	}
	return nil
}

// ruleText is one family of one rule, in the order the families are written.
type ruleText struct {
	name string
	rule *store.Rule
	// fam are the rule's families, f the one written; f is nil for the rule's `_total`.
	fam *families
	f   *family
}

// textPlan caches a Set's families in name order: the store knows its rules, what they
// are called in the exposition is the Collector's.
type textPlan struct {
	set   *store.Set
	rules []ruleText
	// unnamed counts the rules whose families could not be built (config refuses such
	// rules: a label named like the window label, or twice), which are not written.
	unnamed int
}

// plan returns the families of set in name order, built once per Set.
func (c *Collector) plan(set *store.Set) *textPlan {
	if p := c.textPlan.Load(); p != nil && p.set == set {
		return p
	}
	p := &textPlan{set: set}
	for i := range set.NumRules() {
		r := set.Rule(i)
		fam, err := newFamilies(r.Config(), r.Layout().Windows())
		if err != nil {
			p.unnamed++
			continue
		}
		p.rules = append(p.rules, ruleText{name: fam.total.name, rule: r, fam: &fam})
		for j := range fam.windowed {
			p.rules = append(p.rules, ruleText{name: fam.windowed[j].name, rule: r, fam: &fam, f: &fam.windowed[j]})
		}
	}
	slices.SortStableFunc(p.rules, func(a, b ruleText) int { return strings.Compare(a.name, b.name) })
	c.textPlan.Store(p)
	return p
}

// ruleRead is one rule read at one instant: its exported series in label order, with the
// text of their labels, their totals and their windows.
type ruleRead struct {
	series []*store.Series
	// labels holds each series' label pairs as text in name order; cuts[3i:3i+3] are
	// where series i's pairs start, where the window pair goes and where they end.
	labels []byte
	cuts   []int
	totals []float64
	// live[i]: series i has windows (else it is a kept counter: `_total` only).
	live []bool
	// stats holds len(windows) Stats per series (those of kept counters unused).
	stats []windows.Stats
	// values holds, per series, window and summary-read family (in family order), the
	// family's value, NaN for none; hists the histogram per series and window: its
	// cumulative bucket counts, count and sum.
	values []float64
	hists  []float64
	// order lists (series, window) pairs in the order of a windowed family's samples,
	// for the rules whose window label does not sort after every other label.
	order [][2]int32
	sums  []windows.Summary
	// partStats and partSums hold a series' second and later parts as read, before they
	// are merged into stats and sums (partSums is made on the first such part of a read).
	partStats []windows.Stats
	partSums  []windows.Summary
	// pb and pbCuts are labels and cuts as protobuf LabelPair fields, for a protobuf
	// scrape.
	pb     []byte
	pbCuts []int
	// natives holds, for a protobuf scrape of a rule with a native histogram, one per
	// series and window (those of kept counters unused), their fields encoded in nativePB;
	// spans and deltas are where one is made.
	natives  []nativeHist
	nativePB []byte
	spans    []bucketSpan
	deltas   []int64
	// tops are the samples of the top values' family, sorted as it is written.
	tops   []topSample
	topBuf []sketch.TopValue
}

// topSample is one value of a window's top values.
type topSample struct {
	series, window int
	item           string
	v              float64
}

// clocks returns the second rule r is read at and the second its rates count from.
func (c *Collector) clocks(set *store.Set, r *store.Rule) (now, since int64) {
	if r.EventTime() {
		now = c.opts.Now()
		if c.opts.Wall != nil {
			now = c.opts.Wall()
		}
		// Event-time rules have observed their log from the oldest line any of them
		// placed, when that is before the start: a replay from the beginning of a log
		// gives a series first seen near its end the rate over the whole log.
		return now, min(c.opts.Start, set.Oldest())
	}
	return c.opts.Now(), c.opts.Start
}

// exported reports whether rule r writes series s at now: kept counters past the TTL are
// not written (Expire removes them), and series whose label values do not fit the rule's
// labels cannot be (Collect counts them).
func exported(r *store.Rule, s *store.Series, now int64) bool {
	return len(s.Labels()) == len(r.Config().Labels) && !r.Gone(s, now)
}

// read fills x with rule r of set, whose families are f, as it is now.
func (c *Collector) read(set *store.Set, x *ruleRead, r *store.Rule, f *families, proto bool) {
	now, since := c.clocks(set, r)
	all, _ := r.Snapshot(x.series[:0])
	x.series = slices.DeleteFunc(all, func(s *store.Series) bool { return !exported(r, s, now) })
	slices.SortFunc(x.series, f.compare)
	n, nw := len(x.series), len(f.windowPairs)
	x.labels, x.cuts = x.labels[:0], x.cuts[:0]
	x.pb, x.pbCuts = x.pb[:0], x.pbCuts[:0]
	x.natives, x.nativePB = x.natives[:0], x.nativePB[:0]
	x.totals = slices.Grow(x.totals[:0], n)[:n]
	x.live = slices.Grow(x.live[:0], n)[:n]
	x.stats = slices.Grow(x.stats[:0], n*nw)[:n*nw]
	var summaryFams, histWidth int
	native := -1 // the summary a native histogram is read from
	for i := range f.windowed {
		fam := &f.windowed[i]
		switch {
		case fam.Histogram:
			histWidth = len(f.buckets) + 1
		case fam.SummaryValue != nil:
			summaryFams++
		}
		if fam.Native && proto {
			native = fam.NativeSummary
			x.natives = slices.Grow(x.natives, n*nw)[:n*nw]
		}
	}
	x.values = slices.Grow(x.values[:0], n*nw*summaryFams)[:n*nw*summaryFams]
	x.hists = slices.Grow(x.hists[:0], n*nw*histWidth)[:n*nw*histWidth]
	x.sums, x.partSums = x.sums[:0], nil
	if f.summaries {
		x.sums = r.Layout().NewSummaries()
	}
	for i, s := range x.series {
		labels := s.Labels()
		x.cuts = append(x.cuts, len(x.labels))
		for j, li := range f.order {
			if j == f.windowAt {
				x.cuts = append(x.cuts, len(x.labels))
			} else if j > 0 {
				x.labels = append(x.labels, ',')
			}
			x.labels = append(x.labels, f.names[li]...)
			x.labels = append(x.labels, '=', '"')
			x.labels = appendEscaped(x.labels, labels[li], true)
			x.labels = append(x.labels, '"')
		}
		if f.windowAt == len(f.order) {
			x.cuts = append(x.cuts, len(x.labels))
		}
		x.cuts = append(x.cuts, len(x.labels))
		if proto {
			x.pbCuts = append(x.pbCuts, len(x.pb))
			for j, li := range f.order {
				if j == f.windowAt {
					x.pbCuts = append(x.pbCuts, len(x.pb))
				}
				x.pb = appendLabelPair(x.pb, f.names[li], labels[li])
			}
			if f.windowAt == len(f.order) {
				x.pbCuts = append(x.pbCuts, len(x.pb))
			}
			x.pbCuts = append(x.pbCuts, len(x.pb))
		}
		x.totals[i] = r.Total(s)
		x.live[i] = r.Live(s, now)
		if !x.live[i] {
			continue
		}
		stats := r.Read(s, now, since, x.stats[i*nw:i*nw], &x.partStats)
		if len(stats) != nw {
			// A layout always reads one Stats per window; anything else is not exported.
			x.live[i] = false
			continue
		}
		if x.sums == nil {
			continue
		}
		r.ReadSummaries(s, now, x.sums, &x.partSums)
		kinds := len(x.sums) / nw
		for wi := range nw {
			sums := x.sums[wi*kinds : (wi+1)*kinds]
			if native >= 0 {
				x.natives[i*nw+wi] = x.native(sums[native])
			}
			vals := x.values[(i*nw+wi)*summaryFams:]
			for _, fam := range f.windowed {
				switch {
				case fam.Histogram:
					h := x.hists[(i*nw+wi)*histWidth : (i*nw+wi+1)*histWidth]
					writeHistogram(h, sums[fam.Summary])
				case fam.Top != nil:
					if top, ok := sums[fam.Summary].(*sketch.Top); ok {
						x.topBuf = top.Top(fam.Top.K, fam.Top.Min, x.topBuf[:0])
						for _, tv := range x.topBuf {
							x.tops = append(x.tops, topSample{series: i, window: wi, item: tv.Item, v: tv.Sum})
						}
					}
				case fam.SummaryValue != nil:
					// A gauge read from a summary (quantiles).
					v, ok := fam.SummaryValue(sums[fam.Summary])
					if !ok {
						v = math.NaN()
					}
					vals[0], vals = v, vals[1:]
				}
			}
		}
	}
	if len(x.tops) > 0 {
		slices.SortStableFunc(x.tops, func(a, b topSample) int { return f.compareTop(x, &a, &b) })
	}
	x.order = x.order[:0]
	if f.windowAt < len(f.order) {
		// The window label sorts among the others: samples go by the labels before it,
		// then the window, then the labels after it.
		for i := range n {
			if x.live[i] {
				for _, wi := range f.windowOrder {
					x.order = append(x.order, [2]int32{int32(i), int32(wi)})
				}
			}
		}
		rank := make([]int, nw)
		for k, wi := range f.windowOrder {
			rank[wi] = k
		}
		slices.SortStableFunc(x.order, func(a, b [2]int32) int {
			if c := bytes.Compare(x.before(int(a[0])), x.before(int(b[0]))); c != 0 {
				return c
			}
			if a[1] != b[1] {
				return rank[a[1]] - rank[b[1]]
			}
			return 0 // the series are in label order already
		})
	}
}

// compareTop orders top values' samples as the text format does: by their label values in
// name order, the ranked label's and the window's among them.
func (f *families) compareTop(x *ruleRead, a, b *topSample) int {
	for _, i := range f.topOrder {
		var c int
		switch i {
		case topWindow:
			c = strings.Compare(f.windowTexts[a.window], f.windowTexts[b.window])
		case topLabel:
			c = strings.Compare(a.item, b.item)
		default:
			c = strings.Compare(x.series[a.series].Labels()[i], x.series[b.series].Labels()[i])
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// appendTopLabels appends the label pairs of a top values' sample to b.
func (f *families) appendTopLabels(b []byte, x *ruleRead, ts *topSample) []byte {
	for j, i := range f.topOrder {
		if j > 0 {
			b = append(b, ',')
		}
		switch i {
		case topWindow:
			b = append(b, f.windowPairs[ts.window]...)
			continue
		case topLabel:
			b = append(b, f.topName...)
			b = append(b, '=', '"')
			b = appendEscaped(b, ts.item, true)
		default:
			b = append(b, f.names[i]...)
			b = append(b, '=', '"')
			b = appendEscaped(b, x.series[ts.series].Labels()[i], true)
		}
		b = append(b, '"')
	}
	return b
}

// writeHistogram stores a window histogram in h: the cumulative counts of the bounds, the
// count (the +Inf bucket) and the sum. The summary is taken as the concrete sketch.Buckets,
// not an interface, so that the callback below stays on the stack: a scrape reads one
// histogram per series and window.
func writeHistogram(h []float64, s windows.Summary) {
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

// pbBefore and pbAfter are before and after as protobuf LabelPair fields.
func (x *ruleRead) pbBefore(i int) []byte { return x.pb[x.pbCuts[3*i]:x.pbCuts[3*i+1]] }
func (x *ruleRead) pbAfter(i int) []byte  { return x.pb[x.pbCuts[3*i+1]:x.pbCuts[3*i+2]] }

// before is the label text of series i before the window pair; after the rest.
func (x *ruleRead) before(i int) []byte { return x.labels[x.cuts[3*i]:x.cuts[3*i+1]] }
func (x *ruleRead) after(i int) []byte  { return x.labels[x.cuts[3*i+1]:x.cuts[3*i+2]] }

// familyWriter writes rule families in one format, the writer of the rest between them.
type familyWriter interface {
	// family writes one family of a rule read into x.
	family(rt *ruleText, x *ruleRead)
	// writer is where the rest goes once flushed.
	writer() io.Writer
	flush() error
}

// sampleWriter is how a format writes the samples write walks.
type sampleWriter interface {
	// begin starts family rt of x: counters, gauges or histograms.
	begin(rt *ruleText, x *ruleRead, kind metricKind)
	// value writes series i's sample of window wi (−1 for none: the _total).
	value(i, wi int, v float64)
	top(ts *topSample)
	// histogram writes series i's distribution of window wi: the cumulative counts of the
	// rule's buckets, count and sum (h, nil without buckets), and the native histogram
	// (nil when not asked for).
	histogram(i, wi int, h []float64, nh *nativeHist)
}

// metricKind is what a family's samples are.
type metricKind uint8

const (
	kindCounter metricKind = iota
	kindGauge
	kindHistogram
)

// write walks one family of a rule read into x, in the order of the text format.
func write(sw sampleWriter, rt *ruleText, x *ruleRead) {
	f := rt.fam
	if rt.f == nil {
		sw.begin(rt, x, kindCounter)
		for i := range x.series {
			sw.value(i, -1, x.totals[i])
		}
		return
	}
	fam := rt.f
	if fam.Top != nil {
		sw.begin(rt, x, kindGauge)
		if len(x.series) == 0 {
			return // no label set has had a line yet: nothing is ranked
		}
		for i := range x.tops {
			sw.top(&x.tops[i])
		}
		return
	}
	hist := fam.Histogram || fam.Native
	kind := kindGauge
	if hist {
		kind = kindHistogram
	}
	sw.begin(rt, x, kind)
	summaryAt, summaryFams, histWidth := 0, 0, len(f.buckets)+1
	for i := range f.windowed {
		if f.windowed[i].SummaryValue != nil {
			if &f.windowed[i] == fam {
				summaryAt = summaryFams
			}
			summaryFams++
		}
	}
	nw := len(f.windowPairs)
	one := func(i, wi int) {
		switch {
		case fam.Stat != nil:
			if v, ok := fam.Stat(&x.stats[i*nw+wi]); ok {
				sw.value(i, wi, v)
			}
		case hist:
			var h []float64
			if fam.Histogram {
				h = x.hists[(i*nw+wi)*histWidth : (i*nw+wi+1)*histWidth]
			}
			var nh *nativeHist
			if len(x.natives) > 0 {
				nh = &x.natives[i*nw+wi]
			}
			if h != nil || nh != nil {
				sw.histogram(i, wi, h, nh)
			}
		default:
			if v := x.values[(i*nw+wi)*summaryFams+summaryAt]; !math.IsNaN(v) {
				sw.value(i, wi, v)
			}
		}
	}
	if f.windowAt < len(f.order) {
		for _, p := range x.order {
			one(int(p[0]), int(p[1]))
		}
		return
	}
	for i := range x.series {
		if x.live[i] {
			for _, wi := range f.windowOrder {
				one(i, wi)
			}
		}
	}
}

// textWriter writes the rule families in the text format, or in OpenMetrics' (om), and
// buffers them.
type textWriter struct {
	w   io.Writer
	buf *[]byte
	err error
	om  bool
	// pending is the family whose header is still to be written, with its help and type.
	pending, help, kind string
	// rt and x are the family being written.
	rt *ruleText
	x  *ruleRead
}

func (t *textWriter) writer() io.Writer { return t.w }

func (t *textWriter) family(rt *ruleText, x *ruleRead) { write(t, rt, x) }

func (t *textWriter) flush() error {
	if t.err == nil && len(*t.buf) > 0 {
		_, t.err = t.w.Write(*t.buf)
	}
	*t.buf = (*t.buf)[:0]
	return t.err
}

// begin starts a family: its HELP and TYPE lines are written with its first sample, so
// that a family without samples is left out, as the registry leaves it out. OpenMetrics
// names a counter's family without the _total its sample has, and types the window
// distribution a gauge histogram.
func (t *textWriter) begin(rt *ruleText, x *ruleRead, kind metricKind) {
	t.rt, t.x = rt, x
	t.pending, t.help = rt.name, rt.fam.total.help
	if rt.f != nil {
		t.help = rt.f.help
	}
	switch kind {
	case kindCounter:
		t.kind = "counter"
		if t.om {
			t.pending = strings.TrimSuffix(rt.name, "_total")
		}
	case kindGauge:
		t.kind = "gauge"
	case kindHistogram:
		t.kind = "histogram"
		if t.om {
			t.kind = "gaugehistogram"
		}
	}
}

func (t *textWriter) writeHeader() {
	name, help, kind := t.pending, t.help, t.kind
	t.pending = ""
	b := append(*t.buf, "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = appendEscaped(b, help, t.om)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, kind...)
	*t.buf = append(b, '\n')
}

func (t *textWriter) value(i, wi int, v float64) {
	win := ""
	if wi >= 0 {
		win = t.rt.fam.windowPairs[wi]
	}
	t.sample(t.rt.name, t.x.before(i), win, t.x.after(i), "", v)
}

func (t *textWriter) top(ts *topSample) {
	x, f := t.x, t.rt.fam
	end := x.cuts[len(x.cuts)-1]
	x.labels = f.appendTopLabels(x.labels[:end], x, ts)
	t.sample(t.rt.name, x.labels[end:], "", nil, "", ts.v)
	x.labels = x.labels[:end]
}

// histogram writes the classic buckets; the text formats have no native histogram. In
// OpenMetrics a gauge histogram's sum and count are _gsum and _gcount, and a negative sum
// is only allowed with a negative bucket bound, without which the two are left out (the
// +Inf bucket is the count).
func (t *textWriter) histogram(i, wi int, h []float64, _ *nativeHist) {
	if h == nil {
		return
	}
	f, x, names := t.rt.fam, t.x, &t.rt.f.hist
	before, after, win := x.before(i), x.after(i), f.windowPairs[wi]
	count, sum := h[len(h)-2], h[len(h)-1]
	if !t.om {
		for k, le := range f.buckets {
			t.sample(names.bucket, before, win, after, le, h[k])
		}
		t.sample(names.sum, before, win, after, "", sum)
		t.sample(names.count, before, win, after, "", count)
		return
	}
	for k, le := range f.omBuckets {
		t.count(names.bucket, before, win, after, le, h[k])
	}
	if sum >= 0 || f.negativeBound {
		t.count(names.gcount, before, win, after, "", count)
		t.sample(names.gsum, before, win, after, "", sum)
	}
}

// sample writes one line: name, the label pairs before the window, the window pair, the
// rest and an extra pair (le), each part possibly empty, then the value.
func (t *textWriter) sample(name string, before []byte, window string, after []byte, extra string, v float64) {
	b := t.line(name, before, window, after, extra)
	if t.om {
		b = appendOMFloat(b, v)
	} else {
		b = appendFloat(b, v)
	}
	t.end(b)
}

// count is sample for a count, which OpenMetrics writes as an integer.
func (t *textWriter) count(name string, before []byte, window string, after []byte, extra string, n float64) {
	t.end(strconv.AppendUint(t.line(name, before, window, after, extra), uint64(n), 10))
}

// line starts a sample's line, up to its value.
func (t *textWriter) line(name string, before []byte, window string, after []byte, extra string) []byte {
	if t.pending != "" {
		t.writeHeader()
	}
	b := append(*t.buf, name...)
	n := len(b)
	b = appendPairs(b, n, before)
	b = appendPairs(b, n, window)
	b = appendPairs(b, n, after)
	b = appendPairs(b, n, extra)
	if len(b) > n {
		b = append(b, '}')
	}
	return append(b, ' ')
}

// end ends a sample's line.
func (t *textWriter) end(b []byte) {
	*t.buf = append(b, '\n')
	if len(*t.buf) >= flushAt {
		_ = t.flush()
	}
}

// appendPairs appends label pairs to a sample line whose name ends at b[:n]: after '{'
// when they are the first, else after ','; nothing when pairs is empty.
func appendPairs[P string | []byte](b []byte, n int, pairs P) []byte {
	if len(pairs) == 0 {
		return b
	}
	sep := byte(',')
	if len(b) == n {
		sep = '{'
	}
	return append(append(b, sep), pairs...)
}

// appendFloat writes v as the text format does: Go's shortest representation, with +Inf,
// -Inf and NaN spelled as Prometheus reads them.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case v == 0:
		return append(b, '0')
	case v == 1:
		return append(b, '1')
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendOMFloat writes v as OpenMetrics does (expfmt's writer): a whole number with ".0".
func appendOMFloat(b []byte, v float64) []byte {
	n := len(b)
	b = appendFloat(b, v)
	if !bytes.ContainsAny(b[n:], ".eNI") {
		b = append(b, ".0"...)
	}
	return b
}

// appendEscaped escapes a backslash and a newline, and in a label value a double quote.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// spare keeps one value from one scrape for the next. Unlike a sync.Pool it keeps it
// across garbage collections: a scrape of many series then allocates nothing, so the
// garbage of scrapes does not set the RSS. A second scrape at once makes its own.
type spare[T any] struct{ p atomic.Pointer[T] }

// get returns the spare value, or a new one.
func (s *spare[T]) get(fresh func() *T) *T {
	if v := s.p.Swap(nil); v != nil {
		return v
	}
	return fresh()
}

// put keeps v as the spare, unless there is one already.
func (s *spare[T]) put(v *T) { s.p.CompareAndSwap(nil, v) }

func newTextBuf() *[]byte {
	b := make([]byte, 0, flushAt+4096)
	return &b
}
