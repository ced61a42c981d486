package server

import (
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWebConfigHeadersOnPage: the web config's http_server_config.headers are added to
// every reply, the status page's and the line tester's too. The page set a
// Content-Security-Policy of its own over the one the web config gives (its report-uri,
// or what it allows less), which the page dropped; it is added beside it, and a browser
// enforces both.
func TestWebConfigHeadersOnPage(t *testing.T) {
	const policy = "default-src 'none'; report-uri https://csp.example/report"
	webConfig := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webConfig, []byte("http_server_config:\n  headers:\n    Content-Security-Policy: \""+policy+"\"\n    X-Frame-Options: deny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startExporter(t, false)
	logger := slog.New(slog.DiscardHandler)
	coll := e.p.Collector()
	srv := newHTTPServer(NewMux(e.p, coll, NewRegistry(coll), Options{Logger: logger, MetricsPath: "/metrics", LineTester: true}), Options{Logger: logger})
	addr := serveListening(t, srv, webConfig, newWebConfigErrors(webConfig, logger, time.Now), logger)
	base := "http://" + addr
	for _, tc := range []struct {
		name, method, path, form string
		policies                 int // the web config's, and the reply's own when it has one
	}{
		{"metrics", http.MethodGet, "/metrics", "", 1},
		{"page", http.MethodGet, "/", "", 2},
		{"page by HEAD", http.MethodHead, "/", "", 2},
		{"line tester", http.MethodPost, "/-/explain", url.Values{"input": {"web"}, "lines": {accessLine("GET", "/", 200, 5)}}.Encode(), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.form))
			if err != nil {
				t.Fatal(err)
			}
			if tc.form != "" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			policies := resp.Header.Values("Content-Security-Policy")
			if resp.StatusCode != http.StatusOK || !slices.Contains(policies, policy) || len(policies) != tc.policies || resp.Header.Get("X-Frame-Options") != "deny" {
				t.Errorf("HTTP %d, Content-Security-Policy %q, X-Frame-Options %q; want 200 with %d policies, the web config's %q among them, deny",
					resp.StatusCode, policies, resp.Header.Get("X-Frame-Options"), tc.policies, policy)
			}
		})
	}
}
