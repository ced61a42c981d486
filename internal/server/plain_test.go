package server

import (
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTLSToPlainLogged has TLS clients (a scrape config with scheme: https) connect to a
// plain HTTP listener, without a web config and with one without TLS: net/http answers
// them 400 without a word, and the client says only that the answer is not TLS. The
// exporter warns of the first, naming its client and what to change, and counts the
// rest; a plain HTTP request is not taken for one.
func TestTLSToPlainLogged(t *testing.T) {
	for _, tc := range []struct{ name, webConfig string }{
		{"no web config", ""},
		{"web config without TLS", "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			webConfig := ""
			if tc.webConfig != "" {
				webConfig = filepath.Join(t.TempDir(), "web.yml")
				if err := os.WriteFile(webConfig, []byte(tc.webConfig), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var logged strings.Builder
			var mu sync.Mutex
			logger := slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
				mu.Lock()
				defer mu.Unlock()
				return logged.Write(p)
			}), nil))
			srv := newHTTPServer(http.NotFoundHandler(), Options{Logger: logger})
			closed := make(chan struct{}, 10)
			halfClosable := make(chan bool, 10)
			srv.ConnState = func(c net.Conn, s http.ConnState) {
				switch s {
				case http.StateNew:
					_, ok := c.(closeWriter)
					halfClosable <- ok
				case http.StateClosed:
					closed <- struct{}{}
				}
			}
			addr := serveListening(t, srv, webConfig, newWebConfigErrors(webConfig, logger, time.Now), logger)

			resp, err := http.Get("http://" + addr + "/nothing")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			const clients = 3
			var first string
			for i := range clients {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = conn.LocalAddr().String()
				}
				c := tls.Client(conn, &tls.Config{InsecureSkipVerify: true})
				_ = c.SetDeadline(hangDeadline(t))
				if err := c.Handshake(); err == nil {
					t.Fatal("a TLS handshake with a plain HTTP listener succeeded")
				}
				c.Close()
			}
			for range clients {
				select {
				case <-closed:
				case <-hung(t):
					t.Fatal("the server did not close the TLS clients' connections")
				}
			}
			// net/http half-closes a TCP connection whose request body it did not read, so
			// that its client gets the answer: the wrapped connection must still let it.
			if !<-halfClosable {
				t.Error("the plain HTTP listener's connection cannot be half-closed as its TCP connection can")
			}
			mu.Lock()
			defer mu.Unlock()
			var warned []map[string]any
			for line := range strings.Lines(logged.String()) {
				if !strings.Contains(line, "plain HTTP port") {
					continue
				}
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatal(err)
				}
				warned = append(warned, rec)
			}
			if len(warned) != 1 {
				t.Fatalf("%d TLS clients of the plain HTTP listener logged %d warnings, want 1 with the count:\n%s", clients, len(warned), logged.String())
			}
			w := warned[0]
			msg, _ := w["msg"].(string)
			if w["level"] != "WARN" || w["client"] != first || w["sent"] != 1.0 || !strings.Contains(msg, "http://") || !strings.Contains(msg, "tls_server_config") {
				t.Errorf("the warning does not name the first client %s, the count 1, http:// and tls_server_config: %v", first, w)
			}
		})
	}
}
