package server

import (
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

// TestTLSSwitchedAtRuntime: whether an address serves TLS is decided at the start, from
// the web config as it was. A tls_server_config added to the web config of an exporter
// serving plain HTTP went unnoticed: its scrapers kept sending passwords and metrics in
// plain text, and one switched to https:// was told the exporter needs a
// tls_server_config, which it had. One taken out of it refused every handshake with
// "TLS config is not present". Both are said, naming the restart that takes the change;
// plain HTTP is still served, and the warning is not given again for every request.
func TestTLSSwitchedAtRuntime(t *testing.T) {
	const withTLS = "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
	const withoutTLS = "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"
	t.Run("TLS added", func(t *testing.T) {
		f := newTLSFiles(t, "", "")
		f.write(t, "web.yml", []byte(withoutTLS))
		var logged syncbuf.Buffer
		logger := slog.New(slog.NewTextHandler(&logged, nil))
		srv := newHTTPServer(http.NotFoundHandler(), Options{Logger: logger})
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() {
			served <- serveOn(l, srv, &web.FlagConfig{WebConfigFile: &f.webConfig}, newWebConfigErrors(f.webConfig, logger, time.Now), logger)
		}()
		defer func() {
			_ = srv.Close()
			<-served
		}()
		get := func() {
			t.Helper()
			resp, err := http.Get("http://" + l.Addr().String() + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("served %d; want the handler's 404", resp.StatusCode)
			}
		}
		get()
		f.write(t, "web.yml", []byte(withTLS))
		for range 3 {
			get()
		}
		if n := strings.Count(logged.String(), "tls_server_config was added"); n != 1 {
			t.Errorf("warned %d times of the tls_server_config added; want once:\n%s", n, logged.String())
		}
		if !strings.Contains(logged.String(), "restart") {
			t.Errorf("the warning does not say a restart takes it:\n%s", logged.String())
		}
	})
	t.Run("TLS taken out", func(t *testing.T) {
		f := newTLSFiles(t, "", "")
		var logged syncbuf.Buffer
		logger := slog.New(slog.NewTextHandler(&logged, nil))
		addr := serveTLSLogged(t, f.webConfig, nil, logger)
		if _, err := handshake(addr); err != nil {
			t.Fatal(err)
		}
		f.write(t, "web.yml", []byte(withoutTLS))
		if _, err := handshake(addr); err == nil {
			t.Fatal("a handshake after tls_server_config was taken out succeeded; want refused, as no certificate is named")
		}
		if got := logged.String(); !strings.Contains(got, "tls_server_config was taken out") || !strings.Contains(got, "restart") {
			t.Errorf("the refused handshake is not said to be of tls_server_config taken out, until a restart:\n%s", got)
		}
	})
}
