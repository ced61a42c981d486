package server

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
	"golang.org/x/crypto/bcrypt"
)

// webConfigWatch tells what exporter-toolkit, which reads the web config again for each
// request, takes without a word of it changed while the exporter runs:
//
//   - Some keys are taken at the start only (startOnly): whether an address serves TLS,
//     whether it serves HTTP/2, the rate limit. A tls_server_config added to the web
//     config of a listener served plain HTTP would leave its scrapers sending passwords
//     and reading metrics in plain text, with no word that the TLS asked for is not
//     served; a rate_limit raised would leave clients answered 429. A change of them is
//     warned of, once, naming each key and what is served until a restart.
//   - A basic_auth_users hash of a high bcrypt cost is warned of, as the start warns of
//     one (checkWebConfig).
//   - A basic_auth_users hash that is no bcrypt hash (the password itself, a hash cut
//     short or whose $ a template ate), which the start refuses, has the toolkit answer
//     that user's every request 401, as though the password were wrong, with no word.
//     Such a request is counted and logged with the errors of a web config that does not
//     load (webConfigErrors), and handed to the toolkit as a request of a user the web
//     config does not hold, with the same password: so it is answered as a wrong
//     password is, after the same rate limit, with the same headers and in the same time
//     (the toolkit checks it against its hash for unknown users, where a broken hash
//     fails at once), and a client learns nothing of which users have a broken hash, or
//     are users at all.
//   - The toolkit serves every request without a password when the web config it reads
//     holds no basic_auth_users: a web config saved in place (truncated, then written)
//     read in between, empty or cut short, would let any client through. Unless the web
//     config is, after the toolkit read it, still the one the watch last read, settled,
//     a request the toolkit lets through must pass the basic auth of the web config last
//     read too (see mustPassKey): a change that lets more through (users taken out, a
//     password changed) takes effect once it settled, one that lets fewer through at
//     once. The watch looks at the web config before the toolkit reads it: a save begun
//     in between is seen by a look after the toolkit's read. The request may pass the
//     users of the web config as the watch reads it while unsettled besides (pending):
//     read cut short, it holds fewer users, never a password of none, so that a
//     password changed is taken at once, even in a web config a generator writes again
//     every second, which never settles by its times; what it is read as settles, and
//     is then taken as a web config settled is (see steady).
//
// Each request looks at the web config's stamp, a stat, and reads it again when it
// changed, once the change settled (the toolkit reads and parses it for each request
// anyway). There is one watch of the web config file, which every listener's requests
// ask (see webConfigErrors.watch): what it warns of is the file's, logged once however
// many addresses are served, naming those it holds for.
type webConfigWatch struct {
	path   string
	logger *slog.Logger
	errors *webConfigErrors
	// readConfig reads the web config (readWebConfig).
	readConfig func(path string) (*web.Config, []byte, error)

	mu    sync.Mutex
	stamp fileStamp
	// listeners are the listeners served, each with what the toolkit took at its start.
	listeners []*watchedListener
	// badHashes are the errors of the users' hashes that bcrypt does not take, by user;
	// stranger is a user name the web config does not hold, when there are some.
	badHashes map[string]error
	stranger  string
	// users are the bcrypt hashes of the web config last read, by user (nil when it
	// asks for no password); verified the keys of the credentials that passed them
	// (see passes), checked one at a time under bcryptMu.
	users    map[string]string
	verified map[[sha256.Size]byte]struct{}
	bcryptMu sync.Mutex
	// pending are the bcrypt hashes of the users of the web config as read, unsettled,
	// at stamp pendingStamp.
	pending      map[string]string
	pendingStamp fileStamp
	// steady tells when what the unsettled web config is read as settled.
	steady steady
	// costly are the users whose hash is of a bcrypt cost warned of, with their hash.
	costly map[string]string
	// emptied is set while the web config sets nothing, which was warned of (see take).
	emptied bool
}

// watchedListener is a listener a webConfigWatch tells of.
type watchedListener struct {
	addr string
	// started is what the toolkit took at the listener's start.
	started startOnly
	// warned is what the web config said of the keys of startOnly when a change of them
	// was last warned of, or the start's.
	warned startOnly
}

// startOnly are the keys of the web config exporter-toolkit takes at the start only.
type startOnly struct {
	tls       bool
	http2     bool
	rateLimit web.RateLimiterConfig
}

// readStartOnly is what config says of the keys of startOnly. A rate_limit without an
// interval, or with one below zero, limits nothing (the toolkit makes no limiter of the
// one, and one of no limit of the other, whatever the burst): it is taken for none, so
// that a change among such limits is not warned of.
func readStartOnly(config *web.Config) startOnly {
	s := startOnly{tls: config.TLSConfig.IsEnabled(), http2: config.HTTPConfig.HTTP2, rateLimit: config.RateLimiterConfig}
	if s.rateLimit.Interval <= 0 {
		s.rateLimit = web.RateLimiterConfig{}
	}
	return s
}

// changes describes what of now is not served as now says, the start having taken s.
func (s startOnly) changes(now startOnly) []string {
	var changes []string
	switch {
	case now.tls && !s.tls:
		changes = append(changes, "tls_server_config added: this address serves plain HTTP, passwords and metrics unencrypted")
	case !now.tls && s.tls:
		changes = append(changes, "tls_server_config taken out: this address serves TLS, refusing every handshake")
	case s.tls && now.http2 != s.http2:
		changes = append(changes, fmt.Sprintf("http_server_config.http2 changed: HTTP/2 is served as at the start, http2: %v", s.http2))
	}
	switch {
	case now.rateLimit == s.rateLimit:
	case s.rateLimit == web.RateLimiterConfig{}:
		changes = append(changes, "rate_limit changed: the start's is in force, which limits nothing")
	default:
		changes = append(changes, fmt.Sprintf("rate_limit changed: the start's is in force, burst %d, interval %v", s.rateLimit.Burst, s.rateLimit.Interval))
	}
	return changes
}

// startRead is what a listener's start read of the web config, for its watch: the hashes
// the start warned of (costly), and the bcrypt hashes of the users (see readUsers).
type startRead struct {
	costly, users map[string]string
	// text is the web config's text (see steady).
	text []byte
}

// handler serves h for a listener of addr, started as s says, looking at the web config
// first. What the first listener's start read is the watch's, each listener's start
// reading the one file: so a save begun before the first request is held to the users
// the start read.
func (c *webConfigWatch) handler(h http.Handler, addr string, s startOnly, read startRead) http.Handler {
	c.mu.Lock()
	if len(c.listeners) == 0 {
		c.costly, c.users = read.costly, read.users
		c.steady.saw(read.text)
	}
	c.listeners = append(c.listeners, &watchedListener{addr: addr, started: s, warned: s})
	c.mu.Unlock()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := c.check()
		if now.refused != nil {
			// Not handed to the toolkit, which would read it.
			c.errors.request(now.refused.Error())
			http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
			return
		}
		if user, password, ok := r.BasicAuth(); ok && now.badHashes[user] != nil {
			c.errors.badHash(now.badHashes[user])
			r = r.Clone(r.Context())
			r.SetBasicAuth(now.stranger, password)
		}
		if now.users != nil || now.pending != nil {
			r = r.WithContext(context.WithValue(r.Context(), mustPassKey{}, func(r *http.Request) bool {
				// The toolkit read the web config between two looks at the one the watch
				// read: it read that whole.
				return now.read.info != nil && statFile(c.path).same(now.read) || c.passes(r, now.users, now.pending)
			}))
		}
		h.ServeHTTP(w, r)
	})
}

// mustPassKey is the context key of what a request the toolkit let through must pass
// besides, a func(*http.Request) bool: reached refuses it as the toolkit refuses a wrong
// password when the func is false.
type mustPassKey struct{}

// webConfigNow is what a webConfigWatch tells a request of the web config.
type webConfigNow struct {
	// badHashes are the errors of the users' hashes, with a user name it does not hold
	// when there are some.
	badHashes map[string]error
	stranger  string
	// users are those of the web config last read (nil when it asks for no password),
	// whose basic auth a request the toolkit let through must pass (see passes) unless
	// the web config is still, after the toolkit's read, the one read at stamp read:
	// that of the web config as the request looked at it, when the watch read that one
	// (else read.info is nil).
	users map[string]string
	read  fileStamp
	// pending are the users of the web config as the watch read it, unsettled, which a
	// request may pass instead of users; when users is nil (the start read the web
	// config cut short, or it asked for no password), a request must pass them if they
	// are not.
	pending map[string]string
	// refused is why the web config is not read as it is now (webConfigFileError): the
	// request is answered 500 without the toolkit, which would read it.
	refused error
}

// passes reports whether the basic auth credentials of r are those of a user of one of
// users. Credentials that passed are remembered (knownCredentials of them), as the toolkit
// remembers its checks: a scraper's requests, which passed the toolkit's check, are
// checked once while the web config is unsettled, and those remembered for one of users
// are not checked against another's hash first (a password changed fails the old one's).
func (c *webConfigWatch) passes(r *http.Request, users ...map[string]string) bool {
	user, password, ok := r.BasicAuth()
	if !ok {
		return false
	}
	var keys [][sha256.Size]byte
	var hashes []string
	c.mu.Lock()
	for _, users := range users {
		hash, held := users[user]
		if !held {
			continue
		}
		// Neither a bcrypt hash nor a user name of basic auth holds a colon.
		key := sha256.Sum256([]byte(hash + ":" + user + ":" + password))
		if _, known := c.verified[key]; known {
			c.mu.Unlock()
			return true
		}
		keys, hashes = append(keys, key), append(hashes, hash)
	}
	c.mu.Unlock()
	for i, hash := range hashes {
		c.bcryptMu.Lock()
		err := bcrypt.CompareHashAndPassword([]byte(hash), []byte(password))
		c.bcryptMu.Unlock()
		if err != nil {
			continue
		}
		c.mu.Lock()
		if c.verified == nil {
			c.verified = map[[sha256.Size]byte]struct{}{}
		}
		remember(c.verified, keys[i])
		c.mu.Unlock()
		return true
	}
	return false
}

// check reads the web config if it changed since it was last read, warns of a change of
// the keys the toolkit took at the start only, and returns what a request is to be told
// of it.
func (c *webConfigWatch) check() webConfigNow {
	s := statFile(c.path)
	if s.info != nil {
		if err := webConfigFileError(c.path, s.info); err != nil {
			return webConfigNow{refused: err}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.same(c.stamp) {
		return c.told(s)
	}
	// A web config saved in place (truncated, then written) may be read in between, empty
	// or cut short: what is read within racyAge of its change waits for the change to
	// settle, as tlsConfigs keeps no config of files so changed. A stamp kept once it
	// settled tells any later change, at any granularity of its file system's times.
	now := c.errors.now()
	if !settled([]fileStamp{s}, now) {
		c.readPending(s, now)
		// What the toolkit reads may be the web config in the middle of a save.
		told := c.told(fileStamp{})
		told.pending = c.pending
		return told
	}
	config, whole, _, err := c.readAt(s, now, true)
	if !whole {
		return c.told(fileStamp{})
	}
	c.stamp = s
	if err != nil {
		return c.told(fileStamp{}) // the toolkit answers 500, and webConfigErrors tells it
	}
	c.take(config)
	return c.told(s)
}

// told is what a request is told of the web config last taken, read at stamp read (see
// webConfigNow). Under c.mu.
func (c *webConfigWatch) told(read fileStamp) webConfigNow {
	if c.emptied {
		// The users are not the web config's: the toolkit's read of it is no pass.
		read = fileStamp{}
	}
	return webConfigNow{badHashes: c.badHashes, stranger: c.stranger, users: c.users, read: read}
}

// take takes config for the web config, settled: warns of what changed of it that the
// toolkit does not take, and holds requests to its users. But for a web config that sets
// nothing at all, where the one before asked for passwords: a save that truncates the
// web config and writes it seconds later (`fetch > web.yml`, whose shell truncates it at
// once) leaves it empty long enough to settle, and every request would be served without
// a password until the write. Requests are held to the users before, which is warned of,
// until it sets something or the exporter restarts, where one who means to serve without
// a password takes the flag out.
func (c *webConfigWatch) take(config *web.Config) {
	c.warnStartOnly(readStartOnly(config))
	costly := costlyHashes(config)
	warnCostlyHashes(costly, c.costly, c.logger)
	c.costly = costly
	if setsNothing(config) && c.users != nil {
		if !c.emptied {
			c.emptied = true
			c.logger.Warn("the web config now sets nothing (it is empty, comments alone, or empty sections), as a save that truncates it and writes it later leaves it meanwhile: requests are still held to the basic_auth_users of before, until it sets something again or the exporter restarts (to serve without a password, leave --web.config.file out)")
		}
		return
	}
	c.emptied = false
	c.users, c.badHashes = readUsers(config)
	for user, err := range c.badHashes {
		c.badHashes[user] = fmt.Errorf("%w: its requests are refused as with a wrong password, as the start would refuse the web config", err)
	}
	c.stranger = ""
	if c.badHashes != nil {
		c.stranger = "stranger"
		for _, held := config.Users[c.stranger]; held; _, held = config.Users[c.stranger] {
			c.stranger += "_"
		}
	}
}

// readPending reads the users of the web config, unsettled at stamp s at now, unless they
// were read at s: once for each time it is written, however many requests come
// meanwhile. What is read is taken if the web config was not saved while it was read;
// and taken for the web config, settled, when it is what it was read as for racyAge
// (see steady), which a web config a generator writes again every second is, unless it
// takes every user out: a client alone may time its reads to the same point of two
// saves racyAge apart, cut short before basic_auth_users, so a web config without users
// is taken once it settled by its times (the generator stopped), never by reads alone.
func (c *webConfigWatch) readPending(s fileStamp, now time.Time) {
	if s.same(c.pendingStamp) {
		return
	}
	config, whole, held, err := c.readAt(s, now, false)
	if !whole {
		return
	}
	c.pending, c.pendingStamp = nil, s
	if err != nil {
		return
	}
	c.pending, _ = readUsers(config)
	if held && !(c.users != nil && len(config.Users) == 0) {
		c.take(config)
	}
}

// readAt reads the web config, found at stamp s before, at now, settled by its times or
// not: whole is false when it was saved while it was read, which may then have been cut
// short; held tells whether what was read settled (see steady).
func (c *webConfigWatch) readAt(s fileStamp, now time.Time, settled bool) (config *web.Config, whole, held bool, err error) {
	config, text, err := c.readConfig(c.path)
	whole = statFile(c.path).same(s)
	var read any
	if whole && err == nil {
		read = config
		if settled {
			c.steady.saw(text)
		}
	}
	return config, whole, c.steady.held(read, text, now), err
}

// readUsers returns the bcrypt hashes of the users of config, by user (nil when it has
// none, a map of none when none is a bcrypt hash), and the errors of the others' hashes.
func readUsers(config *web.Config) (users map[string]string, badHashes map[string]error) {
	for _, user := range slices.Sorted(maps.Keys(config.Users)) {
		hash := string(config.Users[user])
		if users == nil {
			users = map[string]string{}
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			if badHashes == nil {
				badHashes = map[string]error{}
			}
			badHashes[user] = fmt.Errorf("basic_auth_users: the password of %q is no bcrypt hash (%w)", user, err)
			continue
		}
		users[user] = hash
	}
	return users, badHashes
}

// warnStartOnly warns of what the web config, saying now of the keys of startOnly, changed
// of what each listener's start took, once for the listeners it changed alike.
func (c *webConfigWatch) warnStartOnly(now startOnly) {
	var said [][]string
	addrs := map[string][]string{} // by the changes, joined
	for _, l := range c.listeners {
		if now == l.warned {
			continue
		}
		l.warned = now
		changes := l.started.changes(now)
		if len(changes) == 0 {
			continue
		}
		key := strings.Join(changes, "\n")
		if addrs[key] == nil {
			said = append(said, changes)
		}
		addrs[key] = append(addrs[key], l.addr)
	}
	for _, changes := range said {
		c.logger.Warn("the web config changed keys exporter-toolkit takes at the start only: what the start took is served until the exporter restarts",
			"address", strings.Join(addrs[strings.Join(changes, "\n")], ", "), "changes", changes)
	}
}

// defaultWebConfig is the web config of a file that sets nothing, as exporter-toolkit
// reads it.
func defaultWebConfig() *web.Config {
	return &web.Config{
		TLSConfig:  web.TLSConfig{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13},
		HTTPConfig: web.HTTPConfig{HTTP2: true},
	}
}

// setsNothing reports whether c is served as no web config is: plain HTTP, no password,
// no header, no limit. Empty sections count as none.
func setsNothing(c *web.Config) bool {
	d := *c
	if len(d.Users) == 0 {
		d.Users = nil
	}
	if len(d.HTTPConfig.Header) == 0 {
		d.HTTPConfig.Header = nil
	}
	return reflect.DeepEqual(&d, defaultWebConfig())
}

// readWebConfig reads the web config at path as exporter-toolkit reads it, with its
// defaults (but for prefer_server_cipher_suites, of no effect), strictly (yaml v2), its
// files' paths taken from its directory: one the toolkit would not load is an error (but
// for its check of the headers, which web.Validate does at the start). It is the one
// reader of the web config of the start (checkWebConfig), of the toolkit's set-up and of
// the watch, so that they cannot disagree. text is the file as read.
func readWebConfig(path string) (config *web.Config, text []byte, err error) {
	text, err = readWebConfigFile(path)
	if err != nil {
		return nil, nil, err
	}
	config = defaultWebConfig()
	if err := yaml.UnmarshalStrict(text, config); err != nil {
		return nil, text, err
	}
	config.TLSConfig.SetDirectory(filepath.Dir(path))
	return config, text, nil
}

// readWebConfigFile reads the web config at path, refusing what webConfigFileError
// refuses (readLimited).
func readWebConfigFile(path string) ([]byte, error) {
	return readLimited(path, maxWebConfigBytes, func(info os.FileInfo) error { return webConfigFileError(path, info) },
		fmt.Errorf("the web config %s grew past the %d bytes a web config may hold as it was read", path, maxWebConfigBytes))
}

// readTLSFile reads a certificate, key or client CA file the web config names, refusing
// what tlsFileError refuses (readLimited).
func readTLSFile(path string) ([]byte, error) {
	return readLimited(path, maxTLSFileBytes, func(info os.FileInfo) error { return tlsFileError(path, info) },
		fmt.Errorf("the file %s grew past the %d bytes a certificate, key or client CA file may hold as it was read", path, maxTLSFileBytes))
}

// readLimited reads the file at path, which refuse, given its stat, refuses before it is
// opened and again as it was opened: the file opened is the one read, whatever replaced
// the path meanwhile (a link swapped to a FIFO or a device, a larger file), and opening a
// FIFO does not wait for its writer. A file that holds more than limit bytes as it is read
// (one grown since its stat) is refused with grew.
func readLimited(path string, limit int64, refuse func(os.FileInfo) error, grew error) ([]byte, error) {
	// Looked at before it is opened too: opening a device may do more than reading it.
	if info, err := os.Stat(path); err == nil {
		if err := refuse(info); err != nil {
			return nil, err
		}
	}
	f, err := openNoWait(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := refuse(info); err != nil {
		return nil, err
	}
	text, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(text)) > limit {
		return nil, grew
	}
	return text, err
}
