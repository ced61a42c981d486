package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"
)

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
	lim := newConnLimiter(1, time.Second, o.Logger)
	var open atomic.Int64 // the connections the server holds
	ts.Config.ConnState = func(c net.Conn, state http.ConnState) {
		lim.track(c, state)
		switch state {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	// closedWithin waits for the server to hold no connection, for up to d (well within
	// its read timeout).
	closedWithin := func(d time.Duration) bool {
		for deadline := time.Now().Add(d); open.Load() != 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				return false
			}
		}
		return true
	}
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
		// The line tester reads its body, bounded; one it refuses unread is answered at once.
		{"line tester, not a form", "POST /-/explain HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nab", 415},
		{"line tester, not POST", "PUT /-/explain HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab", 405},
		{"line tester, too long", "POST /-/explain HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 300000\r\n\r\nab", 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Well within the server's read timeout: past it, the connection was held.
			_ = c.SetDeadline(time.Now().Add(3 * time.Second))
			if _, err := io.WriteString(c, tc.request); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(c)
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatalf("no reply while the body trickles: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || !resp.Close {
				t.Errorf("HTTP %d, Connection: %q; want %d, close", resp.StatusCode, resp.Header.Get("Connection"), tc.want)
			}
			// Trickling on, the client finds its connection closed by the server...
			_, _ = io.WriteString(c, "c")
			if _, err := r.ReadByte(); err == nil || isTimeout(err) {
				t.Fatalf("the connection is still open after the reply: %v", err)
			}
			// ... and its place within --web.max-connections free at once or, when net/http
			// gave up the body unread, after the half second it waits before closing (so that
			// the client reads the reply before its next bytes meet a reset).
			if !closedWithin(2 * time.Second) {
				t.Fatalf("the server still holds %d connections", open.Load())
			}
			scrape, err := (&http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Get(ts.URL + "/metrics")
			if err != nil {
				t.Fatalf("a scrape after it: %v", err)
			}
			_, _ = io.Copy(io.Discard, scrape.Body)
			scrape.Body.Close()
			if scrape.StatusCode != http.StatusOK {
				t.Errorf("a scrape after it: HTTP %d", scrape.StatusCode)
			}
			if !closedWithin(2 * time.Second) {
				t.Fatalf("the scrape's connection is still held")
			}
		})
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
