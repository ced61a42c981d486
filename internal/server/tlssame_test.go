package server

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/crypto/bcrypt"
)

// TestTLSServedAsTheToolkitServes: the handshakes' config is made by loadTLSConfig, which
// reads the web config's files itself and hands them to exporter-toolkit inline, and sets
// the protocols offered itself: every key of tls_server_config, http2 and basic auth must
// still be served as the toolkit's own web.Serve serves them. Each web config is served
// by both, and each client gets the same from both: served or refused, and the version,
// cipher suite, curve, protocol and status it got.
func TestTLSServedAsTheToolkitServes(t *testing.T) {
	caPEM, ca, caKey := newCA(t, "scrapers' CA")
	_, other, otherKey := newCA(t, "other CA")
	serverCert, serverKey := newCert(t, "first", 0)
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	indent := func(pem []byte) string {
		return "|\n    " + strings.ReplaceAll(strings.TrimSpace(string(pem)), "\n", "\n    ") + "\n"
	}
	const files = "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
	const verified = files + "  client_ca_file: ca.pem\n  client_auth_type: RequireAndVerifyClientCert\n"
	webConfigs := []struct{ name, text, godebug string }{
		{"files", files, ""},
		// The HTTP/2 server turned off as net/http's docs say.
		{"GODEBUG http2server=0", files, "http2server=0"},
		{"http2 off", files + "http_server_config:\n  http2: false\n", ""},
		{"min_version TLS13", files + "  min_version: TLS13\n", ""},
		{"max_version TLS12", files + "  max_version: TLS12\n", ""},
		{"cipher_suites", files + "  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n", ""},
		{"curve_preferences", files + "  curve_preferences: [CurveP384]\n", ""},
		{"prefer_server_cipher_suites off", files + "  prefer_server_cipher_suites: false\n", ""},
		{"RequestClientCert", files + "  client_auth_type: RequestClientCert\n", ""},
		{"RequireAnyClientCert", files + "  client_auth_type: RequireAnyClientCert\n", ""},
		{"VerifyClientCertIfGiven", files + "  client_ca_file: ca.pem\n  client_auth_type: VerifyClientCertIfGiven\n", ""},
		{"RequireAndVerifyClientCert", verified, ""},
		{"client_allowed_sans of the client", verified + "  client_allowed_sans: [scraper.example]\n", ""},
		{"client_allowed_sans of another", verified + "  client_allowed_sans: [other.example]\n", ""},
		{"cert and key inline", "tls_server_config:\n  cert: " + indent(serverCert) + "  key: " + indent(serverKey), ""},
		{"client_ca inline", files + "  client_auth_type: RequireAndVerifyClientCert\n  client_ca: " + indent(caPEM), ""},
		{"basic_auth_users", files + "basic_auth_users:\n  scraper: " + string(hash) + "\n", ""},
	}
	scraper := clientCert(t, ca, caKey, "scraper.example")
	stranger := clientCert(t, other, otherKey, "scraper.example")
	clients := []struct {
		name     string
		config   *tls.Config
		http1    bool // asks for HTTP/1.1 alone
		password string
	}{
		{"default", &tls.Config{}, false, ""},
		{"HTTP/1.1", &tls.Config{}, true, ""},
		{"TLS 1.2", &tls.Config{MaxVersion: tls.VersionTLS12}, false, ""},
		{"TLS 1.2 with ChaCha20 alone", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305}}, false, ""},
		{"P-384", &tls.Config{CurvePreferences: []tls.CurveID{tls.CurveP384}}, false, ""},
		{"X25519", &tls.Config{CurvePreferences: []tls.CurveID{tls.X25519}}, false, ""},
		{"certificate of the CA", &tls.Config{Certificates: []tls.Certificate{scraper}}, false, ""},
		{"certificate of another CA", &tls.Config{Certificates: []tls.Certificate{stranger}}, false, ""},
		{"password", &tls.Config{}, false, "secret"},
		{"wrong password", &tls.Config{}, false, "guess"},
	}
	for _, wc := range webConfigs {
		t.Run(wc.name, func(t *testing.T) {
			if wc.godebug != "" {
				t.Setenv("GODEBUG", wc.godebug)
			}
			f := newTLSFiles(t, "", "")
			f.write(t, "cert.pem", serverCert)
			f.write(t, "key.pem", serverKey)
			f.write(t, "ca.pem", caPEM)
			f.write(t, "web.yml", []byte(wc.text))
			f.age(t, 0)
			ours := serveTLS(t, f.webConfig, nil)
			toolkits := serveByToolkit(t, f.webConfig)
			for _, c := range clients {
				got, want := servedTo(ours, c.config, c.http1, c.password), servedTo(toolkits, c.config, c.http1, c.password)
				if got != want {
					t.Errorf("client %s: served %s; exporter-toolkit serves %s", c.name, got, want)
				}
			}
		})
	}
}

// serveByToolkit serves a 200 with the web config at path by exporter-toolkit's own
// web.Serve, until the test ends, and returns its address.
func serveByToolkit(t *testing.T, path string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ErrorLog: log.New(io.Discard, "", 0)}
	served := make(chan error, 1)
	go func() {
		served <- web.Serve(l, srv, &web.FlagConfig{WebConfigFile: &path}, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-served
	})
	return l.Addr().String()
}

// servedTo describes what a request to addr over TLS with config (trusting any server)
// got: refused, or its status, protocol, and the TLS version, cipher suite and curve it
// was served with.
func servedTo(addr string, config *tls.Config, http1 bool, password string) string {
	config = config.Clone()
	config.InsecureSkipVerify = true
	tr := &http.Transport{TLSClientConfig: config, ForceAttemptHTTP2: true, DisableKeepAlives: true}
	if http1 {
		tr.ForceAttemptHTTP2 = false
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/", nil)
	if err != nil {
		return err.Error()
	}
	if password != "" {
		req.SetBasicAuth("scraper", password)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "refused"
	}
	resp.Body.Close()
	s := resp.TLS
	return fmt.Sprintf("%d %s %s %s %s", resp.StatusCode, resp.Proto, tls.VersionName(s.Version), tls.CipherSuiteName(s.CipherSuite), s.CurveID)
}
