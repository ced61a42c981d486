package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/crypto/bcrypt"
)

// holdAtMost has srv hold n connections at most, as --web.max-connections=n would, and
// returns a channel that receives each connection the server lets go.
func holdAtMost(srv *http.Server, n int) <-chan struct{} {
	lim := newConnLimiter(n, time.Second, promslog.NewNopLogger())
	gone := make(chan struct{}, 100)
	srv.ConnState = func(c net.Conn, state http.ConnState) {
		lim.track(c, state)
		if state == http.StateClosed || state == http.StateHijacked {
			gone <- struct{}{}
		}
	}
	return gone
}

// let waits for the server to let go of a connection, for up to 2 s: well within its read
// timeout, past which the connection was held.
func let(t *testing.T, gone <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-gone:
	case <-hung(t):
		t.Fatalf("the server still holds %s", what)
	}
}

// trickle sends request, a body announced and begun, and reads the reply: it fails unless
// the reply comes well within the server's read timeout, with status want and
// "Connection: close", and the server then closes the connection while the body trickles
// on, freeing its place within --web.max-connections (gone receives it), at once or, when
// net/http gave up the body unread, after the half second it waits before closing (so
// that the client reads the reply before its next bytes meet a reset).
func trickle(t *testing.T, addr, request string, want int, gone <-chan struct{}) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(hangDeadline(t))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no reply while the body trickles: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want || !resp.Close {
		t.Errorf("HTTP %d, Connection: %q; want %d, close", resp.StatusCode, resp.Header.Get("Connection"), want)
	}
	_, _ = io.WriteString(c, "c")
	if _, err := r.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("the connection is still open after the reply: %v", err)
	}
	let(t, gone, "the trickling connection")
}

// scrapeOnce scrapes url on a connection of its own, which must get in within the one
// connection the server holds and be let go after.
func scrapeOnce(t *testing.T, url, user, password string, gone <-chan struct{}) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	scrape, err := (&http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatalf("a scrape after it: %v", err)
	}
	_, _ = io.Copy(io.Discard, scrape.Body)
	scrape.Body.Close()
	if scrape.StatusCode != http.StatusOK {
		t.Errorf("a scrape after it: HTTP %d", scrape.StatusCode)
	}
	let(t, gone, "the scrape's connection")
}

// TestUnreadBodiesHoldNoConnection: a client that announces a body to an endpoint that
// reads none, then trickles it, is answered at once, and its connection is closed at once,
// freeing its place within --web.max-connections; net/http would otherwise read up to
// 256 KiB of the body after the handler, until the read timeout, before it let the
// connection go. Over real sockets, with one connection allowed.
func TestUnreadBodiesHoldNoConnection(t *testing.T) {
	e := startExporter(t, true)
	coll := e.p.Collector()
	o := Options{Logger: promslog.NewNopLogger(), MetricsPath: "/metrics", Lifecycle: true, LineTester: true,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = newHTTPServer(NewMux(e.p, coll, NewRegistry(coll), o), o)
	gone := holdAtMost(ts.Config, 1)
	ts.Start()
	t.Cleanup(ts.Close)
	addr := ts.Listener.Addr().String()

	for _, tc := range []struct {
		name, request string
		want          int
	}{
		{"healthy, 200 KB announced", "POST /-/healthy HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\nab", 200},
		{"healthy, more than 256 KiB announced", "POST /-/healthy HTTP/1.1\r\nHost: x\r\nContent-Length: 300000\r\n\r\nab", 200},
		{"metrics, chunked", "GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n", 200},
		{"ready", "GET /-/ready HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab", 200},
		{"status page", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab", 200},
		{"not found", "POST /nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab", 404},
		{"reload", "POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab", 200},
		{"reload, 10 GB announced", "POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\nab", 200},
		{"reload, chunked", "PUT /-/reload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n", 200},
		{"reload, a query", "POST /-/reload?config.file=/etc/passwd&" + strings.Repeat("x", 4000) + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab", 200},
		{"reload, GET", "GET /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab", 405},
		{"reload, DELETE", "DELETE /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab", 405},
		{"reload, from another site", "POST /-/reload HTTP/1.1\r\nHost: x\r\nSec-Fetch-Site: cross-site\r\nContent-Length: 1000\r\n\r\nab", 403},
		// The line tester reads its body, bounded; one it refuses unread is answered at once.
		{"line tester, not a form", "POST /-/explain HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nab", 415},
		{"line tester, not POST", "PUT /-/explain HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab", 405},
		{"line tester, too long", "POST /-/explain HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 300000\r\n\r\nab", 413},
		// A path the mux redirects, before the line tester.
		{"line tester, unclean path", "POST /-/./explain HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nab", 307},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trickle(t, addr, tc.request, tc.want, gone)
			scrapeOnce(t, ts.URL+"/metrics", "", "", gone)
		})
	}
}

// TestUnreadBodiesBehindBasicAuth is TestUnreadBodiesHoldNoConnection behind a web
// config's basic auth, served as Serve serves it: exporter-toolkit answers a request
// without the right password itself (401), before the exporter's handlers, and net/http
// read the body it left unread until the read timeout, holding the connection. A request
// with the right password reaches the handlers, and the line tester reads its body.
func TestUnreadBodiesBehindBasicAuth(t *testing.T) {
	const user, password = "prometheus", "s3cret"
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webConfig, fmt.Appendf(nil, "basic_auth_users:\n  %s: %s\n", user, hash), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startExporter(t, true)
	coll := e.p.Collector()
	o := Options{Logger: promslog.NewNopLogger(), MetricsPath: "/metrics", Lifecycle: true, LineTester: true,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	srv := newHTTPServer(NewMux(e.p, coll, NewRegistry(coll), o), o)
	gone := holdAtMost(srv, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- serveOn(l, srv, &web.FlagConfig{WebConfigFile: &webConfig}, newWebConfigErrors(webConfig, o.Logger, time.Now), o.Logger)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-served; err != http.ErrServerClosed {
			t.Errorf("web.Serve: %v", err)
		}
	})
	addr := l.Addr().String()
	url := "http://" + addr

	good := "Authorization: Basic " + basicAuth(user, password) + "\r\n"
	bad := "Authorization: Basic " + basicAuth(user, "guess") + "\r\n"
	form := "Content-Type: application/x-www-form-urlencoded\r\n"
	for _, tc := range []struct {
		name, request string
		want          int
	}{
		{"healthy, no password", "POST /-/healthy HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab", 401},
		{"metrics, wrong password, chunked", "GET /metrics HTTP/1.1\r\nHost: x\r\n" + bad + "Transfer-Encoding: chunked\r\n\r\n2\r\nab\r\n", 401},
		{"reload, wrong password", "POST /-/reload HTTP/1.1\r\nHost: x\r\n" + bad + "Content-Length: 1000\r\n\r\nab", 401},
		{"line tester, no password", "POST /-/explain HTTP/1.1\r\nHost: x\r\n" + form + "Content-Length: 1000\r\n\r\nab", 401},
		{"line tester, wrong password", "POST /-/explain HTTP/1.1\r\nHost: x\r\n" + bad + form + "Content-Length: 1000\r\n\r\nab", 401},
		{"line tester, wrong password, chunked", "POST /-/explain HTTP/1.1\r\nHost: x\r\n" + bad + form + "Transfer-Encoding: chunked\r\n\r\n2\r\nab\r\n", 401},
		{"line tester, wrong password, more than 256 KiB", "POST /-/explain HTTP/1.1\r\nHost: x\r\n" + bad + form + "Content-Length: 300000\r\n\r\nab", 401},
		{"healthy, right password", "POST /-/healthy HTTP/1.1\r\nHost: x\r\n" + good + "Content-Length: 1000\r\n\r\nab", 200},
		{"line tester, right password, not a form", "POST /-/explain HTTP/1.1\r\nHost: x\r\n" + good + "Content-Type: text/plain\r\nContent-Length: 1000\r\n\r\nab", 415},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trickle(t, addr, tc.request, tc.want, gone)
			scrapeOnce(t, url+"/metrics", user, password, gone)
		})
	}

	// With the right password the line tester reads the lines, and the connection is
	// kept for the next request.
	t.Run("line tester, right password", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(hangDeadline(t))
		body := "input=&lines=GET"
		r := bufio.NewReader(c)
		for range 2 {
			if _, err := fmt.Fprintf(c, "POST /-/explain HTTP/1.1\r\nHost: x\r\n%s%sContent-Length: %d\r\n\r\n%s", good, form, len(body), body); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Close || !strings.Contains(string(page), "GET") {
				t.Fatalf("HTTP %d, Connection: %q; want 200, kept, the line explained:\n%s", resp.StatusCode, resp.Header.Get("Connection"), page)
			}
		}
	})
}

// basicAuth is the credentials of an Authorization header's Basic scheme.
func basicAuth(user, password string) string {
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.SetBasicAuth(user, password)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
