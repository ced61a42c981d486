package server

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// serveHTTP2 is the TLSNextProto of "h2" of the servers whose connections l bounds: it
// serves the HTTP/2 connection c with an http.Server of its own, one, of hs's settings,
// ConnState (but for StateNew, which hs told already) and error log, its requests of the
// connection's context (of hs's ConnContext) and h, so that l can end it as net/http's
// idle timeout and Shutdown end one: with a GOAWAY, by one's Shutdown, its client told
// which of its requests were taken, the others sent again on a new connection, and
// closed once those taken are answered. net/http's HTTP/2 server sends one only to all a
// server's connections at once, and closed at once by the limiter, an HTTP/2 connection
// that looked idle failed the request its client had just sent on it ("unexpected
// EOF"): Go's client, as others, sends a request again only on a GOAWAY or a refused
// stream.
func (l *connLimiter) serveHTTP2(hs *http.Server, c *tls.Conn, h http.Handler) {
	ctx := context.Background()
	if bc, ok := h.(interface{ BaseContext() context.Context }); ok {
		ctx = bc.BaseContext() // the connection's, of ConnContext
	}
	only := &oneConnListener{c: c, closed: make(chan struct{})}
	done := make(chan struct{})
	var ended sync.Once
	one := &http.Server{
		Handler:           h,
		ReadTimeout:       hs.ReadTimeout,
		ReadHeaderTimeout: hs.ReadHeaderTimeout,
		WriteTimeout:      hs.WriteTimeout,
		IdleTimeout:       hs.IdleTimeout,
		MaxHeaderBytes:    hs.MaxHeaderBytes,
		HTTP2:             hs.HTTP2,
		ErrorLog:          hs.ErrorLog,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnState: func(c net.Conn, state http.ConnState) {
			if state != http.StateNew && hs.ConnState != nil {
				hs.ConnState(c, state)
			}
			if state == http.StateClosed || state == http.StateHijacked {
				ended.Do(func() { close(done) })
				_ = only.Close()
			}
		},
	}
	hc := &http2Conn{away: func() { _ = one.Shutdown(context.Background()) }}
	l.mu.Lock()
	l.goAway[c] = hc
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.goAway, c)
		if hc.draining {
			l.draining--
		}
		l.mu.Unlock()
	}()
	// Serve returns once the listener is closed: as the connection ends, or at one's
	// Shutdown, after which it is served until it ends.
	_ = one.Serve(only)
	<-done
}

// oneConnListener is a listener that accepts c once, and then nothing until it is closed.
type oneConnListener struct {
	c      net.Conn
	taken  bool // http.Server.Serve accepts from one goroutine
	once   sync.Once
	closed chan struct{}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if !l.taken {
		l.taken = true
		return l.c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

// Close closes l, not the connection it accepted.
func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.c.LocalAddr() }

// http2Conn is an HTTP/2 connection served: away sends its GOAWAY; draining is set once
// it was sent one to stay within max.
type http2Conn struct {
	away     func()
	draining bool
}

// goAwayAll sends a GOAWAY on every HTTP/2 connection l serves: the servers' Shutdown
// calls it, as net/http's own HTTP/2 server has its Shutdown do.
func (l *connLimiter) goAwayAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, hc := range l.goAway {
		go hc.away()
	}
}

// end ends c, a connection put out to stay within max: an HTTP/2 one that was idle
// between requests with a GOAWAY (see serveHTTP2), while fewer than a quarter of max
// (one at least) sent one are still open; any other is closed at once. A GOAWAY's
// connection stays open until the requests it took are answered, and a second after
// (net/http's wait for the client to read it), or until no handler ran on it for twice
// the grace (see closeDrained): so held sockets go past max by that quarter at most,
// however fast clients make connections to be put out, each for a while at most. One
// waiting for its first request, or whose client does not read, is closed: it has no
// request of the moment to lose, or would hold its socket until the write timeout.
// Under l.mu.
func (l *connLimiter) end(c net.Conn, idle bool) {
	if hc := l.goAway[c]; hc != nil && idle && !hc.draining && l.draining < max(1, l.max/4) {
		hc.draining = true
		l.draining++
		go hc.away()
		l.closeDrained(c, hc, time.Now())
		return
	}
	go c.Close()
}

// closeDrained closes c, sent a GOAWAY at since, once no handler has run on it for
// twice the grace. net/http closes it a second after it wrote the GOAWAY, but that
// write waits for the client to read what was written before, and a client that reads
// nothing more would hold it, and its place among those draining, as long as it likes.
// Under l.mu.
func (l *connLimiter) closeDrained(c net.Conn, hc *http2Conn, since time.Time) {
	time.AfterFunc(time.Until(since.Add(2*l.grace)), func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.goAway[c] != hc {
			return // closed
		}
		// Taken again by its ConnState since the GOAWAY, while it answers a request.
		last := since
		if t, ok := l.idle[c]; ok {
			last = t
		}
		if b := l.running[c]; b != nil {
			last = b.since
			if b.handlers > 0 {
				last = time.Now()
			}
		}
		if last.After(since) {
			l.closeDrained(c, hc, last)
			return
		}
		go c.Close()
	})
}
