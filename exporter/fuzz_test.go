package exporter

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
)

// quotedRE is a quoted string (RFC 9110, 5.6.4), or one left open to the end.
var quotedRE = regexp.MustCompile(`(?s)"(?:\\.|[^"\\])*(?:"|\\?$)`)

// tokenRE is an RFC 9110 token (5.6.2).
var tokenRE = regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")

// refSplit is a naive reference for splitting with cutUnquoted: s split at each sep that
// is left once its quoted strings are masked. A last empty element is left off, as
// splitting with cutUnquoted never yields one.
func refSplit(s string, sep byte) []string {
	masked := quotedRE.ReplaceAllStringFunc(s, func(q string) string { return strings.Repeat("x", len(q)) })
	var out []string
	start := 0
	for i := 0; i < len(masked); i++ {
		if masked[i] == sep {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// refQuality is a naive reference for quality.
func refQuality(ps string) float64 {
	q := 1.0
	for _, p := range refSplit(ps, ';') {
		k, v, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0 || f > 1 || f != f {
			f = 0
		}
		q = f
	}
	return q
}

// FuzzNegotiate reads any Accept header: its ranges, their types and their qualities must
// be those the naive reference parser reads, and negotiating them must not fail.
func FuzzNegotiate(f *testing.F) {
	f.Add(`application/openmetrics-text;q=0.9;a="x;q=0"`)
	f.Add(`application/vnd.google.protobuf;a="x,text/plain";q=0, text/plain;q=0.5`)
	f.Add(`text/plain;a="x\";q=0";q=0.25;escaping="allow-utf-8"`)
	f.Add(`*/*;q=0.1,text/html , application/xml;q="1"; Q=0.5;b="`)
	f.Fuzz(func(t *testing.T, h string) {
		var got []string
		for rest := h; rest != ""; {
			var r string
			r, rest, _ = cutUnquoted(rest, ',')
			got = append(got, r)
		}
		if want := refSplit(h, ','); !slices.Equal(got, want) {
			t.Fatalf("ranges of %q: %q, want %q", h, got, want)
		}
		for _, r := range got {
			var ps string
			if parts := refSplit(r, ';'); len(parts) > 1 {
				ps = strings.Join(parts[1:], ";")
			}
			q := quality(ps)
			if want := refQuality(ps); q != want {
				t.Fatalf("quality of %q: %v, want %v", r, q, want)
			}
			mr, ok := parseRange(r)
			typ, sub, slash := strings.Cut(refSplit(r+";", ';')[0], "/")
			typ, sub = strings.TrimSpace(typ), strings.TrimSpace(sub)
			if typ == "*" && !slash {
				sub = "*"
			}
			if !tokenRE.MatchString(typ) || !tokenRE.MatchString(sub) {
				if ok {
					t.Fatalf("range %q, of no media type, read as %+v", r, mr)
				}
				continue
			}
			if !ok || mr.typ != strings.ToLower(typ) || mr.sub != strings.ToLower(sub) || mr.q != q {
				t.Fatalf("range %q read as %+v (%v), want %s/%s of quality %v", r, mr, ok, typ, sub, q)
			}
			if _, ok := mr.params["q"]; ok {
				t.Fatalf("range %q read with its quality among its parameters: %+v", r, mr)
			}
		}
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", h)
		if _, f := Negotiate(req); f.FormatType() == expfmt.TypeUnknown || !strings.Contains(string(f), "; escaping=") {
			t.Fatalf("Accept %q negotiated %q: no format served", h, f)
		}
	})
}
