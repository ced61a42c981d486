package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConfigCheckAsTheStart: --config.check says OK only of what the start accepts. It
// checked the rule file alone: a web config that does not load, or a listen address the
// start refuses, passed it with exit 0, while the same flags without --config.check did
// not start. Now it refuses them as the start does, naming the flag and the file, and
// writes the start's warnings of the web config as its own warnings, naming the file.
func TestConfigCheckAsTheStart(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	cert, key := testCert(t, now.Add(-time.Hour), now.Add(time.Hour))
	expired, expiredKey := testCert(t, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	_, otherKey := testCert(t, now.Add(-time.Hour), now.Add(time.Hour))
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	rules := write("rules.yaml", "inputs: [{syslog: 'udp://127.0.0.1:5140'}]\nrules: [{name: r, match: x}]\n")
	socketNoDir := write("socket-no-dir.yaml", "inputs: [{name: nginx, syslog: 'unixgram://"+dir+"/run/nginx.sock'}]\nrules: [{name: r, match: x}]\n")
	wideBudget := write("wide-budget.yaml", "global: {max_series_per_rule: 1000000}\ninputs: [{syslog: 'udp://127.0.0.1:5140'}]\nrules: [{name: r, match: '(?P<a>x)', labels: {a: '${a}'}}]\n")
	badRules := write("bad-rules.yaml", "rules: [{name: r, match: '('}]\n")
	write("cert.pem", string(cert))
	write("key.pem", string(key))
	write("expired.pem", string(expired))
	write("expired-key.pem", string(expiredKey))
	write("other-key.pem", string(otherKey))
	const (
		hash10 = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"
		hash14 = "$2y$14$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"
		tls    = "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
	)
	valid := write("valid.yml", tls+"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: cert.pem\nbasic_auth_users:\n  prometheus: "+hash10+"\n")
	notYAML := write("not-yaml.yml", "basic_auth_users: [\n")
	unknownKey := write("unknown-key.yml", "basic_auth_user:\n  prometheus: "+hash10+"\n")
	notHash := write("not-hash.yml", "basic_auth_users:\n  prometheus: s3cret\n")
	noCert := write("no-cert.yml", "tls_server_config:\n  cert_file: missing.crt\n  key_file: key.pem\n")
	wrongKey := write("wrong-key.yml", "tls_server_config:\n  cert_file: cert.pem\n  key_file: other-key.pem\n")
	emptyCA := write("empty-ca.yml", tls+"  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: key.pem\n")
	noBurst := write("no-burst.yml", "rate_limit:\n  interval: 1s\n")
	expiredCert := write("expired.yml", "tls_server_config:\n  cert_file: expired.pem\n  key_file: expired-key.pem\n")
	costly := write("costly.yml", "basic_auth_users:\n  usual: "+hash10+"\n  costly: "+hash14+"\n")

	for _, tc := range []struct {
		name string
		args []string
		code int
		// stderr holds each of these, and nothing when there are none.
		stderr []string
	}{
		{"no web config", nil, 0, nil},
		{"valid web config", []string{"--web.config.file=" + valid}, 0, nil},
		{"web config missing", []string{"--web.config.file=" + dir + "/missing.yml"}, 1,
			[]string{"--web.config.file=" + dir + "/missing.yml: ", "no such file or directory"}},
		{"web config unreadable", []string{"--web.config.file=" + dir}, 1, []string{"--web.config.file=" + dir + ": ", "is a directory"}},
		{"web config not YAML", []string{"--web.config.file=" + notYAML}, 1, []string{"--web.config.file=" + notYAML + ": yaml: line 1"}},
		{"web config key unknown", []string{"--web.config.file=" + unknownKey}, 1,
			[]string{"--web.config.file=" + unknownKey + ": ", "field basic_auth_user not found"}},
		{"web config password not hashed", []string{"--web.config.file=" + notHash}, 1,
			[]string{"--web.config.file=" + notHash + `: basic_auth_users: the password of "prometheus" is no bcrypt hash (crypto/bcrypt: hashedSecret too short`}},
		{"web config certificate missing", []string{"--web.config.file=" + noCert}, 1, []string{"--web.config.file=" + noCert + ": ", "missing.crt"}},
		{"web config key not the certificate's", []string{"--web.config.file=" + wrongKey}, 1,
			[]string{"--web.config.file=" + wrongKey + ": ", "private key does not match public key"}},
		{"web config client CA without a certificate", []string{"--web.config.file=" + emptyCA}, 1,
			[]string{"--web.config.file=" + emptyCA + ": client_ca_file " + dir + "/key.pem holds no certificate"}},
		{"web config rate limit without burst", []string{"--web.config.file=" + noBurst}, 1,
			[]string{"--web.config.file=" + noBurst + ": rate_limit: burst 0 lets no request through"}},
		{"web config certificate expired", []string{"--web.config.file=" + expiredCert}, 0,
			[]string{expiredCert + ": warning: tls_server_config: the certificate has expired", "not_after="}},
		{"web config password hash costly", []string{"--web.config.file=" + costly}, 0,
			[]string{costly + ": warning: basic_auth_users: a password hash of this bcrypt cost", "user=costly", "cost=14"}},
		// Every error is printed, the rule file's and the web config's.
		{"rule file and web config wrong", []string{"--config.file=" + badRules, "--web.config.file=" + notHash}, 1,
			[]string{badRules + ":1: ", "--web.config.file=" + notHash + ": basic_auth_users"}},
		{"listen address without port", []string{"--web.listen-address=:"}, 1, []string{"--web.listen-address=:: no port"}},
		{"listen address port out of range", []string{"--web.listen-address=:99999"}, 1, []string{"--web.listen-address=:99999: ", "invalid port"}},
		{"listen address no port at all", []string{"--web.listen-address=9907"}, 1, []string{"--web.listen-address=9907: ", "missing port"}},
		{"second listen address wrong", []string{"--web.listen-address=:9907", "--web.listen-address=[::1]:"}, 1, []string{"--web.listen-address=[::1]:: no port"}},
		{"vsock port out of range", []string{"--web.listen-address=vsock://:99999999999"}, 1, []string{`--web.listen-address=vsock://:99999999999: vsock port "99999999999"`}},
		// The rules' budgets are checked against the memory bound the start keeps.
		{"series budget past the memory bound", []string{"--config.file=" + wideBudget, "--series.max-bytes=64MiB"}, 0,
			[]string{wideBudget + `: warning: max_series_per_rule (1000000) series of rule "r" hold at least`, "more than --series.max-bytes (64MiB)"}},
		{"default series budget within the memory bound", []string{"--series.max-bytes=64MiB"}, 0, nil},
		// What would keep a syslog input's socket from being created here is said; the
		// check may run where the start does not, so it is a warning.
		{"syslog socket's directory missing", []string{"--config.file=" + socketNoDir}, 0,
			[]string{socketNoDir + `: warning: input "nginx": unixgram://` + dir + "/run/nginx.sock: the socket's directory " + dir + "/run does not exist: a start here fails"}},
		// The start serves systemd's sockets, not the addresses.
		{"listen address ignored for systemd's sockets", []string{"--web.systemd-socket", "--web.listen-address=:"}, 0, nil},
		{"listen addresses that serve", []string{"--web.listen-address=127.0.0.1:9907", "--web.listen-address=[::1]:0", "--web.listen-address=:http", "--web.listen-address=vsock://:9907"}, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"--config.check"}, tc.args...)
			if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--config.file=") }) {
				args = append(args, "--config.file="+rules)
			}
			code := run(args, &stdout, &stderr)
			wantOK := tc.code == 0
			if code != tc.code || strings.HasSuffix(stdout.String(), ": OK\n") != wantOK {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and OK %v", code, stdout.String(), stderr.String(), tc.code, wantOK)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr %q; want it to say %q", stderr.String(), want)
				}
			}
			if tc.stderr == nil && stderr.Len() > 0 {
				t.Errorf("stderr %q; want nothing", stderr.String())
			}
		})
	}
}

// TestConfigCheckWatchOfPipe: --config.watch reads the rule file again, which a pipe
// cannot give, and the start refuses it; --config.check read the pipe and said OK.
func TestConfigCheckWatchOfPipe(t *testing.T) {
	for _, tc := range []struct {
		name  string
		watch bool
		code  int
		want  string
	}{
		{"without watch", false, 0, ""},
		{"with watch", true, 1, "--config.watch: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := pipedRules(t)
			args := []string{"--config.file=" + path, "--config.check"}
			if tc.watch {
				args = append(args, "--config.watch")
			}
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d saying %q", code, stdout.String(), stderr.String(), tc.code, tc.want)
			}
		})
	}
}

// testCert is a self-signed certificate valid from notBefore to notAfter, and its key, in
// PEM.
func testCert(t *testing.T, notBefore, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "logwindow"},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// TestConfigCheckWatchErrorAmongTheOthers: --config.check prints every error of one run,
// its docs say, but a rule file the watch refuses (a pipe) ended it at once, the web
// config and the listen addresses unchecked: a second run, with the pipe mended, was the
// first to tell them.
func TestConfigCheckWatchErrorAmongTheOthers(t *testing.T) {
	path := pipedRules(t)
	missing := filepath.Join(t.TempDir(), "web.yml")
	var stdout, stderr bytes.Buffer
	code := run([]string{"--config.file=" + path, "--config.check", "--config.watch",
		"--web.config.file=" + missing, "--web.listen-address=:"}, &stdout, &stderr)
	for _, want := range []string{"--config.watch: ", "--web.config.file=" + missing + ": ", "--web.listen-address=:: no port"} {
		if code != 1 || !strings.Contains(stderr.String(), want) {
			t.Errorf("exit %d, stderr %q; want exit 1 saying %q", code, stderr.String(), want)
		}
	}
}

// TestConfigCheckWatchOfMissingFile: a rule file that does not load is told once, by the
// load's error, not again by --config.watch's, which reads the same file.
func TestConfigCheckWatchOfMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "rules.yaml")
	var stdout, stderr bytes.Buffer
	code := run([]string{"--config.file=" + missing, "--config.check", "--config.watch"}, &stdout, &stderr)
	if code != 1 || strings.Count(stderr.String(), "no such file") != 1 || !strings.Contains(stderr.String(), "reading config: ") {
		t.Errorf("exit %d, stderr %q; want exit 1 and the load's error alone", code, stderr.String())
	}
}

// pipedRules is a rule file given as a pipe, as a shell's --config.file=<(...) gives it:
// its /dev/fd path, the pipe closed when the test ends. The test is skipped where the
// system has no /dev/fd.
func pipedRules(t *testing.T) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if _, err := w.WriteString("rules: [{name: r, match: x}]\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	path := fmt.Sprintf("/dev/fd/%d", r.Fd())
	if _, err := os.Stat(path); err != nil {
		t.Skip(err)
	}
	return path
}
