package exporter

import (
	"encoding/binary"
	"io"
	"math"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
)

// The rule families of a protobuf scrape are written as the text ones are, straight from
// the read, in the wire format of io.prometheus.client.MetricFamily, each length-delimited:
// the same bytes proto.Marshal gives for the dto.MetricFamily (fields in number order,
// repeated scalars unpacked as in the proto2 file), without building one.

// Field numbers of client_model's metrics.proto.
const (
	fieldFamilyName, fieldFamilyHelp, fieldFamilyType, fieldFamilyMetric = 1, 2, 3, 4
	fieldLabelName, fieldLabelValue                                      = 1, 2
	fieldMetricLabel, fieldMetricGauge, fieldMetricCounter               = 1, 2, 3
	fieldMetricHistogram                                                 = 7
	fieldValue                                                           = 1 // of Gauge and Counter
	fieldBucketCount, fieldBucketBound                                   = 1, 2
	fieldSpanOffset, fieldSpanLength                                     = 1, 2
)

// Fields of Histogram.
const (
	fieldHistCount         = 1
	fieldHistSum           = 2
	fieldHistBucket        = 3
	fieldHistSchema        = 5
	fieldHistZeroThreshold = 6
	fieldHistZeroCount     = 7
	fieldHistNegSpan       = 9
	fieldHistNegDelta      = 10
	fieldHistPosSpan       = 12
	fieldHistPosDelta      = 13
)

// protoWriter writes the rule families as delimited protobuf. A family's length comes
// before it, so write walks each family twice: once counting its bytes, once writing them.
type protoWriter struct {
	w   io.Writer
	buf *[]byte
	err error
	// counting: the walk counts size, the bytes of the family's metrics, and writes none.
	counting bool
	size     int
	r        *RuleSnapshot
	f        int
	// metric is the metric being written, head the family's header; pairs holds the
	// label pairs of a run of register samples, cut by at (runPairs).
	metric, head, pairs []byte
	at                  []int
}

// protoShape is what the protobuf format writes of a Shape the same for every scrape.
type protoShape struct {
	// windowPairs are the window label pairs as LabelPair fields, in the spec's order.
	windowPairs [][]byte
}

func newProtoShape(spec *RuleSpec) protoShape {
	var p protoShape
	for _, w := range spec.Windows {
		p.windowPairs = append(p.windowPairs, appendLabelPair(nil, WindowLabel, w))
	}
	return p
}

func (p *protoWriter) writer() io.Writer { return p.w }

func (p *protoWriter) failed() error { return p.err }

func (p *protoWriter) flush() error {
	if p.err == nil && len(*p.buf) > 0 {
		_, p.err = p.w.Write(*p.buf)
	}
	*p.buf = (*p.buf)[:0]
	return p.err
}

// family writes a family, left out when it has no metric, as the registry leaves it out.
func (p *protoWriter) family(r *RuleSnapshot, f int) {
	r.pb.encode(r, false, appendLabelPair)
	p.counting, p.size = true, 0
	walk(p, r, f)
	if p.size == 0 {
		return
	}
	fam := &r.shape.spec.Families[f]
	typ := dto.MetricType_COUNTER
	switch fam.Kind {
	case Gauge:
		typ = dto.MetricType_GAUGE
	case Histogram:
		typ = dto.MetricType_GAUGE_HISTOGRAM
	}
	h := protowire.AppendTag(p.head[:0], fieldFamilyName, protowire.BytesType)
	h = protowire.AppendString(h, fam.Name)
	h = protowire.AppendTag(h, fieldFamilyHelp, protowire.BytesType)
	h = protowire.AppendString(h, fam.Help)
	h = protowire.AppendTag(h, fieldFamilyType, protowire.VarintType)
	h = protowire.AppendVarint(h, uint64(typ))
	p.head = h
	b := protowire.AppendVarint(*p.buf, uint64(len(h)+p.size))
	*p.buf = append(b, h...)
	p.counting = false
	walk(p, r, f)
}

func (p *protoWriter) begin(r *RuleSnapshot, f int) { p.r, p.f = r, f }

// labels starts a metric with series i's label pairs and window wi's (−1 for none).
func (p *protoWriter) labels(i, wi int) {
	m := append(p.metric[:0], p.r.pb.before(i)...)
	if wi >= 0 {
		m = append(m, p.r.shape.pb.windowPairs[wi]...)
	}
	p.metric = append(m, p.r.pb.after(i)...)
}

func (p *protoWriter) value(i, wi int, v float64) {
	if p.counting {
		// Most samples are these: counted without being made.
		n := len(p.r.pb.before(i)) + len(p.r.pb.after(i)) + valueBytes
		if wi >= 0 {
			n += len(p.r.shape.pb.windowPairs[wi])
		}
		p.size += protowire.SizeTag(fieldFamilyMetric) + protowire.SizeBytes(n)
		return
	}
	p.labels(i, wi)
	field := protowire.Number(fieldMetricGauge)
	if p.r.shape.spec.Families[p.f].Kind == Counter {
		field = fieldMetricCounter
	}
	p.metric = appendValue(p.metric, field, v)
	p.end()
}

func (p *protoWriter) top(ts *topSample) {
	r, s := p.r, p.r.shape
	m := p.metric[:0]
	for _, li := range s.topOrder {
		switch li {
		case pairWindow:
			m = append(m, s.pb.windowPairs[ts.window]...)
		case pairExtra:
			m = appendLabelPair(m, s.spec.TopLabel, ts.item)
		default:
			m = appendLabelPair(m, s.spec.LabelNames[li], r.labels[ts.series][li])
		}
	}
	p.metric = appendValue(m, fieldMetricGauge, ts.v)
	p.end()
}

// histogram writes a Histogram: the classic buckets but +Inf's (the count is its count),
// and the native buckets. Its count and sum are the classic buckets', exact, when there
// are some.
func (p *protoWriter) histogram(i, wi int, h []float64, nh *nativeRef) {
	p.labels(i, wi)
	at := len(p.metric)
	var count uint64
	var sum float64
	if h != nil {
		count, sum = uint64(h[len(h)-2]), h[len(h)-1]
	} else {
		count, sum = nh.count, nh.sum
	}
	b := protowire.AppendTag(p.metric, fieldHistCount, protowire.VarintType)
	b = protowire.AppendVarint(b, count)
	b = protowire.AppendTag(b, fieldHistSum, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(sum))
	for k, bound := range p.r.shape.spec.Buckets {
		b = protowire.AppendTag(b, fieldHistBucket, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(protowire.SizeTag(fieldBucketCount)+protowire.SizeVarint(uint64(h[k]))+protowire.SizeTag(fieldBucketBound)+8))
		b = protowire.AppendTag(b, fieldBucketCount, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(h[k]))
		b = protowire.AppendTag(b, fieldBucketBound, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(bound))
	}
	if nh != nil {
		b = append(b, p.r.nativePB[nh.pb[0]:nh.pb[1]]...)
	}
	// The histogram's length goes before it: its bytes move up by as many as that takes.
	n := len(b) - at
	head := protowire.SizeTag(fieldMetricHistogram) + protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, head, binary.MaxVarintLen64+1)...)
	copy(b[at+head:], b[at:at+n])
	hb := protowire.AppendTag(b[at:at], fieldMetricHistogram, protowire.BytesType)
	protowire.AppendVarint(hb, uint64(n))
	p.metric = b
	p.end()
}

// end writes the metric made, or counts it.
func (p *protoWriter) end() {
	n := len(p.metric)
	if p.counting {
		p.size += protowire.SizeTag(fieldFamilyMetric) + protowire.SizeBytes(n)
		return
	}
	b := protowire.AppendTag(*p.buf, fieldFamilyMetric, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n))
	*p.buf = append(b, p.metric...)
	if len(*p.buf) >= flushAt {
		_ = p.flush()
	}
}

// valueBytes is what appendValue appends.
const valueBytes = 11

// appendValue appends a Gauge or Counter (field) of value v.
func appendValue(b []byte, field protowire.Number, v float64) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	b = append(b, 9) // the value's tag and 8 bytes
	b = protowire.AppendTag(b, fieldValue, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

// appendLabelPair appends a metric's LabelPair field of name and value.
func appendLabelPair(b []byte, name, value string) []byte {
	b = protowire.AppendTag(b, fieldMetricLabel, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(2+protowire.SizeBytes(len(name))+protowire.SizeBytes(len(value))))
	b = protowire.AppendTag(b, fieldLabelName, protowire.BytesType)
	b = protowire.AppendString(b, name)
	b = protowire.AppendTag(b, fieldLabelValue, protowire.BytesType)
	return protowire.AppendString(b, value)
}

// appendNative appends the native fields of a Histogram message: its schema, zero bucket
// and the spans and deltas of each sign.
func appendNative(b []byte, h *NativeHistogram) []byte {
	b = protowire.AppendTag(b, fieldHistSchema, protowire.VarintType)
	b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(h.Schema)))
	b = protowire.AppendTag(b, fieldHistZeroThreshold, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(h.ZeroThreshold))
	b = protowire.AppendTag(b, fieldHistZeroCount, protowire.VarintType)
	b = protowire.AppendVarint(b, h.ZeroCount)
	b = appendBuckets(b, h.NegSpans, h.NegDeltas, fieldHistNegSpan, fieldHistNegDelta)
	if h.Count == 0 {
		// A no-op span, so that an empty histogram still reads as a native one (a scraper
		// tells them from classic ones by their spans or zero bucket).
		b = protowire.AppendTag(b, fieldHistPosSpan, protowire.BytesType)
		b = append(b, 4)
		b = protowire.AppendTag(b, fieldSpanOffset, protowire.VarintType)
		b = append(b, 0)
		b = protowire.AppendTag(b, fieldSpanLength, protowire.VarintType)
		b = append(b, 0)
	}
	return appendBuckets(b, h.PosSpans, h.PosDeltas, fieldHistPosSpan, fieldHistPosDelta)
}

// appendBuckets appends the spans and deltas of one sign, as the fields given.
func appendBuckets(b []byte, spans []BucketSpan, deltas []int64, spanField, deltaField protowire.Number) []byte {
	for _, s := range spans {
		off := protowire.EncodeZigZag(int64(s.Offset))
		b = protowire.AppendTag(b, spanField, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(2+protowire.SizeVarint(off)+protowire.SizeVarint(uint64(s.Length))))
		b = protowire.AppendTag(b, fieldSpanOffset, protowire.VarintType)
		b = protowire.AppendVarint(b, off)
		b = protowire.AppendTag(b, fieldSpanLength, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(s.Length))
	}
	for _, d := range deltas {
		b = protowire.AppendTag(b, deltaField, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeZigZag(d))
	}
	return b
}
