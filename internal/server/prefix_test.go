package server

import (
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/promslog"
)

// TestStatusPageBehindPrefix serves the exporter behind a reverse proxy that strips a
// path prefix, as an ingress or kubectl proxy does, and follows every link of the status
// page, posts its line tester's form and follows every link of the page that answers,
// each resolved against the page's URL as a browser does: each must reach the exporter.
func TestStatusPageBehindPrefix(t *testing.T) {
	e := startExporter(t, true)
	coll := e.p.Collector()
	o := Options{Logger: promslog.NewNopLogger(), MetricsPath: "/custom/metrics", Lifecycle: true, LineTester: true}
	exporter := httptest.NewServer(NewMux(e.p, coll, NewRegistry(coll), o))
	t.Cleanup(exporter.Close)
	target, err := url.Parse(exporter.URL)
	if err != nil {
		t.Fatal(err)
	}

	for _, prefix := range []string{
		"/logwindow/",
		"/api/v1/namespaces/monitoring/services/logwindow:9100/proxy/",
	} {
		t.Run(prefix, func(t *testing.T) {
			proxy := httputil.NewSingleHostReverseProxy(target)
			// The ingress forwards what is under its prefix, without it, and nothing else.
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rest, ok := strings.CutPrefix(r.URL.Path, prefix)
				if !ok {
					http.Error(w, "not under "+prefix, http.StatusNotFound)
					return
				}
				r.URL.Path, r.URL.RawPath = "/"+rest, ""
				proxy.ServeHTTP(w, r)
			}))
			t.Cleanup(front.Close)
			pageURL := front.URL + prefix

			links, form := pageRefs(t, http.MethodGet, pageURL, nil)
			if len(links) < 4 || form == "" {
				t.Fatalf("the page has links %q and form %q; want its metrics, health and readiness links and the line tester", links, form)
			}
			follow := func(base string, refs []string) {
				for _, ref := range refs {
					u := resolve(t, base, ref)
					resp, err := http.Get(u)
					if err != nil {
						t.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || !strings.HasPrefix(u, front.URL+prefix) {
						t.Errorf("link %q of %s leads to %s: HTTP %d", ref, base, u, resp.StatusCode)
					}
				}
			}
			follow(pageURL, links)

			replyURL := resolve(t, pageURL, form)
			links, form = pageRefs(t, http.MethodPost, replyURL, url.Values{"input": {"web"}, "lines": {`1.2.3.4 - - "GET /a HTTP/1.1" 200 5`}})
			if len(links) < 4 || form == "" {
				t.Fatalf("the line tester's reply has links %q and form %q", links, form)
			}
			follow(replyURL, links)
			if u := resolve(t, replyURL, form); u != replyURL {
				t.Errorf("the reply's form posts to %s, want %s", u, replyURL)
			}
		})
	}
}

var (
	hrefs  = regexp.MustCompile(`href="([^"]*)"`)
	action = regexp.MustCompile(`<form [^>]*action="([^"]*)"`)
)

// pageRefs asks for the page at u (posting form when not nil) and returns its links and
// its form's action, unescaped.
func pageRefs(t *testing.T, method, u string, form url.Values) (links []string, formAction string) {
	t.Helper()
	var resp *http.Response
	var err error
	if method == http.MethodPost {
		resp, err = http.PostForm(u, form)
	} else {
		resp, err = http.Get(u)
	}
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: HTTP %d\n%s", method, u, resp.StatusCode, page)
	}
	for _, m := range hrefs.FindAllStringSubmatch(string(page), -1) {
		links = append(links, html.UnescapeString(m[1]))
	}
	if m := action.FindStringSubmatch(string(page)); m != nil {
		formAction = html.UnescapeString(m[1])
	}
	return links, formAction
}

// resolve is ref as a browser resolves it on the page at base.
func resolve(t *testing.T, base, ref string) string {
	t.Helper()
	b, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		t.Fatalf("link %q: %v", ref, err)
	}
	return b.ResolveReference(r).String()
}
