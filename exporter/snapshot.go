package exporter

import (
	"errors"
	"math"
	"slices"
	"strings"
	"unsafe"
)

// A scrape's rule families reach the writers as snapshots: what a rule's families are
// (a Shape, built once per rule set) and their samples read at one instant (a
// RuleSnapshot, one rule at a time). Both are format-neutral: label values and numbers;
// each writer encodes them as its format says.

// WindowLabel names the label that carries the window of the windowed families.
const WindowLabel = "window"

// Kind is what a family's samples are.
type Kind uint8

// The kinds of rule families. A Counter is the rule's `_total`: one sample per series and
// no window label; the others have one sample per series and window.
const (
	Counter Kind = iota
	Gauge
	Histogram
)

// Family is one family of a rule.
type Family struct {
	Name, Help string
	Kind       Kind
	// Top (a Gauge): the samples are the ranked values of each series and window, each
	// with the Shape's TopLabel pair besides the series' pairs.
	Top bool
	// Native (a Histogram): the protobuf format also writes native histograms; the text
	// formats write only the classic buckets, and nothing without Buckets.
	Native bool
	// Registers (a Gauge): the samples are the RuleSpec's Registers values of each series
	// and window, each with a RegisterLabel pair, "0" to Registers−1, besides the series'.
	Registers bool
}

// RuleSpec describes one rule's families and labels.
type RuleSpec struct {
	// LabelNames are the rule's labels in the order of a series' values.
	LabelNames []string
	// Windows are the window label values in the order of a snapshot's windows.
	Windows []string
	// Buckets are the ascending finite upper bounds of the Histogram families, nil for
	// none (a native histogram only); TopLabel names the label of the ranked values.
	Buckets  []float64
	TopLabel string
	// Registers is how many values the Registers family has per series and window, 0 for
	// none, and RegisterLabel the label of their index.
	Registers     int
	RegisterLabel string
	// Families are the rule's families, in no particular order.
	Families []Family
}

// Shape is a rule's families and labels as the writers need them, built once per rule
// set rather than per scrape: the sort orders of labels, and the window and bucket pairs
// as each format writes them.
type Shape struct {
	spec RuleSpec
	// order lists the label indexes sorted by name, the order exported pairs have;
	// windowAt is how many names sort before the window label.
	order    []int
	windowAt int
	// windowOrder lists the windows by label text ("15m" < "1d" < "1h" < "1m"), the
	// order of a series' samples in a family.
	windowOrder []int
	// gaugeAt is, per family, its index among the plain gauges (−1 for the others), the
	// values a snapshot holds per series and window; gauges counts them.
	gaugeAt []int
	gauges  int
	// topOrder lists the pairs of a top values' sample in name order: a label's index,
	// pairWindow or pairExtra (the ranked label); regOrder those of a register's (pairExtra:
	// the register label).
	topOrder, regOrder []int
	text               textShape
	pb                 protoShape
	reg                registerShape
}

// The pairs of a top values' or register's sample besides the rule's labels.
const (
	pairWindow = -1
	pairExtra  = -2
)

// NewShape checks spec (its label names are unique and none is the window label) and
// returns its Shape.
func NewShape(spec RuleSpec) (*Shape, error) {
	names := spec.LabelNames
	if spec.Registers > 0 && (spec.RegisterLabel == "" || spec.RegisterLabel == WindowLabel || spec.RegisterLabel == spec.TopLabel || slices.Contains(names, spec.RegisterLabel)) {
		return nil, errors.New("the registers' label is unnamed or named as another")
	}
	if slices.Contains(names, WindowLabel) || len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
		return nil, errors.New("duplicate label names (the window label is the exporter's)")
	}
	s := &Shape{spec: spec, order: make([]int, len(names))}
	for i := range s.order {
		s.order[i] = i
	}
	slices.SortFunc(s.order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	for _, i := range s.order {
		if names[i] < WindowLabel {
			s.windowAt++
		}
	}
	for i := range spec.Windows {
		s.windowOrder = append(s.windowOrder, i)
	}
	slices.SortFunc(s.windowOrder, func(a, b int) int { return strings.Compare(spec.Windows[a], spec.Windows[b]) })
	for _, f := range spec.Families {
		at := -1
		if f.Registers && (f.Kind != Gauge || spec.Registers <= 0) {
			return nil, errors.New("family " + f.Name + " of registers without a count of them, or not a gauge")
		}
		if f.Kind == Gauge && !f.Top && !f.Registers {
			at, s.gauges = s.gauges, s.gauges+1
		}
		s.gaugeAt = append(s.gaugeAt, at)
	}
	if spec.TopLabel != "" {
		s.topOrder = s.extraOrder(spec.TopLabel)
	}
	if spec.Registers > 0 {
		s.regOrder = s.extraOrder(spec.RegisterLabel)
	}
	s.text = newTextShape(&s.spec)
	s.pb = newProtoShape(&s.spec)
	s.reg = newRegisterShape(&s.spec)
	return s, nil
}

// extraOrder lists the pairs of a sample with the window's and one more, named extra, in
// name order: a label's index, pairWindow or pairExtra.
func (s *Shape) extraOrder(extra string) []int {
	name := func(i int) string {
		switch i {
		case pairWindow:
			return WindowLabel
		case pairExtra:
			return extra
		}
		return s.spec.LabelNames[i]
	}
	order := append(slices.Clone(s.order), pairWindow, pairExtra)
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(name(a), name(b)) })
	return order
}

// Families are the families of the rule, as its spec lists them.
func (s *Shape) Families() []Family { return s.spec.Families }

// Compare orders label values (in the order of the rule's labels) as the exposition
// orders series: by the values taken in label name order.
func (s *Shape) Compare(a, b []string) int {
	for _, i := range s.order {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// RuleSnapshot is one rule's samples read at one instant: per series (in the order of
// Shape.Compare) its label values, its `_total` and, unless it is a kept counter, per
// window its gauges, histogram and top values. A reader fills it (Reset, then the setters)
// and a writer writes its families; it keeps its buffers for the next Reset.
type RuleSnapshot struct {
	shape *Shape
	// labels are each series' values; totals their `_total`; live[i]: series i has windows
	// (else it is a kept counter: `_total` only).
	labels [][]string
	totals []float64
	live   []bool
	// values holds, per series, window and plain gauge family, its value (absent for
	// none); hists the classic histogram per series and window: the cumulative bucket
	// counts, count and sum.
	values []float64
	hists  []float64
	// natives holds one per series and window when the snapshot is for the protobuf
	// format and the rule has a native histogram, their buckets in nativePB.
	natives  []nativeRef
	nativePB []byte
	tops     []topSample
	// regs holds, per series and window, its Registers values; regSet whether it has them.
	regs   []uint8
	regSet []bool
	// regRun holds the (series, window) pairs that have registers, in their order.
	regRun [][2]int32
	// sorted: tops and order are sorted, as the first family written needs them.
	sorted bool
	// order lists (series, window) pairs in the order of a windowed family's samples,
	// for the rules whose window label does not sort after every other label.
	order [][2]int32
	// text and pb are the series' label pairs as each format writes them, made by the
	// first family of the snapshot written in it.
	text, pb labelPairs
	// kept are what the top values' items point into (Keep), keptBytes their heap.
	kept      []any
	keptBytes int64
}

// absent marks a gauge with no sample in a window: a NaN with a payload of its own, so
// that a NaN value read from the windows is still written.
var absent = math.Float64frombits(0x7ff8_0000_0000_0a5e)

func isAbsent(v float64) bool { return math.Float64bits(v) == math.Float64bits(absent) }

// topSample is one value of a window's top values.
type topSample struct {
	series, window int
	item           string
	v              float64
}

// Reset makes the snapshot that of n series of shape, every gauge absent; native: it is
// read for the protobuf format, and holds native histograms if the shape has one.
func (r *RuleSnapshot) Reset(shape *Shape, n int, native bool) {
	d := shape.sizes(n, native)
	r.shape, r.sorted = shape, false
	clear(r.labels) // the old series' values may go
	r.labels = slices.Grow(r.labels[:0], n)[:n]
	r.totals = slices.Grow(r.totals[:0], n)[:n]
	r.live = slices.Grow(r.live[:0], n)[:n]
	r.values = slices.Grow(r.values[:0], d.values)[:d.values]
	for i := range r.values {
		r.values[i] = absent
	}
	r.hists = slices.Grow(r.hists[:0], d.hists)[:d.hists]
	clear(r.hists)
	r.natives, r.nativePB = r.natives[:0], r.nativePB[:0]
	if d.natives > 0 {
		r.natives = slices.Grow(r.natives, d.natives)[:d.natives]
		clear(r.natives)
	}
	clear(r.tops) // the items may go
	r.tops = r.tops[:0]
	r.letGo()
	r.regs = slices.Grow(r.regs[:0], d.regs)[:d.regs]
	r.regSet = slices.Grow(r.regSet[:0], d.regSet)[:d.regSet]
	clear(r.regSet)
	r.text.ok, r.pb.ok = false, false
}

// snapshotSizes are the lengths of a snapshot's per-series buffers but the labels',
// totals' and live's (one each a series), as Reset makes them.
type snapshotSizes struct{ values, hists, natives, regs, regSet int }

// sizes are the buffers' lengths of a snapshot of n series of s; native as for Reset.
func (s *Shape) sizes(n int, native bool) snapshotSizes {
	nw := len(s.spec.Windows)
	width := 0
	hasNative := false
	for _, f := range s.spec.Families {
		if f.Kind == Histogram && len(s.spec.Buckets) > 0 {
			width = len(s.spec.Buckets) + 2
		}
		hasNative = hasNative || f.Native
	}
	d := snapshotSizes{values: n * nw * s.gauges, hists: n * nw * width}
	if native && hasNative {
		d.natives = n * nw
	}
	if m := s.spec.Registers; m > 0 {
		d.regs, d.regSet = n*nw*m, n*nw
	}
	return d
}

// SnapshotBytes is the heap the buffers of a snapshot of n series of s take as Reset makes
// them (native as for Reset): what a read of n series holds at least, before the label
// pairs, top values and native histograms' buckets it comes to hold as it is read and
// written. A reader asks for it before it reads a rule that grew.
func (s *Shape) SnapshotBytes(n int, native bool) int64 {
	d := s.sizes(n, native)
	return int64((24+8+1)*n + 8*d.values + 8*d.hists + int(unsafe.Sizeof(nativeRef{}))*d.natives + d.regs + d.regSet)
}

// Release lets go of what the snapshot references (label values, items), keeping its
// buffers.
func (r *RuleSnapshot) Release() {
	clear(r.labels)
	r.labels = r.labels[:0]
	clear(r.tops)
	r.tops = r.tops[:0]
	r.letGo()
	r.shape = nil
}

// letGo lets go of what Keep kept.
func (r *RuleSnapshot) letGo() {
	clear(r.kept)
	r.kept, r.keptBytes = r.kept[:0], 0
}

// Keep keeps v referenced until Release or the next Reset: what the items given to AddTop
// point into, when they are not copies. n is its heap besides those items (Bytes counts
// them as AddTop's).
func (r *RuleSnapshot) Keep(v any, n int64) {
	r.kept = append(r.kept, v)
	r.keptBytes += n
}

// Bytes is the heap the snapshot holds: its buffers, the top values' items and the label
// pairs encoded for the formats (the series' label values are the store's, not counted).
func (r *RuleSnapshot) Bytes() int64 { return r.bytes(false) }

// UsedBytes is what Bytes counts of the buffers' lengths only: what the snapshot's series
// take, whatever larger snapshots its buffers were grown for before.
func (r *RuleSnapshot) UsedBytes() int64 { return r.bytes(true) }

// bytes is Bytes, or UsedBytes when used.
func (r *RuleSnapshot) bytes(used bool) int64 {
	size := func(length, capacity int) int {
		if used {
			return length
		}
		return capacity
	}
	n := 24*size(len(r.labels), cap(r.labels)) + 8*size(len(r.totals), cap(r.totals)) + size(len(r.live), cap(r.live)) +
		8*size(len(r.values), cap(r.values)) + 8*size(len(r.hists), cap(r.hists)) +
		int(unsafe.Sizeof(nativeRef{}))*size(len(r.natives), cap(r.natives)) + size(len(r.nativePB), cap(r.nativePB)) +
		int(unsafe.Sizeof(topSample{}))*size(len(r.tops), cap(r.tops)) +
		size(len(r.regs), cap(r.regs)) + size(len(r.regSet), cap(r.regSet)) + 8*size(len(r.regRun), cap(r.regRun)) +
		8*size(len(r.order), cap(r.order)) +
		size(len(r.text.b), cap(r.text.b)) + 8*size(len(r.text.cuts), cap(r.text.cuts)) +
		size(len(r.pb.b), cap(r.pb.b)) + 8*size(len(r.pb.cuts), cap(r.pb.cuts)) + 16*size(len(r.kept), cap(r.kept))
	for i := range r.tops {
		n += len(r.tops[i].item)
	}
	return int64(n) + r.keptBytes
}

// SetSeries sets series i's label values (in the order of the rule's labels, not changed
// while the snapshot is written), its `_total`, and whether it has windows.
func (r *RuleSnapshot) SetSeries(i int, labels []string, total float64, live bool) {
	r.labels[i], r.totals[i], r.live[i] = labels, total, live
}

// Gauges are series i's plain gauges of window wi, in family order, to be set; those not
// set have no sample.
func (r *RuleSnapshot) Gauges(i, wi int) []float64 {
	g := r.shape.gauges
	at := (i*len(r.shape.spec.Windows) + wi) * g
	return r.values[at : at+g : at+g]
}

// Buckets is series i's classic histogram of window wi, to be set: the cumulative counts
// of the bounds, then the count and the sum; nil when the rule has no buckets.
func (r *RuleSnapshot) Buckets(i, wi int) []float64 {
	width := len(r.shape.spec.Buckets) + 2
	if len(r.hists) == 0 {
		return nil
	}
	at := (i*len(r.shape.spec.Windows) + wi) * width
	return r.hists[at : at+width : at+width]
}

// HoldsNatives reports whether the snapshot holds native histograms, to be set (SetNative).
func (r *RuleSnapshot) HoldsNatives() bool { return len(r.natives) > 0 }

// AddTop adds a ranked value of series i in window wi: the ranked label's value and its
// sum. The item is kept until Release; what it points into must be too (Keep).
func (r *RuleSnapshot) AddTop(i, wi int, item string, v float64) {
	r.tops = append(r.tops, topSample{series: i, window: wi, item: item, v: v})
}

// NativeHistogram is a window's distribution as a native histogram of the given schema.
type NativeHistogram struct {
	Schema        int32
	ZeroThreshold float64
	Count         uint64
	Sum           float64
	ZeroCount     uint64
	// NegSpans and NegDeltas are the negative buckets (counts as deltas from the bucket
	// before), PosSpans and PosDeltas the positive ones.
	NegSpans, PosSpans   []BucketSpan
	NegDeltas, PosDeltas []int64
}

// BucketSpan is a run of consecutive buckets: Offset is the gap from the previous run (the
// first run's first bucket), Length how many.
type BucketSpan struct {
	Offset int32
	Length uint32
}

// nativeRef is a NativeHistogram as a snapshot holds it: its count and sum, and where its
// fields are in the snapshot's nativePB. Only the protobuf format has native histograms,
// so they are kept as its fields, encoded once at SetNative: a few bytes a bucket, where
// the deltas would take eight.
type nativeRef struct {
	count uint64
	sum   float64
	pb    [2]int32
}

// SetNative sets series i's native histogram of window wi (when HoldsNatives); h is not
// kept.
func (r *RuleSnapshot) SetNative(i, wi int, h *NativeHistogram) {
	from := len(r.nativePB)
	r.nativePB = appendNative(r.nativePB, h)
	r.natives[i*len(r.shape.spec.Windows)+wi] = nativeRef{count: h.Count, sum: h.Sum, pb: [2]int32{int32(from), int32(len(r.nativePB))}}
}

// sort orders the top values and the samples of the windowed families as the exposition
// writes them, once per snapshot.
func (r *RuleSnapshot) sort() {
	if r.sorted {
		return
	}
	r.sorted = true
	s := r.shape
	if len(r.tops) > 0 {
		slices.SortStableFunc(r.tops, func(a, b topSample) int { return r.compareTop(&a, &b) })
	}
	r.order = r.order[:0]
	if s.windowAt == len(s.order) {
		return
	}
	// The window label sorts among the others: samples go by the labels before it, then
	// the window, then the labels after it.
	for i := range r.labels {
		if r.live[i] {
			for _, wi := range s.windowOrder {
				r.order = append(r.order, [2]int32{int32(i), int32(wi)})
			}
		}
	}
	rank := make([]int, len(s.spec.Windows))
	for k, wi := range s.windowOrder {
		rank[wi] = k
	}
	before := s.order[:s.windowAt]
	slices.SortStableFunc(r.order, func(a, b [2]int32) int {
		la, lb := r.labels[a[0]], r.labels[b[0]]
		for _, li := range before {
			if c := strings.Compare(la[li], lb[li]); c != 0 {
				return c
			}
		}
		return rank[a[1]] - rank[b[1]] // the series are in label order already
	})
}

// compareTop orders top values' samples as the exposition does: by their label values in
// name order, the ranked label's and the window's among them.
func (r *RuleSnapshot) compareTop(a, b *topSample) int {
	for _, i := range r.shape.topOrder {
		var c int
		switch i {
		case pairWindow:
			ws := r.shape.spec.Windows
			c = strings.Compare(ws[a.window], ws[b.window])
		case pairExtra:
			c = strings.Compare(a.item, b.item)
		default:
			c = strings.Compare(r.labels[a.series][i], r.labels[b.series][i])
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// labelPairs are the label pairs of a snapshot's series as one format encodes them; cuts
// [3i:3i+3] are where series i's pairs start, where the window pair goes and where they
// end.
type labelPairs struct {
	ok   bool
	b    []byte
	cuts []int
}

// encode fills p with the series' pairs, each encoded by pair, once per snapshot.
func (p *labelPairs) encode(r *RuleSnapshot, sep bool, pair func(b []byte, name, value string) []byte) {
	if p.ok {
		return
	}
	p.ok = true
	s := r.shape
	p.b, p.cuts = p.b[:0], p.cuts[:0]
	for _, labels := range r.labels {
		p.cuts = append(p.cuts, len(p.b))
		for j, li := range s.order {
			if j == s.windowAt {
				p.cuts = append(p.cuts, len(p.b))
			} else if j > 0 && sep {
				p.b = append(p.b, ',')
			}
			p.b = pair(p.b, s.spec.LabelNames[li], labels[li])
		}
		if s.windowAt == len(s.order) {
			p.cuts = append(p.cuts, len(p.b))
		}
		p.cuts = append(p.cuts, len(p.b))
	}
}

// before is series i's pairs before the window pair; after the rest.
func (p *labelPairs) before(i int) []byte { return p.b[p.cuts[3*i]:p.cuts[3*i+1]] }
func (p *labelPairs) after(i int) []byte  { return p.b[p.cuts[3*i+1]:p.cuts[3*i+2]] }
