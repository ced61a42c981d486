package server

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// gatedListener keeps the connections it accepts, whose reads and writes a test may hold.
type gatedListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*gatedConn
}

func (l *gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	g := &gatedConn{Conn: c}
	l.mu.Lock()
	l.conns = append(l.conns, g)
	l.mu.Unlock()
	return g, nil
}

func (l *gatedListener) conn(i int) *gatedConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns[i]
}

// gatedConn is a connection whose next read of data, or write, a test holds (see hold).
type gatedConn struct {
	net.Conn
	mu          sync.Mutex
	read, write *held
}

// held is a read or write held: at is closed once it is, and it goes on once open is.
type held struct{ at, open chan struct{} }

func newHeld() *held { return &held{at: make(chan struct{}), open: make(chan struct{})} }

// hold holds the next read that returns data, and the next write, until the test opens
// them.
func (c *gatedConn) hold() (read, write *held) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read, c.write = newHeld(), newHeld()
	return c.read, c.write
}

// take returns *h and clears it, under c.mu.
func (c *gatedConn) take(h **held) *held {
	c.mu.Lock()
	defer c.mu.Unlock()
	x := *h
	*h = nil
	return x
}

func (c *gatedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if h := c.take(&c.read); h != nil {
			close(h.at)
			<-h.open
		}
	}
	return n, err
}

func (c *gatedConn) Write(p []byte) (int, error) {
	if h := c.take(&c.write); h != nil {
		close(h.at)
		<-h.open
	}
	return c.Conn.Write(p)
}

// TestEvictedHTTP2ConnectionGoesAway: a connection put out to stay within
// --web.max-connections was closed at once, and an HTTP/2 one, idle as far as the
// server had read, failed the request its client had sent on it just then: Go's client
// said "unexpected EOF" and sent it nowhere else (it does for a GOAWAY, as net/http's
// idle timeout and Shutdown send one). Here the server is held from reading the request
// until a new connection put the one it came on out, and from writing until the new one
// is gone again, so that the client's request sent again finds room: it must be answered.
func TestEvictedHTTP2ConnectionGoesAway(t *testing.T) {
	conns := newConnLimiter(1, time.Second, slog.New(slog.DiscardHandler))
	ts := httptest.NewUnstartedServer(nil)
	ts.EnableHTTP2 = true
	ts.Config = newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Path)
	}), Options{Logger: slog.New(slog.DiscardHandler), conns: conns})
	gl := &gatedListener{Listener: ts.Listener}
	ts.Listener = gl
	ts.StartTLS()
	defer ts.Close()
	client := ts.Client()
	get := func(path string) (string, error) {
		resp, err := client.Get(ts.URL + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if resp.ProtoMajor != 2 {
			return "", errors.New("not HTTP/2: " + resp.Proto)
		}
		return string(body), err
	}
	if got, err := get("/first"); got != "/first" || err != nil {
		t.Fatalf("first request: %q, %v", got, err)
	}
	held := func() (all, idle int) {
		conns.mu.Lock()
		defer conns.mu.Unlock()
		return len(conns.idle) + len(conns.fresh) + len(conns.running), len(conns.idle)
	}
	for all, idle := held(); all != 1 || idle != 1; all, idle = held() {
		time.Sleep(time.Millisecond)
	}
	read, write := gl.conn(0).hold()
	type result struct {
		body string
		err  error
	}
	second := make(chan result, 1)
	go func() {
		body, err := get("/second")
		second <- result{body, err}
	}()
	<-read.at // the request came, and the server has not read it yet
	other, err := net.Dial("tcp", gl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	<-write.at // the server ends the first connection: a GOAWAY, or a TLS alert and close
	_ = other.Close()
	for all, _ := held(); all != 0; all, _ = held() {
		time.Sleep(time.Millisecond)
	}
	close(write.open)
	close(read.open)
	if got := <-second; got.body != "/second" || got.err != nil {
		t.Errorf("a request sent as its HTTP/2 connection was put out: %q, %v; want it answered", got.body, got.err)
	}
}

// TestHTTP2IdleTimeoutGoesAway: an HTTP/2 connection idle for --web.idle-timeout is told
// with a GOAWAY of no error (code 0), as net/http's own HTTP/2 server tells it, before it
// is closed: its client sends a request of that moment again on a new connection.
func TestHTTP2IdleTimeoutGoesAway(t *testing.T) {
	o := Options{Logger: slog.New(slog.DiscardHandler), IdleTimeout: 100 * time.Millisecond}
	o.conns = newConnLimiter(10, time.Second, o.Logger)
	ts := newH2Server(t, http.NotFoundHandler(), o)
	c := dialH2(t, ts.Listener.Addr().String(), nil)
	start := time.Now()
	var code uint32
	if err := h2ReadFrames(c, func(typ, _ byte, _ uint32, payload []byte) bool {
		if typ == 0x7 && len(payload) >= 8 {
			code = binary.BigEndian.Uint32(payload[4:8])
			return true
		}
		return false
	}); err != nil {
		t.Fatalf("no GOAWAY before the connection ended: %v", err)
	}
	if code != 0 || time.Since(start) < o.IdleTimeout {
		t.Errorf("GOAWAY of code %d after %v, want code 0 after the idle timeout %v", code, time.Since(start), o.IdleTimeout)
	}
}

// TestConnLimiterDrainingBounded: an HTTP/2 connection put out while idle between
// requests is sent a GOAWAY and stays open until its requests are answered, a second at
// least, twice the grace at most once no request runs on it: while a quarter of max (one
// at least) do, the next is closed at once, so that clients making connections to be put
// out cannot have the exporter hold sockets past max by more than that. One waiting for
// its first request is closed at once too.
func TestConnLimiterDrainingBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newConnLimiter(4, time.Second, slog.New(slog.DiscardHandler))
		conn := connsOf(l)
		var away []string
		served := func(name string) *testConn {
			c := conn(name, "10.0.0.1:1000")
			l.mu.Lock()
			l.goAway[c] = &http2Conn{away: func() { away = append(away, name) }}
			l.mu.Unlock()
			l.track(c, http.StateActive)
			l.handling(c)() // a request served
			l.track(c, http.StateIdle)
			time.Sleep(time.Millisecond)
			return c
		}
		a, b := served("a"), served("b")
		c := conn("c", "10.0.0.2:1000") // an HTTP/2 connection that sent nothing yet
		l.mu.Lock()
		l.goAway[c] = &http2Conn{away: func() { away = append(away, "c") }}
		l.mu.Unlock()
		time.Sleep(time.Millisecond)
		conn("d", "10.0.0.3:1000")
		conn("e", "10.0.0.4:1000") // puts a out: a GOAWAY
		conn("f", "10.0.0.5:1000") // puts b out: one drains already, closed
		time.Sleep(2*time.Second - time.Millisecond)
		conn("g", "10.0.0.6:1000") // puts c out, fresh for the grace: closed
		synctest.Wait()
		if len(away) != 1 || away[0] != "a" || a.closed.Load() || !b.closed.Load() || !c.closed.Load() {
			t.Errorf("GOAWAY sent on %v, a closed %v, b %v, c %v; want a GOAWAY on a alone, b and c closed",
				away, a.closed.Load(), b.closed.Load(), c.closed.Load())
		}
		// a, whose GOAWAY no client read, ran no request since: closed twice the grace
		// after its GOAWAY.
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !a.closed.Load() {
			t.Error("a connection sent a GOAWAY, running no request, is open twice the grace after it")
		}
	})
}

// TestConnLimiterDrainingRequest: a connection sent a GOAWAY may still run a request its
// client sent before it read the GOAWAY; it stays open while that runs, however long,
// and is closed twice the grace after it ended.
func TestConnLimiterDrainingRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newConnLimiter(4, time.Second, slog.New(slog.DiscardHandler))
		conn := connsOf(l)
		a := conn("a", "10.0.0.1:1000")
		l.mu.Lock()
		sent := false
		l.goAway[a] = &http2Conn{away: func() { sent = true }}
		l.mu.Unlock()
		l.track(a, http.StateActive)
		l.handling(a)()
		l.track(a, http.StateIdle)
		time.Sleep(time.Millisecond)
		for i := range 4 { // the last puts a out: a GOAWAY
			conn(fmt.Sprint("other", i), fmt.Sprintf("10.0.1.%d:1000", i+1))
		}
		synctest.Wait()
		if !sent || a.closed.Load() {
			t.Fatalf("a connection idle between requests put out: GOAWAY sent %v, closed %v; want a GOAWAY, open", sent, a.closed.Load())
		}
		time.Sleep(time.Second)
		// A request its client sent before it read the GOAWAY.
		l.track(a, http.StateActive)
		ended := l.handling(a)
		for _, step := range []struct {
			sleep  time.Duration
			closed bool
			what   string
		}{
			{2 * time.Second, false, "running a request begun after its GOAWAY, twice the grace after the GOAWAY"},
			{-1, false, "as its request ended"},
			{2*time.Second - time.Millisecond, false, "less than twice the grace after its request ended"},
			{time.Millisecond, true, "twice the grace after its request ended"},
		} {
			if step.sleep < 0 {
				ended()
				l.track(a, http.StateIdle)
			} else {
				time.Sleep(step.sleep)
			}
			synctest.Wait()
			if got := a.closed.Load(); got != step.closed {
				t.Errorf("a connection sent a GOAWAY, %s: closed %v, want %v", step.what, got, step.closed)
			}
		}
	})
}

// TestHTTP2ServersEnd: each HTTP/2 connection is served by an http.Server of its own
// (serveHTTP2), which must end with its connection, and the server's Shutdown must reach
// every one: a connection that was served (a request answered) or not (its SETTINGS
// alone) is sent a GOAWAY, closed, and Shutdown returns. Without the GOAWAY the server's
// Shutdown waited for each to end by its client (net/http takes a connection handed to
// TLSNextProto for one active to the end). Before that, many connections opened and
// closed by their clients must leave no server and no goroutine behind.
func TestHTTP2ServersEnd(t *testing.T) {
	o := Options{Logger: slog.New(slog.DiscardHandler)}
	o.conns = newConnLimiter(1000, time.Second, o.Logger)
	ts := newH2Server(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), o)
	addr := ts.Listener.Addr().String()
	// request sends one GET on c, stream id, and reads frames to its reply's end.
	request := func(c net.Conn, id uint32) error {
		// HPACK, static table: :method GET, :scheme https, :path /; :authority x.
		if err := h2Frame(c, 0x1, 0x5, id, []byte{0x82, 0x87, 0x84, 0x41, 0x01, 'x'}); err != nil {
			return err
		}
		return h2ReadFrames(c, func(typ, flags byte, sid uint32, _ []byte) bool {
			return sid == id && typ == 0x0 && flags&0x1 != 0
		})
	}
	served := func() int {
		o.conns.mu.Lock()
		defer o.conns.mu.Unlock()
		return len(o.conns.goAway)
	}
	before := runtime.NumGoroutine()
	for i := range 200 {
		c := dialH2(t, addr, nil)
		if i%2 == 0 {
			if err := request(c, 1); err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
		}
		_ = c.Close()
	}
	if !await.Until(t, func() bool { return served() == 0 && runtime.NumGoroutine() <= before }) {
		t.Fatalf("200 HTTP/2 connections closed by their clients: %d still served, %d goroutines, %d before", served(), runtime.NumGoroutine(), before)
	}

	open := make([]*tls.Conn, 4)
	for i := range open {
		open[i] = dialH2(t, addr, nil)
		if i%2 == 0 {
			if err := request(open[i], 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	await.Until(t, func() bool { return served() == len(open) })
	shut := make(chan error, 1)
	go func() { shut <- ts.Config.Shutdown(context.Background()) }()
	for i, c := range open {
		if err := h2Await(c, 0x7); err != nil {
			t.Errorf("connection %d at the server's Shutdown: no GOAWAY: %v", i, err)
		}
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Errorf("connection %d after its GOAWAY: %v, want it closed by the server", i, err)
		}
		_ = c.Close() // failed, so that Shutdown returns
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if n := served(); n != 0 {
		t.Errorf("after Shutdown, %d HTTP/2 connections still served", n)
	}
}

// TestHTTP2ServerSettings: the http.Server that serves an HTTP/2 connection (serveHTTP2)
// has every setting of the server's own, the timeouts first: one left out would have the
// exporter's HTTP/2 connections go by net/http's default (none) where its HTTP/1.1
// ones go by --web.read-timeout and the others. Those it sets apart are listed, why
// with each.
func TestHTTP2ServerSettings(t *testing.T) {
	apart := map[string]string{
		"Handler":      "the server's own, which net/http hands TLSNextProto",
		"TLSConfig":    "the connection's handshake is done",
		"TLSNextProto": "net/http's HTTP/2 server, of one's own",
		"ConnState":    "the server's, but for StateNew, which it told already",
		"BaseContext":  "the connection's context, of the server's ConnContext",
		"ConnContext":  "the server's ran for the connection already",
	}
	o := Options{Logger: slog.New(slog.DiscardHandler), ReadTimeout: 7 * time.Second, WriteTimeout: 11 * time.Second, IdleTimeout: 13 * time.Second}
	o.conns = newConnLimiter(10, time.Second, o.Logger)
	got := make(chan *http.Server, 1)
	ts := newH2Server(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got <- r.Context().Value(http.ServerContextKey).(*http.Server)
	}), o)
	resp, err := ts.Client().Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	one, hs := reflect.ValueOf(<-got).Elem(), reflect.ValueOf(ts.Config).Elem()
	if one.Addr().Interface() == ts.Config {
		t.Fatal("the HTTP/2 connection was served by the server itself")
	}
	for i := range hs.NumField() {
		f := hs.Type().Field(i)
		if _, ok := apart[f.Name]; ok || !f.IsExported() {
			continue
		}
		if !reflect.DeepEqual(one.Field(i).Interface(), hs.Field(i).Interface()) {
			t.Errorf("the HTTP/2 connection's server: %s %v, the server's %v", f.Name, one.Field(i).Interface(), hs.Field(i).Interface())
		}
	}
}
