package server

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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

	timeout := time.After(10 * time.Second)
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
