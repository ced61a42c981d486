package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// testConn is a connection that only records its closing, from remote ("" is an address
// of none).
type testConn struct {
	net.Conn
	name   string
	remote string
	closed atomic.Bool
}

func (c *testConn) RemoteAddr() net.Addr {
	if c.remote == "" {
		return &net.UnixAddr{Net: "unix"}
	}
	addr, _ := net.ResolveTCPAddr("tcp", c.remote)
	return addr
}

func (c *testConn) Close() error {
	c.closed.Store(true)
	return nil
}

// connsOf returns a function that has l track a new connection, name, from addr, as the
// server's accept loop would, once l closed the connection it put out for it, if any.
// It runs in a synctest bubble.
func connsOf(l *connLimiter) func(name, addr string) *testConn {
	return func(name, addr string) *testConn {
		c := &testConn{name: name, remote: addr}
		l.track(c, http.StateNew)
		synctest.Wait() // a victim is closed on a goroutine
		return c
	}
}

// connsFrom has conn open n connections, named prefix0 on, from addr(i), a millisecond
// apart.
func connsFrom(conn func(name, addr string) *testConn, prefix string, n int, addr func(i int) string) []*testConn {
	var cs []*testConn
	for i := range n {
		cs = append(cs, conn(fmt.Sprint(prefix, i), addr(i)))
		time.Sleep(time.Millisecond)
	}
	return cs
}

// TestConnLimiter: past the limit, a new connection replaces the connection idle longest,
// or one that has waited a second for its first request; one running a request, or that
// has just connected, is left alone, and the new connection is closed instead.
func TestConnLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newConnLimiter(2, time.Second, slog.New(slog.DiscardHandler))
		newConn := connsOf(l)
		conn := func(name string) *testConn { return newConn(name, "") }
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
		// A request runs from its handler's start (see handling) to the end of its reply.
		l.track(b, http.StateActive)
		defer l.handling(b)()
		time.Sleep(time.Second)
		e := conn("e")
		check("b running a request", map[*testConn]bool{b: false, d: true, e: false})
		l.track(e, http.StateActive)
		eDone := l.handling(e)
		f := conn("f")
		check("both running", map[*testConn]bool{b: false, e: false, f: true})
		eDone()
		l.track(e, http.StateIdle)
		g := conn("g")
		check("e idle, at once", map[*testConn]bool{b: false, e: true, g: false})
		l.track(b, http.StateClosed)
		h := conn("h")
		check("b closed by the server", map[*testConn]bool{g: false, h: false})
	})
}

// TestConnLimiterFloodFromOneAddress: past the limit, a new connection replaced one that
// had waited a second for its first request, else was closed: a client that opened the
// limit's worth of connections each second, sending nothing (512 TCP connects, no TLS,
// no password), had every scraper's connection closed at once, and kept every scrape
// out for as long as it went on. A new connection from another address takes the place
// of the oldest of those that have sent nothing yet of the address holding the most of
// them, when it holds more than one more than the new connection's own address; one
// from the flooding address is still closed, and so is one when no address holds more
// than one more than another.
func TestConnLimiterFloodFromOneAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newConnLimiter(4, time.Second, slog.New(slog.DiscardHandler))
		conn := connsOf(l)
		flood := connsFrom(conn, "flood", 3, func(i int) string { return "10.0.0.9:" + strconv.Itoa(40000+i) })
		other := conn("other", "10.0.0.8:40000")
		more := conn("flood3", "10.0.0.9:40003")
		if !more.closed.Load() {
			t.Error("a new connection from the address holding the most was let in, within a second of the others")
		}
		scraper := conn("scraper", "10.0.0.1:50000")
		if scraper.closed.Load() || !flood[0].closed.Load() || flood[1].closed.Load() || other.closed.Load() {
			t.Errorf("a scraper's connection beside a flood: scraper closed %v, the flood's oldest %v, its next %v, another address's %v; want the flood's oldest alone closed",
				scraper.closed.Load(), flood[0].closed.Load(), flood[1].closed.Load(), other.closed.Load())
		}
		second := conn("second scraper", "10.0.0.2:50000")
		if second.closed.Load() || !flood[1].closed.Load() {
			t.Errorf("another scraper's connection: closed %v, the flood's oldest left %v; want the flood's closed", second.closed.Load(), flood[1].closed.Load())
		}
		// Each address holds one now.
		if third := conn("third", "10.0.0.3:50000"); !third.closed.Load() {
			t.Error("past the limit, with each address holding one, a new connection was let in within a second of the others")
		}
		// The peers of a unix socket have an address of none, which can crowd too.
		time.Sleep(time.Second)
		peers := connsFrom(conn, "peer", 4, func(int) string { return "" })
		if tcp := conn("tcp", "10.0.0.1:50001"); tcp.closed.Load() || !peers[0].closed.Load() {
			t.Errorf("beside the peers of a unix socket: the new connection closed %v, the oldest peer's %v; want the peer's alone", tcp.closed.Load(), peers[0].closed.Load())
		}
	})
}

// TestConnLimiterFloodBesideOnIPv6Node: Kubernetes gives each node an IPv6 /64 for its
// pods, so a Prometheus and a pod flooding beside it share one: counted by /64, the
// flood's connections were the scraper's address's too, which then held no fewer than the
// flood's, and the scraper's new connection was closed. Each address is a client of its own.
func TestConnLimiterFloodBesideOnIPv6Node(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newConnLimiter(4, time.Second, slog.New(slog.DiscardHandler))
		conn := connsOf(l)
		flood := connsFrom(conn, "flood", 4, func(int) string { return "[2001:db8::99]:40000" })
		scraper := conn("scraper", "[2001:db8::1]:50000")
		if scraper.closed.Load() || !flood[0].closed.Load() || flood[1].closed.Load() {
			t.Errorf("a scraper's connection beside a pod's flood on its node's /64: scraper closed %v, the flood's oldest %v, its next %v; want the flood's oldest alone closed",
				scraper.closed.Load(), flood[0].closed.Load(), flood[1].closed.Load())
		}
	})
}

// TestConnLimiterStalledReplies: a connection whose requests' handlers all returned, but
// whose replies are not written yet (HTTP/2 streams of a client that opens no
// flow-control window, an HTTP/1.1 reply its client does not read), runs a request for
// net/http until the write timeout: the limit's worth of such connections, each asking
// for /-/healthy without a password, had every scraper's new connection closed for as
// long as they were renewed. Past the limit, a new connection takes the place of the one
// whose replies waited longest for their client, once they waited grace; a connection
// whose handler runs (a scrape being read, a password being checked) is left alone, and
// so is one whose replies are younger than grace.
func TestConnLimiterStalledReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newConnLimiter(2, time.Second, slog.New(slog.DiscardHandler))
		conn := connsOf(l)
		// a runs a request whose reply is stalled, b one whose handler runs.
		a := conn("a", "10.0.0.9:40000")
		l.track(a, http.StateActive)
		l.handling(a)()
		b := conn("b", "10.0.0.9:40001")
		l.track(b, http.StateActive)
		defer l.handling(b)()
		time.Sleep(time.Second / 2)
		if c := conn("early", "10.0.0.1:50000"); !c.closed.Load() || a.closed.Load() {
			t.Errorf("half a second after a's handler returned: the new connection closed %v, a %v; want the new one closed", c.closed.Load(), a.closed.Load())
		}
		time.Sleep(time.Second / 2)
		scraper := conn("scraper", "10.0.0.1:50001")
		if scraper.closed.Load() || !a.closed.Load() || b.closed.Load() {
			t.Errorf("a second after a's handler returned: the scraper's connection closed %v, a %v, b %v; want a alone closed",
				scraper.closed.Load(), a.closed.Load(), b.closed.Load())
		}
		l.track(a, http.StateClosed)
		l.track(scraper, http.StateActive)
		defer l.handling(scraper)()
		time.Sleep(time.Minute)
		if c := conn("late", "10.0.0.1:50002"); !c.closed.Load() || b.closed.Load() {
			t.Errorf("b's handler running for a minute: the new connection closed %v, b %v; want the new one closed", c.closed.Load(), b.closed.Load())
		}
	})
}

// At shutdown the connections that sent no request are closed, and so is one the server's
// accept loop tracks only after that: Shutdown would wait 5 s for each.
func TestConnLimiterCloseFresh(t *testing.T) {
	l := newConnLimiter(10, time.Second, slog.New(slog.DiscardHandler))
	fresh, running := &testConn{name: "fresh"}, &testConn{name: "running"}
	l.track(fresh, http.StateNew)
	l.track(running, http.StateNew)
	l.track(running, http.StateActive)
	l.closeFresh()
	late := &testConn{name: "late"}
	l.track(late, http.StateNew)
	for c, want := range map[*testConn]bool{fresh: true, running: false, late: true} {
		if c.closed.Load() != want {
			t.Errorf("%s closed %v, want %v", c.name, c.closed.Load(), want)
		}
	}
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

// The addresses of a client flooding a limiter and of a scraper beside it.
const floodAddr, scraperAddr = "10.0.0.9:40000", "10.0.0.1:50000"

// scrapesOf are the scrapes of one client that a test serves through l, as they came
// since start, some of them to a client that reads nothing.
type scrapesOf struct {
	l      *scrapeLimiter
	start  time.Time
	remote string
	stuck  []*blockedWriter
	served []chan scrapeResult
}

// serve serves a scrape, to a client that reads nothing (until end) when stuck.
func (s *scrapesOf) serve(stuck bool) {
	var w http.ResponseWriter = httptest.NewRecorder()
	if stuck {
		s.stuck = append(s.stuck, newBlockedWriter())
		w = s.stuck[len(s.stuck)-1]
	}
	s.served = append(s.served, serveFrom(s.l, s.start, w, nil, "/metrics", s.remote))
}

// end has the client that read nothing go away and returns how each scrape ended.
func (s *scrapesOf) end() []scrapeResult {
	for _, w := range s.stuck {
		_ = w.SetWriteDeadline(time.Now())
	}
	var ended []scrapeResult
	for _, r := range s.served {
		ended = append(ended, <-r)
	}
	return ended
}

func (w *blockedWriter) Write([]byte) (int, error) {
	<-w.deadline
	return 0, os.ErrDeadlineExceeded
}

func (w *blockedWriter) SetWriteDeadline(time.Time) error {
	w.once.Do(func() { close(w.deadline) })
	return nil
}

// scrapeResult is how a scrape through a limiter ended: its status code, when, from the
// test's start, and the error of its write.
type scrapeResult struct {
	code  int
	ended time.Duration
	err   error
}

// serveAt runs a scrape of target that writes once, after its gate opens (a nil gate is
// open), and reports how it ended.
func serveAt(l *scrapeLimiter, start time.Time, w http.ResponseWriter, g *gate, target string) chan scrapeResult {
	return serveFrom(l, start, w, g, target, "")
}

// serveFrom is serveAt for a client at remote (httptest's when empty).
func serveFrom(l *scrapeLimiter, start time.Time, w http.ResponseWriter, g *gate, target, remote string) chan scrapeResult {
	done := make(chan scrapeResult, 1)
	var err error
	h := l.handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if g != nil {
			g.in.Store(true)
			<-g.open
		}
		_, err = w.Write([]byte("metrics\n"))
	}))
	r := httptest.NewRequest(http.MethodGet, target, nil)
	if remote != "" {
		r.RemoteAddr = remote
	}
	go func() {
		h.ServeHTTP(w, r)
		code := http.StatusOK
		if rec, ok := w.(interface{ Result() *http.Response }); ok {
			code = rec.Result().StatusCode
		}
		done <- scrapeResult{code, time.Since(start), err}
	}()
	return done
}

// TestScrapeLimiter runs scrapes, one at a time, through the limiter.
func TestScrapeLimiter(t *testing.T) {
	const stall, wait = time.Second, 5 * time.Second
	type result = scrapeResult
	serve := func(l *scrapeLimiter, start time.Time, w http.ResponseWriter, g *gate) chan result {
		return serveAt(l, start, w, g, "/metrics")
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

// TestScrapeLimiterSharedByClients: a client sending scrapes faster than places free (a
// loop of requests, or requests pipelined on many connections, answered 503 at once and
// sent again) put out every other client's waiting scrape, the oldest, as its own came,
// and took each place that freed, its scrape being the last come: 30 connections of
// pipelined scrapes had a Prometheus answered 503 within 20 ms, every time. A scrape
// past max waiting now puts out the oldest of the client (an address) with
// the most waiting, and a place goes to the scrape of the client running the fewest,
// the last come of them.
//
// An IPv6 flood and scraper of one /64, as Kubernetes gives a node's pods, are clients of
// their own too: within a /64 scrapes are shared by address.
func TestScrapeLimiterSharedByClients(t *testing.T) {
	for _, tc := range []struct{ name, flood, scraper string }{
		{"IPv4", floodAddr, scraperAddr},
		{"one IPv6 /64", "[2001:db8::99]:40000", "[2001:db8::1]:50000"},
	} {
		t.Run(tc.name, func(t *testing.T) { testScrapeLimiterSharedByClients(t, tc.flood, tc.scraper) })
	}
}

func testScrapeLimiterSharedByClients(t *testing.T, floodAddr, scraperAddr string) {
	const stall, wait = time.Second, 5 * time.Second
	synctest.Test(t, func(t *testing.T) {
		l := newScrapeLimiter(2, stall, wait, slog.New(slog.DiscardHandler))
		start := time.Now()
		flood := &scrapesOf{l: l, start: start, remote: floodAddr}
		// The flood's first two run and read nothing; then it sends more, before and
		// after the scraper's.
		for i := range 4 {
			flood.serve(i < 2)
			time.Sleep(10 * time.Millisecond)
		}
		scraped := serveFrom(l, start, httptest.NewRecorder(), nil, "/metrics", scraperAddr)
		for range 5 {
			time.Sleep(10 * time.Millisecond)
			flood.serve(false)
		}
		got := <-scraped
		if got.code != http.StatusOK || got.ended > stall+100*time.Millisecond {
			t.Errorf("a scraper's scrape beside a flood from another address: HTTP %d after %v, want 200 once a flood's scrape stalled (%v)", got.code, got.ended, stall)
		}
		refused := 0
		for _, r := range flood.end() { // the flood goes away
			if r.code == http.StatusServiceUnavailable {
				refused++
			}
		}
		if refused == 0 {
			t.Error("the flood's scrapes past the places and the waiting were not answered 503")
		}
	})
}

// TestScrapeLimiterFloodOfShortScrapes: a place that freed went to the last come of the
// clients running the fewest scrapes, so a client that kept a scrape waiting, each
// quickly served (a loop of requests pipelined on a few connections), ran none as a place
// freed as often as a scraper, and its last come went first every time: with the other
// places held by a long scrape, the scraper waited in vain and got 503. Of the clients
// running the fewest, a place now goes to the one given a place longest ago, or never.
func TestScrapeLimiterFloodOfShortScrapes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The flood sends a scrape every 5 ms, each running 10 ms once given its place.
		l, start, short, release := placeHeld()
		stop := make(chan struct{})
		var flood sync.WaitGroup
		flood.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				r.RemoteAddr = floodAddr
				flood.Go(func() { short.ServeHTTP(httptest.NewRecorder(), r) })
			}
		})
		// Places free every 10 ms from 5 ms on, as the flood's scrapes end; the scraper
		// comes 3 ms after one, so that another of the flood's comes after it, before the
		// next (come last, it went first).
		time.Sleep(58 * time.Millisecond)
		scraped := serveFrom(l, start, httptest.NewRecorder(), nil, "/metrics", scraperAddr)
		got := <-scraped
		close(stop)
		release()
		flood.Wait()
		if got.code != http.StatusOK || got.ended > 100*time.Millisecond {
			t.Errorf("a scraper's scrape beside a flood of short scrapes from another address: HTTP %d after %v, want 200 within a flood's scrape (10 ms)", got.code, got.ended)
		}
	})
}

// TestScrapeLimiterClientsBounded: what the limiter keeps of the clients is its table of
// bounded size (placedTable), which doubles a few times as addresses come: a scrape from
// an address never seen costs no more allocations than one from an address seen before. It kept the clients that left in
// the last second or two, 4096 of them at most, a map entry and a string each.
func TestScrapeLimiterClientsBounded(t *testing.T) {
	l := newScrapeLimiter(2, time.Second, 5*time.Second, slog.New(slog.DiscardHandler))
	h := l.handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	const runs = 3 * 4096
	addrs := make([]string, runs+2) // AllocsPerRun runs once more first
	for i := range addrs {
		addrs[i] = fmt.Sprintf("[2001:db8::%x]:40000", i+1)
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	scrape := func(addr string) {
		r.RemoteAddr = addr
		h.ServeHTTP(w, r)
	}
	scrape(addrs[0]) // the table is made at the first place
	next := 0
	fresh := testing.AllocsPerRun(runs, func() {
		next++
		scrape(addrs[next])
	})
	known := testing.AllocsPerRun(runs, func() { scrape(addrs[0]) })
	if fresh > known {
		t.Errorf("a scrape from a new address: %v allocations, from one seen before %v; want no more", fresh, known)
	}
}

// TestScrapeLimiterCrowdOfAddresses: clients of many addresses (a node's pods, each
// with an address of its own), each sending its next scrape as soon as one is answered,
// 200 or 503, tied with a scraper that waits: they ran none, and the limiter forgot each
// as its scrape ended, so none was given a place after the scraper. The place that freed
// went to the last come of them, and past max waiting the one waiting longest was put
// out: the scraper, which got 503 nearly every time. A client that was given a place or
// refused one is now known so for a second after it left the limiter, and of the clients
// with the most waiting the one given or refused a place last is put out.
func TestScrapeLimiterCrowdOfAddresses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Each of 20 addresses scrapes again at once when answered (after a millisecond
		// when answered 503), its scrapes running 10 ms once given a place.
		l, start, short, release := placeHeld()
		stopCrowd := crowdOf(20, func(i int) int {
			return scrapeFrom(short, fmt.Sprintf("10.1.0.%d:40000", i+1))
		})
		time.Sleep(100 * time.Millisecond)
		// The scraper scrapes three times, two seconds apart, as a Prometheus would.
		for i := range 3 {
			scraped := serveFrom(l, start, httptest.NewRecorder(), nil, "/metrics", scraperAddr)
			if got := <-scraped; got.code != http.StatusOK {
				t.Errorf("the scraper's scrape %d beside a crowd of 20 addresses: HTTP %d, want 200", i, got.code)
			}
			time.Sleep(2 * time.Second)
		}
		stopCrowd()
		release()
	})
}

// crowdOf has n clients each scrape again as soon as answered (a millisecond later when
// not answered 200: not a busy loop), client i's scrape answered scrape(i)'s HTTP status,
// until stop, which waits for their last scrapes to end.
func crowdOf(n int, scrape func(i int) int) (stop func()) {
	done := make(chan struct{})
	var crowd sync.WaitGroup
	for i := range n {
		crowd.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if scrape(i) != http.StatusOK {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	return func() {
		close(done)
		crowd.Wait()
	}
}

// scrapeFrom is the HTTP status h answers a scrape from the address addr with.
func scrapeFrom(h http.Handler, addr string) int {
	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	r.RemoteAddr = addr
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// placeHeld is a limiter of two places (a scrape stalled for a second, waiting five at
// most), one of them held by a long scrape from another address until release, which
// waits for that scrape to end; short scrapes through it, each running 10 ms once given
// a place. It is called in a synctest bubble.
func placeHeld() (l *scrapeLimiter, start time.Time, short http.Handler, release func()) {
	l = newScrapeLimiter(2, time.Second, 5*time.Second, slog.New(slog.DiscardHandler))
	start = time.Now()
	long := newGate()
	held := serveFrom(l, start, httptest.NewRecorder(), long, "/metrics", "10.0.0.3:30000")
	synctest.Wait()
	short = l.handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(10 * time.Millisecond)
		_, _ = w.Write([]byte("metrics\n"))
	}))
	return l, start, short, func() {
		close(long.open)
		<-held
	}
}

// TestScrapeLimiterCrowdPastRemembered: the limiter remembered when 4096 clients at most
// were last given or refused a place, those that left for a second or two: a crowd of
// more addresses, each sending its next scrape soon after one is answered, had those
// past the 4096 forgotten, come back as a Prometheus does (given none lately), and of
// those the one waiting longest, the Prometheus, was put out. Here 5000 addresses
// scrape, 64 at a time, each address again as its turn comes round, beside a scrape
// that holds one place of two, and a scraper of another address scrapes three times,
// each once every address of the crowd scraped twice since its last: each of its
// scrapes must be served (every one got 503). The addresses are keyed as over sockets
// (TestScrapeLimiterCrowdOverSockets): in a synctest bubble, the 30,000 scrapes take
// no wall-clock time of their own.
func TestScrapeLimiterCrowdPastRemembered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const crowd, workers = 5000, 64
		l, start, short, release := placeHeld()
		addr := func(i int64) string { return fmt.Sprintf("127.2.%d.%d:40000", i/250, i%250+1) }
		var next, refused atomic.Int64
		stopCrowd := crowdOf(workers, func(int) int {
			code := scrapeFrom(short, addr(next.Add(1)%crowd))
			if code == http.StatusServiceUnavailable {
				refused.Add(1)
			}
			return code
		})
		scraper := "127.1.1.1:50000"
		mark := int64(0)
		for i := range 3 {
			for next.Load() < mark+2*crowd {
				time.Sleep(10 * time.Millisecond)
			}
			if got := <-serveFrom(l, start, httptest.NewRecorder(), nil, "/metrics", scraper); got.code != http.StatusOK {
				t.Errorf("the scraper's scrape %d beside a crowd of %d addresses: HTTP %d, want 200", i, crowd, got.code)
			}
			mark = next.Load()
		}
		stopCrowd()
		release()
		t.Logf("the crowd's scrapes: %d, %d of them 503", next.Load(), refused.Load())
	})
}

// TestScrapeLimiterCrowdOfOneIPv6Subnet: a host holds an IPv6 /64 and may take any
// address of it for each connection. Counted by address, a crowd from one /64 taking a
// new address for each scrape was a client never given a place each time, gone before a
// scraper of another address, and of those with one scrape waiting, the scraper, given a
// place lately, was put out: every one of its scrapes got 503. An address of a /64 not
// seen is now taken for as recent as its /64 (placedOrder).
func TestScrapeLimiterCrowdOfOneIPv6Subnet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A quarter of the crowd under the race detector, whose goroutines' scrapes took
		// half a minute of a core; .ci/run runs the package without it too.
		workers := 64
		if race.Enabled {
			workers = 16
		}
		l, start, short, release := placeHeld()
		var next atomic.Int64
		stopCrowd := crowdOf(workers, func(int) int {
			i := next.Add(1)
			return scrapeFrom(short, fmt.Sprintf("[2001:db8:1::%x:%x]:40000", i>>16, i&0xffff))
		})
		time.Sleep(100 * time.Millisecond)
		for i := range 3 {
			if got := <-serveFrom(l, start, httptest.NewRecorder(), nil, "/metrics", "[2001:db8:2::1]:50000"); got.code != http.StatusOK {
				t.Errorf("the scraper's scrape %d beside a crowd of new addresses of one /64: HTTP %d, want 200", i, got.code)
			}
			time.Sleep(2 * time.Second)
		}
		stopCrowd()
		release()
	})
}

// TestScrapeLimiterPodFloodBesideScraper: a pod flooding beside a Prometheus on a
// Kubernetes node, whose pods share a /64, with other clients scraping as soon as
// answered. With places shared between /64s first, the scraper's /64 ran the flood's
// scrapes and was given or refused a place as lately as the flood's last: every other
// client went first, and every scrape of the scraper got 503. Its /64's count is now
// compared only for an address of it never seen: the scraper's first scrape beside a
// flood and a crowd may be refused, as one of the flood's would, and none after it.
func TestScrapeLimiterPodFloodBesideScraper(t *testing.T) {
	for _, tc := range []struct {
		flood, crowd int
		// served is the scraper's first scrape from which each must be served.
		served int
		// raced runs under the race detector too: the cases beside a crowd took a
		// minute of a core under it, and check the limiter's choice, not its locking,
		// which a flood of several exercises as well. .ci/run runs every case without it.
		raced bool
	}{
		{flood: 1, crowd: 0},
		{flood: 8, crowd: 0, raced: true},
		{flood: 1, crowd: 20, served: 1},
		{flood: 8, crowd: 20, served: 1},
	} {
		t.Run(fmt.Sprintf("flood of %d beside %d", tc.flood, tc.crowd), func(t *testing.T) {
			if race.Enabled && !tc.raced {
				t.Skip("run without the race detector (.ci/run)")
			}
			synctest.Test(t, func(t *testing.T) {
				l, start, short, release := placeHeld()
				stopCrowd := crowdOf(tc.flood+tc.crowd, func(i int) int {
					if i < tc.flood {
						return scrapeFrom(short, "[2001:db8::99]:40000")
					}
					return scrapeFrom(short, fmt.Sprintf("10.1.0.%d:40000", i+1))
				})
				time.Sleep(100 * time.Millisecond)
				for i := range 5 {
					got := <-serveFrom(l, start, httptest.NewRecorder(), nil, "/metrics", "[2001:db8::1]:50000")
					if i >= tc.served && got.code != http.StatusOK {
						t.Errorf("the scraper's scrape %d beside a flood from its /64: HTTP %d, want 200", i, got.code)
					}
					time.Sleep(2 * time.Second)
				}
				stopCrowd()
				release()
			})
		})
	}
}

// TestScrapeLimiterCrowdOverSockets is TestScrapeLimiterCrowdOfAddresses over real
// sockets: twenty loopback addresses each send one scrape at a time, again as each is
// answered, beside a scrape that holds a place, and a scraper of another address
// scrapes three times, 1.5 s apart: each of its scrapes must be served.
func TestScrapeLimiterCrowdOverSockets(t *testing.T) {
	l := newScrapeLimiter(2, time.Second, 2*time.Second, slog.New(slog.DiscardHandler))
	hold := make(chan struct{})
	ts := httptest.NewServer(l.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("hold") {
			<-hold
		} else {
			time.Sleep(5 * time.Millisecond)
		}
		_, _ = w.Write([]byte("metrics\n"))
	})))
	defer ts.Close()
	from := func(ip byte) *http.Client {
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, ip)}}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dialer.DialContext}}
	}
	scrape := func(c *http.Client, query string) (int, error) {
		resp, err := c.Get(ts.URL + "/metrics" + query)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	held := make(chan struct{})
	go func() {
		defer close(held)
		_, _ = scrape(from(250), "?hold")
	}()
	crowd := make([]*http.Client, 20)
	for i := range crowd {
		crowd[i] = from(byte(i + 1))
	}
	stopCrowd := crowdOf(len(crowd), func(i int) int {
		code, _ := scrape(crowd[i], "")
		return code
	})
	time.Sleep(100 * time.Millisecond)
	scraper := from(200)
	for i := range 3 {
		if code, err := scrape(scraper, ""); code != http.StatusOK {
			t.Errorf("the scraper's scrape %d beside a crowd of 20 addresses: HTTP %d, %v, want 200", i, code, err)
		}
		time.Sleep(1500 * time.Millisecond)
	}
	stopCrowd()
	close(hold)
	<-held
}

// TestScrapeLimiterFewestRunningFirst: a place that frees goes to the client running the
// fewest scrapes before the one given a place longest ago: a flood whose scrapes hold
// places and read nothing, given them before the scraper's running scrape, does not go
// before the scraper's next as that one ends. (No test told the clients by what they
// run: the last come first, or the one given a place longest ago alone, passed them.)
func TestScrapeLimiterFewestRunningFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newScrapeLimiter(3, time.Second, 5*time.Second, slog.New(slog.DiscardHandler))
		start := time.Now()
		flood := &scrapesOf{l: l, start: start, remote: floodAddr}
		stuckScrape := func() {
			flood.serve(true)
			time.Sleep(time.Millisecond)
		}
		stuckScrape()
		stuckScrape()
		g := newGate()
		first := serveFrom(l, start, httptest.NewRecorder(), g, "/metrics", scraperAddr)
		time.Sleep(time.Millisecond)
		// The flood runs two, given their places before the scraper's first; the
		// scraper's next waits, and then one of the flood's, which would hold the
		// place it is given as the first two.
		next := serveFrom(l, start, httptest.NewRecorder(), nil, "/metrics", scraperAddr)
		time.Sleep(time.Millisecond)
		stuckScrape()
		time.Sleep(100*time.Millisecond - time.Since(start))
		close(g.open)
		if got := <-first; got.code != http.StatusOK {
			t.Errorf("the scraper's first scrape: HTTP %d", got.code)
		}
		if got := <-next; got.code != http.StatusOK || got.ended != 100*time.Millisecond {
			t.Errorf("the scraper's next scrape, the flood running two: HTTP %d after %v, want 200 as its first ended (100ms)", got.code, got.ended)
		}
		flood.end()
	})
}

// gate holds a scrape in its handler: in is set once it is there, and it goes on when open
// is closed.
type gate struct {
	in   atomic.Bool
	open chan struct{}
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

// TestWarnConnectionRoom: a connection limit no more than the handlers of bounded
// requests can hold is warned of, naming what holds them and whether the open-file limit
// lowered it to that: four times --web.max-requests (scrapes and status pages, each
// running and as many waiting for a place), the 16 POST /-/reload requests that may wait
// for a reload with --web.enable-lifecycle, and the line tester's 2. Warned of only at
// --web.max-requests or below, 20 connections beside 10 scrapes running and 10 waiting,
// none of which the connection limit takes, had a scraper's new connection closed at
// once and nothing said so; and the reloads and the line tester were left out:
// --web.max-connections=41 --web.max-requests=10 --web.enable-lifecycle warned of
// nothing, where the handlers could hold 58.
func TestWarnConnectionRoom(t *testing.T) {
	const (
		scrapes = "40 scrapes and status pages (4 × --web.max-requests"
		reloads = "16 POST /-/reload requests in a reload (--web.enable-lifecycle)"
		tester  = "2 line tester requests (POST /-/explain"
		plain   = "--web.max-connections is not above the "
		halved  = "--web.max-connections, lowered to half the open-file limit, is not above the "
	)
	for _, c := range []struct {
		name                 string
		limit                int
		o                    Options
		lowered              bool
		want, notWant, attrs []string
	}{
		{"10 for 10 requests", 10, Options{MaxRequests: 10}, false, []string{plain + "40 connections", scrapes}, []string{reloads, tester}, []string{"max_connections=10", "held_by_handlers=40"}},
		{"40 for 10 requests", 40, Options{MaxRequests: 10}, false, []string{plain + "40 connections"}, nil, nil},
		{"41 for 10 requests", 41, Options{MaxRequests: 10}, false, nil, nil, nil},
		{"41 for 10 requests, lifecycle", 41, Options{MaxRequests: 10, Lifecycle: true}, false, []string{plain + "56 connections", scrapes, reloads}, []string{tester}, []string{"held_by_handlers=56"}},
		{"56 for 10 requests, lifecycle", 56, Options{MaxRequests: 10, Lifecycle: true}, false, []string{plain + "56 connections"}, nil, nil},
		{"57 for 10 requests, lifecycle", 57, Options{MaxRequests: 10, Lifecycle: true}, false, nil, nil, nil},
		{"41 for 10 requests, line tester", 41, Options{MaxRequests: 10, LineTester: true}, false, []string{plain + "42 connections", scrapes, tester}, []string{reloads}, nil},
		{"43 for 10 requests, line tester", 43, Options{MaxRequests: 10, LineTester: true}, false, nil, nil, nil},
		{"58 for 10 requests, both", 58, Options{MaxRequests: 10, Lifecycle: true, LineTester: true}, false, []string{plain + "58 connections", scrapes, reloads, tester}, nil, nil},
		{"59 for 10 requests, both", 59, Options{MaxRequests: 10, Lifecycle: true, LineTester: true}, false, nil, nil, nil},
		{"lowered to 5", 5, Options{MaxRequests: 10}, true, []string{halved + "40 connections"}, nil, nil},
		{"lowered to 41, lifecycle", 41, Options{MaxRequests: 10, Lifecycle: true}, true, []string{halved + "56 connections"}, nil, nil},
		{"lowered to 41", 41, Options{MaxRequests: 10}, true, nil, nil, nil},
		{"512", 512, Options{MaxRequests: 10, Lifecycle: true, LineTester: true}, false, nil, nil, nil},
		// No scrape is bounded: nothing to warn of.
		{"no --web.max-requests", 1, Options{Lifecycle: true, LineTester: true}, false, nil, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			c.o.Logger = slog.New(slog.NewTextHandler(&log, nil))
			WarnConnectionRoom(c.o, c.limit, c.lowered)
			got := log.String()
			if c.want == nil && got != "" {
				t.Errorf("logged %q; want nothing", got)
			}
			for _, w := range append(c.want, c.attrs...) {
				if !strings.Contains(got, w) {
					t.Errorf("logged %q; want %q in it", got, w)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(got, w) {
					t.Errorf("logged %q; want no %q in it", got, w)
				}
			}
		})
	}
}

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

// TestLowerConnections: a connection limit the open-file limit lowered is warned of, and
// so is the room it leaves the handlers' connections, once: not when the flags alone left
// no more, which main warned of already.
func TestLowerConnections(t *testing.T) {
	const room = "is not above the "
	for _, c := range []struct {
		name      string
		o         Options
		nofile    uint64
		limit     int
		warnings  int
		roomWarns bool
	}{
		{"not lowered", Options{MaxConnections: 512, MaxRequests: 10, Lifecycle: true}, 1 << 20, 512, 0, false},
		{"lowered below the room", Options{MaxConnections: 512, MaxRequests: 10, Lifecycle: true}, 100, 50, 2, true},
		{"lowered, room enough", Options{MaxConnections: 512, MaxRequests: 10, Lifecycle: true}, 200, 100, 1, false},
		{"lowered, the flags warned of already", Options{MaxConnections: 56, MaxRequests: 10, Lifecycle: true}, 100, 50, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			c.o.Logger = slog.New(slog.NewTextHandler(&log, nil))
			if limit := lowerConnections(c.o, c.nofile); limit != c.limit {
				t.Errorf("limit %d; want %d", limit, c.limit)
			}
			got := log.String()
			if n := strings.Count(got, "level=WARN"); n != c.warnings || strings.Contains(got, room) != c.roomWarns {
				t.Errorf("logged %q; want %d warnings, of the room %v", got, c.warnings, c.roomWarns)
			}
		})
	}
}

// TestInputFiles: the inputs may keep open what the open-file limit leaves beside the
// connections held (half the limit at most, and with no --web.max-connections), the
// quarter of them more a GOAWAY leaves open, the listeners and reservedFiles; at least
// one; no bound where the limit is not known.
func TestInputFiles(t *testing.T) {
	for _, c := range []struct {
		name      string
		want      int
		nofile    uint64
		listeners int
		files     int
	}{
		{"unknown limit", 512, 0, 1, 0},
		{"connections lowered to half", 512, 100, 1, 100 - 50 - 12 - 1 - reservedFiles},
		{"connections below half", 512, 1 << 20, 1, 1<<20 - 512 - 128 - 1 - reservedFiles},
		{"no connection bound", 0, 256, 2, 256 - 128 - 32 - 2 - reservedFiles},
		{"nothing left", 512, 40, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := inputFiles(c.want, c.nofile, c.listeners); got != c.files {
				t.Errorf("inputFiles(%d, %d, %d) = %d, want %d", c.want, c.nofile, c.listeners, got, c.files)
			}
		})
	}
}

func TestHeaderTimeout(t *testing.T) {
	for read, want := range map[time.Duration]time.Duration{0: 10 * time.Second, 2 * time.Second: 2 * time.Second, time.Minute: 10 * time.Second} {
		if got := headerTimeout(read); got != want {
			t.Errorf("headerTimeout(%v) = %v, want %v", read, got, want)
		}
	}
}

// perRequest is a limiter's cost of scrapes whose cost is read from their request
// whenever they are priced.
func perRequest(cost func(*http.Request) (int64, bool)) func(*http.Request) func() (int64, bool) {
	return func(r *http.Request) func() (int64, bool) { return func() (int64, bool) { return cost(r) } }
}

// costOf is a test's scrape cost: its cost query parameter in bytes, unknown without one.
func costOf(r *http.Request) (int64, bool) {
	c := r.URL.Query().Get("cost")
	if c == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(c, 10, 64)
	return n, err == nil
}

// TestScrapeBudget runs scrapes of given costs through a limiter of many places and a
// budget of 100 bytes: a scrape runs when the running ones leave room for its cost, waits
// as for a place when they do not (taking the room of one whose client has stalled), and
// gets 503 when none frees within wait, counted by reason; a scrape of unknown cost, or of
// one over the budget, is charged the whole budget and runs alone. Every charge is given
// back.
func TestScrapeBudget(t *testing.T) {
	const stall, wait, budget = time.Second, 5 * time.Second, 100
	type scrapeCase struct {
		// cost is the query's ("" unknown); gated scrapes wait in their handler until
		// the test opens their gate, blocked ones write to a client that never reads.
		cost           string
		gated, blocked bool
		// after is when it comes, from the start; want its status and when it ends
		// (from the start; the gated are opened at open).
		after time.Duration
		code  int
		ended time.Duration
	}
	for _, tc := range []struct {
		name    string
		scrapes []scrapeCase
		// open is when the gates open; held is what the running scrapes are charged
		// just before (at open−1ms); refused and ended the counts then.
		open    time.Duration
		held    int64
		refused [numRefusals]uint64
		ended   uint64
		alone   uint64
		log     string
	}{
		{name: "two that fit run together",
			scrapes: []scrapeCase{{cost: "60", gated: true, code: 200, ended: 2 * time.Second}, {cost: "40", gated: true, after: time.Millisecond, code: 200, ended: 2 * time.Second}},
			open:    2 * time.Second, held: 100},
		{name: "one that does not fit waits for the room, then runs",
			scrapes: []scrapeCase{{cost: "60", gated: true, code: 200, ended: 2 * time.Second}, {cost: "50", after: time.Millisecond, code: 200, ended: 2 * time.Second}},
			open:    2 * time.Second, held: 60},
		{name: "one that waits in vain gets 503 for the bytes",
			scrapes: []scrapeCase{{cost: "60", gated: true, code: 200, ended: 6 * time.Second}, {cost: "50", after: time.Millisecond, code: 503, ended: wait + time.Millisecond}},
			open:    6 * time.Second, held: 60, refused: [numRefusals]uint64{refusedBytes: 1}, log: "--web.max-scrape-bytes"},
		{name: "a stalled client's room goes to the scrape that waits",
			scrapes: []scrapeCase{{cost: "80", blocked: true, code: 200, ended: stall}, {cost: "50", after: time.Millisecond, code: 200, ended: stall}},
			open:    2 * time.Second, held: 0, ended: 1},
		{name: "an unknown cost runs alone",
			scrapes: []scrapeCase{{gated: true, code: 200, ended: 2 * time.Second}, {cost: "1", after: time.Millisecond, code: 200, ended: 2 * time.Second}},
			open:    2 * time.Second, held: budget, alone: 1},
		{name: "a cost over the budget runs alone",
			scrapes: []scrapeCase{{cost: "1", gated: true, code: 200, ended: 2 * time.Second}, {cost: "500", after: time.Millisecond, code: 200, ended: 2 * time.Second}},
			open:    2 * time.Second, held: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var log bytes.Buffer
				l := newScrapeLimiter(10, stall, wait, slog.New(slog.NewTextHandler(&log, nil))).withBudget(budget, perRequest(costOf))
				start := time.Now()
				g := newGate()
				results := make([]chan scrapeResult, len(tc.scrapes))
				for i, sc := range tc.scrapes {
					time.Sleep(sc.after - time.Since(start))
					var w http.ResponseWriter = httptest.NewRecorder()
					if sc.blocked {
						w = newBlockedWriter()
					}
					var gate *gate
					if sc.gated {
						gate = g
					}
					target := "/metrics"
					if sc.cost != "" {
						target += "?cost=" + sc.cost
					}
					results[i] = serveAt(l, start, w, gate, target)
				}
				time.Sleep(tc.open - time.Millisecond - time.Since(start))
				l.mu.Lock()
				held, refused, ended, alone := l.held, l.refusals, l.ended, l.alone
				l.mu.Unlock()
				if held != tc.held || refused != tc.refused || ended != tc.ended || alone != tc.alone {
					t.Errorf("before the gates open: held %d, refused %v, ended %d, alone %d; want %d, %v, %d, %d",
						held, refused, ended, alone, tc.held, tc.refused, tc.ended, tc.alone)
				}
				time.Sleep(time.Millisecond)
				close(g.open)
				for i, sc := range tc.scrapes {
					if got := <-results[i]; got.code != sc.code || got.ended != sc.ended {
						t.Errorf("scrape %d: HTTP %d after %v, want %d after %v", i, got.code, got.ended, sc.code, sc.ended)
					}
				}
				if l.held != 0 || len(l.running) != 0 {
					t.Errorf("after: %d bytes held by %d scrapes, want none", l.held, len(l.running))
				}
				if tc.log != "" && !strings.Contains(log.String(), tc.log) {
					t.Errorf("the 503 is not logged with %s: %q", tc.log, log.String())
				}
			})
		})
	}
}

// TestScrapeBudgetConcurrent runs many scrapes of random costs at once: the costs of those
// in their handlers at once never pass the budget, and every charge is given back.
func TestScrapeBudgetConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const budget, scrapes = 100, 200
		l := newScrapeLimiter(8, time.Second, 5*time.Second, slog.New(slog.DiscardHandler)).withBudget(budget, perRequest(costOf))
		var inside, most atomic.Int64
		var wg sync.WaitGroup
		codes := make([]int, scrapes)
		for i := range scrapes {
			cost := rand.IntN(budget+20) + 1
			wg.Go(func() {
				h := l.handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
					// What the limiter charged: a cost over the budget is charged the budget.
					charged := min(int64(cost), budget)
					n := inside.Add(charged)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
					inside.Add(-charged)
				}))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics?cost="+strconv.Itoa(cost), nil))
				codes[i] = rec.Code
			})
		}
		wg.Wait()
		if m := most.Load(); m > budget {
			t.Errorf("the scrapes in their handlers at once cost %d, over the budget of %d", m, budget)
		}
		served := 0
		for _, c := range codes {
			if c == http.StatusOK {
				served++
			}
		}
		if l.held != 0 || served == 0 {
			t.Errorf("after: %d bytes held, %d of %d served; want none held, some served", l.held, served, scrapes)
		}
		t.Logf("%d of %d served, %d refused (%v), the most at once cost %d", served, scrapes, scrapes-served, l.refusals, most.Load())
	})
}

// TestScrapeBudgetSlowRequest: what reading a request takes for its cost (its name[]
// parameters, its Accept header) is done outside the limiter's lock: a request slow to
// read holds no other scrape, nor the release of one.
func TestScrapeBudgetSlowRequest(t *testing.T) {
	reading, read := make(chan struct{}), make(chan struct{})
	cost := func(r *http.Request) func() (int64, bool) {
		if r.URL.Query().Has("slow") {
			close(reading)
			<-read
		}
		return func() (int64, bool) { return 10, true }
	}
	l := newScrapeLimiter(10, time.Second, 5*time.Second, slog.New(slog.DiscardHandler)).withBudget(100, cost)
	start := time.Now()
	slow := serveAt(l, start, httptest.NewRecorder(), nil, "/metrics?slow")
	<-reading
	fast := serveAt(l, start, httptest.NewRecorder(), nil, "/metrics")
	select {
	case got := <-fast:
		if got.code != http.StatusOK {
			t.Errorf("the scrape beside a slow request: HTTP %d, want 200", got.code)
		}
	case <-hung(t):
		t.Error("a scrape waits for the cost of another request to be read")
	}
	close(read)
	if got := <-slow; got.code != http.StatusOK {
		t.Errorf("the slow request: HTTP %d, want 200", got.code)
	}
}

// TestClient: the client a connection or request counts as, where each is held to its
// share: an address, IPv6 ones too (a /64 is a Kubernetes node's pods, or every host of
// a link for fe80::/64), an IPv4 address mapped into IPv6 as the IPv4 address.
func TestClient(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"10.0.0.1:40000", "10.0.0.1"},
		{"[::ffff:10.0.0.1]:40000", "10.0.0.1"},
		{"[2001:db8::1]:40000", "2001:db8::1"},
		{"[2001:db8::ffff:2]:40001", "2001:db8::ffff:2"},
		{"[2001:db8::1%eth0]:40000", "2001:db8::1%eth0"},
		{"[fe80::1%eth0]:40000", "fe80::1%eth0"},
		{"[fe80::2%eth0]:40000", "fe80::2%eth0"},
		{"[fe80::1%eth1]:40000", "fe80::1%eth1"},
		{"[fe80::1]:40000", "fe80::1"},
		{"@", "@"},
		{"host(2):1024", "host(2)"},
		{"", ""},
	} {
		if got := client(tc.addr); got != tc.want {
			t.Errorf("client(%q) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// TestClientGroup: the group a client's scrapes share places in before its own: an IPv6
// address's /64, but a link-local one's (every host on a link has an address of
// fe80::/64); an IPv4 address (one mapped into IPv6 is one, see client) and what is no
// address are their own.
func TestClientGroup(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"10.0.0.1:40000", "10.0.0.1"},
		{"[::ffff:10.0.0.1]:40000", "10.0.0.1"},
		{"[2001:db8::1]:40000", "2001:db8::/64"},
		{"[2001:db8::ffff:2]:40001", "2001:db8::/64"},
		{"[2001:db8:0:1::1]:40000", "2001:db8:0:1::/64"},
		{"[2001:db8::1%eth0]:40000", "2001:db8::/64"},
		{"[fe80::1%eth0]:40000", "fe80::1%eth0"},
		{"[fe80::2%eth0]:40000", "fe80::2%eth0"},
		{"@", "@"},
		{"host(2):1024", "host(2)"},
		{"", ""},
	} {
		if got := clientGroup(client(tc.addr)); got != tc.want {
			t.Errorf("clientGroup(client(%q)) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
