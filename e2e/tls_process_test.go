package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// TestTLSOnSeveralAddresses serves TLS with basic auth (--web.config.file) on two
// addresses (--web.listen-address given twice): each answers over TLS, asking for the
// password, and the race-detector build exits cleanly at SIGTERM. exporter-toolkit
// serves several addresses with one http.Server, whose handler and TLS config it sets up
// from one goroutine per address when a web config is given: a data race, unless each
// address has a server of its own.
func TestTLSOnSeveralAddresses(t *testing.T) {
	s := newTLSSetup(t)
	p := testexec.StartTest(t, s.dir, "logwindow_exporter", append(s.args,
		"--web.listen-address=127.0.0.1:0", "--web.listen-address=127.0.0.1:0"))
	s.check(t, p, p.Output)
	// A renewed certificate is served on each address without a restart: the toolkit
	// reads the web config's files again for each new connection.
	s.renew(t)
	s.check(t, p, p.Output)
}

// TestTLSOnSystemdSockets is TestTLSOnSeveralAddresses with two sockets systemd passes
// (--web.systemd-socket): exporter-toolkit serves those with one http.Server too. A third,
// a datagram socket (a ListenDatagram= of the socket unit), which is not served, was
// left aside without a word: it is warned of.
func TestTLSOnSystemdSockets(t *testing.T) {
	s := newTLSSetup(t)
	var files []*os.File
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		f, err := l.(*net.TCPListener).File()
		l.Close() // f holds the socket
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := udp.(*net.UDPConn).File()
	udp.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files = append(files, f)
	out := filepath.Join(s.dir, "logwindow_exporter.out")
	log, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	// systemd names the process the sockets are for: the shell's PID is the exporter's
	// once it execs it.
	cmd := exec.Command("/bin/sh", append([]string{"-c", `LISTEN_PID=$$ LISTEN_FDS=3 exec "$0" "$@"`}, append(s.args, "--web.systemd-socket")...)...)
	cmd.ExtraFiles, cmd.Stdout, cmd.Stderr = files, log, log
	p, err := testexec.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(testexec.StopTimeout); err != nil {
			t.Errorf("exporter: %v\n%s", err, testexec.Tail(out, 40))
		}
	})
	s.check(t, p, out)
	logged, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(logged, []byte(`"msg":"--web.systemd-socket: systemd passed sockets that are not stream listeners`)) || !bytes.Contains(logged, []byte(`"not_served":1`)) {
		t.Errorf("the datagram socket systemd passed is not warned of:\n%s", logged)
	}
}

// tlsSetup is an exporter's arguments for TLS with basic auth, and the client that
// checks it.
type tlsSetup struct {
	dir  string
	args []string // the race-detector build, its rules and web config
	// client trusts the exporter's certificate; user and password are its basic auth's.
	client         *http.Client
	user, password string
}

func newTLSSetup(t *testing.T) *tlsSetup {
	t.Helper()
	s := &tlsSetup{dir: t.TempDir(), user: "prometheus", password: "s3cret"}
	bin := testexec.BuildExporter(t, testexec.Race)
	certPEM := writeSelfSigned(t, s.dir)
	hash, err := bcrypt.GenerateFromPassword([]byte(s.password), 4)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(s.dir, "web.yml")
	if err := os.WriteFile(webConfig, fmt.Appendf(nil, "tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  %s: %s\n",
		filepath.Join(s.dir, "cert.pem"), filepath.Join(s.dir, "key.pem"), s.user, hash), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(s.dir, "rules.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, "inputs: [{name: web, path: %s}]\nrules: [{name: r, match: x}]\n", filepath.Join(s.dir, "access.log")), 0o644); err != nil {
		t.Fatal(err)
	}
	s.args = []string{bin, "--config.file=" + cfgPath, "--log.format=json", "--web.config.file=" + webConfig}
	s.trust(certPEM)
	return s
}

// renew writes a new certificate and key in place of the exporter's, and has the client
// trust only the new one.
func (s *tlsSetup) renew(t *testing.T) {
	t.Helper()
	s.trust(writeSelfSigned(t, s.dir))
}

// trust has the client trust certPEM alone.
func (s *tlsSetup) trust(certPEM []byte) {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	// HTTP/2 as Prometheus asks for it: the web config's http2 (on unless it says no)
	// applies to every address.
	s.client = &http.Client{Timeout: testexec.DefaultTimeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
}

// check waits for p to log two addresses it listens on, in its JSON log out, and asks
// each over TLS, without and with the password.
func (s *tlsSetup) check(t *testing.T, p *testexec.Proc, out string) {
	t.Helper()
	var addrs []string
	var gone bool
	var exited error
	if !await.Until(t, func() bool {
		addrs = listeningOn(out)
		gone, exited = p.Exited()
		return len(addrs) >= 2 || gone
	}) || len(addrs) < 2 {
		t.Fatalf("not listening on two addresses (exited: %v, %v)\n%s", gone, exited, testexec.Tail(out, 20))
	}
	for _, addr := range addrs {
		for _, auth := range []bool{false, true} {
			req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/-/healthy", nil)
			if err != nil {
				t.Fatal(err)
			}
			want := http.StatusUnauthorized
			if auth {
				req.SetBasicAuth(s.user, s.password)
				want = http.StatusOK
			}
			resp, err := s.client.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", addr, err)
			}
			resp.Body.Close()
			if resp.StatusCode != want || resp.Proto != "HTTP/2.0" {
				t.Errorf("%s, password given %v: %s %d, want HTTP/2.0 %d", addr, auth, resp.Proto, resp.StatusCode, want)
			}
		}
	}
}

// writeSelfSigned writes a certificate for 127.0.0.1 and its key to dir's cert.pem and
// key.pem, and returns the certificate.
func writeSelfSigned(t *testing.T, dir string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPEM
}

// listeningOn returns the addresses of the "Listening on" lines of a JSON log file.
func listeningOn(path string) []string {
	data, _ := os.ReadFile(path)
	var addrs []string
	for line := range bytes.Lines(data) {
		var entry struct{ Msg, Address string }
		if json.Unmarshal(line, &entry) == nil && entry.Msg == "Listening on" {
			addrs = append(addrs, entry.Address)
		}
	}
	return addrs
}
