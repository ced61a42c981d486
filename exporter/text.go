package exporter

import (
	"bytes"
	"io"
	"math"
	"strconv"
	"strings"
)

// textShape is what the text formats write of a Shape the same for every scrape.
type textShape struct {
	// windowPairs are the window label pairs (window="5m"), in the spec's order.
	windowPairs []string
	// buckets are the histogram's upper bounds as le label pairs, the +Inf one last, as
	// the text format writes them; omBuckets as OpenMetrics does. negativeBound: one of
	// them is below 0.
	buckets, omBuckets []string
	negativeBound      bool
	// hist names the samples of each Histogram family, made once here rather than for
	// each line a scrape writes.
	hist []histNames
}

// histNames are the names of a classic histogram's samples: _bucket, _sum and _count, and
// OpenMetrics' _gsum and _gcount of a gauge histogram.
type histNames struct{ bucket, sum, count, gsum, gcount string }

func newTextShape(spec *RuleSpec) textShape {
	var t textShape
	for _, w := range spec.Windows {
		t.windowPairs = append(t.windowPairs, WindowLabel+`="`+string(appendEscaped(nil, w, true))+`"`)
	}
	for _, b := range spec.Buckets {
		t.buckets = append(t.buckets, `le="`+string(appendFloat(nil, b))+`"`)
		t.omBuckets = append(t.omBuckets, `le="`+string(appendOMFloat(nil, b))+`"`)
		t.negativeBound = t.negativeBound || b < 0
	}
	t.buckets = append(t.buckets, `le="+Inf"`)
	t.omBuckets = append(t.omBuckets, `le="+Inf"`)
	for _, f := range spec.Families {
		n := f.Name
		t.hist = append(t.hist, histNames{n + "_bucket", n + "_sum", n + "_count", n + "_gsum", n + "_gcount"})
	}
	return t
}

// appendTextPair appends a label pair as the text formats write it.
func appendTextPair(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, '=', '"')
	b = appendEscaped(b, value, true)
	return append(b, '"')
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
	// r and f are the family being written; scratch holds a top value's pairs, or a run of
	// register samples'.
	r       *RuleSnapshot
	f       int
	scratch []byte
	// at cuts scratch into the pairs of a run of register samples (runPairs).
	at []int
}

func (t *textWriter) writer() io.Writer { return t.w }

func (t *textWriter) failed() error { return t.err }

func (t *textWriter) family(r *RuleSnapshot, f int) {
	r.text.encode(r, true, appendTextPair)
	walk(t, r, f)
}

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
func (t *textWriter) begin(r *RuleSnapshot, f int) {
	t.r, t.f = r, f
	fam := &r.shape.spec.Families[f]
	t.pending, t.help = fam.Name, fam.Help
	switch fam.Kind {
	case Counter:
		t.kind = "counter"
		if t.om {
			t.pending = strings.TrimSuffix(fam.Name, "_total")
		}
	case Gauge:
		t.kind = "gauge"
	case Histogram:
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

func (t *textWriter) name() string { return t.r.shape.spec.Families[t.f].Name }

func (t *textWriter) value(i, wi int, v float64) {
	win := ""
	if wi >= 0 {
		win = t.r.shape.text.windowPairs[wi]
	}
	t.sample(t.name(), t.r.text.before(i), win, t.r.text.after(i), "", v)
}

func (t *textWriter) top(ts *topSample) {
	r, s := t.r, t.r.shape
	b := t.scratch[:0]
	for j, i := range s.topOrder {
		if j > 0 {
			b = append(b, ',')
		}
		switch i {
		case pairWindow:
			b = append(b, s.text.windowPairs[ts.window]...)
		case pairExtra:
			b = appendTextPair(b, s.spec.TopLabel, ts.item)
		default:
			b = appendTextPair(b, s.spec.LabelNames[i], r.labels[ts.series][i])
		}
	}
	t.scratch = b
	t.sample(t.name(), b, "", nil, "", ts.v)
}

// histogram writes the classic buckets; the text formats have no native histogram. In
// OpenMetrics a gauge histogram's sum and count are _gsum and _gcount, and a negative sum
// is only allowed with a negative bucket bound, without which the two are left out (the
// +Inf bucket is the count).
func (t *textWriter) histogram(i, wi int, h []float64, _ *nativeRef) {
	if h == nil {
		return
	}
	s, names := &t.r.shape.text, &t.r.shape.text.hist[t.f]
	before, after, win := t.r.text.before(i), t.r.text.after(i), s.windowPairs[wi]
	count, sum := h[len(h)-2], h[len(h)-1]
	if !t.om {
		for k, le := range s.buckets {
			t.sample(names.bucket, before, win, after, le, h[k])
		}
		t.sample(names.sum, before, win, after, "", sum)
		t.sample(names.count, before, win, after, "", count)
		return
	}
	for k, le := range s.omBuckets {
		t.count(names.bucket, before, win, after, le, h[k])
	}
	if sum >= 0 || s.negativeBound {
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
