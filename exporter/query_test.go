package exporter

import (
	"bytes"
	stdlog "log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestHandlerRefusesQueryNotReadWhole: Go's net/url leaves out a query parameter holding a
// ";" or a bad escape, and the whole query past 10,000 parameters, so that a scrape
// filtered by name[] served every family (or others than it named), with nothing said.
// Such a request gets 400 naming what is wrong, GET or HEAD, and the registry is not
// gathered; a query read whole filters as it says.
func TestHandlerRefusesQueryNotReadWhole(t *testing.T) {
	reg := prometheus.NewRegistry()
	gathers := 0
	kept := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kept_gauge", Help: "A gauge named."},
		func() float64 { gathers++; return 1 })
	reg.MustRegister(kept, prometheus.NewGauge(prometheus.GaugeOpts{Name: "other_gauge", Help: "A gauge not named."}))
	h := Handler(noRules{}, reg, stdlog.New(&bytes.Buffer{}, "", 0))
	for _, tc := range []struct {
		name, query string
		bad         string // Go's words in the 400's body; "" for a query read whole
	}{
		{"a semicolon between filters", "name[]=kept_gauge;name[]=x", "invalid semicolon separator in query"},
		{"a semicolon in another parameter", "name[]=kept_gauge&a;b", "invalid semicolon separator in query"},
		{"a bad escape", "name[]=kept_gauge&name[]=%zz", `invalid URL escape "%zz"`},
		{"10,001 parameters", "name[]=kept_gauge" + strings.Repeat("&", 10_000), "number of URL query parameters exceeded limit"},
		{"10,001 named", strings.Repeat("name[]=kept_gauge&", 10_000) + "name[]=kept_gauge", "number of URL query parameters exceeded limit"},
		{"a filter", "name[]=kept_gauge", ""},
		{"an escaped semicolon", "name[]=kept_gauge&a=%3B", ""},
		{"10,000 parameters", "name[]=kept_gauge" + strings.Repeat("&", 9_999), ""},
		// Read whole, and filtering nothing: every family is served.
		{"no query", "", ""},
		{"empty parameters", "&&", ""},
		{"a scrape's params, escaped", "module=http_2xx&target=http%3A%2F%2Fa%2F%3Fb%3Bc%26d", ""},
	} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			t.Run(tc.name+" "+method, func(t *testing.T) {
				gathers = 0
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(method, "/metrics?"+tc.query, nil))
				body := rec.Body.String()
				switch {
				case tc.bad != "":
					if rec.Code != http.StatusBadRequest || method == http.MethodGet && (!strings.Contains(body, tc.bad) || !strings.Contains(body, "name[]")) || gathers != 0 {
						t.Errorf("HTTP %d, %d gathers: %.300q; want 400 saying %q, nothing gathered", rec.Code, gathers, body, tc.bad)
					}
				case rec.Code != http.StatusOK:
					t.Errorf("HTTP %d: %.300q", rec.Code, body)
				case method == http.MethodGet && strings.Contains(tc.query, "name[]") && (!strings.Contains(body, "kept_gauge 1") || strings.Contains(body, "other_gauge")):
					t.Errorf("the scrape does not keep kept_gauge alone: %.1000s", body)
				case method == http.MethodGet && !strings.Contains(tc.query, "name[]") && (!strings.Contains(body, "kept_gauge 1") || !strings.Contains(body, "other_gauge")):
					t.Errorf("the scrape filtered by nothing does not serve every family: %.1000s", body)
				}
			})
		}
	}
}
