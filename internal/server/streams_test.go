package server

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
)

// h2Frame writes an HTTP/2 frame of type typ, with flags, on stream id, to w.
func h2Frame(w io.Writer, typ, flags byte, id uint32, payload []byte) error {
	head := make([]byte, 9, 9+len(payload))
	head[0], head[1], head[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	head[3], head[4] = typ, flags
	binary.BigEndian.PutUint32(head[5:], id)
	_, err := w.Write(append(head, payload...))
	return err
}

// newH2Server serves h, with o, over TLS with HTTP/2, until t ends.
func newH2Server(t *testing.T, h http.Handler, o Options) *httptest.Server {
	ts := httptest.NewUnstartedServer(nil)
	ts.EnableHTTP2 = true
	ts.Config = newHTTPServer(h, o)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts
}

// dialH2 opens an HTTP/2 connection to addr by hand, for frames no Go client sends: it
// writes the preface and SETTINGS with the given parameters (6 bytes each), and gives
// the connection until the test hangs (see hung).
func dialH2(t *testing.T, addr string, settings []byte) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(hangDeadline(t))
	if _, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := h2Frame(c, 0x4, 0, 0, settings); err != nil {
		t.Fatal(err)
	}
	return c
}

// h2ReadFrames reads c's frames, acknowledging the server's SETTINGS (which it waits
// for before it takes a request), and hands each to seen until seen returns true.
func h2ReadFrames(c net.Conn, seen func(typ, flags byte, id uint32, payload []byte) bool) error {
	for {
		head := make([]byte, 9)
		if _, err := io.ReadFull(c, head); err != nil {
			return err
		}
		payload := make([]byte, int(head[0])<<16|int(head[1])<<8|int(head[2]))
		if _, err := io.ReadFull(c, payload); err != nil {
			return err
		}
		if head[3] == 0x4 && head[4]&1 == 0 {
			_ = h2Frame(c, 0x4, 1, 0, nil)
		}
		if seen(head[3], head[4], binary.BigEndian.Uint32(head[5:])&(1<<31-1), payload) {
			return nil
		}
	}
}

// h2Await reads c's frames until one of type typ.
func h2Await(c net.Conn, typ byte) error {
	return h2ReadFrames(c, func(t, _ byte, _ uint32, _ []byte) bool { return t == typ })
}

// floodPastLimit opens two connections to addr that send nothing, the second past a
// limit of two with the one already open, and returns what reading the second gives:
// io.EOF where the limiter closed it.
func floodPastLimit(t *testing.T, addr string) error {
	t.Helper()
	var flood []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		flood = append(flood, c)
	}
	_ = flood[1].SetReadDeadline(hangDeadline(t))
	_, err := flood[1].Read(make([]byte, 1))
	return err
}

// TestHTTP2StreamsPerConnection: over TLS, a client that negotiated HTTP/2 had 250
// requests run at once on each connection (net/http's default), each a handler's goroutine
// with its request and buffers. A request's handler holds them until its reply is
// written, which a client that opens no flow-control window (SETTINGS_INITIAL_WINDOW_SIZE
// 0) never lets happen before --web.write-timeout: 200 such connections asking for
// /-/healthy, with no password, grew the exporter's RSS by 780 MB, and the 512 of
// --web.max-connections would take 2 GB. Over HTTP/1.1 a connection runs one request at a
// time. A connection now runs maxStreams at once: the streams past them are refused
// (RST_STREAM), and that many handlers run.
func TestHTTP2StreamsPerConnection(t *testing.T) {
	var running atomic.Int64
	release := make(chan struct{})
	defer close(release)
	ts := newH2Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running.Add(1)
		<-release
	}), Options{Logger: slog.New(slog.DiscardHandler)})

	// The preface, SETTINGS with no flow-control window, then GETs of / (HPACK's static
	// table: :method GET, :scheme https, :path /), each ending its stream, then a PING:
	// the server reads frames in order, so its answer comes after every GET was taken
	// or refused.
	c := dialH2(t, ts.Listener.Addr().String(), []byte{0, 4, 0, 0, 0, 0})
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	const sent = 250
	for i := range sent {
		if err := h2Frame(c, 0x1, 0x5, uint32(2*i+1), []byte{0x82, 0x87, 0x84}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h2Frame(c, 0x6, 0, 0, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	refused := 0
	if err := h2ReadFrames(c, func(typ, flags byte, _ uint32, _ []byte) bool {
		if typ == 0x3 {
			refused++
		}
		return typ == 0x6 && flags&1 == 1
	}); err != nil {
		t.Fatalf("before the PING's answer: %v", err)
	}
	if got := sent - refused; got > maxStreams {
		t.Errorf("%d requests sent at once on one HTTP/2 connection: %d taken, want %d at most", sent, got, maxStreams)
	}
	for deadline := time.Now().Add(5 * time.Second); running.Load() < int64(sent-refused) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := running.Load(); n != int64(sent-refused) {
		t.Errorf("%d requests taken, %d handlers running", sent-refused, n)
	}
}

// TestStalledHTTP2StreamsHoldNoConnection: a client that opens HTTP/2 connections with no
// flow-control window and asks for a small reply on each (/-/healthy, or a 401 without a
// password) has each connection run its request until the write timeout, the handler
// returned: --web.max-connections of them had every new connection closed, a scraper's
// among them, for as long as they were renewed (a minute each). Over HTTP/1.1 the same
// reply is written to the socket's buffer, and the connection waits for its next request,
// to be closed past the limit. A connection whose replies have waited for their client a
// grace now gives its place to a new one.
func TestStalledHTTP2StreamsHoldNoConnection(t *testing.T) {
	const grace = 200 * time.Millisecond
	logger := slog.New(slog.DiscardHandler)
	ts := newH2Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "Healthy.\n")
	}), Options{Logger: logger, conns: newConnLimiter(2, grace, logger)})

	for range 2 {
		c := dialH2(t, ts.Listener.Addr().String(), []byte{0, 4, 0, 0, 0, 0})
		if err := h2Frame(c, 0x1, 0x5, 1, []byte{0x82, 0x87, 0x84}); err != nil {
			t.Fatal(err)
		}
		// The reply's HEADERS come once the handler returned; its DATA waits for a window.
		if err := h2Await(c, 0x1); err != nil {
			t.Fatalf("before the reply's headers: %v", err)
		}
	}
	time.Sleep(2 * grace)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(ts.URL)
	if err != nil {
		t.Fatalf("a scrape beside connections whose replies their client does not read: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a scrape beside connections whose replies their client does not read: HTTP %d", resp.StatusCode)
	}
}

// TestHTTP2FrameSize: net/http reads HTTP/2 frames of up to 1 MiB, into a buffer each
// connection keeps for its life, sized to the largest frame it read: a client without a
// password that sent each connection one frame of 1 MiB (of a type HTTP/2 ignores) and
// left it idle grew the exporter's RSS by 585 MB over 500 connections, for the idle
// timeout. A frame past 16 KiB, the largest HTTP/2 lets a server refuse, ends its
// connection now.
func TestHTTP2FrameSize(t *testing.T) {
	for _, tc := range []struct {
		name  string
		size  int
		taken bool
	}{
		{"16 KiB", 16 << 10, true},
		{"1 MiB", 1 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newH2Server(t, http.NotFoundHandler(), Options{Logger: slog.New(slog.DiscardHandler)})
			c := dialH2(t, ts.Listener.Addr().String(), nil)
			// A frame of an unknown type, which HTTP/2 ignores, then a PING.
			if err := h2Frame(c, 0xfa, 0, 0, make([]byte, tc.size)); err != nil {
				t.Fatal(err)
			}
			if err := h2Frame(c, 0x6, 0, 0, make([]byte, 8)); err != nil {
				t.Fatal(err)
			}
			taken := false
			// An error is the connection closed: the frame was not taken.
			_ = h2ReadFrames(c, func(typ, flags byte, _ uint32, _ []byte) bool {
				taken = typ == 0x6 && flags&1 == 1
				return taken || typ == 0x7 // GOAWAY
			})
			if taken != tc.taken {
				t.Errorf("a frame of %d bytes: taken %v, want %v", tc.size, taken, tc.taken)
			}
		})
	}
}

// TestHTTP2ReceiveWindow: net/http lets an HTTP/2 client send 1 MiB of request bodies per
// connection before a handler reads them, and keeps what a handler did not read until the
// stream ends, which a client that opens no flow-control window for the reply puts off
// until the write timeout: 300 connections each sending /-/healthy a body of 1 MiB grew
// the exporter's RSS by 354 MB, without a password. The line tester alone reads a body,
// 256 KiB at most, which flows within a window of 64 KiB as it reads it. A connection
// now lets its client send 64 KiB ahead of the handlers, on all its streams together.
func TestHTTP2ReceiveWindow(t *testing.T) {
	ts := newH2Server(t, http.NotFoundHandler(), Options{Logger: slog.New(slog.DiscardHandler)})
	c := dialH2(t, ts.Listener.Addr().String(), nil)
	if err := h2Frame(c, 0x6, 0, 0, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	// HTTP/2's windows start at 65,535 bytes; the server's SETTINGS set a stream's, its
	// WINDOW_UPDATEs on stream 0 raise the connection's.
	connection, stream := int64(65535), int64(65535)
	if err := h2ReadFrames(c, func(typ, flags byte, id uint32, payload []byte) bool {
		switch {
		case typ == 0x4 && flags&1 == 0:
			for p := payload; len(p) >= 6; p = p[6:] {
				if binary.BigEndian.Uint16(p) == 0x4 { // SETTINGS_INITIAL_WINDOW_SIZE
					stream = int64(binary.BigEndian.Uint32(p[2:]))
				}
			}
		case typ == 0x8 && id == 0:
			connection += int64(binary.BigEndian.Uint32(payload) & (1<<31 - 1))
		}
		return typ == 0x6 && flags&1 == 1
	}); err != nil {
		t.Fatalf("before the PING's answer: %v", err)
	}
	if ahead := min(connection, maxStreams*stream); ahead > 64<<10 {
		t.Errorf("an HTTP/2 client may send %d bytes of bodies ahead of the handlers (connection window %d, a stream's %d), want 64 KiB at most", ahead, connection, stream)
	}
}

// TestHTTP2ConnectionBeforeItsFirstRequest: net/http has an HTTP/2 connection idle once
// it read the client's preface, before its first request: the connection limiter took
// it for one idle between two requests, to be closed past the limit at once, where a
// connection that has sent no request is kept for a grace. A scraper's new connection
// over HTTP/2 was so closed by the next connection past the limit, as its request came
// (a flood's, sending nothing), and its scrape failed. It waits for its first request
// as any new connection now.
func TestHTTP2ConnectionBeforeItsFirstRequest(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	ts := newH2Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "Healthy.\n")
	}), Options{Logger: logger, conns: newConnLimiter(2, time.Minute, logger)})
	addr := ts.Listener.Addr().String()

	// Its preface read, as the PING's answer tells; its request is on its way.
	scraper := dialH2(t, addr, nil)
	if err := h2Frame(scraper, 0x6, 0, 0, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if err := h2Await(scraper, 0x6); err != nil {
		t.Fatalf("the scraper's PING: %v", err)
	}
	// The flood's connections send nothing: the second is past the limit.
	if err := floodPastLimit(t, addr); !errors.Is(err, io.EOF) {
		t.Errorf("the connection past the limit, with the others younger than the grace: %v, want closed", err)
	}
	if err := h2Frame(scraper, 0x1, 0x5, 1, []byte{0x82, 0x87, 0x84}); err != nil {
		t.Fatalf("the scraper's request: %v", err)
	}
	if err := h2Await(scraper, 0x1); err != nil {
		t.Errorf("the scraper's reply, its connection younger than the grace: %v", err)
	}
}

// TestConnLimiterLeavesRunningHandlers: past the limit, a connection whose replies have
// waited for their client a grace gives its place, but not one whose handler runs (a
// scrape computing, a password being checked): the server tells the limiter, through
// the connection it puts in the context of each request (see connLimiter.handler, and
// toolkit.serve, which chains its own), over HTTP/1.1 and HTTP/2, with the web config's
// TLS too. Nothing served tested that handling, only the limiter told it by hand:
// without it, a scrape computing for a second was cut off as the next connection past
// the limit came.
func TestConnLimiterLeavesRunningHandlers(t *testing.T) {
	const grace = 100 * time.Millisecond
	for _, tc := range []struct {
		name           string
		http2, toolkit bool
	}{{"HTTP/1.1", false, false}, {"HTTP/2", true, false}, {"web config's TLS", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			logger := slog.New(slog.DiscardHandler)
			in, release := make(chan struct{}), make(chan struct{})
			srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(in)
				<-release
				_, _ = io.WriteString(w, r.Proto)
			}), Options{Logger: logger, conns: newConnLimiter(2, grace, logger)})
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: tc.http2}}
			var addr string
			if tc.toolkit {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				path := newTLSFiles(t, "", "").webConfig
				served := make(chan error, 1)
				go func() {
					served <- serveOn(l, srv, &web.FlagConfig{WebConfigFile: &path}, newWebConfigErrors(path, logger, time.Now), logger)
				}()
				defer func() { _ = srv.Close(); <-served }()
				addr = l.Addr().String()
			} else {
				ts := httptest.NewUnstartedServer(nil)
				ts.EnableHTTP2 = tc.http2
				ts.Config = srv
				ts.StartTLS()
				defer ts.Close()
				addr = ts.Listener.Addr().String()
			}
			got := make(chan error, 1)
			go func() {
				resp, err := client.Get("https://" + addr)
				if err == nil {
					var b []byte
					b, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && (resp.StatusCode != http.StatusOK || (string(b) == "HTTP/2.0") != tc.http2) {
						err = fmt.Errorf("HTTP %d, %q", resp.StatusCode, b)
					}
				}
				got <- err
			}()
			<-in
			time.Sleep(2 * grace)
			if err := floodPastLimit(t, addr); !errors.Is(err, io.EOF) {
				t.Errorf("the connection past the limit, beside a running handler and a young connection: %v, want closed", err)
			}
			close(release)
			if err := <-got; err != nil {
				t.Errorf("the request whose handler ran a grace as a connection came past the limit: %v", err)
			}
		})
	}
}
