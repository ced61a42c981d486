package server

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
	"golang.org/x/crypto/bcrypt"
)

// webConfigWatch holds what exporter-toolkit, which reads the web config again for each
// request, takes from it without a word when it changes while the exporter runs:
//
//   - Whether an address serves TLS is decided at the start. A tls_server_config added
//     to the web config of a listener served plain HTTP would leave its scrapers sending
//     passwords and reading metrics in plain text, with no word that the TLS asked for is
//     not served: it is warned of, once each time it appears.
//   - A basic_auth_users hash that is no bcrypt hash (the password itself, a hash cut
//     short or whose $ a template ate), which the start refuses, would have the toolkit
//     answer that user's every request 401, as though the password were wrong. Such a
//     request is answered 500, as the toolkit answers every request while the web config
//     does not load, and counted and logged with those (webConfigErrors).
//
// Each request looks at the web config's stamp, a stat, and reads it again when it
// changed (the toolkit reads and parses it for each request anyway).
type webConfigWatch struct {
	path string
	// plain is set for a listener served plain HTTP.
	plain  bool
	logger *slog.Logger
	errors *webConfigErrors

	mu    sync.Mutex
	stamp fileStamp
	// tlsWarned is set while the web config read last has a tls_server_config, warned of.
	tlsWarned bool
	// badHashes are the errors of the users' hashes that bcrypt does not take, by user.
	badHashes map[string]error
}

// handler serves h, looking at the web config first.
func (c *webConfigWatch) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		badHashes := c.check()
		if user, _, ok := r.BasicAuth(); ok && badHashes[user] != nil {
			c.errors.request(badHashes[user].Error())
			http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// check reads the web config if it changed since it was last read, warns if it has a
// tls_server_config it had not, on a listener served plain HTTP, and returns the errors
// of its users' hashes.
func (c *webConfigWatch) check() map[string]error {
	s := statFile(c.path)
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.same(c.stamp) {
		return c.badHashes
	}
	c.stamp = s
	text, err := os.ReadFile(c.path)
	if err != nil {
		return c.badHashes // the toolkit answers 500, and webConfigErrors tells it
	}
	var config web.Config
	if yaml.Unmarshal(text, &config) != nil {
		return c.badHashes
	}
	enabled := config.TLSConfig.IsEnabled()
	if c.plain && enabled && !c.tlsWarned {
		c.logger.Warn("tls_server_config was added to the web config, but whether an address serves TLS is decided at the start: it serves plain HTTP, passwords and metrics unencrypted, until the exporter restarts")
	}
	c.tlsWarned = enabled
	c.badHashes = nil
	for _, user := range slices.Sorted(maps.Keys(config.Users)) {
		if _, err := bcrypt.Cost([]byte(config.Users[user])); err != nil {
			if c.badHashes == nil {
				c.badHashes = map[string]error{}
			}
			c.badHashes[user] = fmt.Errorf("basic_auth_users: the password of %q is no bcrypt hash (%w): its requests are answered 500, as the start would refuse the web config", user, err)
		}
	}
	return c.badHashes
}
