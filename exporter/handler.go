package exporter

import (
	"cmp"
	"io"
	"iter"
	"log"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
		if err := QueryError(req); err != nil {
			http.Error(w, badQuery(err), http.StatusBadRequest)
			return
		}
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
		// The scrape made the registry's whole Gather, whatever name[] keeps of it: what
		// it leaves out goes at the next garbage collection, not at once.
		gathered := gatheredBytes(mfs)
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
		x := newWriter(out, format, mfs, gathered)
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

// QueryError is why req's query cannot be read whole, nil when it can (or has none). Go's
// net/url leaves out a parameter holding a ";" (no longer a separator) or a bad escape
// ("%zz"), and the whole query past 10,000 parameters: a name[] filter left out so would
// have the scrape serve every family, or some of those named, with nothing said. A
// Handler answers such a request 400, reading nothing.
func QueryError(req *http.Request) error {
	if req.URL.RawQuery == "" {
		return nil
	}
	_, err := url.ParseQuery(req.URL.RawQuery)
	return err
}

// badQuery is the body of the 400 a Handler answers a request whose query is not read
// whole (QueryError) with.
func badQuery(err error) string {
	return "The query cannot be read whole (" + err.Error() + "): its name[] filters would be lost and other families served. " +
		"Separate parameters with & (escape a ; as %3B and a % as %25), and send at most 10,000 of them."
}

// Negotiate is what a Handler serves req: the families its name[] parameters name (keep
// is nil when it names none: all of them), in the format negotiated from the media ranges
// of every Accept header, by RFC 9110 (12.5.1) among the formats expfmt offers with
// OpenMetrics on, matched as expfmt matches them (see negotiate). With none acceptable,
// the text format is served. A limiter in front of the Handler reads it to know what the
// scrape will read.
func Negotiate(req *http.Request) (keep func(name string) bool, format expfmt.Format) {
	if names := req.URL.Query()["name[]"]; len(names) > 0 {
		// Looked up: keep is called for every family, under the limiter's lock when it
		// prices a scrape, and a query may name thousands.
		named := make(map[string]struct{}, len(names))
		for _, n := range names {
			named[n] = struct{}{}
		}
		keep = func(name string) bool {
			_, ok := named[name]
			return ok
		}
	}
	var ranges []mediaRange
	for _, h := range req.Header.Values("Accept") {
		for rest := h; rest != ""; {
			var r string
			r, rest, _ = cutUnquoted(rest, ',')
			if mr, ok := parseRange(r); ok {
				ranges = append(ranges, mr)
			}
		}
	}
	return keep, negotiate(ranges)
}

// mediaRange is one media range of an Accept header: its type and subtype in lower case
// ("*" for any), its parameters but the quality (names in lower case, values unquoted),
// and its quality.
type mediaRange struct {
	typ, sub string
	params   map[string]string
	q        float64
}

// parseRange reads media range r; ok is false when its type or subtype is no token: no
// format matches it. A parameter whose name is no token, or whose value is neither a
// token nor a quoted string, is left out: no format has it. A bare "*" is
// "*/*", as expfmt reads it (Java's HttpURLConnection sends it).
func parseRange(r string) (mr mediaRange, ok bool) {
	mediaType, ps, _ := cutUnquoted(r, ';')
	typ, sub, slash := strings.Cut(mediaType, "/")
	typ, sub = strings.TrimSpace(typ), strings.TrimSpace(sub)
	if typ == "*" && !slash {
		sub = "*"
	}
	if !isToken(typ) || !isToken(sub) {
		return mediaRange{}, false
	}
	mr = mediaRange{typ: strings.ToLower(typ), sub: strings.ToLower(sub), q: quality(ps)}
	for k, v := range params(ps) {
		if k = strings.ToLower(k); k == "q" {
			continue
		}
		v, ok := unquote(v)
		if !ok || !isToken(k) {
			continue // no parameter: no format has it
		}
		if mr.params == nil {
			mr.params = map[string]string{}
		}
		mr.params[k] = v
	}
	return mr, true
}

// specificity ranks how narrowly r names types (RFC 9110, 12.5.1): "*/*", then "type/*",
// then a type, then a type with more parameters.
func (r *mediaRange) specificity() int {
	switch {
	case r.typ == "*":
		return 0
	case r.sub == "*":
		return 1
	}
	return 2 + len(r.params)
}

// offer is a format a scrape may be served in, its media type read as ranges are.
type offer struct {
	format expfmt.Format
	mediaRange
}

// offers are the formats expfmt offers with OpenMetrics on, in its order of preference.
var offers = func() []offer {
	var out []offer
	for _, f := range expfmt.DefaultOpenMetricsAcceptedFormats() {
		r, ok := parseRange(string(f))
		if !ok {
			panic("exporter: expfmt offers the format " + string(f) + ", which is no media type")
		}
		out = append(out, offer{f, r})
	}
	return out
}()

// matches reports whether range r names offer o, as expfmt matches them: its type and
// subtype, or "*", and every parameter o has but the charset, a range of the text or the
// OpenMetrics type without a version taken for their first (0.0.4, 0.0.1). A wildcard
// range names the text format besides (in expfmt it serves it, when nothing else matched).
func (r *mediaRange) matches(o *offer) bool {
	if o.format.FormatType() == expfmt.TypeTextPlain && r.sub == "*" && (r.typ == "*" || r.typ == o.typ) {
		return true
	}
	if r.typ != "*" && r.typ != o.typ || r.sub != "*" && r.sub != o.sub {
		return false
	}
	for k, v := range o.params {
		if k == "charset" {
			continue
		}
		got, ok := r.params[k]
		if !ok && k == "version" {
			switch r.typ + "/" + r.sub {
			case "text/plain":
				got = expfmt.TextVersion
			case expfmt.OpenMetricsType:
				got = expfmt.OpenMetricsVersion_0_0_1
			}
		}
		if got != v {
			return false
		}
	}
	return true
}

// negotiate chooses among the offers by ranges (RFC 9110, 12.5.1): an offer's quality is
// that of the most specific range naming it (the higher among equals), so that a range
// of quality 0 refuses it whatever a wider one says; the offer of the highest quality is
// served, among equals the one named by a type rather than a wildcard, then by the range
// that comes first, then expfmt's preference. The escaping scheme is the one the last
// range asked for of those ranked at or above the range that chose, ranked as the offers
// are (the last of all when none chose: the text format is served), which is how expfmt
// carries a scraper's escaping from a range of a format it does not offer to the one it
// serves.
//
// expfmt differs: it sorts the ranges with a precedence that puts a type before a
// wildcard whatever their qualities ("*/*, application/openmetrics-text;q=0.1" gets
// OpenMetrics), takes each range's quality for every offer it names (a range of quality
// 0 refuses nothing: it is tried last, and what it names served when nothing else
// matched), and compares types and parameter names as they are written, where RFC 9110
// has them case-insensitive.
func negotiate(ranges []mediaRange) expfmt.Format {
	order := make([]int, len(ranges))
	for i := range order {
		order[i] = i
	}
	// By quality, then a type before "type/*" before "*/*", then place: a stable ranking,
	// which is expfmt's where its precedence is one.
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := &ranges[a], &ranges[b]
		if ra.q != rb.q {
			return cmp.Compare(rb.q, ra.q)
		}
		return cmp.Compare(min(rb.specificity(), 2), min(ra.specificity(), 2))
	})
	rank := make([]int, len(ranges)) // a range's place in order
	for k, i := range order {
		rank[i] = k
	}
	chosen, by := -1, -1 // the offer served and the range that chose it
	for oi := range offers {
		o := &offers[oi]
		decides := -1
		for i := range ranges {
			r := &ranges[i]
			if !r.matches(o) {
				continue
			}
			if d := decides; d < 0 || r.specificity() > ranges[d].specificity() || r.specificity() == ranges[d].specificity() && r.q > ranges[d].q {
				decides = i
			}
		}
		if decides < 0 || ranges[decides].q <= 0 {
			continue
		}
		if by < 0 || rank[decides] < rank[by] {
			chosen, by = oi, decides
		}
	}
	format, last := expfmt.FmtText, len(order)-1
	if chosen >= 0 {
		format, last = offers[chosen].format, rank[by]
	}
	escaping := model.NameEscapingScheme.String()
	for _, i := range order[:last+1] {
		r := &ranges[i]
		switch v := r.params[model.EscapingKey]; {
		case r.q <= 0:
		case v == model.AllowUTF8, v == model.EscapeUnderscores, v == model.EscapeDots, v == model.EscapeValues:
			escaping = v
		}
	}
	return format + expfmt.Format("; escaping="+escaping)
}

// unquote returns v unquoted if it is a quoted string, as it is if it is a token; ok is
// false for anything else.
func unquote(v string) (string, bool) {
	if !strings.HasPrefix(v, `"`) {
		return v, isToken(v)
	}
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			return b.String(), i == len(v)-1
		case c == '\\' && i+1 < len(v):
			i++
			c = v[i]
		}
		b.WriteByte(c)
	}
	return "", false // unterminated
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

// BuffersFamilies reports whether a scrape in format holds each family whole before it
// writes it, rather than writing it as it is encoded: the protobuf text formats, decoded
// from the delimited protobuf a family at a time (see NewWriter).
func BuffersFamilies(format expfmt.Format) bool {
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
