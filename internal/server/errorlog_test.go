package server

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

// lineWriter hands each line a logger writes to the test.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

// TestServerErrorsLogged has a client open a TLS connection and close it before its
// handshake, as a TCP probe or a port scan does: what net/http says of it goes to the
// exporter's logger, in its format (here JSON), not to stderr in the log package's own.
func TestServerErrorsLogged(t *testing.T) {
	lines := make(lineWriter, 100)
	logger := slog.New(slog.NewJSONHandler(lines, nil))
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = newHTTPServer(http.NotFoundHandler(), Options{Logger: logger})
	ts.StartTLS()
	defer ts.Close()

	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()

	timeout := hung(t)
	for {
		select {
		case line := <-lines:
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("log line not in the logger's format: %q", line)
			}
			if strings.Contains(line, "TLS handshake error") {
				return
			}
		case <-timeout:
			t.Fatal("no TLS handshake error in the exporter's log")
		}
	}
}

// TestHandshakeErrorsThrottled has clients open TLS connections and close them before
// their handshakes, as a port scan does: net/http says so of each, and the log gets the
// first, with the count, rather than a line per connection. A panic in a handler is
// still logged each time.
func TestHandshakeErrorsThrottled(t *testing.T) {
	var logged strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), nil))
	closed := make(chan struct{}, 10)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = newHTTPServer(http.NotFoundHandler(), Options{Logger: logger})
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{} // after net/http logged why
		}
	}
	ts.StartTLS()
	defer ts.Close()

	const probes = 3
	for range probes {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	for range probes {
		select {
		case <-closed:
		case <-hung(t):
			t.Fatal("the server did not close the probes' connections")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for line := range strings.Lines(logged.String()) {
		if strings.Contains(line, "TLS handshake") {
			n++
		}
	}
	if n != 1 || !strings.Contains(logged.String(), `"failed":1`) {
		t.Errorf("%d probes logged %d lines of failed handshakes, want 1 with the count:\n%s", probes, n, logged.String())
	}
}

// TestServerLogCounts checks which failed handshakes and HTTP/2 client errors serverLog
// logs, with their count, and that it logs every other line of net/http's, panics of
// HTTP/2 handlers included. A handshake refused because the web config does not load is
// neither logged nor counted with the clients' (webConfigErrors tells it).
func TestServerLogCounts(t *testing.T) {
	var logged strings.Builder
	l := &serverLog{logger: slog.New(slog.NewTextHandler(&logged, nil))}
	fmt.Fprintf(l, "http: TLS handshake error from [::1]:9: %s\n", webConfigRefusal{errors.New("open cert.pem: no such file or directory")})
	for i := range 2001 {
		fmt.Fprintf(l, "http: TLS handshake error from 127.0.0.1:%d: EOF\n", i)
	}
	fmt.Fprintln(l, "http: panic serving 127.0.0.1:1: boom")
	fmt.Fprintln(l, "http2: server connection error from 127.0.0.1:7: connection error: PROTOCOL_ERROR")
	fmt.Fprintln(l, "timeout waiting for SETTINGS frames from 127.0.0.1:8")
	fmt.Fprintln(l, "http2: panic serving 127.0.0.1:2: boom")
	var got []string
	for line := range strings.Lines(logged.String()) {
		switch {
		case strings.Contains(line, "level=WARN") && strings.Contains(line, "HTTP/2"):
			_, last, _ := strings.Cut(line, "127.0.0.1:")
			got = append(got, "http2 "+last[:1])
		case strings.Contains(line, "level=WARN") && strings.Contains(line, "handshake"):
			_, count, _ := strings.Cut(line, "failed=")
			count, _, _ = strings.Cut(count, " ")
			_, last, _ := strings.Cut(line, "127.0.0.1:")
			last, _, _ = strings.Cut(last, ":")
			got = append(got, count+" last "+last)
		case strings.Contains(line, "level=ERROR") && strings.Contains(line, "panic serving"):
			got = append(got, "panic")
		default:
			t.Errorf("unexpected line %q", line)
		}
	}
	want := []string{"1 last 0", "1000 last 999", "2000 last 1999", "panic", "http2 7", "panic"}
	if !slices.Equal(got, want) {
		t.Errorf("logged %q, want %q", got, want)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestWebConfigBrokenAfterStart: exporter-toolkit reads the web config again for each
// request, and once the file no longer parses answers 500 and logs the YAML error alone
// ("yaml: line 1: ..."), which could be the rule file's: its log lines name the web
// config.
func TestWebConfigBrokenAfterStart(t *testing.T) {
	webConfig := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webConfig, []byte("http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := make(lineWriter, 100)
	logger := slog.New(slog.NewJSONHandler(lines, nil))
	o := Options{Logger: logger}
	srv := newHTTPServer(http.NotFoundHandler(), o)
	addr := serveListening(t, srv, webConfig, newWebConfigErrors(webConfig, logger, time.Now), logger)
	get := func() int {
		resp, err := http.Get("http://" + addr + "/nothing")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != http.StatusNotFound {
		t.Fatalf("HTTP %d; want 404", code)
	}
	if err := os.WriteFile(webConfig, []byte("http_server_config: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := get(); code != http.StatusInternalServerError {
		t.Fatalf("HTTP %d with the web config broken; want 500", code)
	}
	for {
		select {
		case line := <-lines:
			if !strings.Contains(line, "yaml") {
				continue
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			if rec["web_config"] != webConfig {
				t.Errorf("the web config's error does not name the file: %s", line)
			}
			return
		case <-hung(t):
			t.Fatal("the web config's error is not logged")
		}
	}
}

// TestHTTP2ClientErrorsThrottled has clients negotiate HTTP/2 over TLS and send what is
// not HTTP/2, or a frame HTTP/2 forbids: net/http logs each such connection at error
// level, a line per connection any client can ask for. The log gets the first of each
// kind, with the count, as for failed handshakes.
func TestHTTP2ClientErrorsThrottled(t *testing.T) {
	for _, tc := range []struct {
		name, sent string
	}{
		{"not HTTP/2", "GET / HTTP/1.1\r\nHost: x\r\n\r\nxxxxxxxxxx"},
		// The preface, an empty SETTINGS frame, then a DATA frame on stream 0: a
		// connection error.
		{"protocol error", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00" + "\x00\x00\x00\x00\x00\x00\x00\x00\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged syncbuf.Buffer
			logger := slog.New(slog.NewJSONHandler(&logged, nil))
			closed := make(chan struct{}, 10)
			ts := httptest.NewUnstartedServer(nil)
			ts.EnableHTTP2 = true
			ts.Config = newHTTPServer(http.NotFoundHandler(), Options{Logger: logger})
			ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateClosed {
					closed <- struct{}{} // after net/http logged why
				}
			}
			ts.StartTLS()
			defer ts.Close()

			const clients = 3
			for range clients {
				c, err := tls.Dial("tcp", ts.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
				if err != nil {
					t.Fatal(err)
				}
				if c.ConnectionState().NegotiatedProtocol != "h2" {
					t.Fatalf("negotiated %q, want h2", c.ConnectionState().NegotiatedProtocol)
				}
				if _, err := c.Write([]byte(tc.sent)); err != nil {
					t.Fatal(err)
				}
				_ = c.SetReadDeadline(hangDeadline(t))
				_, _ = io.Copy(io.Discard, c)
				c.Close()
			}
			for range clients {
				select {
				case <-closed:
				case <-hung(t):
					t.Fatal("the server did not close the connections")
				}
			}
			n := 0
			for line := range strings.Lines(logged.String()) {
				if strings.Contains(line, "http2") {
					n++
				}
			}
			if n != 1 || !strings.Contains(logged.String(), `"ended":1`) {
				t.Errorf("%d clients logged %d lines of HTTP/2 errors, want 1 with the count:\n%s", clients, n, logged.String())
			}
		})
	}
}

// TestHandshakeFailuresNamed: every failed handshake was logged as "a client without the
// right certificate, or that closed the connection first", the first and every 1000th of
// all of them: a scraper refusing the exporter's expired or unknown certificate was blamed
// on a certificate of its own, and once a TCP check's was logged, a Prometheus scraping
// the TLS port over plain HTTP, or without its client certificate, was not told for a
// thousand failures. Each cause has a line naming it, the first of its own and every
// 1000th.
func TestHandshakeFailuresNamed(t *testing.T) {
	const plain = "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
	const clientCerts = plain + "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n"
	dial := func(t *testing.T, addr, send string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if send != "" {
			fmt.Fprint(c, send)
			_ = c.SetReadDeadline(hangDeadline(t))
			_, _ = io.Copy(io.Discard, c)
		}
	}
	get := func(addr, scheme string, config *tls.Config) {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: config}}
		if resp, err := c.Get(scheme + "://" + addr + "/"); err == nil {
			resp.Body.Close()
		}
	}
	for _, tc := range []struct {
		name, webConfig string
		client          func(t *testing.T, addr string, ca *x509.Certificate, caKey *ecdsa.PrivateKey)
		want            string // in the line's message
	}{
		{"plain HTTP to the TLS port", plain, func(t *testing.T, addr string, _ *x509.Certificate, _ *ecdsa.PrivateKey) {
			get(addr, "http", nil)
		}, "plain HTTP"},
		{"not TLS", plain, func(t *testing.T, addr string, _ *x509.Certificate, _ *ecdsa.PrivateKey) {
			dial(t, addr, "SSH-2.0-OpenSSH_9.6\r\n")
		}, "not TLS"},
		{"the exporter's certificate not trusted", plain, func(t *testing.T, addr string, _ *x509.Certificate, _ *ecdsa.PrivateKey) {
			get(addr, "https", &tls.Config{})
		}, "exporter's certificate"},
		{"no client certificate", clientCerts, func(t *testing.T, addr string, _ *x509.Certificate, _ *ecdsa.PrivateKey) {
			get(addr, "https", &tls.Config{InsecureSkipVerify: true})
		}, "client certificate"},
		{"client certificate of another CA", clientCerts, func(t *testing.T, addr string, _ *x509.Certificate, _ *ecdsa.PrivateKey) {
			_, other, otherKey := newCA(t, "other CA")
			get(addr, "https", &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{clientCert(t, other, otherKey, "scraper.example")}})
		}, "client certificate"},
		{"client certificate of a SAN not allowed", clientCerts + "  client_allowed_sans: [other.example]\n", func(t *testing.T, addr string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) {
			get(addr, "https", &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{clientCert(t, ca, caKey, "scraper.example")}})
		}, "client certificate"},
		{"no common version", plain, func(t *testing.T, addr string, _ *x509.Certificate, _ *ecdsa.PrivateKey) {
			get(addr, "https", &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
		}, "min_version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "", "")
			caPEM, ca, caKey := newCA(t, "scrapers' CA")
			f.write(t, "ca.pem", caPEM)
			f.write(t, "web.yml", []byte(tc.webConfig))
			var logged syncbuf.Buffer
			addr, closed := serveTLSClosing(t, f.webConfig, nil, slog.New(slog.NewTextHandler(&logged, nil)))
			settle := func() {
				t.Helper()
				select {
				case <-closed:
				case <-hung(t):
					t.Fatal("the server did not close the connection")
				}
			}
			// A TCP check first, whose failure is logged as the first of its own.
			dial(t, addr, "")
			settle()
			tc.client(t, addr, ca, caKey)
			settle()
			var lines []string
			for line := range strings.Lines(logged.String()) {
				if strings.Contains(line, "handshake") {
					lines = append(lines, line)
				}
			}
			if len(lines) != 2 || !strings.Contains(lines[0], "closed the connection") || !strings.Contains(lines[1], tc.want) ||
				!strings.Contains(lines[0], "failed=1 ") || !strings.Contains(lines[1], "failed=1 ") {
				t.Errorf("logged %q; want two lines, failed=1, the TCP check's (closed the connection) and the client's, naming %q", lines, tc.want)
			}
		})
	}
}

// TestHandshakeErrorsCounted: failed TLS handshakes were told in the log alone, the first
// and every 1000th of each cause, where no alert could watch a scraper failing to connect.
// logwindow_tls_handshake_errors_total counts each by its cause, summed over the servers
// of every listen address, and TLS sent to a plain port; every cause is sent, 0 or not; a
// handshake refused because the web config does not load is the web config's error, not
// counted here, nor is one whose connection the exporter closed (--web.max-connections
// closing a connection that had not sent its request, which its own warning tells).
func TestHandshakeErrorsCounted(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	var logs handshakeErrors
	for range 2 {
		logs = append(logs, newHTTPServer(http.NotFoundHandler(), Options{Logger: logger}).ErrorLog.Writer().(*serverLog))
	}
	fmt.Fprintf(logs[0], "http: TLS handshake error from [::1]:9: %s\n", webConfigRefusal{errors.New("open cert.pem: no such file or directory")})
	// Closed by the exporter, to stay within --web.max-connections.
	fmt.Fprintln(logs[0], "http: TLS handshake error from 127.0.0.1:41412: read tcp 127.0.0.1:19907->127.0.0.1:41412: use of closed network connection")
	fmt.Fprintln(logs[0], "http: TLS handshake error from 127.0.0.1:1: EOF")
	fmt.Fprintln(logs[0], "http: TLS handshake error from 127.0.0.1:2: remote error: tls: bad certificate")
	fmt.Fprintln(logs[1], "http: TLS handshake error from 127.0.0.1:3: remote error: tls: unknown certificate authority")
	fmt.Fprintln(logs[1], "http: TLS handshake error from 127.0.0.1:4: tls: client didn't provide a certificate")
	logs[1].tlsToPlain(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5})
	want := `# HELP logwindow_tls_handshake_errors_total ` + selfmetric.TLSHandshakeErrors.Help + `
# TYPE logwindow_tls_handshake_errors_total counter
logwindow_tls_handshake_errors_total{cause="client_alert"} 2
logwindow_tls_handshake_errors_total{cause="client_certificate"} 1
logwindow_tls_handshake_errors_total{cause="closed"} 1
logwindow_tls_handshake_errors_total{cause="no_shared_parameters"} 0
logwindow_tls_handshake_errors_total{cause="not_tls"} 0
logwindow_tls_handshake_errors_total{cause="other"} 0
logwindow_tls_handshake_errors_total{cause="plain_http"} 0
logwindow_tls_handshake_errors_total{cause="tls_to_plain_port"} 1
`
	if err := testutil.CollectAndCompare(logs, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// TestHandshakeCauseOfOpenSSLClients: an OpenSSL client (curl, Python, openssl s_client)
// that refuses the exporter's certificate over TLS 1.3, the most usual mistake of a
// check by hand (curl without --cacert), fails the handshake on the exporter's side with
// "local error: tls: bad record MAC", not the alert a Go client's refusal gives: it was
// logged as "another cause". Each error here is what crypto/tls gave a server for such a
// client.
func TestHandshakeCauseOfOpenSSLClients(t *testing.T) {
	for _, tc := range []struct{ err, label string }{
		{"local error: tls: bad record MAC", "client_alert"},                 // curl 7.88, OpenSSL 3.0, TLS 1.3
		{"remote error: tls: unknown certificate authority", "client_alert"}, // the same over TLS 1.2
		{"remote error: tls: bad certificate", "client_alert"},               // a Go client
		{"local error: tls: unexpected message", "other"},
	} {
		if got := handshakeCauses[handshakeCause(tc.err)].label; got != tc.label {
			t.Errorf("%q: cause %s; want %s", tc.err, got, tc.label)
		}
	}
}
