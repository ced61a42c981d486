package server

import (
	"log/slog"
	"net/http"
	"os"
	"sync"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
)

// tlsAdded warns of a tls_server_config added to the web config of a listener served
// plain HTTP: exporter-toolkit decides at the start whether an address serves TLS, and
// reads the web config again for each request for its passwords and headers only. The
// scrapers would go on sending passwords and reading metrics in plain text, with no word
// that the TLS asked for is not served. Each request looks at the web config's stamp, a
// stat, and reads it again when it changed (the toolkit reads and parses it for each
// request anyway); the warning is given once each time tls_server_config appears.
type tlsAdded struct {
	path   string
	logger *slog.Logger

	mu    sync.Mutex
	stamp fileStamp
	// warned is set while the web config read last has a tls_server_config, warned of.
	warned bool
}

// handler serves h, looking at the web config first.
func (a *tlsAdded) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.check()
		h.ServeHTTP(w, r)
	})
}

// check reads the web config if it changed since it was last read, and warns if it has a
// tls_server_config it had not.
func (a *tlsAdded) check() {
	s := statFile(a.path)
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.same(a.stamp) {
		return
	}
	a.stamp = s
	text, err := os.ReadFile(a.path)
	if err != nil {
		return // the toolkit answers 500, and webConfigErrors tells it
	}
	var c web.Config
	if yaml.Unmarshal(text, &c) != nil {
		return
	}
	enabled := c.TLSConfig.IsEnabled()
	if enabled && !a.warned {
		a.logger.Warn("tls_server_config was added to the web config, but whether an address serves TLS is decided at the start: it serves plain HTTP, passwords and metrics unencrypted, until the exporter restarts")
	}
	a.warned = enabled
}
