package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/promslog"
)

// TestMetricsQueryNotReadWhole scrapes the exporter over a socket, its scrapes limited
// and not, with name[] filters in a query Go's net/url cannot read whole: a ";" between
// them, or 10,001 parameters. Each got the whole scrape, every family, as if unfiltered;
// each gets 400 saying why. The same filter sent right keeps the family it names alone.
func TestMetricsQueryNotReadWhole(t *testing.T) {
	e := startExporter(t, false)
	e.request(1, "GET", "/", 200, 5)
	coll := e.p.Collector()
	for _, limit := range []int{0, 4} {
		srv := httptest.NewServer(NewMux(e.p, coll, NewRegistry(coll), Options{Logger: promslog.NewNopLogger(), MetricsPath: "/metrics", MaxRequests: limit, MaxScrapeBytes: 64 << 20}))
		t.Cleanup(srv.Close)
		for _, tc := range []struct {
			name, query string
			code        int
		}{
			{"a semicolon", "name[]=http_requests_window;name[]=http_response_bytes_window", http.StatusBadRequest},
			{"10,001 parameters", "name[]=http_requests_window" + strings.Repeat("&", 10_000), http.StatusBadRequest},
			{"read whole", "name[]=http_requests_window&name[]=http_response_bytes_window", http.StatusOK},
		} {
			t.Run(fmt.Sprintf("%s, --web.max-requests=%d", tc.name, limit), func(t *testing.T) {
				code, body := getBody(t, srv.URL+"/metrics?"+tc.query)
				switch {
				case code != tc.code:
					t.Errorf("--web.max-requests=%d: HTTP %d: %.300q; want %d", limit, code, body, tc.code)
				case tc.code != http.StatusOK && !strings.Contains(body, "cannot be read whole"):
					t.Errorf("--web.max-requests=%d: %.300q says nothing of the query", limit, body)
				case tc.code == http.StatusOK && (!strings.Contains(body, "http_requests_window{") || strings.Contains(body, "logwindow_") || strings.Contains(body, "http_requests_by_path")):
					t.Errorf("--web.max-requests=%d: the filtered scrape holds other families: %.1000s", limit, body)
				}
			})
		}
	}
}

// getBody GETs url and returns the reply's status and body.
func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
