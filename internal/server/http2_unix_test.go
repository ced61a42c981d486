//go:build unix

package server

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// TestHTTP2DrainingClientNotReading: an HTTP/2 connection put out while idle between
// requests is sent a GOAWAY, and net/http closes it a second after it wrote that; but
// the write waits for the client to read, and a client that stopped reading (here, with
// a small receive buffer, it sends PINGs whose replies it leaves unread) held the
// connection, and with it the one GOAWAY of --web.max-connections 2 left draining at
// once, for as long as it liked. It is now closed once no request ran on it for twice
// the grace, whether or not the GOAWAY went out.
func TestHTTP2DrainingClientNotReading(t *testing.T) {
	o := Options{Logger: slog.New(slog.DiscardHandler)}
	o.conns = newConnLimiter(2, 100*time.Millisecond, o.Logger)
	ts := httptest.NewUnstartedServer(nil)
	ts.EnableHTTP2 = true
	ts.Config = newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), o)
	// What the client leaves unread fills the kernel's buffers sooner.
	ts.Listener = smallSendBuffers{ts.Listener}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	addr := ts.Listener.Addr().String()
	dialer := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	raw, err := dialer.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	t.Cleanup(func() { _ = raw.Close() })
	_ = c.SetDeadline(hangDeadline(t))
	if _, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := h2Frame(c, 0x4, 0, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := h2Frame(c, 0x1, 0x5, 1, []byte{0x82, 0x87, 0x84, 0x41, 0x01, 'x'}); err != nil {
		t.Fatal(err)
	}
	// The reply read to its end: the connection is idle between requests.
	if err := h2ReadFrames(c, func(typ, flags byte, id uint32, _ []byte) bool {
		return id == 1 && (typ == 0x0 || typ == 0x1) && flags&0x1 != 0
	}); err != nil {
		t.Fatal(err)
	}
	state := func() (idle, draining int) {
		o.conns.mu.Lock()
		defer o.conns.mu.Unlock()
		return len(o.conns.idle), o.conns.draining
	}
	for idle, _ := state(); idle != 1; idle, _ = state() {
		time.Sleep(time.Millisecond)
	}
	// It reads no more, and has the server write PING replies until its writes wait
	// (fewer than the 10,000 net/http queues before it closes the connection itself).
	for range 8000 {
		if err := h2Frame(c, 0x6, 0, 0, make([]byte, 8)); err != nil {
			t.Fatal(err)
		}
	}
	// Two connections more: the second puts the idle one out, with a GOAWAY.
	for range 2 {
		other, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = other.Close() })
		time.Sleep(10 * time.Millisecond)
	}
	hang := hung(t)
	for _, draining := state(); draining != 1; _, draining = state() {
		select {
		case <-hang:
			t.Fatal("the idle HTTP/2 connection was not put out with a GOAWAY")
		case <-time.After(time.Millisecond):
		}
	}
	for _, draining := state(); draining != 0; _, draining = state() {
		select {
		case <-hang:
			t.Fatal("a connection sent a GOAWAY whose client reads nothing is still open, holding the GOAWAY left draining")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// smallSendBuffers gives the connections it accepts a send buffer of 4 KiB.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}
