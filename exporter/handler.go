package exporter

import (
	"io"
	"iter"
	"log"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Source is what a Handler serves besides a registry's families: the rule families.
type Source interface {
	// Scrape starts a scrape in format of the families keep passes (all when nil); the
	// Handler gathers the registry before writing it.
	Scrape(keep func(name string) bool, format expfmt.Format) Scrape
}

// Handler serves a scrape: reg's families (the self-metrics, Go and process collectors)
// and src's rule families, as promhttp would serve reg alone with ContinueOnError and
// EnableOpenMetrics. It negotiates the format among those promhttp then offers (the text
// format, OpenMetrics text, delimited protobuf and the protobuf text formats, each with the
// name escaping the client asks for) and the encoding (gzip, at its fastest level, or none),
// and honours the name[] filter. What a scrape holds is bounded: the rules are read one at
// a time as they are written, and what is written goes out in flushAt chunks through the
// compressor, so a client that stalls holds a chunk, the compressor's window and the rule
// being written. errorLog may be nil.
func Handler(src Source, reg prometheus.Gatherer, errorLog *log.Logger) http.Handler {
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "promhttp_metric_handler_errors_total",
		Help: "Total number of internal errors encountered by the promhttp metric handler.",
	}, []string{"cause"})
	errs.WithLabelValues("gathering")
	errs.WithLabelValues("encoding")
	if r, ok := reg.(prometheus.Registerer); ok {
		if err := r.Register(errs); err != nil {
			if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
				errs = are.ExistingCollector.(*prometheus.CounterVec)
			}
		}
	}
	// failed counts the scrapes that could not be written, for the log.
	var failed atomic.Int64
	logf := func(format string, v ...any) {
		if errorLog != nil {
			errorLog.Printf(format, v...)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		keep, format := Negotiate(req)
		gzipped := acceptsGzip(req.Header.Values("Accept-Encoding"))
		if req.Method == http.MethodHead {
			// No body is sent: nothing is read for it. Written, it would fail over
			// HTTP/2, whose stream ends with a HEAD's headers, and count as an error.
			setReplyHeader(w.Header(), format, gzipped)
			return
		}
		rules := src.Scrape(keep, format)
		defer rules.Close()
		mfs, err := reg.Gather()
		if err != nil {
			logf("error gathering metrics: %v", err)
			errs.WithLabelValues("gathering").Inc()
			if len(mfs) == 0 {
				http.Error(w, "An error has occurred while gathering metrics:\n\n"+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		if keep != nil {
			mfs = slices.DeleteFunc(mfs, func(mf *dto.MetricFamily) bool { return !keep(mf.GetName()) })
		}
		setReplyHeader(w.Header(), format, gzipped)
		var out io.Writer = w
		var gz *kgzip.Writer
		if gzipped {
			gz = gzips.get(newGzipWriter)
			gz.Reset(w)
			out = gz
		}
		x := NewWriter(out, format, mfs)
		x.hold, _ = req.Context().Value(holdKey{}).(func(int64) error)
		err = rules.Write(x)
		if cerr := x.Close(); err == nil {
			err = cerr
		}
		if gz != nil {
			if cerr := gz.Close(); err == nil {
				err = cerr
			}
			gzips.put(gz)
		}
		if err != nil {
			errs.WithLabelValues("encoding").Inc()
			// Mostly a client that went away, which anyone may do at every request: the
			// log gets the first and every thousandth, as the limiters log their refusals.
			if n := failed.Add(1); n == 1 || n%1000 == 0 {
				logf("error encoding and sending metrics (%d scrapes so far; the first and every 1000th are logged): %v", n, err)
			}
		}
	})
}

// setReplyHeader sets the header of a scrape's reply in format, gzipped or not.
func setReplyHeader(h http.Header, format expfmt.Format, gzipped bool) {
	h.Add("Vary", "Accept")
	h.Add("Vary", "Accept-Encoding")
	h.Set("Content-Type", string(format))
	// The label values are text of log lines, and /metrics is opened in browsers: it is
	// to be taken as the type it names, never sniffed for HTML.
	h.Set("X-Content-Type-Options", "nosniff")
	if gzipped {
		h.Set("Content-Encoding", "gzip")
	}
}

// Negotiate is what a Handler serves req: the families its name[] parameters name (keep
// is nil when it names none: all of them), in the format negotiated from its Accept
// headers, as expfmt negotiates it from the media ranges the client takes: those of
// every Accept header, but those of quality 0, which it refuses (expfmt would serve one
// when nothing else matched). With none taken, the text format is served.
// A limiter in front of the Handler reads it to know what the scrape will read.
func Negotiate(req *http.Request) (keep func(name string) bool, format expfmt.Format) {
	if names := req.URL.Query()["name[]"]; len(names) > 0 {
		keep = func(name string) bool { return slices.Contains(names, name) }
	}
	var taken []byte
	for _, h := range req.Header.Values("Accept") {
		for rest := h; rest != ""; {
			var r string
			r, rest, _ = cutUnquoted(rest, ',')
			taken = appendTaken(taken, r)
		}
	}
	accept := http.Header{"Accept": {string(taken)}}
	return keep, expfmt.NegotiateAccept(accept, expfmt.DefaultOpenMetricsAcceptedFormats()...)
}

// appendTaken appends media range r to the Accept list dst unless its quality is 0, in
// the form expfmt reads: expfmt splits at every "," ";" and "=", quoted or not, so r goes
// with its quoted values unquoted, those that are no token dropped (no format expfmt
// serves has such a parameter), and its quality as quality reads it. A range whose type
// or subtype is no token is dropped: no format expfmt serves matches it.
func appendTaken(dst []byte, r string) []byte {
	mediaType, ps, _ := cutUnquoted(r, ';')
	q := quality(ps)
	if q <= 0 {
		return dst
	}
	typ, sub, slash := strings.Cut(mediaType, "/")
	typ, sub = strings.TrimSpace(typ), strings.TrimSpace(sub)
	if typ == "*" && !slash {
		sub = "*" // as expfmt reads "*", which Java's HttpURLConnection sends
	}
	if !isToken(typ) || !isToken(sub) {
		return dst // no media type: none expfmt serves
	}
	if len(dst) > 0 {
		dst = append(dst, ',')
	}
	dst = append(append(append(dst, typ...), '/'), sub...)
	for k, v := range params(ps) {
		if strings.EqualFold(k, "q") {
			continue
		}
		n := len(dst)
		dst = append(append(append(dst, ';'), k...), '=')
		var ok bool
		if dst, ok = appendToken(dst, v); ok && isToken(k) {
			continue
		}
		dst = dst[:n]
	}
	if q < 1 {
		dst = strconv.AppendFloat(append(dst, ";q="...), q, 'g', -1, 64)
	}
	return dst
}

// appendToken appends v, unquoted if it is a quoted string, and reports whether what it
// appended is a token.
func appendToken(dst []byte, v string) ([]byte, bool) {
	if !strings.HasPrefix(v, `"`) {
		return append(dst, v...), isToken(v)
	}
	n := len(dst)
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			return dst, i == len(v)-1 && isToken(dst[n:])
		case c == '\\' && i+1 < len(v):
			i++
			c = v[i]
		}
		dst = append(dst, c)
	}
	return dst, false // unterminated
}

// isToken reports whether s is an RFC 9110 token (5.6.2).
func isToken[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return len(s) > 0
}

// quality is the q parameter among a media range's or a coding's params (";"-separated),
// 1 without one. A quality that is no number from 0 to 1 (NaN, or one quoted, among them)
// is 0: refused.
func quality(ps string) float64 {
	q := 1.0
	for k, v := range params(ps) {
		if strings.EqualFold(k, "q") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f >= 0 && f <= 1) {
				f = 0
			}
			q = f
		}
	}
	return q
}

// params yields the name and value, trimmed, of each parameter in ps (";"-separated, a
// value perhaps a quoted string, RFC 9110, 5.6.6), but those with no "=".
func params(ps string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for rest := ps; rest != ""; {
			var p string
			p, rest, _ = cutUnquoted(rest, ';')
			if k, v, ok := strings.Cut(p, "="); ok && !yield(strings.TrimSpace(k), strings.TrimSpace(v)) {
				return
			}
		}
	}
}

// cutUnquoted is strings.Cut at the first sep outside a quoted string: within one, sep
// and a quote escaped by a backslash are text of the value (RFC 9110, 5.6.4). An
// unterminated quoted string runs to the end of s.
func cutUnquoted(s string, sep byte) (before, after string, found bool) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// BuffersWhole reports whether a scrape in format is held whole until its end rather than
// written as it is encoded: the protobuf text formats, decoded from the delimited protobuf
// at Close (see NewWriter).
func BuffersWhole(format expfmt.Format) bool {
	switch format.FormatType() {
	case expfmt.TypeTextPlain, expfmt.TypeOpenMetrics, expfmt.TypeProtoDelim:
		return false
	}
	return true
}

// gzips is the handler's spare gzip writer.
var gzips spare[kgzip.Writer]

// newGzipWriter returns a gzip writer at its fastest level (klauspost/compress: about
// twice compress/gzip's speed at level 1 on the exposition text, see BenchmarkCompress).
func newGzipWriter() *kgzip.Writer {
	w, err := kgzip.NewWriterLevel(nil, kgzip.BestSpeed)
	if err != nil {
		panic(err) // BestSpeed is a valid level
	}
	return w
}

// acceptsGzip decides the encoding between identity and gzip: gzip when its quality is
// positive and above identity's. A coding named in the header has its own entry's quality,
// one not named the quality of * (RFC 9110, 12.5.3), and identity named by neither comes
// last; where a coding is named twice, the higher quality counts. So "identity;q=0,
// gzip;q=0.5, *;q=0.8" gets gzip, where taking the highest of a coding's and *'s quality
// for each would weigh identity at 0.8 and send it, refused.
func acceptsGzip(headers []string) bool {
	qGzip, qIdentity, qAny := -1.0, -1.0, -1.0
	for _, h := range headers {
		for spec := range strings.SplitSeq(h, ",") {
			coding, params, _ := strings.Cut(spec, ";")
			coding = strings.TrimSpace(coding)
			q := quality(params)
			switch {
			case coding == "*":
				qAny = max(qAny, q)
			case strings.EqualFold(coding, "gzip"):
				qGzip = max(qGzip, q)
			case strings.EqualFold(coding, "identity"):
				qIdentity = max(qIdentity, q)
			}
		}
	}
	if qGzip < 0 {
		qGzip = qAny
	}
	if qIdentity < 0 {
		qIdentity = qAny
	}
	return qGzip > 0 && qGzip > qIdentity
}
