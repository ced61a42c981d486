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
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// TestTLSOnSeveralAddresses serves TLS with basic auth (--web.config.file) on two
// addresses (--web.listen-address given twice): each answers over TLS, asking for the
// password, and the race-detector build exits cleanly at SIGTERM. exporter-toolkit
// serves several addresses with one http.Server, whose handler and TLS config it sets up
// from one goroutine per address when a web config is given: a data race, unless each
// address has a server of its own.
func TestTLSOnSeveralAddresses(t *testing.T) {
	const user, password = "prometheus", "s3cret"
	bin := testexec.BuildExporter(t, testexec.Race)
	dir := t.TempDir()
	certPEM := writeSelfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), 4)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(webConfig, fmt.Appendf(nil, "tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  %s: %s\n",
		filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), user, hash), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, "inputs: [{name: web, path: %s}]\nrules: [{name: r, match: x}]\n", filepath.Join(dir, "access.log")), 0o644); err != nil {
		t.Fatal(err)
	}
	p := testexec.StartTest(t, dir, "logwindow_exporter", []string{bin, "--config.file=" + cfgPath, "--log.format=json",
		"--web.listen-address=127.0.0.1:0", "--web.listen-address=127.0.0.1:0", "--web.config.file=" + webConfig})

	var addrs []string
	for deadline := time.Now().Add(testexec.DefaultTimeout); len(addrs) < 2; time.Sleep(10 * time.Millisecond) {
		if gone, err := p.Exited(); gone || time.Now().After(deadline) {
			t.Fatalf("not listening on two addresses (exited: %v, %v)", gone, err)
		}
		addrs = listeningOn(p.Output)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	client := &http.Client{Timeout: testexec.DefaultTimeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for _, addr := range addrs {
		for _, auth := range []bool{false, true} {
			req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/-/healthy", nil)
			if err != nil {
				t.Fatal(err)
			}
			want := http.StatusUnauthorized
			if auth {
				req.SetBasicAuth(user, password)
				want = http.StatusOK
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", addr, err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s, password given %v: HTTP %d, want %d", addr, auth, resp.StatusCode, want)
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
