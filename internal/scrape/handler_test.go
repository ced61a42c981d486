package scrape

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// TestHandlerNegotiates scrapes a real HTTP server: the format is the one the client asked
// for (text, OpenMetrics as expfmt writes the same families, or delimited protobuf holding
// them), with the name escaping asked for, gzip only when the client's
// Accept-Encoding prefers it, name[] filters, and the Go collector's families come from
// the registry next to the rule families.
func TestHandlerNegotiates(t *testing.T) {
	set := mustSet(t, storetest.Config(10, storetest.CountRule("http_requests", storetest.MinFive, "status")), nil)
	feed(set.NewSink(), []line{{labels: []string{"200"}, now: start}, {labels: []string{"500"}, now: start}})
	now := int64(start + 1)
	c := collectorAt(fixed(set), &now)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c, collectors.NewGoCollector())
	srv := httptest.NewServer(exporter.Handler(c, reg, nil))
	defer srv.Close()
	// The text Gatherer parses back: the same families, in the text format.
	var wantText, wantOM bytes.Buffer
	mfs, err := metrictest.Scraped(exporter.Handler(c, reg, nil)).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&wantText, mf); err != nil {
			t.Fatal(err)
		}
		if _, err := expfmt.MetricFamilyToOpenMetrics(&wantOM, mf); err != nil {
			t.Fatal(err)
		}
	}
	wantOM.WriteString("# EOF\n")

	cases := []struct {
		name, accept, encoding, query string
		wantType                      expfmt.FormatType
		wantGzip                      bool
		// wantEscaping is the escaping= of the Content-Type; underscores unless asked.
		wantEscaping string
	}{
		{"Prometheus 2", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", "gzip", "", expfmt.TypeOpenMetrics, true, ""},
		{"Prometheus 3", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,*/*;q=0.1", "gzip", "", expfmt.TypeProtoDelim, true, "allow-utf-8"},
		{"OpenMetrics 0.0.1", "application/openmetrics-text; version=0.0.1", "", "", expfmt.TypeOpenMetrics, false, ""},
		{"text escaping dots", "text/plain;version=0.0.4;escaping=dots", "", "", expfmt.TypeTextPlain, false, "dots"},
		{"no headers", "", "", "", expfmt.TypeTextPlain, false, ""},
		{"identity asked", "text/plain", "identity", "", expfmt.TypeTextPlain, false, ""},
		{"gzip refused", "text/plain", "gzip;q=0", "", expfmt.TypeTextPlain, false, ""},
		{"identity preferred", "text/plain", "identity, gzip;q=0.5", "", expfmt.TypeTextPlain, false, ""},
		{"gzip preferred", "text/plain", "identity;q=0.5, gzip", "", expfmt.TypeTextPlain, true, ""},
		{"anything", "text/plain", "*", "", expfmt.TypeTextPlain, false, ""},
		{"protobuf", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", "gzip", "", expfmt.TypeProtoDelim, true, ""},
		{"name filter", "", "", "?name[]=http_requests_total&name[]=go_goroutines", expfmt.TypeTextPlain, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, srv.URL+tc.query, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			if tc.encoding != "" {
				req.Header.Set("Accept-Encoding", tc.encoding)
			}
			// A transport of its own, so that Go's client neither asks for gzip nor
			// decompresses behind the test's back.
			resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %s", resp.Status)
			}
			format := expfmt.Format(resp.Header.Get("Content-Type"))
			if format.FormatType() != tc.wantType {
				t.Errorf("Content-Type %q, want a %v format", format, tc.wantType)
			}
			escaping := tc.wantEscaping
			if escaping == "" {
				escaping = "underscores"
			}
			if !strings.HasSuffix(string(format), "; escaping="+escaping) {
				t.Errorf("Content-Type %q, want escaping=%s", format, escaping)
			}
			var body io.Reader = resp.Body
			if gz := resp.Header.Get("Content-Encoding") == "gzip"; gz != tc.wantGzip {
				t.Errorf("Content-Encoding %q, want gzip: %v", resp.Header.Get("Content-Encoding"), tc.wantGzip)
			} else if gz {
				zr, err := gzip.NewReader(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				body = zr
			}
			// The text is compared as sent (its order is the registry's); protobuf is
			// decoded family by family and written as text.
			raw, err := io.ReadAll(body)
			if err != nil {
				t.Fatal(err)
			}
			text := string(raw)
			if tc.wantType == expfmt.TypeProtoDelim {
				var b bytes.Buffer
				dec := expfmt.NewDecoder(bytes.NewReader(raw), format)
				for {
					mf := &dto.MetricFamily{}
					if err := dec.Decode(mf); err == io.EOF {
						break
					} else if err != nil {
						t.Fatal(err)
					}
					if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
						t.Fatal(err)
					}
				}
				text = b.String()
			}
			names := map[string]bool{}
			for line := range strings.Lines(text) {
				if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
					names[strings.Fields(name)[0]] = true
				}
			}
			got := withoutGo(text)
			want := withoutGo(wantText.String())
			if tc.wantType == expfmt.TypeOpenMetrics {
				want = withoutGo(wantOM.String())
			}
			if tc.query != "" {
				want = "# HELP http_requests_total Requests. Matched lines since the exporter started.\n# TYPE http_requests_total counter\nhttp_requests_total{status=\"200\"} 1\nhttp_requests_total{status=\"500\"} 1\n"
				if len(names) != 2 || !names["go_goroutines"] {
					t.Errorf("name[] filter gave %v", names)
				}
			} else if !names["go_goroutines"] || !names["logwindow_rule_series"] {
				t.Errorf("families %v lack the registry's", names)
			}
			if got != want {
				t.Errorf("body:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// withoutGo drops the Go collector's families from a text exposition.
func withoutGo(text string) string {
	var out strings.Builder
	skip := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "# HELP ") {
			skip = strings.HasPrefix(line, "# HELP go_")
		}
		if !skip {
			out.WriteString(line)
		}
	}
	return out.String()
}
