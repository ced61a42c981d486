package server

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// testConn is a connection that only records its closing.
type testConn struct {
	net.Conn
	name   string
	closed atomic.Bool
}

func (c *testConn) Close() error {
	c.closed.Store(true)
	return nil
}

// TestConnLimiter: past the limit, a new connection replaces the connection idle longest,
// or one that has waited a second for its first request; one running a request, or that
// has just connected, is left alone, and the new connection is closed instead.
func TestConnLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newConnLimiter(2, time.Second, slog.New(slog.DiscardHandler))
		conn := func(name string) *testConn {
			c := &testConn{name: name}
			l.track(c, http.StateNew)
			synctest.Wait() // a victim is closed on a goroutine
			return c
		}
		check := func(when string, want map[*testConn]bool) {
			t.Helper()
			for c, closed := range want {
				if c.closed.Load() != closed {
					t.Errorf("%s: %s closed %v, want %v", when, c.name, c.closed.Load(), closed)
				}
			}
		}
		a := conn("a")
		time.Sleep(time.Millisecond)
		b := conn("b")
		c := conn("c")
		check("a third at once", map[*testConn]bool{a: false, b: false, c: true})
		time.Sleep(time.Second)
		d := conn("d")
		check("a second later", map[*testConn]bool{a: true, b: false, d: false})
		l.track(b, http.StateActive)
		time.Sleep(time.Second)
		e := conn("e")
		check("b running a request", map[*testConn]bool{b: false, d: true, e: false})
		l.track(e, http.StateActive)
		f := conn("f")
		check("both running", map[*testConn]bool{b: false, e: false, f: true})
		l.track(e, http.StateIdle)
		g := conn("g")
		check("e idle, at once", map[*testConn]bool{b: false, e: true, g: false})
		l.track(b, http.StateClosed)
		h := conn("h")
		check("b closed by the server", map[*testConn]bool{g: false, h: false})
	})
}

// blockedWriter is a client that reads nothing: its writes block until the write
// deadline is set (as http.ResponseController sets it), then fail.
type blockedWriter struct {
	httptest.ResponseRecorder
	once     sync.Once
	deadline chan struct{}
}

func newBlockedWriter() *blockedWriter {
	return &blockedWriter{ResponseRecorder: *httptest.NewRecorder(), deadline: make(chan struct{})}
}

func (w *blockedWriter) Write([]byte) (int, error) {
	<-w.deadline
	return 0, os.ErrDeadlineExceeded
}

func (w *blockedWriter) SetWriteDeadline(time.Time) error {
	w.once.Do(func() { close(w.deadline) })
	return nil
}

// TestScrapeLimiter runs scrapes, one at a time, through the limiter.
func TestScrapeLimiter(t *testing.T) {
	const stall, wait = time.Second, 5 * time.Second
	// serve runs a scrape that writes once, after its gate opens (a nil gate is open),
	// and reports its status code and when it ended, from the test's start.
	type result struct {
		code  int
		ended time.Duration
		err   error
	}
	serve := func(l *scrapeLimiter, start time.Time, w http.ResponseWriter, g *gate) chan result {
		done := make(chan result, 1)
		var err error
		h := l.handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if g != nil {
				g.in.Store(true)
				<-g.open
			}
			_, err = w.Write([]byte("metrics\n"))
		}))
		go func() {
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			code := http.StatusOK
			if rec, ok := w.(interface{ Result() *http.Response }); ok {
				code = rec.Result().StatusCode
			}
			done <- result{code, time.Since(start), err}
		}()
		return done
	}
	t.Run("a client that does not read gives way after stall", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newScrapeLimiter(1, stall, wait, slog.New(slog.DiscardHandler))
			start := time.Now()
			stuck := serve(l, start, newBlockedWriter(), nil)
			time.Sleep(100 * time.Millisecond)
			reader := serve(l, start, httptest.NewRecorder(), nil)
			got := <-reader
			if got.code != http.StatusOK || got.ended != stall {
				t.Errorf("the reader: HTTP %d after %v, want 200 once the other's write had blocked for %v", got.code, got.ended, stall)
			}
			if s := <-stuck; !errors.Is(s.err, os.ErrDeadlineExceeded) || s.ended != got.ended {
				t.Errorf("the stuck scrape: ended after %v with %v, want ended when the reader came in", s.ended, s.err)
			}
		})
	})
	t.Run("a scrape that computes is not ended", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var log bytes.Buffer
			l := newScrapeLimiter(1, stall, wait, slog.New(slog.NewTextHandler(&log, nil)))
			start := time.Now()
			g := newGate()
			slow := serve(l, start, httptest.NewRecorder(), g)
			synctest.Wait()
			late := serve(l, start, httptest.NewRecorder(), nil)
			if got := <-late; got.code != http.StatusServiceUnavailable || got.ended != wait {
				t.Errorf("waited in vain: HTTP %d after %v, want 503 after %v", got.code, got.ended, wait)
			}
			if !strings.Contains(log.String(), "--web.max-requests") || !strings.Contains(log.String(), "refused=1") {
				t.Errorf("the 503 is not logged and counted: %q", log.String())
			}
			close(g.open)
			if got := <-slow; got.code != http.StatusOK || got.err != nil {
				t.Errorf("the computing scrape: HTTP %d, %v", got.code, got.err)
			}
		})
	})
	t.Run("the last come is served first, and at most max wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newScrapeLimiter(2, stall, wait, slog.New(slog.DiscardHandler))
			start := time.Now()
			// Every scrape waits at its gate once it has a place, until the test opens it.
			gates := make([]*gate, 5)
			results := make([]chan result, 5)
			for i := range gates {
				gates[i] = newGate()
				results[i] = serve(l, start, httptest.NewRecorder(), gates[i])
				time.Sleep(100 * time.Millisecond)
			}
			in := func(i int) bool { return gates[i].in.Load() }
			// 0 and 1 run; 2, 3 and 4 came to wait, and 2 was put out when 4 came.
			if !in(0) || !in(1) {
				t.Fatal("the first two did not run")
			}
			if got := <-results[2]; got.code != http.StatusServiceUnavailable || got.ended != 400*time.Millisecond {
				t.Errorf("the first to wait: HTTP %d after %v, want 503 when a third came to wait", got.code, got.ended)
			}
			close(gates[0].open)
			synctest.Wait()
			if in(3) || !in(4) {
				t.Errorf("a place freed: the last come was not given it")
			}
			close(gates[1].open)
			synctest.Wait()
			if !in(3) {
				t.Errorf("the next place freed: the other waiting scrape was not given it")
			}
			close(gates[3].open)
			close(gates[4].open)
			for _, i := range []int{0, 1, 3, 4} {
				if got := <-results[i]; got.code != http.StatusOK {
					t.Errorf("scrape %d: HTTP %d", i, got.code)
				}
			}
		})
	})
}

// gate holds a scrape in its handler: in is set once it is there, and it goes on when open
// is closed.
type gate struct {
	in   atomic.Bool
	open chan struct{}
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

func TestConnectionLimit(t *testing.T) {
	for _, c := range []struct {
		want    int
		nofile  uint64
		limit   int
		lowered bool
	}{
		{512, 1 << 20, 512, false},
		{512, 1024, 512, false},
		{512, 256, 128, true},
		{512, 0, 512, false}, // unknown
		{512, 1, 1, true},
	} {
		if limit, lowered := connectionLimit(c.want, c.nofile); limit != c.limit || lowered != c.lowered {
			t.Errorf("connectionLimit(%d, %d) = %d, %v; want %d, %v", c.want, c.nofile, limit, lowered, c.limit, c.lowered)
		}
	}
}

func TestHeaderTimeout(t *testing.T) {
	for read, want := range map[time.Duration]time.Duration{0: 10 * time.Second, 2 * time.Second: 2 * time.Second, time.Minute: 10 * time.Second} {
		if got := headerTimeout(read); got != want {
			t.Errorf("headerTimeout(%v) = %v, want %v", read, got, want)
		}
	}
}
