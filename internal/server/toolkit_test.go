package server

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/crypto/bcrypt"

	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// tlsFiles writes a web config serving TLS from dir, with the certificate and key
// newCert made, and what extra adds to its tls_server_config.
type tlsFiles struct {
	dir       string
	webConfig string
}

func newTLSFiles(t *testing.T, extra, more string) *tlsFiles {
	t.Helper()
	f := &tlsFiles{dir: t.TempDir()}
	f.webConfig = filepath.Join(f.dir, "web.yml")
	f.write(t, "web.yml", []byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"+extra+more))
	cert, key := newCert(t, "first", 0)
	f.write(t, "cert.pem", cert)
	f.write(t, "key.pem", key)
	return f
}

func (f *tlsFiles) write(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, name), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// stampNow dates the web config now by clock, as a save just made: unsettled until racyAge
// later by it.
func (f *tlsFiles) stampNow(t *testing.T, clock *testclock.Clock) {
	t.Helper()
	if err := os.Chtimes(f.webConfig, clock.Now(), clock.Now()); err != nil {
		t.Fatal(err)
	}
}

// saveNow writes data to the web config, a save in place made now by clock (stampNow).
func (f *tlsFiles) saveNow(t *testing.T, clock *testclock.Clock, data []byte) {
	t.Helper()
	f.write(t, "web.yml", data)
	f.stampNow(t, clock)
}

// age sets the modification time of every file of f to an hour ago, plus d.
func (f *tlsFiles) age(t *testing.T, d time.Duration) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(f.dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour + d)
	for _, name := range names {
		if err := os.Chtimes(name, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// newCert is a self-signed certificate of cn for 127.0.0.1 and its key, in PEM; size,
// when not 0, is the certificate's PEM's length, which the name is padded to.
func newCert(t *testing.T, cn string, size int) (certPEM, keyPEM []byte) {
	t.Helper()
	return newCertValid(t, cn, size, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
}

// newCertValid is newCert, valid from notBefore to notAfter.
func newCertValid(t *testing.T, cn string, size int, notBefore, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	for range 100 {
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1),
			Subject:      pkix.Name{CommonName: cn},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
			NotBefore:    notBefore,
			NotAfter:     notAfter,
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			IsCA:         true, BasicConstraintsValid: true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		// An ECDSA signature's length varies by a byte or two.
		if size == 0 || len(certPEM) == size {
			return certPEM, keyPEM
		}
	}
	t.Fatalf("no certificate of %d bytes", size)
	return nil, nil
}

// serveTLS serves a 200 with the web config at path as Serve serves it, until the test
// ends, and returns its address.
func serveTLS(t *testing.T, path string, configErrors *webConfigErrors) string {
	t.Helper()
	return serveTLSLogged(t, path, configErrors, slog.New(slog.DiscardHandler))
}

// serveTLSLogged is serveTLS, logging to logger.
func serveTLSLogged(t *testing.T, path string, configErrors *webConfigErrors, logger *slog.Logger) string {
	t.Helper()
	addr, _ := serveTLSClosing(t, path, configErrors, logger)
	return addr
}

// serveTLSClosing is serveTLSLogged, whose closed gets a value for each connection the
// server closed, after what net/http logged of it (a failed handshake).
func serveTLSClosing(t *testing.T, path string, configErrors *webConfigErrors, logger *slog.Logger) (addr string, closed <-chan struct{}) {
	t.Helper()
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), Options{Logger: logger})
	closing := make(chan struct{}, 1000)
	srv.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closing <- struct{}{}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if configErrors == nil {
		configErrors = newWebConfigErrors(path, logger, time.Now)
	}
	served := make(chan error, 1)
	go func() { served <- serveOn(l, srv, &web.FlagConfig{WebConfigFile: &path}, configErrors, logger) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-served; err != http.ErrServerClosed {
			t.Errorf("serveOn: %v", err)
		}
	})
	return l.Addr().String(), closing
}

// handshake makes a TLS handshake with addr, a full one (no session to resume), and
// returns what it negotiated, or the error.
func handshake(addr string, protos ...string) (tls.ConnectionState, error) {
	s, _, err := countedHandshake(addr, protos...)
	return s, err
}

// countedHandshake is handshake, which also returns the bytes it sent and received.
func countedHandshake(addr string, protos ...string) (tls.ConnectionState, int64, error) {
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		return tls.ConnectionState{}, 0, err
	}
	// A server that does not serve (its set-up failed) fails the handshake, not the run.
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	counted := &countingConn{Conn: raw}
	c := tls.Client(counted, &tls.Config{InsecureSkipVerify: true, NextProtos: protos})
	defer c.Close()
	if err := c.Handshake(); err != nil {
		return tls.ConnectionState{}, 0, err
	}
	// The server's side of the handshake ends as it reads the client's Finished, which
	// the client sends without waiting: a read waits for the server's reply to it (a
	// session ticket in TLS 1.3), or the end of the connection.
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, _ = c.Read(make([]byte, 1))
	return c.ConnectionState(), counted.n, nil
}

// countingConn counts the bytes through a connection.
type countingConn struct {
	net.Conn
	n int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n += int64(n)
	return n, err
}

// servedName is the common name of the certificate addr serves.
func servedName(t *testing.T, addr string) string {
	t.Helper()
	s, err := handshake(addr)
	if err != nil {
		t.Fatal(err)
	}
	return s.PeerCertificates[0].Subject.CommonName
}

// readBytes is what the process read so far, files and sockets (Linux's rchar).
func readBytes(t *testing.T) int64 {
	t.Helper()
	io, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skip("no /proc/self/io:", err)
	}
	for line := range strings.Lines(string(io)) {
		if n, ok := strings.CutPrefix(line, "rchar: "); ok {
			v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatal("no rchar in /proc/self/io")
	return 0
}

func cpuTime() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// TestTLSHandshakesReadNoFiles: exporter-toolkit read the web config and its certificate,
// key and client CA files, and parsed them, for every TLS handshake, before any password
// or client certificate is asked for: with a bundle of CAs of 220 KB, tens of
// milliseconds of a core per handshake that any client able to connect could ask for
// over and over. Once the files are loaded, handshakes read none while they are
// unchanged, whether they were written long ago or dated ahead (a clock behind, an
// archive's dates).
func TestTLSHandshakesReadNoFiles(t *testing.T) {
	var bundle bytes.Buffer
	for i := 0; bundle.Len() < 220<<10; i++ {
		cert, _ := newCert(t, fmt.Sprintf("CA %d", i), 0)
		bundle.Write(cert)
	}
	for _, tc := range []struct {
		name string
		age  time.Duration // the files' modification time, from an hour ago
	}{
		{"written an hour ago", 0},
		{"dated an hour ahead", 2 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "  client_auth_type: VerifyClientCertIfGiven\n", "  client_ca_file: ca.pem\n")
			f.write(t, "ca.pem", bundle.Bytes())
			f.age(t, tc.age)
			// Setting their times changed the files (their ctime): the handshakes come a
			// minute after.
			clock := testclock.New(time.Now().Add(time.Minute))
			addr := serveTLS(t, f.webConfig, newWebConfigErrors(f.webConfig, slog.New(slog.DiscardHandler), clock.Now))
			if _, err := handshake(addr); err != nil {
				t.Fatal(err)
			}

			// The process reads what the connections carry, both ways (the server reads what
			// the client sends), and what it reads of files.
			const handshakes = 20
			var carried int64
			read, cpu := readBytes(t), cpuTime()
			for range handshakes {
				_, n, err := countedHandshake(addr)
				if err != nil {
					t.Fatal(err)
				}
				carried += n
			}
			read, cpu = readBytes(t)-read-carried, cpuTime()-cpu
			t.Logf("%d handshakes read %d bytes of files, took %v of CPU (%v each, the client's included)", handshakes, read, cpu, cpu/handshakes)
			if read > 4096 {
				t.Errorf("%d handshakes read %d bytes of files (the CA bundle has %d); want none", handshakes, read, bundle.Len())
			}
		})
	}
}

// TestTLSCertificateRenewed: a certificate renewed while the exporter runs is served from
// the next handshake on, however it is renewed.
func TestTLSCertificateRenewed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fresh: the files were written just now, rather than an hour ago.
		fresh bool
		renew func(t *testing.T, f *tlsFiles)
	}{
		{"renamed into place", false, func(t *testing.T, f *tlsFiles) {
			cert, key := newCert(t, "second", 0)
			f.write(t, "cert.new", cert)
			f.write(t, "key.new", key)
			for _, name := range []string{"cert", "key"} {
				if err := os.Rename(filepath.Join(f.dir, name+".new"), filepath.Join(f.dir, name+".pem")); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"rewritten in place", false, func(t *testing.T, f *tlsFiles) {
			cert, key := newCert(t, "second", 0)
			f.write(t, "cert.pem", cert)
			f.write(t, "key.pem", key)
		}},
		// The kubelet's Secret volume: the files are symlinks through ..data, which is
		// pointed at a new directory.
		{"symlink retargeted", false, func(t *testing.T, f *tlsFiles) {
			cert, key := newCert(t, "second", 0)
			f.write(t, "cert.second", cert)
			f.write(t, "key.second", key)
			for _, name := range []string{"cert", "key"} {
				link := filepath.Join(f.dir, name+".pem")
				if err := os.Remove(link); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(name+".second", link); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"web config pointed at other files", false, func(t *testing.T, f *tlsFiles) {
			cert, key := newCert(t, "second", 0)
			f.write(t, "other-cert.pem", cert)
			f.write(t, "other-key.pem", key)
			f.write(t, "web.yml", []byte("tls_server_config:\n  cert_file: other-cert.pem\n  key_file: other-key.pem\n"))
		}},
		// Files written within a file system's time granularity of the last read may keep
		// their size and modification time: rewritten so, they are read again.
		{"rewritten in place just after, same size and time", true, func(t *testing.T, f *tlsFiles) {
			old, err := os.Stat(filepath.Join(f.dir, "cert.pem"))
			if err != nil {
				t.Fatal(err)
			}
			cert, key := newCert(t, "second", int(old.Size()))
			f.write(t, "cert.pem", cert)
			f.write(t, "key.pem", key)
			for _, name := range []string{"cert.pem", "key.pem"} {
				if err := os.Chtimes(filepath.Join(f.dir, name), old.ModTime(), old.ModTime()); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "", "")
			if !tc.fresh {
				f.age(t, 0)
			}
			addr := serveTLS(t, f.webConfig, nil)
			for range 2 {
				if got := servedName(t, addr); got != "first" {
					t.Fatalf("serves %q; want first", got)
				}
			}
			tc.renew(t, f)
			if got := servedName(t, addr); got != "second" {
				t.Errorf("after the renewal, serves %q; want second", got)
			}
		})
	}
}

// TestTLSProtocols: the web config's http2 is served as exporter-toolkit serves it:
// HTTP/2 offered to clients that ask for it (Prometheus does), unless it says no.
func TestTLSProtocols(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         string
	}{
		{"http2 by default", "", "h2"},
		{"http2 on", "http_server_config:\n  http2: true\n", "h2"},
		{"http2 off", "http_server_config:\n  http2: false\n", "http/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "", tc.config)
			addr := serveTLS(t, f.webConfig, nil)
			for range 2 { // the second from the cache
				s, err := handshake(addr, "h2", "http/1.1")
				if err != nil {
					t.Fatal(err)
				}
				if s.NegotiatedProtocol != tc.want {
					t.Errorf("negotiated %q; want %q", s.NegotiatedProtocol, tc.want)
				}
			}
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
			resp, err := c.Get("https://" + addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if wantProto := map[string]string{"h2": "HTTP/2.0", "http/1.1": "HTTP/1.1"}[tc.want]; resp.StatusCode != http.StatusOK || resp.Proto != wantProto {
				t.Errorf("GET: %s %d; want %s 200", resp.Proto, resp.StatusCode, wantProto)
			}
		})
	}
}

// TestWebConfigErrorsThrottled: a web config broken while the exporter runs made
// exporter-toolkit log an error for each request it answered 500, a line per scrape,
// probe and page, and a failed TLS handshake showed only as a client's. Each is counted,
// in logwindow_web_config_errors_total, and logged the first time, when the error
// changes, and else once a minute at most, with the count so far.
func TestWebConfigErrorsThrottled(t *testing.T) {
	type step struct {
		webConfig string        // written before the requests, when not empty
		advance   time.Duration // the clock moved on before the requests
		requests  int
		want      int    // 500s or refused handshakes so far: the count
		wantLines string // the "errors" of the lines logged
	}
	for _, tc := range []struct {
		name  string
		tls   bool
		steps []step
	}{
		{"plain HTTP", false, []step{
			{webConfig: "http_server_config: [\n", requests: 5, want: 5, wantLines: "1"},
			{advance: 30 * time.Second, requests: 3, want: 8},
			{advance: 31 * time.Second, requests: 2, want: 10, wantLines: "9"},
			{webConfig: "http_server_config: {http2: maybe}\n", requests: 2, want: 12, wantLines: "11"},
			// Mended: served again, nothing counted or logged.
			{webConfig: "http_server_config: {}\n", requests: 2, want: 12},
		}},
		{"TLS", true, []step{
			{webConfig: "tls_server_config: [\n", requests: 5, want: 5, wantLines: "1"},
			{advance: time.Minute, requests: 1, want: 6, wantLines: "6"},
			{webConfig: "tls_server_config:\n  cert_file: missing.pem\n  key_file: key.pem\n", requests: 2, want: 8, wantLines: "7"},
			{webConfig: "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n", requests: 2, want: 8},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "", "")
			if !tc.tls {
				f.write(t, "web.yml", []byte("http_server_config: {}\n"))
			}
			var logged syncbuf.Buffer
			clock := testclock.New(time.Unix(1_700_000_000, 0))
			configErrors := newWebConfigErrors(f.webConfig, slog.New(slog.NewTextHandler(&logged, nil)), clock.Now)
			addr := serveTLS(t, f.webConfig, configErrors)
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			scheme := map[bool]string{false: "http", true: "https"}[tc.tls]
			if resp, err := client.Get(scheme + "://" + addr + "/"); err != nil {
				t.Fatal(err)
			} else {
				resp.Body.Close()
			}
			var lines []string
			counted := 0
			for i, s := range tc.steps {
				if s.webConfig != "" {
					f.write(t, "web.yml", []byte(s.webConfig))
				}
				clock.Add(s.advance)
				before := len(logged.String())
				for range s.requests {
					resp, err := client.Get(scheme + "://" + addr + "/")
					if err == nil {
						resp.Body.Close()
					}
					if refused := err != nil || resp.StatusCode == http.StatusInternalServerError; refused != (s.want > counted) {
						t.Errorf("step %d: GET: %v, %v; refused %v, want %v", i, resp, err, refused, !refused)
					}
				}
				if got := testutil.ToFloat64(configErrors); got != float64(s.want) {
					t.Errorf("step %d: logwindow_web_config_errors_total %v; want %d", i, got, s.want)
				}
				counted = s.want
				var got []string
				for line := range strings.Lines(logged.String()[before:]) {
					if !strings.Contains(line, "web_config="+f.webConfig) {
						t.Errorf("step %d: the line does not name the web config: %s", i, line)
					}
					_, n, _ := strings.Cut(line, " errors=")
					got = append(got, strings.TrimSpace(n))
					lines = append(lines, line)
				}
				if want := strings.Fields(s.wantLines); !slices.Equal(got, want) {
					t.Errorf("step %d: logged lines of counts %q; want %q:\n%s", i, got, want, strings.Join(lines, ""))
				}
			}
		})
	}
}

// TestTLSConfigKeptOnlyWithEveryFileStamped: a config is kept only with the stamps of
// every file it was loaded from. The web config is read for the names of its files as the
// stamps are taken, and the toolkit reads it again a moment later: a read that failed
// the first time only (a file descriptor short under a burst of connections) left the
// certificate, key and client CA unstamped, and a renewed certificate, or a client CA
// taken out, was not seen until the web config itself changed.
func TestTLSConfigKeptOnlyWithEveryFileStamped(t *testing.T) {
	f := newTLSFiles(t, "", "")
	f.age(t, 0)
	logger := slog.New(slog.DiscardHandler)
	flags := &web.FlagConfig{WebConfigFile: &f.webConfig}
	tk, err := setUpToolkit(&net.TCPAddr{}, http.NotFoundHandler(), flags, newWebConfigErrors(f.webConfig, logger, time.Now), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.close()
	reads := 0
	tk.configs.readFile = func(name string) ([]byte, error) {
		if reads++; reads == 1 {
			return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
		}
		return os.ReadFile(name)
	}
	served := func() string {
		t.Helper()
		config, err := tk.configs.get(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		cert, err := config.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		x, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return x.Subject.CommonName
	}
	for range 2 {
		if got := served(); got != "first" {
			t.Fatalf("serves %q; want first", got)
		}
	}
	cert, key := newCert(t, "second", 0)
	f.write(t, "cert.new", cert)
	f.write(t, "key.new", key)
	for _, name := range []string{"cert", "key"} {
		if err := os.Rename(filepath.Join(f.dir, name+".new"), filepath.Join(f.dir, name+".pem")); err != nil {
			t.Fatal(err)
		}
	}
	if got := served(); got != "second" {
		t.Errorf("after the renewal, serves %q; want second", got)
	}
}

// TestToolkitSetUpChecked: the exporter serves its sockets with what exporter-toolkit's
// web.Serve set up on a server of its own, its handler, TLS config and HTTP/2 switch; a
// toolkit release that set up more would lose it without a word. What this release sets
// up, for each kind of web config, is all taken; anything else fails the start, naming
// it.
func TestToolkitSetUpChecked(t *testing.T) {
	t.Run("this release", func(t *testing.T) {
		for name, config := range map[string]string{
			"plain HTTP":            "http_server_config:\n  headers:\n    X-Frame-Options: deny\nrate_limit:\n  burst: 5\n  interval: 1s\n",
			"TLS":                   "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n",
			"TLS without HTTP/2":    "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nhttp_server_config:\n  http2: false\n",
			"TLS with client certs": "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: cert.pem\n  min_version: TLS13\n",
		} {
			t.Run(name, func(t *testing.T) {
				f := newTLSFiles(t, "", "")
				f.write(t, "web.yml", []byte(config))
				logger := slog.New(slog.DiscardHandler)
				tk, err := setUpToolkit(&net.TCPAddr{}, http.NotFoundHandler(), &web.FlagConfig{WebConfigFile: &f.webConfig}, newWebConfigErrors(f.webConfig, logger, time.Now), logger)
				if err != nil {
					t.Fatal(err)
				}
				tk.close()
			})
		}
	})
	idle := &idleListener{closed: make(chan struct{})}
	tlsConfig := &tls.Config{}
	for _, tc := range []struct {
		name string
		srv  *http.Server
		l    net.Listener
		want string // in the error
	}{
		{"a field more, plain HTTP", &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Second}, idle, "ReadHeaderTimeout"},
		{"a field more, TLS", &http.Server{TLSConfig: tlsConfig, Protocols: new(http.Protocols)}, tls.NewListener(idle, tlsConfig), "Protocols"},
		{"a connection hook", &http.Server{TLSConfig: tlsConfig, ConnContext: func(ctx context.Context, _ net.Conn) context.Context { return ctx }}, tls.NewListener(idle, tlsConfig), "ConnContext"},
		{"a listener of its own", &http.Server{}, struct{ net.Listener }{idle}, "listener of its own"},
		{"a listener of its own under TLS", &http.Server{TLSConfig: tlsConfig}, struct{ net.Listener }{tls.NewListener(idle, tlsConfig)}, "listener of its own"},
		{"TLS without a TLS config", &http.Server{}, tls.NewListener(idle, tlsConfig), "without a TLS config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkToolkitSetUp(tc.srv, tc.l, idle)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("checkToolkitSetUp: %v; want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestTLSCertificateRenewedKeepingTime: a certificate and key renewed with the size and
// modification time of the files they replace are served from the next handshake on.
// Certificates of one CA and key size are often of one size (RSA's always), and an archive
// made reproducibly dates its files alike (tar and kubectl cp keep those dates, as cp -p
// does); a file unlinked and created again may get the inode number just freed. The
// files were last changed long before the handshakes (the clock stands a minute on).
func TestTLSCertificateRenewedKeepingTime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace func(t *testing.T, path string, data []byte)
	}{
		{"rewritten in place (cp -p)", func(t *testing.T, path string, data []byte) {
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"unlinked and created again (tar x)", func(t *testing.T, path string, data []byte) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "", "")
			f.age(t, 0)
			clock := testclock.New(time.Now().Add(time.Minute))
			addr := serveTLS(t, f.webConfig, newWebConfigErrors(f.webConfig, slog.New(slog.DiscardHandler), clock.Now))
			for range 2 {
				if got := servedName(t, addr); got != "first" {
					t.Fatalf("serves %q; want first", got)
				}
			}
			certPath := filepath.Join(f.dir, "cert.pem")
			old, err := os.Stat(certPath)
			if err != nil {
				t.Fatal(err)
			}
			cert, key := newCert(t, "second", int(old.Size()))
			for name, data := range map[string][]byte{"cert.pem": cert, "key.pem": key} {
				path := filepath.Join(f.dir, name)
				was, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				tc.replace(t, path, data)
				if err := os.Chtimes(path, was.ModTime(), was.ModTime()); err != nil {
					t.Fatal(err)
				}
			}
			if got := servedName(t, addr); got != "second" {
				t.Errorf("after the renewal, serves %q; want second", got)
			}
		})
	}
}

// newCA is a CA's certificate, in PEM, and its certificate and key to sign with.
func newCA(t *testing.T, cn string) ([]byte, *x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageCertSign,
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca, key
}

// clientCert is a client certificate for the name san, signed by ca.
func clientCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, san string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: san},
		DNSNames:     []string{san},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestTLSClientAuthFollowsWebConfig: what the web config says of client certificates and
// TLS versions holds from the next connection on after it, or the client CA file, changed,
// as exporter-toolkit had it, though handshakes take a config kept from the last one: a
// CA taken out of client_ca_file, a SAN out of client_allowed_sans, a version below
// min_version refuse the next connection, a session resumed from before too.
func TestTLSClientAuthFollowsWebConfig(t *testing.T) {
	const webConfig = "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n"
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, f *tlsFiles)
		// client is what the client asks for, beyond its certificate.
		client *tls.Config
	}{
		{"CA taken out of client_ca_file", func(t *testing.T, f *tlsFiles) {
			other, _, _ := newCA(t, "other CA")
			f.write(t, "ca.pem", other)
		}, &tls.Config{}},
		{"SAN out of client_allowed_sans", func(t *testing.T, f *tlsFiles) {
			f.write(t, "web.yml", []byte(webConfig+"  client_allowed_sans: [other.example]\n"))
		}, &tls.Config{}},
		{"min_version raised", func(t *testing.T, f *tlsFiles) {
			f.write(t, "web.yml", []byte(webConfig+"  min_version: TLS13\n"))
		}, &tls.Config{MaxVersion: tls.VersionTLS12}},
		{"cipher_suites narrowed", func(t *testing.T, f *tlsFiles) {
			f.write(t, "web.yml", []byte(webConfig+"  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305]\n"))
		}, &tls.Config{CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "", "")
			f.write(t, "web.yml", []byte(webConfig))
			caPEM, ca, caKey := newCA(t, "scrapers' CA")
			f.write(t, "ca.pem", caPEM)
			f.age(t, 0)
			clock := testclock.New(time.Now().Add(time.Minute))
			addr := serveTLS(t, f.webConfig, newWebConfigErrors(f.webConfig, slog.New(slog.DiscardHandler), clock.Now))
			config := tc.client.Clone()
			config.InsecureSkipVerify = true
			config.Certificates = []tls.Certificate{clientCert(t, ca, caKey, "scraper.example")}
			config.ClientSessionCache = tls.NewLRUClientSessionCache(4)
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: config, DisableKeepAlives: true}}
			get := func() (bool, error) {
				t.Helper()
				resp, err := client.Get("https://" + addr + "/")
				if err != nil {
					return false, err
				}
				resp.Body.Close()
				return resp.TLS.DidResume, nil
			}
			resumed := false
			for range 3 { // the later ones with a config kept, and resuming
				did, err := get()
				if err != nil {
					t.Fatalf("before the change: %v", err)
				}
				resumed = resumed || did
			}
			if !resumed && tc.client.MaxVersion == 0 {
				t.Error("no session resumed before the change: the test does not try resumption")
			}
			tc.change(t, f)
			for i := range 2 {
				if _, err := get(); err == nil {
					t.Errorf("connection %d after the change: served; want refused", i)
				}
			}
		})
	}
}

// TestTLSClientWithoutCertificateAndAllowedSANs: with client_allowed_sans and a
// client_auth_type that lets a client go without a certificate, exporter-toolkit's check
// of the SANs took the first of none: a panic for each such client, which net/http logged
// at error level with its stack, a few kilobytes of log any client could ask for. The
// client is refused, as the panic refused it, and logged as a failed handshake.
func TestTLSClientWithoutCertificateAndAllowedSANs(t *testing.T) {
	f := newTLSFiles(t, "  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.pem\n", "  client_allowed_sans: [scraper.example]\n")
	caPEM, ca, caKey := newCA(t, "scrapers' CA")
	f.write(t, "ca.pem", caPEM)
	var logged syncbuf.Buffer
	addr := serveTLSLogged(t, f.webConfig, nil, slog.New(slog.NewTextHandler(&logged, nil)))
	get := func(certs ...tls.Certificate) error {
		t.Helper()
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}}}
		resp, err := client.Get("https://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(clientCert(t, ca, caKey, "scraper.example")); err != nil {
		t.Fatalf("with an allowed SAN: %v", err)
	}
	if err := get(clientCert(t, ca, caKey, "other.example")); err == nil {
		t.Error("with a SAN not allowed: served; want refused")
	}
	for i := range 3 {
		if err := get(); err == nil {
			t.Errorf("without a certificate, %d: served; want refused", i)
		}
	}
	if got := logged.String(); strings.Contains(got, "panic") {
		t.Errorf("logged a panic:\n%s", got)
	}
}

// TestTLSToolkitHandlerServed: what exporter-toolkit's handler does for each request,
// from the web config, is done on the exporter's server with TLS too: basic_auth_users'
// password asked for, http_server_config's headers set, rate_limit's burst held to.
func TestTLSToolkitHandlerServed(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	f := newTLSFiles(t, "", "http_server_config:\n  headers:\n    X-Frame-Options: deny\nrate_limit:\n  burst: 3\n  interval: 1h\nbasic_auth_users:\n  scraper: "+string(hash)+"\n")
	addr := serveTLS(t, f.webConfig, nil)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for i, want := range []int{http.StatusUnauthorized, http.StatusOK, http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusTooManyRequests} {
		req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			req.SetBasicAuth("scraper", "secret")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("request %d: %d; want %d", i, resp.StatusCode, want)
		}
		if got := resp.Header.Get("X-Frame-Options"); want != http.StatusTooManyRequests && got != "deny" {
			t.Errorf("request %d: X-Frame-Options %q; want deny", i, got)
		}
	}
}

// TestTLSHandshakeRefusedForWebConfigLoggedOnce: a handshake refused because the web
// config, or a file it names, no longer loads was logged twice, as the web config's error
// and again by net/http's log as a failed handshake blaming the client ("a client without
// the right certificate"), and counted with the clients' failures, whose next line then
// came a thousand failures late. It is told once, by the web config's log, throttled on
// its clock, naming the files it may be (a key renewed without its certificate leaves the
// web config as it was); a client's failure after it is the first of the clients'. A
// client CA file replaced with what holds no certificate in PEM (the key, a DER file), or
// a client_ca edited so, which the start refuses, was taken as exporter-toolkit took it,
// a pool of none, which refuses every client certificate as a client's failure: it is
// refused as the web config's, naming the file.
func TestTLSHandshakeRefusedForWebConfigLoggedOnce(t *testing.T) {
	otherKey := func(t *testing.T, f *tlsFiles) {
		_, key := newCert(t, "other", 0)
		f.write(t, "key.pem", key)
	}
	// clientCAs lets a client go without a certificate, as handshake does, and checks one
	// given against ca.pem.
	const clientCAs = "  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.pem\n"
	for _, tc := range []struct {
		name string
		// start is added to the web config's tls_server_config at the start.
		start string
		spoil func(t *testing.T, f *tlsFiles)
		want  string // in the err logged
	}{
		{"not YAML", "", func(t *testing.T, f *tlsFiles) { f.write(t, "web.yml", []byte("tls_server_config: [\n")) }, "yaml"},
		{"cert_file missing", "", func(t *testing.T, f *tlsFiles) {
			f.write(t, "web.yml", []byte("tls_server_config:\n  cert_file: missing.pem\n  key_file: key.pem\n"))
		}, "missing.pem"},
		{"key of another certificate", "", otherKey, "private key does not match public key"},
		{"client_ca_file missing", "", func(t *testing.T, f *tlsFiles) {
			f.write(t, "web.yml", []byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: missing-ca.pem\n"))
		}, "missing-ca.pem"},
		{"client_ca_file replaced with a key", clientCAs, func(t *testing.T, f *tlsFiles) {
			_, key := newCert(t, "other", 0)
			f.write(t, "ca.pem", key)
		}, "client_ca_file " + filepath.Join("DIR", "ca.pem") + " holds no certificate in PEM"},
		{"client_ca_file replaced with DER", clientCAs, func(t *testing.T, f *tlsFiles) {
			caPEM, _, _ := newCA(t, "scrapers' CA")
			block, _ := pem.Decode(caPEM)
			f.write(t, "ca.pem", block.Bytes)
		}, "client_ca_file " + filepath.Join("DIR", "ca.pem") + " holds no certificate in PEM"},
		{"client_ca edited to no certificate", "", func(t *testing.T, f *tlsFiles) {
			f.write(t, "web.yml", []byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_auth_type: VerifyClientCertIfGiven\n  client_ca: not a certificate\n"))
		}, "client_ca holds no certificate in PEM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, tc.start, "")
			caPEM, _, _ := newCA(t, "scrapers' CA")
			f.write(t, "ca.pem", caPEM)
			want := strings.ReplaceAll(tc.want, "DIR", f.dir)
			var logged syncbuf.Buffer
			logger := slog.New(slog.NewTextHandler(&logged, nil))
			clock := testclock.New(time.Unix(1_700_000_000, 0))
			configErrors := newWebConfigErrors(f.webConfig, logger, clock.Now)
			addr, closed := serveTLSClosing(t, f.webConfig, configErrors, logger)
			conns := 0
			// settle waits for the server to have closed every connection so far, and so
			// to have logged what it had to of each.
			settle := func() {
				t.Helper()
				for ; conns > 0; conns-- {
					select {
					case <-closed:
					case <-hung(t):
						t.Fatal("the server did not close a connection")
					}
				}
			}
			if _, err := handshake(addr); err != nil {
				t.Fatal(err)
			}
			conns++
			tc.spoil(t, f)
			refuse := func(n int) {
				t.Helper()
				for range n {
					if _, err := handshake(addr); err == nil {
						t.Fatal("handshake with the web config broken: served; want refused")
					}
					conns++
				}
				settle()
			}
			refuse(3)
			clock.Add(webConfigErrorsLogged)
			refuse(1)
			// A client that closes before its handshake, as a TCP check does.
			probe, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			probe.Close()
			conns++
			settle()

			var refused, failed []string
			for line := range strings.Lines(logged.String()) {
				switch {
				case strings.Contains(line, "TLS handshakes refused"):
					refused = append(refused, line)
				case strings.Contains(line, "TLS handshake"):
					failed = append(failed, line)
				}
			}
			if len(refused) != 2 || !strings.HasSuffix(strings.TrimSpace(refused[0]), " errors=1") ||
				!strings.Contains(refused[0], want) || !strings.HasSuffix(strings.TrimSpace(refused[1]), " errors=4") ||
				!strings.Contains(refused[0], "the certificate, key or client CA file it names") {
				t.Errorf("logged %d lines of handshakes refused; want 2, of errors=1 and errors=4, naming %q and the files it may be:\n%s", len(refused), want, logged.String())
			}
			if len(failed) != 1 || !strings.Contains(failed[0], "failed=1 ") || !strings.Contains(failed[0], "EOF") {
				t.Errorf("logged %d lines of failed handshakes; want 1, the probe's, failed=1:\n%s", len(failed), logged.String())
			}
			if got := testutil.ToFloat64(configErrors); got != 4 {
				t.Errorf("logwindow_web_config_errors_total %v; want 4", got)
			}
		})
	}
}

// TestTLSCertificateReadOnce: exporter-toolkit reads the certificate and key again as
// each handshake asks for the certificate, after its config loaded: a key renewed between
// the two failed the handshake as a client's failure, uncounted. The pair is now read
// once, as the config loads (tlsConfigOf): the config serves the pair it read, and the
// next handshake loads the files as they are, a key of another certificate refused as
// the web config's, counted.
func TestTLSCertificateReadOnce(t *testing.T) {
	f := newTLSFiles(t, "", "")
	logger := slog.New(slog.DiscardHandler)
	configErrors := newWebConfigErrors(f.webConfig, logger, time.Now)
	tk, err := setUpToolkit(&net.TCPAddr{}, http.NotFoundHandler(), &web.FlagConfig{WebConfigFile: &f.webConfig}, configErrors, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.close()
	config, err := tk.configs.get(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	_, key := newCert(t, "other", 0)
	f.write(t, "key.pem", key)
	if _, err := config.GetCertificate(&tls.ClientHelloInfo{}); err != nil {
		t.Errorf("GetCertificate of the config loaded before the key was renewed: %v; want the pair it read", err)
	}
	if _, err := tk.configs.get(&tls.ClientHelloInfo{}); !errors.As(err, new(webConfigRefusal)) {
		t.Errorf("a handshake with a key of another certificate: %v; want a refusal of the web config's", err)
	}
	if got := testutil.ToFloat64(configErrors); got != 1 {
		t.Errorf("logwindow_web_config_errors_total %v; want 1", got)
	}
}
