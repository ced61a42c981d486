package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"

	"github.com/logwindow/logwindow_exporter/internal/filestat"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
)

// toolkit is what exporter-toolkit's web.Serve sets up to serve a listener with a web
// config: its handler (basic auth, rate limit, headers) in front of the exporter's, and,
// when the web config has TLS, its TLS config and whether HTTP/2 is on. web.Serve sets
// these up on the server it is given and serves at once, with no way in between to put
// anything in front of its TLS config's GetConfigForClient, which reads the web config and
// every file it names again, and parses them, for each handshake (see tlsConfigs). So it
// is given a server of its own and a listener that accepts nothing (idle), and the
// exporter's server serves the real listener with what it set up: the toolkit's own
// handler, and its TLS config with a hook of the exporter's in place of the toolkit's
// (loadTLSConfig, behind a cache).
type toolkit struct {
	handler http.Handler
	// tls is nil when the web config has no TLS.
	tls *tls.Config
	// http2 is false when the web config turns HTTP/2 off.
	http2 bool
	// configs is tls's GetConfigForClient, when tls is not nil.
	configs *tlsConfigs
	idle    *idleListener
	// served is web.Serve's return, once idle is closed.
	served chan error
	// path is the web config's, whose errors are counted in errors.
	path   string
	errors *webConfigErrors
	// rateLimit is the web config's rate_limit as the toolkit took it; read what else
	// the watch takes of the web config the toolkit read.
	rateLimit web.RateLimiterConfig
	read      startRead
}

// setUpToolkit has web.Serve set up what it would serve in front of h on a listener of
// addr, with flags' web config; the error is web.Serve's when the web config does not
// load. close ends web.Serve. configErrors' clock is the one its files' stamps are told
// settled by (see tlsConfigs).
func setUpToolkit(addr net.Addr, h http.Handler, flags *web.FlagConfig, configErrors *webConfigErrors, logger *slog.Logger) (*toolkit, error) {
	t := &toolkit{idle: &idleListener{addr: addr, closed: make(chan struct{})}, served: make(chan error, 1),
		path: *flags.WebConfigFile, errors: configErrors}
	// BaseContext is called as web.Serve starts serving, everything set up, with idle
	// itself when it serves plain HTTP, else with a TLS listener over it.
	served := make(chan net.Listener, 1)
	scratch := &http.Server{Handler: h}
	scratch.BaseContext = func(l net.Listener) context.Context {
		served <- l
		return context.Background()
	}
	go func() { t.served <- web.Serve(t.idle, scratch, flags, logger) }()
	select {
	case err := <-t.served:
		return nil, err
	case l := <-served:
		if err := checkToolkitSetUp(scratch, l, t.idle); err != nil {
			t.close()
			return nil, err
		}
		t.handler = scratch.Handler
		// Read as the toolkit read it a moment before, with no error.
		config, text, err := readWebConfig(t.path)
		if err == nil {
			users, _ := readUsers(config) // the start refused a hash that is none
			t.rateLimit, t.read = readStartOnly(config).rateLimit, startRead{costly: costlyHashes(config), users: users, text: text}
		}
		if l == net.Listener(t.idle) {
			return t, nil
		}
	}
	// The toolkit turns HTTP/2 off as net/http has it: a TLSNextProto without "h2".
	_, h2 := scratch.TLSNextProto["h2"]
	t.http2 = scratch.TLSNextProto == nil || h2
	t.tls = scratch.TLSConfig.Clone()
	// The toolkit's own GetConfigForClient would read the web config and its files again
	// by their paths, whole, whatever replaced them since they were looked at. HTTP/2 is
	// offered as it offers it: where net/http set up its server (not with
	// GODEBUG=http2server=0, where a client that took it would be dropped).
	protos := []string{"http/1.1"}
	if h2 {
		protos = []string{"h2", "http/1.1"}
	}
	path := *flags.WebConfigFile
	t.configs = newTLSConfigs(path, func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return loadTLSConfig(path, readWebFiles(path), protos)
	}, configErrors.now, configErrors)
	t.configs.holdToStart(t.read.text)
	t.tls.GetConfigForClient = t.configs.get
	return t, nil
}

// toolkitFields are the fields of http.Server that serve takes from web.Serve's: the rest
// must be as setUpToolkit left them, unset.
var toolkitFields = []string{"Handler", "TLSConfig", "TLSNextProto", "BaseContext"}

// tlsListener is the type of the listener http.Server's ServeTLS serves.
var tlsListener = reflect.TypeOf(tls.NewListener(nil, &tls.Config{}))

// checkToolkitSetUp says what web.Serve set up on srv, to serve l over idle, that serve
// would not serve with: a field of srv beyond toolkitFields (net/http itself sets
// TLSConfig and TLSNextProto as it sets up HTTP/2, for plain HTTP too), a listener other
// than idle or ServeTLS's over it. A toolkit release that set up more (a connection hook,
// a protocol, a listener wrapper) would otherwise be lost without a word, as it is
// upgraded: the start fails on it instead, and so do the tests that serve a web config.
func checkToolkitSetUp(srv *http.Server, l, idle net.Listener) error {
	served := reflect.TypeOf(l) == tlsListener
	if l != idle && !served {
		return fmt.Errorf("exporter-toolkit serves a listener of its own (%T), which this exporter does not serve with", l)
	}
	v := reflect.ValueOf(srv).Elem()
	for _, f := range reflect.VisibleFields(v.Type()) {
		if f.IsExported() && !slices.Contains(toolkitFields, f.Name) && !v.FieldByIndex(f.Index).IsZero() {
			return fmt.Errorf("exporter-toolkit set http.Server's %s, which this exporter does not serve with", f.Name)
		}
	}
	if served && srv.TLSConfig == nil {
		return errors.New("exporter-toolkit serves TLS without a TLS config, which this exporter does not serve with")
	}
	return nil
}

// serve serves l with srv, with what the toolkit set up, until srv is closed; with TLS,
// a connection kept alive is held to the web config as it changes (see recheck); what
// the toolkit takes without a word of the web config changed is told (webConfigWatch).
func (t *toolkit) serve(l net.Listener, srv *http.Server) error {
	started := startOnly{tls: t.tls != nil, http2: t.http2, rateLimit: t.rateLimit}
	srv.Handler = t.errors.watch.handler(t.handler, l.Addr().String(), started, t.read)
	if t.tls == nil {
		return srv.Serve(servePlain(l, srv))
	}
	if !t.http2 {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	srv.TLSConfig = t.tls
	if conns := srv.ConnContext; conns != nil {
		srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return t.configs.connContext(conns(ctx, c), c)
		}
	} else {
		srv.ConnContext = t.configs.connContext
	}
	srv.Handler = t.configs.recheck(srv.Handler)
	return srv.ServeTLS(l, "", "")
}

// close ends the toolkit's web.Serve.
func (t *toolkit) close() {
	t.idle.Close()
	<-t.served
}

// idleListener is a listener of addr (what web.Serve logs) that accepts nothing until it
// is closed.
type idleListener struct {
	addr   net.Addr
	once   sync.Once
	closed chan struct{}
}

func (l *idleListener) Accept() (net.Conn, error) {
	<-l.closed
	return nil, net.ErrClosed
}

func (l *idleListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *idleListener) Addr() net.Addr { return l.addr }

// racyAge is how recently a file may have been changed for its stamp to say nothing: a
// file rewritten in place within the granularity of its file system's times (a second or
// two on some) can keep its size and modification time.
const racyAge = 2 * time.Second

// tlsConfigs is a TLS config's GetConfigForClient, exporter-toolkit's as loadTLSConfig
// makes it (load), behind a cache. The toolkit's own reads the web config and the
// certificate, key and client CA files it names, and parses them all, for every TLS
// handshake, so that renewed certificates are taken without a
// restart: with a client_ca_file of a few hundred kilobytes (a bundle of CAs) that is tens
// of milliseconds of a core per handshake, before any password or client certificate is
// asked for, which any client that can connect can spend over and over. The config the
// toolkit made is kept, and given to the next handshakes, for as long as none of those
// files changed: their stamps (which file, size, modification and change times), taken
// before the toolkit reads them, were the same right after it read them and are now, and
// none had changed within racyAge of when they were taken. A change is taken by the first
// handshake after it, as the toolkit takes it. Files that a generator writes again more
// often than racyAge are never kept, but what they are read as settles (see steady): the
// config loaded from it is given to the handshakes that read them as that, which then
// read them (and parse the web config) but load nothing.
// What the toolkit fails to load is not kept (it may be a passing error, a file descriptor
// short): it is counted, and each handshake loads again. So is a client CA file (or
// client_ca) that holds no certificate, which the start refuses (checkClientCAs) and the
// toolkit takes as a pool of none, refusing every client certificate.
type tlsConfigs struct {
	path   string
	load   func(*tls.ClientHelloInfo) (*tls.Config, error)
	now    func() time.Time
	errors *webConfigErrors
	// readFile reads the web config for its files' names, and those files
	// (readWebFiles).
	readFile func(string) ([]byte, error)

	mu sync.Mutex
	// config was loaded from the files of stamps; nil when none is kept. It is written
	// under mu, and read without it as a connection is accepted (see connContext).
	config atomic.Pointer[tls.Config]
	stamps []fileStamp
	// last is the config last kept, or the start's until one is (see holdToStart), which
	// a handshake's client must be accepted by too while the files changed since are
	// unsettled (see heldTo). Under mu.
	last *tls.Config
	// steady tells when what the files, unsettled, are read as settled; lastRead is what
	// they were read as for last, when that was kept or settled so. Under mu.
	steady   steady
	lastRead any
	// closed counts the connections closed by recheck, for the log.
	closed atomic.Int64
}

func newTLSConfigs(path string, load func(*tls.ClientHelloInfo) (*tls.Config, error), now func() time.Time, errors *webConfigErrors) *tlsConfigs {
	return &tlsConfigs{path: path, load: load, now: now, errors: errors, readFile: readWebFiles(path)}
}

// readWebFiles reads the web config at webConfig (readWebConfigFile) or a file it names
// (readTLSFile), by its path.
func readWebFiles(webConfig string) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		if path == webConfig {
			return readWebConfigFile(path)
		}
		return readTLSFile(path)
	}
}

// loadTLSConfig is what exporter-toolkit's GetConfigForClient makes of the web config at
// path, with the protocols nextProtos, but every file read by readFile, once: the toolkit
// reads each by its path with no limit on its size or kind.
func loadTLSConfig(path string, readFile func(string) ([]byte, error), nextProtos []string) (*tls.Config, error) {
	text, err := readFile(path)
	if err != nil {
		return nil, err
	}
	c := defaultWebConfig()
	if err := yaml.UnmarshalStrict(text, c); err != nil {
		return nil, err
	}
	c.TLSConfig.SetDirectory(filepath.Dir(path))
	config, err := tlsConfigOf(c.TLSConfig, readFile)
	if err != nil {
		return nil, err
	}
	config.NextProtos = nextProtos
	return config, nil
}

// tlsConfigOf is web.ConfigToTLSConfig of c with the files it names read by readFile and
// given to it inline (as cert, key and client_ca), where it would read them itself, whole.
func tlsConfigOf(c web.TLSConfig, readFile func(string) ([]byte, error)) (*tls.Config, error) {
	for _, f := range []struct {
		key        string
		path, text *string
	}{
		{"cert_file", &c.TLSCertPath, &c.TLSCert},
		{"key_file", &c.TLSKeyPath, (*string)(&c.TLSKey)},
		{"client_ca_file", &c.ClientCAs, &c.ClientCAsText},
	} {
		if *f.path == "" {
			continue
		}
		data, err := readFile(*f.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		if len(data) == 0 {
			return nil, fmt.Errorf("%s %s is empty", f.key, *f.path)
		}
		*f.path, *f.text = "", string(data)
	}
	config, err := web.ConfigToTLSConfig(&c)
	if err != nil {
		return nil, err
	}
	// The toolkit's GetCertificate parses the pair again for every handshake.
	cert, err := config.GetCertificate(nil)
	if err != nil {
		return nil, err
	}
	config.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert, nil }
	return config, nil
}

// holdToStart loads the config of the files as the start validated them, a moment
// before, for handshakes to be held to until a config is kept: files written just before
// the start (by the script that starts the exporter, or as a container's volume is
// mounted), or rewritten over and over, are unsettled, and a save in place read cut short
// would otherwise let any client through until they settled. What fails to load holds
// nothing: the handshakes' loads fail and are told.
func (c *tlsConfigs) holdToStart(text []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.steady.saw(text)
	if config, err := c.load(&tls.ClientHelloInfo{}); err == nil {
		checkAllowedSANs(config)
		c.last = config
	}
}

// get is the GetConfigForClient of the exporter's TLS config.
func (c *tlsConfigs) get(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	config, err := c.current(hello)
	if err != nil {
		return nil, c.refuse(err)
	}
	return config, nil
}

// current is the TLS config of the web config and its files as they are now: the one
// kept while they are unchanged, else loaded. An error is theirs, not counted.
func (c *tlsConfigs) current(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	// One loads at a time: others wait for its config rather than load their own.
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.currentLocked(hello)
}

// currentLocked is current, with c.mu held.
func (c *tlsConfigs) currentLocked(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	if config := c.config.Load(); config != nil && unchanged(c.stamps) {
		return config, nil
	}
	c.config.Store(nil)
	// Neither this nor the load reads a web config it refuses.
	if err := checkWebConfigFile(c.path); err != nil {
		return nil, err
	}
	at := c.now()
	stamps, named, read, text := stampWebConfig(c.path, c.readFile)
	// Read, whole, as the config handshakes are held to was, and settled so (a generator
	// writes the files again every second): that config is theirs, with no load. The
	// toolkit's parses every certificate again, a bundle of CAs in tens of milliseconds,
	// which any client able to connect could otherwise ask for over and over.
	if read != nil && c.lastRead != nil && reflect.DeepEqual(read, c.lastRead) && unchanged(stamps) && c.steady.held(read, text, at) {
		return c.last, nil
	}
	config, err := c.load(hello)
	if err == nil && named != nil {
		err = checkClientCAs(named)
	}
	// Stamps that are not those after the load are of files changed while it read them:
	// a save in place begun meanwhile may have been read cut short.
	whole := err == nil && named != nil && unchanged(stamps)
	if !whole {
		read = nil
	}
	held := c.steady.held(read, text, at)
	if err != nil && named != nil && !named.IsEnabled() {
		return nil, fmt.Errorf("tls_server_config was taken out of the web config (or is misspelled), but whether an address serves TLS is decided at the start: it serves TLS, refusing every handshake, until tls_server_config is put back or the exporter restarts to serve plain HTTP (%w)", err)
	}
	if err != nil {
		return nil, err
	}
	checkAllowedSANs(config)
	if whole && settled(stamps, at) {
		c.steady.saw(text)
		c.config.Store(config)
		c.stamps = stamps
		c.last, c.lastRead = config, read
		return config, nil
	}
	// What the files are read as settled though their stamps did not (see steady): the
	// config is not kept, for the stamps of a file system with times of a second or two
	// may not tell the next change, but it is the one handshakes are held to. Not when it
	// changes client_auth_type or has client_allowed_sans come or go: a client alone may
	// time its handshakes to the same point of two saves racyAge apart, cut short before
	// either, so such a change is taken once it settled by its times (the generator
	// stopped), never by reads alone.
	if whole && held && (c.last == nil || sameClients(config, c.last)) {
		c.last, c.lastRead = config, read
		return config, nil
	}
	if c.last != nil {
		return heldTo(config, c.last), nil
	}
	return config, nil
}

// sameClients reports whether a and b ask the same of a client's certificate: the same
// client_auth_type, and client_allowed_sans in both or in neither (the toolkit checks
// them in VerifyPeerCertificate, which it sets for them alone).
func sameClients(a, b *tls.Config) bool {
	return a.ClientAuth == b.ClientAuth && (a.VerifyPeerCertificate == nil) == (b.VerifyPeerCertificate == nil)
}

// heldTo is config, loaded from files that changed within racyAge, holding a handshake's
// client to kept, the config of the files before their change, too. The web config saved
// in place (truncated, then written) may have been read in between, cut short before
// client_auth_type or client_ca_file: a handshake made with what was read would ask no
// client for a certificate, and let any client through. So a client that kept would ask
// for a certificate is asked for one, and one that kept would refuse (see verifyClient)
// is refused: a change that lets more clients through takes effect once it settled, as
// tlsConfigs then keeps its config, one that lets fewer through at once.
func heldTo(config, kept *tls.Config) *tls.Config {
	held := config.Clone()
	if held.ClientAuth < tls.RequestClientCert && kept.ClientAuth >= tls.RequestClientCert {
		held.ClientAuth = tls.RequestClientCert // verifyClient verifies it as kept does
	}
	next := held.VerifyConnection
	held.VerifyConnection = func(cs tls.ConnectionState) error {
		if err := verifyClient(kept, cs); err != nil {
			return err
		}
		if next != nil {
			return next(cs)
		}
		return nil
	}
	return held
}

// refuse counts err, which refuses a handshake because the web config or a file it names
// did not load, and is the error to refuse it with.
func (c *tlsConfigs) refuse(err error) error {
	c.errors.handshake(err)
	return webConfigRefusal{err}
}

// unchanged reports whether the files of stamps are as they were.
func unchanged(stamps []fileStamp) bool {
	for _, s := range stamps {
		if !s.same(statFile(s.path)) {
			return false
		}
	}
	return true
}

// stampWebConfig stamps the web config at path and the files it names now, the web
// config first, reading them with readFile, and returns what it names them in; named is
// nil when the web config could not be read or parsed for their names. The toolkit reads
// it again a moment later, and may then read it (an error that passed, a file descriptor
// short) and the files it names: stamps without theirs would keep its config through
// their renewal. read is what they were read as (see steady), nil when one could not be
// read: the web config as parsed, for a generator may write a comment of its own each
// time (the time it wrote it), and the sum of the files it names; text is the web
// config's text.
func stampWebConfig(path string, readFile func(string) ([]byte, error)) (stamps []fileStamp, named *web.TLSConfig, read any, text []byte) {
	stamps = []fileStamp{statFile(path)}
	text, err := readFile(path)
	if err != nil {
		return stamps, nil, nil, nil
	}
	var config web.Config
	if yaml.Unmarshal(text, &config) != nil {
		return stamps, nil, nil, text
	}
	config.TLSConfig.SetDirectory(filepath.Dir(path))
	sum := sha256.New()
	for _, p := range []string{config.TLSConfig.TLSCertPath, config.TLSConfig.TLSKeyPath, config.TLSConfig.ClientCAs} {
		if p == "" {
			continue
		}
		stamps = append(stamps, statFile(p))
		file, err := readFile(p)
		if err != nil {
			return stamps, &config.TLSConfig, nil, text
		}
		// Each file's length first, for two files' texts not to sum as one.
		fmt.Fprintf(sum, "%d:", len(file))
		sum.Write(file)
	}
	return stamps, &config.TLSConfig, webConfigRead{config, [sha256.Size]byte(sum.Sum(nil))}, text
}

// webConfigRead is what the web config and the files it names were read as: the web
// config, parsed, and the sum of the files.
type webConfigRead struct {
	config web.Config
	files  [sha256.Size]byte
}

// settled reports whether stamps taken from now on tell any later change of their files:
// the modification and change times of each are racyAge or more away from now (before it,
// or after it when the file was dated ahead, which a file written now is not).
func settled(stamps []fileStamp, now time.Time) bool {
	for _, s := range stamps {
		if s.info == nil || now.Sub(s.info.ModTime()).Abs() < racyAge ||
			(!s.changed.IsZero() && now.Sub(s.changed).Abs() < racyAge) {
			return false
		}
	}
	return true
}

// steady tells when what files hold settled though their times do not: a web config a
// generator writes again every second (a template rendered in a loop) is never racyAge
// old, and a change of it was never taken (a client CA replaced had the clients of the
// new CA refused, basic_auth_users taken out still asked for passwords). What a save in
// place is read as in its middle (empty, cut short) lasts as long as the save, a moment,
// where what the generator writes stays until it writes it again: what was read the
// same, whole, at every read for racyAge or more has settled. A read in the middle of a
// save starts the wait again, and so does one that was not whole, or did not load: for
// what a save was read as in its middle to be taken, two reads racyAge or more apart
// would each have to fall within a save, at the same point of it, with no read between.
// But two saves of the same text read at the same point are the same text cut short,
// which one client may well read twice, alone (scrapers keep their connections alive,
// reading nothing), by connecting in the middle of each: a web config truncated, then
// written in more than one write (a template rendered line by line, a file larger than
// a write's buffer), cut short before client_auth_type or basic_auth_users. So a read
// of the web config whose text, comment lines aside (the generator's date, at its top or
// end), is a strict prefix of the one read whole before it is taken for one in the
// middle of a save: a change that only takes lines off the end of a web config a
// generator writes again is not taken until it stood unchanged racyAge.
type steady struct {
	read  any // what was last read whole; nil for none
	since time.Time
	// text is the web config's text, comment lines aside, as last read whole, but not
	// cut short (see held).
	text []byte
}

// held tells, of read, what the files were read as at now (nil when they were not read
// whole, or did not load), the web config as text, whether it settled: whether it is what
// every read since racyAge or more before read.
func (s *steady) held(read any, text []byte, now time.Time) bool {
	if read != nil {
		if text = uncommented(text); len(text) < len(s.text) && bytes.HasPrefix(s.text, text) {
			read = nil // cut short
		} else {
			s.text = text
		}
	}
	if read == nil || s.read == nil || !reflect.DeepEqual(read, s.read) {
		s.read, s.since = read, now
		return false
	}
	return now.Sub(s.since) >= racyAge
}

// saw tells s of the web config's text as read whole and taken: at the start, or settled
// by its times.
func (s *steady) saw(text []byte) {
	s.text = uncommented(text)
}

// uncommented is text, a YAML file's, without its comment lines, in a new slice.
func uncommented(text []byte) []byte {
	var kept []byte
	for line := range bytes.Lines(text) {
		if !bytes.HasPrefix(bytes.TrimLeft(line, " \t"), []byte("#")) {
			kept = append(kept, line...)
		}
	}
	return kept
}

// fileStamp is what os.Stat said of a file (through symlinks: the kubelet and certbot
// renew by pointing one at new files); info is nil when it failed. changed is its ctime,
// where read (filestat.ChangeTime): a file replaced with the size and modification time of
// the one before (cp -p, an archive's dates, kept by tar; a file created again may get
// the inode number just freed) has a ctime of its own.
type fileStamp struct {
	path    string
	info    os.FileInfo
	changed time.Time
}

func statFile(path string) fileStamp {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{path: path}
	}
	s := fileStamp{path: path, info: info}
	if ns, ok := filestat.ChangeTime(info); ok {
		s.changed = time.Unix(0, ns)
	}
	return s
}

// same reports whether s and o are stamps of the same file, unchanged.
func (s fileStamp) same(o fileStamp) bool {
	if s.info == nil || o.info == nil {
		return false
	}
	return os.SameFile(s.info, o.info) && s.info.Size() == o.info.Size() &&
		s.info.ModTime().Equal(o.info.ModTime()) && s.info.Mode() == o.info.Mode() &&
		s.changed.Equal(o.changed)
}

// checkAllowedSANs mends exporter-toolkit's check of client_allowed_sans, config's
// VerifyPeerCertificate. crypto/tls calls it with no certificate when client_auth_type
// lets a client go without one, and it takes the first of none: a panic, which net/http
// logs with its stack, for each such client; that client is refused with an error
// instead, as the panic refused it. And crypto/tls does not call it for a session
// resumed, whose client may hold a ticket from before its SAN was taken out of the list
// (the client CA file is checked again, by crypto/tls): VerifyConnection calls it then.
func checkAllowedSANs(config *tls.Config) {
	verify := config.VerifyPeerCertificate
	if verify == nil {
		return
	}
	config.VerifyPeerCertificate = func(raw [][]byte, chains [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("client_allowed_sans: the client gave no certificate to check")
		}
		return verify(raw, chains)
	}
	next := config.VerifyConnection
	config.VerifyConnection = func(cs tls.ConnectionState) error {
		if cs.DidResume {
			raw := make([][]byte, len(cs.PeerCertificates))
			for i, c := range cs.PeerCertificates {
				raw[i] = c.Raw
			}
			if err := config.VerifyPeerCertificate(raw, cs.VerifiedChains); err != nil {
				return err
			}
		}
		if next != nil {
			return next(cs)
		}
		return nil
	}
}

// webConfigRefused starts the error of a handshake refused because the web config, or a
// file it names, does not load: net/http logs it with the clients' failed handshakes, as
// "http: TLS handshake error from <address>: <error>", and serverLog leaves it to
// webConfigErrors, which counted and logged it, naming the web config. No error crypto/tls
// makes of what a client sent starts so.
const webConfigRefused = "refused: the web config does not load: "

// webConfigRefusal is the error tlsConfigs gives crypto/tls for a handshake it refuses
// because the web config does not load; the client gets an internal_error alert.
type webConfigRefusal struct{ err error }

func (e webConfigRefusal) Error() string { return webConfigRefused + e.err.Error() }

func (e webConfigRefusal) Unwrap() error { return e.err }

// toolkitParseError is what exporter-toolkit logs, at error level, for each request it
// answers 500 because the web config no longer loads.
const toolkitParseError = "Unable to parse configuration"

// webConfigErrorsLogged is how often, at most, the same error of a web config that no
// longer loads is logged while it lasts.
const webConfigErrorsLogged = time.Minute

// webConfigErrors counts the requests answered 500 and the TLS handshakes refused because
// the web config, edited while the exporter runs, no longer loads (exporter-toolkit reads
// it again for each of them, and would log an error for each), and the requests of a
// user whose hash it holds as no bcrypt hash. The first is logged, then
// an error other than the last one logged, and else one a minute at most, with the count
// so far; logwindow_web_config_errors_total counts them all, where a scrape after the fix
// shows them.
type webConfigErrors struct {
	logger *slog.Logger
	now    func() time.Time
	// watch is the file's one watch, which every listener asks.
	watch *webConfigWatch

	mu         sync.Mutex
	n          int64
	lastErr    string
	lastLogged time.Time
}

// newWebConfigErrors counts the errors of the web config at path, logging to logger, and
// makes the file's watch.
func newWebConfigErrors(path string, logger *slog.Logger, now func() time.Time) *webConfigErrors {
	e := &webConfigErrors{logger: logger.With("web_config", path), now: now}
	e.watch = &webConfigWatch{path: path, logger: e.logger, errors: e, readConfig: readWebConfig}
	return e
}

func (e *webConfigErrors) request(err string) {
	e.add("requests answered 500: the web config does not load (it changed since the start)", err)
}

// badHash is told of a request of a user whose basic_auth_users hash is no bcrypt hash,
// which is refused as a wrong password is (see webConfigWatch).
func (e *webConfigErrors) badHash(err error) {
	e.add("requests refused as with a wrong password (401, or 429 past rate_limit): the web config holds their user's password as no bcrypt hash (it changed since the start)", err.Error())
}

// handshake is told of the files too: a key renewed without its certificate, or a client
// CA file taken away, leaves the web config itself as it was.
func (e *webConfigErrors) handshake(err error) {
	e.add("TLS handshakes refused: the web config, or the certificate, key or client CA file it names, does not load (one changed since the start)", err.Error())
}

// add counts an error of what failed and why, and logs it as webConfigErrors says.
func (e *webConfigErrors) add(what, err string) {
	e.mu.Lock()
	e.n++
	n, now := e.n, e.now()
	log := n == 1 || err != e.lastErr || now.Sub(e.lastLogged) >= webConfigErrorsLogged
	if log {
		e.lastErr, e.lastLogged = err, now
	}
	e.mu.Unlock()
	if log {
		e.logger.Error(what+"; it is read again for each request and handshake, and this is logged again when the error changes, else once a minute at most",
			"err", err, "errors", n)
	}
}

// Describe sends nothing: an unchecked collector, as the scrape limiter is.
func (e *webConfigErrors) Describe(chan<- *prometheus.Desc) {}

// Collect sends logwindow_web_config_errors_total.
func (e *webConfigErrors) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	n := e.n
	e.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(webConfigErrorsDesc, prometheus.CounterValue, float64(n))
}

var webConfigErrorsDesc = selfmetric.WebConfigErrors.Desc()

// toolkitLog is the log handler exporter-toolkit is given: what it logs goes to the
// exporter's log, but for its error for each request while the web config does not load,
// which goes to errors.
type toolkitLog struct {
	slog.Handler
	errors *webConfigErrors
}

// Enabled is true of errors, which the toolkit's for each request is, whatever the
// exporter's log level: they are counted.
func (h toolkitLog) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelError || h.Handler.Enabled(ctx, level)
}

func (h toolkitLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != toolkitParseError {
		if !h.Handler.Enabled(ctx, r.Level) {
			return nil
		}
		return h.Handler.Handle(ctx, r)
	}
	err := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			err = a.Value.String()
		}
		return true
	})
	h.errors.request(err)
	return nil
}

func (h toolkitLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return toolkitLog{Handler: h.Handler.WithAttrs(attrs), errors: h.errors}
}

func (h toolkitLog) WithGroup(name string) slog.Handler {
	return toolkitLog{Handler: h.Handler.WithGroup(name), errors: h.errors}
}
