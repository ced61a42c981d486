package exporter

import (
	"bytes"
	"io"
	"strings"
	"sync/atomic"
	"unsafe"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protodelim"
)

// The rule families are written straight from the snapshots, in the text format,
// OpenMetrics or protobuf, not through the registry: a dto.Metric per sample, the
// registry's consistency checks and its sort cost several times the text itself and leave
// tens of MB of garbage per scrape of 10,000 series. The registry still gathers the
// self-metrics and the Go and process collectors, and a Writer merges its families in by
// name, written by expfmt's encoder for the format, so the whole is what promhttp would
// have written of the registry (the golden replay files did not change), but for what
// expfmt cannot write: OpenMetrics' _gcount and _gsum, and native gauge histograms.

// flushAt is the size at which what a writer buffered goes to its io.Writer: a scrape
// holds at most this much beyond the snapshot being written.
const flushAt = 32 << 10

// Writer writes one scrape: rule families from snapshots, in name order, merged by name
// with the gathered families.
type Writer struct {
	fw       familyWriter
	enc      expfmt.Encoder
	gathered []*dto.MetricFamily
	buf      *[]byte
	// delim: the format is a protobuf text one, written by decoding the delimited
	// protobuf buffered in it after each family (decodeDelim) into the format's encoder
	// on the io.Writer, outEnc.
	outEnc expfmt.Encoder
	delim  *bytes.Buffer
	err    error
	// hold is the limiter's, from the request's context (WithHold); nil when none.
	hold func(bytes int64) error
	// gatheredBytes is about the heap the families gathered for the scrape hold
	// (GatheredBytes).
	gatheredBytes int64
}

// NewWriter returns the Writer of a scrape in format (one expfmt.NegotiateAccept returns
// among expfmt.DefaultOpenMetricsAcceptedFormats) to w; gathered (sorted by name, as a
// Gatherer returns them) are written as expfmt.NewEncoder writes them. Close ends it.
func NewWriter(w io.Writer, format expfmt.Format, gathered []*dto.MetricFamily) *Writer {
	return newWriter(w, format, gathered, gatheredBytes(gathered))
}

// newWriter is NewWriter, the gathered families taking about held bytes of the heap (see
// GatheredBytes).
func newWriter(w io.Writer, format expfmt.Format, gathered []*dto.MetricFamily, held int64) *Writer {
	if format.FormatType() == expfmt.TypeOpenMetrics {
		gathered = withoutOpenMetricsTwins(gathered)
	}
	x := &Writer{gathered: gathered, gatheredBytes: held, buf: bufs.get(newBuf)}
	switch {
	case BuffersFamilies(format):
		// The protobuf text formats, for people reading a scrape: the delimited protobuf,
		// decoded family by family and written as expfmt writes them.
		x.outEnc = expfmt.NewEncoder(w, format)
		x.delim = new(bytes.Buffer)
		x.fw = &protoWriter{w: x.delim, buf: x.buf}
		format = expfmt.FmtProtoDelim
	case format.FormatType() == expfmt.TypeProtoDelim:
		x.fw = &protoWriter{w: w, buf: x.buf}
	default:
		x.fw = &textWriter{w: w, buf: x.buf, om: format.FormatType() == expfmt.TypeOpenMetrics}
	}
	x.enc = expfmt.NewEncoder(x.fw.writer(), format)
	return x
}

// GatheredBytes is about the heap the families gathered for the scrape hold: those given
// to NewWriter, or, in a Handler's scrape, all the registry gathered, name[] filters or
// not (those left out go at the next garbage collection). The scrape holds them from its
// start to its end, beside the rules it reads.
func (x *Writer) GatheredBytes() int64 { return x.gatheredBytes }

// gatheredBytes is about the heap mfs take as a Gatherer returns them: each family's,
// metric's, label pair's and value's struct, the pointers to them and to their strings,
// each allocation rounded up as the allocator rounds small ones. The strings' text is
// not counted: names and label values are the collectors' own, shared.
func gatheredBytes(mfs []*dto.MetricFamily) int64 {
	const ptr, str, num = 8, 16, 8 // a pointer; a *string's and a *float64's or *uint64's allocation
	n := allocBytes(ptr * cap(mfs))
	for _, mf := range mfs {
		n += allocBytes(int(unsafe.Sizeof(dto.MetricFamily{}))) + 2*str + num + allocBytes(ptr*cap(mf.Metric))
		for _, m := range mf.Metric {
			n += allocBytes(int(unsafe.Sizeof(dto.Metric{}))) + allocBytes(ptr*cap(m.Label))
			n += int64(len(m.Label)) * (allocBytes(int(unsafe.Sizeof(dto.LabelPair{}))) + 2*str)
			switch {
			case m.Counter != nil:
				n += allocBytes(int(unsafe.Sizeof(dto.Counter{}))) + num
			case m.Gauge != nil:
				n += allocBytes(int(unsafe.Sizeof(dto.Gauge{}))) + num
			case m.Untyped != nil:
				n += allocBytes(int(unsafe.Sizeof(dto.Untyped{}))) + num
			case m.Summary != nil:
				q := m.Summary.Quantile
				n += allocBytes(int(unsafe.Sizeof(dto.Summary{}))) + 2*num + allocBytes(ptr*cap(q)) +
					int64(len(q))*(allocBytes(int(unsafe.Sizeof(dto.Quantile{})))+2*num)
			case m.Histogram != nil:
				h := m.Histogram
				n += allocBytes(int(unsafe.Sizeof(dto.Histogram{}))) + 3*num + allocBytes(ptr*cap(h.Bucket)) +
					int64(len(h.Bucket))*(allocBytes(int(unsafe.Sizeof(dto.Bucket{})))+2*num) +
					allocBytes(ptr*(cap(h.PositiveSpan)+cap(h.NegativeSpan))) +
					int64(len(h.PositiveSpan)+len(h.NegativeSpan))*(allocBytes(int(unsafe.Sizeof(dto.BucketSpan{})))+2*num) +
					allocBytes(8*(cap(h.PositiveDelta)+cap(h.NegativeDelta)+cap(h.PositiveCount)+cap(h.NegativeCount)))
			}
		}
	}
	return n
}

// allocBytes is n bytes as the allocator takes them for a small object: rounded up to 16.
func allocBytes(n int) int64 {
	return int64(n+15) &^ 15
}

// WantsNative reports whether the format has native histograms: snapshots written in
// it should hold them (RuleSnapshot.Reset).
func WantsNative(format expfmt.Format) bool {
	switch format.FormatType() {
	case expfmt.TypeProtoDelim, expfmt.TypeProtoText, expfmt.TypeProtoCompact:
		return true
	}
	return false
}

// Write writes family f of r's shape (its index in Shape.Families), after the gathered
// families named before it. A family without samples is left out, as the registry leaves
// it out.
func (x *Writer) Write(r *RuleSnapshot, f int) error {
	name := r.shape.spec.Families[f].Name
	if err := x.gatheredBefore(func(g string) bool { return g < name }); err != nil {
		return err
	}
	r.sort()
	x.fw.family(r, f)
	// A client that went away fails the flush: the rules left are not read for it.
	if err := x.fail(x.fw.failed()); err != nil {
		return err
	}
	return x.decodeDelim()
}

// decodeDelim writes what was written so far of a scrape in a protobuf text format: the
// delimited protobuf buffered, decoded and written as expfmt writes the format. It is
// called after each family, so that the scrape holds one family's protobuf and its
// decoding, not the whole scrape's.
func (x *Writer) decodeDelim() error {
	if x.delim == nil {
		return x.err
	}
	if err := x.fw.flush(); err != nil {
		return x.fail(err)
	}
	for x.delim.Len() > 0 {
		mf := &dto.MetricFamily{}
		if err := wholeFamily.UnmarshalFrom(x.delim, mf); err != nil {
			return x.fail(err)
		}
		if err := x.outEnc.Encode(mf); err != nil {
			return x.fail(err)
		}
	}
	return x.err
}

// wholeFamily decodes a family of any size: the delimited protobuf decoded is the
// Writer's own, held whole already, and a rule's family passes the decoder's default
// cap, 4 MiB, with some thousands of series of long label values.
var wholeFamily = protodelim.UnmarshalOptions{MaxSize: -1}

// gatheredBefore writes the gathered families whose names before passes.
func (x *Writer) gatheredBefore(before func(name string) bool) error {
	for len(x.gathered) > 0 && before(x.gathered[0].GetName()) {
		mf := x.gathered[0]
		x.gathered = x.gathered[1:]
		if err := x.fw.flush(); err != nil {
			return x.fail(err)
		}
		if err := x.enc.Encode(mf); err != nil {
			return x.fail(err)
		}
		if err := x.decodeDelim(); err != nil {
			return err
		}
	}
	return x.err
}

func (x *Writer) fail(err error) error {
	if x.err == nil && err != nil {
		x.err = err
	}
	return x.err
}

// Close writes the gathered families left and the format's end, and hands the writer's
// buffer back.
func (x *Writer) Close() error {
	defer x.release()
	if err := x.gatheredBefore(func(string) bool { return true }); err != nil {
		return err
	}
	if err := x.fw.flush(); err != nil {
		return x.fail(err)
	}
	// Only OpenMetrics has an end (# EOF): its encoder writes it.
	if closer, ok := x.enc.(expfmt.Closer); ok {
		if err := closer.Close(); err != nil {
			return x.fail(err)
		}
	}
	if x.delim == nil {
		return nil
	}
	return x.decodeDelim()
}

func (x *Writer) release() {
	if x.buf != nil {
		*x.buf = (*x.buf)[:0]
		bufs.put(x.buf)
		x.buf = nil
	}
}

// familyWriter writes rule families in one format, the gathered ones between them.
type familyWriter interface {
	// family writes family f of a snapshot.
	family(r *RuleSnapshot, f int)
	// writer is where the gathered families go once flushed.
	writer() io.Writer
	flush() error
	// failed is the error of a flush of the samples, nil while there is none.
	failed() error
}

// sampleWriter is how a format writes the samples walk walks.
type sampleWriter interface {
	// begin starts family f of r.
	begin(r *RuleSnapshot, f int)
	// value writes series i's sample of window wi (−1 for none: the _total).
	value(i, wi int, v float64)
	top(ts *topSample)
	// registerRun starts a run of register samples: those of the (series, window) pairs
	// given, which share the pairs that sort before the register label; register writes
	// register k, of value v, of the run's j-th pair.
	registerRun(run [][2]int32)
	register(j, k int, v uint8)
	// histogram writes series i's distribution of window wi: the cumulative counts of the
	// rule's buckets, count and sum (h, nil without buckets), and the native histogram
	// (nil when not asked for).
	histogram(i, wi int, h []float64, nh *nativeRef)
	// failed is the error of a flush of the samples: once there is one, the walk stops,
	// as no one reads what is left of the family.
	failed() error
}

// walk walks family f of r, in the order of the exposition, until sw failed.
func walk(sw sampleWriter, r *RuleSnapshot, f int) {
	s := r.shape
	fam := &s.spec.Families[f]
	sw.begin(r, f)
	switch {
	case fam.Kind == Counter:
		for i := range r.labels {
			if sw.failed() != nil {
				return
			}
			sw.value(i, -1, r.totals[i])
		}
		return
	case fam.Top:
		for i := range r.tops {
			if sw.failed() != nil {
				return
			}
			sw.top(&r.tops[i])
		}
		return
	}
	nw := len(s.spec.Windows)
	at := s.gaugeAt[f]
	if fam.Registers {
		walkRegisters(sw, r)
		return
	}
	one := func(i, wi int) bool {
		if sw.failed() != nil {
			return false
		}
		if fam.Kind == Gauge {
			if v := r.values[(i*nw+wi)*s.gauges+at]; !isAbsent(v) {
				sw.value(i, wi, v)
			}
			return true
		}
		h := r.Buckets(i, wi)
		var nh *nativeRef
		if len(r.natives) > 0 {
			nh = &r.natives[i*nw+wi]
		}
		if h != nil || nh != nil {
			sw.histogram(i, wi, h, nh)
		}
		return true
	}
	r.eachWindow(one)
}

// eachWindow calls f with each live series and window, in the order of a windowed
// family's samples, until f returns false.
func (r *RuleSnapshot) eachWindow(f func(i, wi int) bool) {
	s := r.shape
	if s.windowAt < len(s.order) {
		for _, p := range r.order {
			if !f(int(p[0]), int(p[1])) {
				return
			}
		}
		return
	}
	for i := range r.labels {
		if r.live[i] {
			for _, wi := range s.windowOrder {
				if !f(i, wi) {
					return
				}
			}
		}
	}
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

// bufs is the writers' spare buffer.
var bufs spare[[]byte]

func newBuf() *[]byte {
	b := make([]byte, 0, flushAt+4096)
	return &b
}

// Scrape is one scrape's rule families, read as they are written.
type Scrape interface {
	// Write writes the rule families through w, in name order.
	Write(w *Writer) error
	// Close ends the scrape, written or not.
	Close()
}

// withoutOpenMetricsTwins leaves out each counter family whose name less _total is another
// gathered family's: OpenMetrics names a counter's family without the suffix, so the two
// would be one family given twice, which strict parsers refuse. client_golang's Go
// collector gives go_memstats_alloc_bytes (a gauge) and go_memstats_alloc_bytes_total;
// the text and protobuf formats keep both.
func withoutOpenMetricsTwins(gathered []*dto.MetricFamily) []*dto.MetricFamily {
	names := make(map[string]bool, len(gathered))
	for _, mf := range gathered {
		names[mf.GetName()] = true
	}
	kept := make([]*dto.MetricFamily, 0, len(gathered))
	for _, mf := range gathered {
		base, ok := strings.CutSuffix(mf.GetName(), "_total")
		if !ok || mf.GetType() != dto.MetricType_COUNTER || !names[base] {
			kept = append(kept, mf)
		}
	}
	return kept
}
