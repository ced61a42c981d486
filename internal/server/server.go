// Package server is the exporter's HTTP side and lifecycle: the registry of self-metrics
// next to the rule families, the mux (metrics, health, readiness, reload, the status page
// and its line tester), the reload triggers (SIGHUP, POST /-/reload, a watched rule file)
// and serving until a signal ends it.
package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	pathpkg "path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/mdlayher/vsock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/crypto/bcrypt"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/configwatch"
	"github.com/logwindow/logwindow_exporter/internal/filestat"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/pipeline"
	rulescrape "github.com/logwindow/logwindow_exporter/internal/scrape"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/server/status"
)

// The rule file watch waits for a quiet second after a change (the kubelet swaps a
// ConfigMap in several steps) and reads the file every half minute in case no event comes.
const (
	configWatchSettle = time.Second
	configWatchPoll   = 30 * time.Second
)

// What a client may hold of the server, besides the flags' timeouts and limits: its
// request's headers arrive within maxHeaderTime and take at most maxHeaderBytes (a
// scraper's take a few hundred bytes); past MaxConnections, a connection that has waited
// connGrace for a request may be closed; a scrape past MaxRequests waits up to
// scrapeWait for a place, and takes that of a scrape whose client has not read for
// scrapeStall.
const (
	maxHeaderTime  = 10 * time.Second
	maxHeaderBytes = 64 << 10
	connGrace      = time.Second
	scrapeStall    = time.Second
	scrapeWait     = 5 * time.Second
	// shutdownGrace is how long requests in flight may take to end after SIGTERM.
	shutdownGrace = 5 * time.Second
	// maxStreams is how many requests an HTTP/2 connection runs at once: a scraper runs
	// one, a browser the page and its icon. Each holds a handler's goroutine, its request
	// and buffers until its reply is written, which a client that opens no flow-control
	// window holds back until the write timeout: at net/http's 250 a connection held
	// about 5 MB so, and --web.max-connections of them gigabytes, where an HTTP/1.1
	// connection runs one request. Clients open another connection, or wait, past it.
	maxStreams = 4
	// maxFrameBytes is the largest HTTP/2 frame read, the least HTTP/2 allows (its
	// default): a connection keeps for its life a buffer of the largest frame it read,
	// and net/http's 1 MiB had a client without a password hold a megabyte per
	// connection, by one frame of a type HTTP/2 ignores. Clients send frames within it.
	maxFrameBytes = 16 << 10
	// maxBodyAhead is how much of request bodies an HTTP/2 connection lets its client
	// send before handlers read it, the least net/http takes: what a handler leaves
	// unread (every handler but the line tester's reads none) is kept until its stream
	// ends, which a client that opens no window for the reply puts off until the write
	// timeout, and net/http's 1 MiB per connection had a client without a password hold
	// a megabyte per connection so. The line tester's 256 KiB flow as it reads them.
	maxBodyAhead = 64 << 10
)

// Options are what the HTTP side is told by the command line.
type Options struct {
	// Name is the program's name, on the status page and in the start-up log line.
	Name        string
	Logger      *slog.Logger
	MetricsPath string
	// Lifecycle enables POST /-/reload.
	Lifecycle bool
	// Watch, when not nil, reloads the rules when their file changes.
	Watch *configwatch.Watcher
	// Hangups are the SIGHUPs the caller caught before it read the rule file, each a
	// reload once Serve runs; nil: Serve catches them itself, from its start.
	Hangups <-chan os.Signal
	// LineTester serves the status page's line tester.
	LineTester bool
	// ReadTimeout bounds the reading of a request, WriteTimeout the time from its
	// headers to the end of its reply, IdleTimeout a connection's wait for its next
	// request; 0 is none.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConnections bounds the connections held, lowered to half the open-file limit
	// when that is lower (see connLimiter); MaxRequests the scrapes in flight, and apart
	// the status pages in flight (see scrapeLimiter). 0 is none.
	MaxConnections, MaxRequests int
	// MaxScrapeBytes bounds the heap the scrapes in flight hold, within MaxRequests (see
	// scrapeLimiter); 0 is none.
	MaxScrapeBytes int64

	// conns, when not nil, bounds the connections of the servers newHTTPServer makes:
	// Serve sets it.
	conns *connLimiter

	// reloads runs POST /-/reload's reloads, and those of SIGHUP and the rule file's
	// watch, which share them (see reloader): Serve sets it; without it NewMux makes one
	// of its own.
	reloads *reloader
}

// Serve follows the inputs of cfg and answers HTTP on the addresses of webFlags until
// SIGTERM or SIGINT, reloading on SIGHUP.
func Serve(cfg *config.Config, popts pipeline.Options, webFlags *web.FlagConfig, o Options) error {
	logger := o.Logger
	logger.Info("starting "+o.Name, "version", version.Info(), "config", cfg.File)
	// Signals are caught before the web config is read, which may wait for it to settle,
	// and the inputs start: a SIGHUP or SIGTERM during start-up must not kill the process
	// with the default action. A SIGHUP is the reload it asks for once the exporter runs.
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	hup := o.Hangups
	if hup == nil {
		caught := make(chan os.Signal, 1)
		signal.Notify(caught, syscall.SIGHUP)
		defer signal.Stop(caught)
		hup = caught
	}
	if f := webFlags.WebConfigFile; f != nil && *f != "" {
		settleWebConfig(*f, time.Now, func(d time.Duration) bool {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(d):
				return true
			}
		}, logger.With("web_config", *f))
		if ctx.Err() != nil {
			logger.Info("shutting down")
			return nil
		}
		if err := CheckWebConfig(*f, logger.With("web_config", *f)); err != nil {
			return err
		}
	}

	popts.Interrupt = ctx.Done() // a wait for the storage directory
	// The inputs open their files before the listener opens (the start waits for an old
	// exporter's storage lock first): bounded, they leave it and the connections theirs.
	nofile := openFileLimit()
	if n := inputFiles(o.MaxConnections, nofile, listenerCount(webFlags)); n > 0 {
		popts.OpenFiles = follow.NewFiles(n)
	}
	p, err := pipeline.Start(cfg, popts)
	if err != nil {
		return err
	}
	defer p.Stop()
	// The inputs' goroutines are runnable, the reader behind the ones started after it:
	// yielding lets them start reading now rather than once this goroutine blocks, at the
	// end of the HTTP side's set-up, which no scrape can wait on yet. With a second core
	// that set-up goes on there meanwhile.
	runtime.Gosched()

	o.reloads = newReloader(func() error { return Reload(p, logger) }, logger)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_ = o.reloads.Reload(ctx)
			}
		}
	}()
	if o.Watch != nil {
		go func() {
			err := o.Watch.Run(ctx, configwatch.Options{
				Reload: func() config.Read {
					_ = o.reloads.Reload(ctx)
					return p.LastRead()
				},
				Settle: configWatchSettle,
				Poll:   configWatchPoll,
				After:  time.After,
				Logger: logger,
			})
			if err != nil {
				logger.Error("the rule file is not watched", "err", err)
			}
		}()
	}

	coll := p.Collector()
	reg := NewRegistry(coll)
	var configErrors *webConfigErrors
	if f := webFlags.WebConfigFile; f != nil && *f != "" {
		configErrors = newWebConfigErrors(*f, logger, time.Now)
		reg.MustRegister(configErrors)
	}
	mux := NewMux(p, coll, reg, o)
	if o.MaxConnections > 0 {
		o.conns = newConnLimiter(lowerConnections(o, nofile), connGrace, logger)
	}
	listeners, err := listen(webFlags, logger)
	if err != nil {
		return err
	}
	// A listener a server did not take (its web config failed to load) is closed here; a
	// server's are closed by its Shutdown or Close first.
	defer closeAll(listeners)
	servers := make([]*http.Server, len(listeners))
	logs := make(handshakeErrors, len(listeners))
	for i := range listeners {
		servers[i] = newHTTPServer(mux, o)
		logs[i] = servers[i].ErrorLog.Writer().(*serverLog)
	}
	reg.MustRegister(logs)
	errc := make(chan error, len(listeners))
	for i, l := range listeners {
		go func() { errc <- serveOn(l, servers[i], webFlags, configErrors, logger) }()
	}
	select {
	case err := <-errc:
		// The process exits on it: the other addresses must not go on answering, as
		// though it served, while its inputs stop.
		for _, srv := range servers {
			_ = srv.Close()
		}
		return err
	case <-ctx.Done():
		logger.Info("shutting down")
		return shutdown(servers, o.conns, logger)
	}
}

// webConfigSettleWait is how long the start waits at most for the web config and the
// files it names to settle (see settleWebConfig), looking again every
// webConfigSettlePoll.
const (
	webConfigSettleWait = 5 * time.Second
	webConfigSettlePoll = 100 * time.Millisecond
)

// settleWebConfig waits, by now and sleep, until the web config at path and the files it
// names settled, by their times or by what they are read as (see steady), or one of them
// is missing, for webConfigSettleWait at most, which is warned of to logger, or until
// sleep returns false (the start is ended). The start reads the web config several times
// (its check, exporter-toolkit's set-up, the TLS config and the users that handshakes and
// requests are held to while a change is unsettled) and takes what they read for good:
// whether an address serves TLS among them. A web config saved in place as the exporter
// started (a generator writing it again every second, a script writing it as the exporter
// restarts) and read in the middle of its save, empty or cut short, served plain HTTP
// until a restart, or failed the start with the error of a YAML cut short. Files that
// settled long before, as usual, are not waited for.
func settleWebConfig(path string, now func() time.Time, sleep func(time.Duration) bool, logger *slog.Logger) {
	var s steady
	start := now()
	for {
		if checkWebConfigFile(path) != nil {
			return // refused by CheckWebConfig, unread
		}
		at := now()
		stamps, named, read, text := stampWebConfig(path, readWebFiles(path))
		if named == nil || !unchanged(stamps) {
			read = nil
		}
		if s.held(read, text, at) || settled(stamps, at) || projected(stamps) || slices.ContainsFunc(stamps, func(s fileStamp) bool { return s.info == nil }) {
			return
		}
		if at.Sub(start) >= webConfigSettleWait {
			logger.Warn("the web config, or a file it names, still changes: it is read as it is now, and one saved in place read in the middle of its save may be cut short (whether an address serves TLS is decided now, until a restart)",
				"waited", webConfigSettleWait)
			return
		}
		if !sleep(webConfigSettlePoll) {
			return
		}
	}
}

// projected reports whether every file of stamps is one the kubelet projects from a Secret
// or a ConfigMap volume: a link to ..data/<name> beside the link ..data. The kubelet writes
// a volume's new files into a directory of their own and swaps ..data to it by one rename,
// so such a file is never read in the middle of a save, and a pod's start need not wait
// the two seconds that the files it wrote just before the container started are young.
func projected(stamps []fileStamp) bool {
	for _, s := range stamps {
		target, err := os.Readlink(s.path)
		if err != nil || filepath.Clean(target) != filepath.Join(kubeletData, filepath.Base(s.path)) {
			return false
		}
		if info, err := os.Lstat(filepath.Join(filepath.Dir(s.path), kubeletData)); err != nil || info.Mode()&os.ModeSymlink == 0 {
			return false
		}
	}
	return true
}

// kubeletData is the link a kubelet's Secret or ConfigMap volume holds its files behind.
const kubeletData = "..data"

// CheckWebConfig refuses the web config file at path (--web.config.file) as the start
// does, before anything starts, with an error naming the flag and the file, and warns to
// logger of what the start warns of (see checkWebConfig). --config.check calls it too, so
// that it says OK only of a web config the start takes.
func CheckWebConfig(path string, logger *slog.Logger) error {
	if err := checkWebConfig(path, logger); err != nil {
		return fmt.Errorf("--web.config.file=%s: %w", path, err)
	}
	return nil
}

// checkWebConfig refuses the web config at path before anything starts: exporter-toolkit
// reads it only once it serves, after the inputs started, and says which of its keys,
// hashes or certificates is wrong but not in which file. Beyond what the toolkit checks,
// a rate limit must let requests through: with an interval and no burst, the toolkit
// would answer every request 429, and a client CA must hold a certificate (see
// checkTLSConfig). A password hash of a bcrypt cost above maxUsualBcryptCost is warned
// of, and so are a file larger than maxUsualWebConfigBytes and a certificate out of its
// dates.
func checkWebConfig(path string, logger *slog.Logger) error {
	if err := checkWebConfigFile(path); err != nil {
		return err
	}
	// exporter-toolkit's check and set-up read the files the web config names whole, by
	// their paths: refused here, they are not read there (but for one put in place
	// between the two: the toolkit offers no way to hand it the files read).
	if c, _, err := readWebConfig(path); err == nil {
		if err := checkTLSFiles(&c.TLSConfig); err != nil {
			return err
		}
	}
	if err := web.Validate(path); err != nil {
		// The toolkit's error of a password that is no bcrypt hash names neither the key
		// nor the user.
		if c, _, rerr := readWebConfig(path); rerr == nil {
			if _, bad := readUsers(c); bad != nil {
				var errs []error
				for _, user := range slices.Sorted(maps.Keys(bad)) {
					errs = append(errs, fmt.Errorf("%w: give its bcrypt hash, as htpasswd -nBC 10 \"\" | tr -d ':\\n' prints it", bad[user]))
				}
				return errors.Join(errs...)
			}
		}
		return err
	}
	// Read again, as the watch reads it: saved in between, it is held to what the toolkit
	// takes all the same.
	c, text, err := readWebConfig(path)
	if err != nil {
		return err
	}
	if setsNothing(c) {
		logger.Warn("the web config sets nothing (it is empty, comments alone, or empty sections and values of no effect): the exporter is served over plain HTTP without a password, as without --web.config.file; give tls_server_config or basic_auth_users, or leave the flag out")
	}
	if size := len(text); size > maxUsualWebConfigBytes {
		logger.Warn("the web config is read and parsed again for every request, before any password is checked, taking a core about a millisecond per 64 KiB of it: put certificates and CAs in files (cert_file, key_file, client_ca_file) rather than inline (cert, key, client_ca), which are read once while they are unchanged",
			"bytes", size)
	}
	if err := checkTLSConfig(&c.TLSConfig, time.Now(), logger); err != nil {
		return err
	}
	if rl := c.RateLimiterConfig; rl.Interval > 0 && rl.Burst < 1 {
		return fmt.Errorf("rate_limit: burst %d lets no request through: give the requests let through at once, at least 1", rl.Burst)
	}
	warnCostlyHashes(costlyHashes(c), nil, logger)
	return nil
}

// costlyHashes are the users of c whose password hash is of a bcrypt cost above
// maxUsualBcryptCost, with their hash.
func costlyHashes(c *web.Config) map[string]string {
	costly := map[string]string{}
	for user, hash := range c.Users {
		if cost, _ := bcrypt.Cost([]byte(hash)); cost > maxUsualBcryptCost {
			costly[user] = string(hash)
		}
	}
	return costly
}

// warnCostlyHashes warns of each user of costly whose hash is not the one known has.
func warnCostlyHashes(costly, known map[string]string, logger *slog.Logger) {
	for _, user := range slices.Sorted(maps.Keys(costly)) {
		if hash, ok := known[user]; ok && hash == costly[user] {
			continue
		}
		cost, _ := bcrypt.Cost([]byte(costly[user]))
		logger.Warn("basic_auth_users: a password hash of this bcrypt cost takes a core half a second or more (twice as long for each step past 12) each time a password not seen before is checked: every wrong one, and a scraper's after a start or after wrong ones pushed it out of the cache; scrapes may time out while passwords are guessed. 10 is usual",
			"user", user, "cost", cost)
	}
}

// checkTLSConfig refuses a client CA file (or client_ca) of c that holds no certificate
// (see checkClientCAs). And it warns, at now, of a certificate expired or not valid yet,
// which every client that verifies it refuses (telling only the client, while the
// exporter's log tells of a client that refused the handshake). web.Validate loaded the
// certificate and key.
func checkTLSConfig(c *web.TLSConfig, now time.Time, logger *slog.Logger) error {
	if c.TLSCertPath == "" && c.TLSCert == "" {
		return nil
	}
	if err := checkClientCAs(c); err != nil {
		return err
	}
	config, err := tlsConfigOf(*c, readTLSFile)
	if err != nil {
		return err
	}
	cert, err := config.GetCertificate(nil)
	if err != nil {
		return err
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return err
		}
	}
	var state string
	switch {
	case now.After(leaf.NotAfter):
		state = "has expired"
	case now.Before(leaf.NotBefore):
		state = "is not valid yet (or this machine's clock is behind)"
	default:
		return nil
	}
	logger.Warn("tls_server_config: the certificate "+state+": clients that verify it refuse every handshake (logged as TLS handshakes failed: the client refused the exporter's certificate)",
		"cert_file", c.TLSCertPath, "not_before", leaf.NotBefore, "not_after", leaf.NotAfter)
	return nil
}

// checkClientCAs refuses a client CA file (or client_ca) of c that holds no certificate
// (the key, a DER file): exporter-toolkit takes it as a pool of none, which refuses every
// client certificate as of an unknown authority, and says nothing. The start checks it,
// and so does each load of the TLS config after a file changed (see tlsConfigs).
func checkClientCAs(c *web.TLSConfig) error {
	cas, what := []byte(c.ClientCAsText), "client_ca"
	if c.ClientCAs != "" {
		text, err := readTLSFile(c.ClientCAs)
		if err != nil {
			return fmt.Errorf("client_ca_file: %w", err)
		}
		cas, what = text, "client_ca_file "+c.ClientCAs
	}
	if (c.ClientCAs != "" || c.ClientCAsText != "") && !x509.NewCertPool().AppendCertsFromPEM(cas) {
		return fmt.Errorf("%s holds no certificate in PEM (-----BEGIN CERTIFICATE-----): every client certificate would be refused as of an unknown authority", what)
	}
	return nil
}

// maxWebConfigBytes is the size of the largest web config read, as of a rule file
// (config.MaxFileBytes; a mounted ConfigMap holds at most 1 MiB): exporter-toolkit reads
// and parses the web config whole for every request and TLS handshake, before any
// password is checked, a millisecond of a core per 64 KiB.
const maxWebConfigBytes = 1 << 20

// webConfigFileError is why the web config at path, of info, is not read: it is no
// regular file (exporter-toolkit would wait, at the start and in every request and
// handshake, for a FIFO's writer, and read a device such as /dev/zero without end), or
// it holds more than maxWebConfigBytes. nil if it may be read.
func webConfigFileError(path string, info os.FileInfo) error {
	if info.IsDir() {
		return fmt.Errorf("the web config %s is a directory: give the file in it", path)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("the web config %s is not a regular file but %s: it is read for every request, and a FIFO or device would hold each; give a file", path, filestat.TypeName(info.Mode()))
	}
	if info.Size() > maxWebConfigBytes {
		return fmt.Errorf("the web config %s holds %d bytes, past the %d a web config may hold: it is read and parsed whole for every request; put certificates and CAs in files (cert_file, key_file, client_ca_file)", path, info.Size(), maxWebConfigBytes)
	}
	return nil
}

// maxTLSFileBytes is the size of the largest certificate, key or client CA file the web
// config names that is read, as of a Kubernetes Secret (at most 1 MiB); the Mozilla
// bundle of every public CA is some 200 KiB. exporter-toolkit would read a file of any size
// whole (one over 1 MiB and no longer than it, at every handshake after a change), and
// a FIFO or device without end.
const maxTLSFileBytes = 1 << 20

// tlsFileError is why a certificate, key or client CA file at path, which the web config
// names, of info, is not read: it is no regular file, or it holds more than
// maxTLSFileBytes. nil if it may be read.
func tlsFileError(path string, info os.FileInfo) error {
	if !info.Mode().IsRegular() {
		return fmt.Errorf("the file %s is not a regular file but %s: it is read at the start and again once it changed, and a FIFO or device would hold the handshakes; give a file", path, filestat.TypeName(info.Mode()))
	}
	if info.Size() > maxTLSFileBytes {
		return fmt.Errorf("the file %s holds %d bytes, past the %d a certificate, key or client CA file may hold", path, info.Size(), maxTLSFileBytes)
	}
	return nil
}

// checkTLSFiles is tlsFileError of each file c names as it is now, with its key.
func checkTLSFiles(c *web.TLSConfig) error {
	for _, f := range [...]struct{ key, path string }{{"cert_file", c.TLSCertPath}, {"key_file", c.TLSKeyPath}, {"client_ca_file", c.ClientCAs}} {
		if f.path == "" {
			continue
		}
		if info, err := os.Stat(f.path); err == nil {
			if err := tlsFileError(f.path, info); err != nil {
				return fmt.Errorf("tls_server_config: %s: %w", f.key, err)
			}
		}
	}
	return nil
}

// checkWebConfigFile is webConfigFileError of the web config at path as it is now; nil
// when it cannot be looked at (reading it tells why).
func checkWebConfigFile(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return webConfigFileError(path, info)
}

// maxUsualWebConfigBytes is the size of the largest web config the start does not warn
// of: exporter-toolkit parses it for each request, about 15 µs per KiB, which at this
// size is several times what the rest of a small request costs.
const maxUsualWebConfigBytes = 16 << 10

// maxUsualBcryptCost is the highest cost of a password hash the start does not warn of:
// a check at cost 12 takes a quarter of a second of a core, at 10 a sixteenth.
const maxUsualBcryptCost = 12

// serveOn serves l with srv until it is closed, through exporter-toolkit, which reads the
// web config of flags (TLS, basic auth) before it serves, again for each request, and for
// each TLS handshake unless neither it nor its files changed (see toolkit). What the
// toolkit logs names the file, and its error for each request once the file no longer
// parses ("yaml: line 1: ...", which could be the rule file's) goes to configErrors, which
// counts it and logs some.
func serveOn(l net.Listener, srv *http.Server, flags *web.FlagConfig, configErrors *webConfigErrors, logger *slog.Logger) error {
	if f := flags.WebConfigFile; f == nil || *f == "" {
		return web.Serve(servePlain(l, srv), srv, flags, logger)
	}
	logger = logger.With("web_config", *flags.WebConfigFile)
	t, err := setUpToolkit(l.Addr(), srv.Handler, flags, configErrors, slog.New(toolkitLog{Handler: logger.Handler(), errors: configErrors}))
	if err != nil {
		return err
	}
	defer t.close()
	return t.serve(l, srv)
}

// listen opens every socket to serve before any is served, so that one that cannot be
// opened (an address taken) fails the start with nothing served: systemd's sockets with
// --web.systemd-socket, else one per --web.listen-address, a vsock one for
// vsock://:port as exporter-toolkit reads it. Each is then served by an http.Server of
// its own: exporter-toolkit serves several with one, whose handler and TLS config it
// sets up from one goroutine per socket when a web config file is given, racing. A socket
// of systemd's that is not a stream listener is warned of to logger.
func listen(flags *web.FlagConfig, logger *slog.Logger) ([]net.Listener, error) {
	if flags.WebSystemdSocket != nil && *flags.WebSystemdSocket {
		ls, err := activation.Listeners()
		if err != nil {
			return nil, fmt.Errorf("--web.systemd-socket: %w", err)
		}
		// A socket systemd passed that is not a stream listener is nil here.
		passed := len(ls)
		if ls = slices.DeleteFunc(ls, func(l net.Listener) bool { return l == nil }); len(ls) == 0 {
			return nil, errors.New("--web.systemd-socket: systemd passed no listening socket")
		}
		if n := passed - len(ls); n > 0 {
			logger.Warn("--web.systemd-socket: systemd passed sockets that are not stream listeners (a socket unit's ListenDatagram=, ListenFIFO=, or an Accept=yes connection): not served; syslog inputs open their own sockets",
				"not_served", n, "served", len(ls))
		}
		return ls, nil
	}
	if flags.WebListenAddresses == nil || len(*flags.WebListenAddresses) == 0 {
		return nil, errors.New("no --web.listen-address")
	}
	if err := overlapping(*flags.WebListenAddresses); err != nil {
		return nil, err
	}
	var ls []net.Listener
	for _, addr := range *flags.WebListenAddresses {
		l, err := listenOn(addr)
		if err != nil {
			closeAll(ls)
			return nil, listenAddressError(addr, err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// CheckListenAddresses refuses, as the start does, each --web.listen-address of flags
// that cannot be listened on as written (see parseListenAddress), without opening a
// socket: --config.check calls it, which must not fail for an address the running
// exporter holds. The addresses are not looked at with --web.systemd-socket, which the
// start serves instead.
func CheckListenAddresses(flags *web.FlagConfig) error {
	if (flags.WebSystemdSocket != nil && *flags.WebSystemdSocket) || flags.WebListenAddresses == nil {
		return nil
	}
	var errs []error
	for _, addr := range *flags.WebListenAddresses {
		if _, _, err := parseListenAddress(addr); err != nil {
			errs = append(errs, listenAddressError(addr, err))
		}
	}
	errs = append(errs, overlapping(*flags.WebListenAddresses))
	return errors.Join(errs...)
}

// overlapping refuses each address of addrs that the process could not listen on beside
// an earlier one: the same port on the same host, or on any host where either is a
// wildcard, since Go listens on a wildcard address (":9907", "0.0.0.0:9907") dual-stack,
// on the port of every address. A vsock port is taken on every CID, and is apart from
// TCP's ports. A host given by name is compared as written, as the check looks nothing
// up; port 0 and addresses parseListenAddress refuses are left out.
func overlapping(addrs []string) error {
	type bound struct {
		addr, host string
		ip         netip.Addr // invalid for a host given by name
		port       string
		vsock      bool // a vsock port, of every CID; apart from TCP's ports
	}
	var seen []bound
	var errs []error
	for _, addr := range addrs {
		vsockPort, isVsock, err := parseListenAddress(addr)
		if err != nil {
			continue
		}
		b := bound{addr: addr, port: strconv.FormatUint(uint64(vsockPort), 10), vsock: isVsock}
		if !isVsock {
			var port string
			b.host, port, _ = net.SplitHostPort(addr)
			n, _ := net.LookupPort("tcp", port)
			b.port = strconv.Itoa(n)
			if ip, err := netip.ParseAddr(b.host); err == nil {
				b.ip = ip.Unmap()
			}
		}
		if b.port == "0" {
			continue
		}
		wild := func(b bound) bool { return b.host == "" || (b.ip.IsValid() && b.ip.IsUnspecified()) }
		for _, o := range seen {
			if o.vsock == b.vsock && o.port == b.port && (o.host == b.host || wild(o) || wild(b) || (b.ip.IsValid() && o.ip == b.ip)) {
				errs = append(errs, listenAddressError(addr, fmt.Errorf("its port is taken by --web.listen-address=%s, given before it: a process cannot listen on both", o.addr)))
				break
			}
		}
		seen = append(seen, b)
	}
	return errors.Join(errs...)
}

func listenAddressError(addr string, err error) error {
	return fmt.Errorf("--web.listen-address=%s: %w", addr, err)
}

// listenerCount is how many listeners listen opens by flags, those systemd passes
// counted as one.
func listenerCount(flags *web.FlagConfig) int {
	if (flags.WebSystemdSocket != nil && *flags.WebSystemdSocket) || flags.WebListenAddresses == nil {
		return 1
	}
	return max(len(*flags.WebListenAddresses), 1)
}

// listenOn opens the socket of one --web.listen-address (see parseListenAddress).
func listenOn(addr string) (net.Listener, error) {
	port, isVsock, err := parseListenAddress(addr)
	switch {
	case err != nil:
		return nil, err
	case isVsock:
		return vsock.Listen(port, nil)
	}
	return net.Listen("tcp", addr)
}

// parseListenAddress refuses what of a --web.listen-address can be told wrong without
// opening its socket, and returns the port of a vsock://:port one (isVsock), as
// exporter-toolkit reads it. An address without its port ("", ":", "host:", what a
// template whose port value was left empty makes) is refused: net.Listen would take it
// for port 0 and listen on a port the system chose, where no scraper looks. A TCP port is
// read as net.Listen reads it (a number, or a service name); the host is not looked up,
// which would depend on the machine the check runs on.
func parseListenAddress(addr string) (vsockPort uint32, isVsock bool, err error) {
	if !strings.HasPrefix(addr, "vsock://") {
		_, port, err := net.SplitHostPort(addr)
		switch {
		case addr == "" || (err == nil && port == ""):
			return 0, false, errors.New("no port: give one, as :9907 (:0 for a port the system chooses)")
		case err != nil:
			return 0, false, err
		}
		_, err = net.LookupPort("tcp", port)
		return 0, false, err
	}
	u, err := url.Parse(addr)
	if err != nil {
		return 0, true, err
	}
	_, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return 0, true, err
	}
	n, err := strconv.ParseUint(port, 10, 32)
	if err != nil {
		return 0, true, fmt.Errorf("vsock port %q: %w", port, err)
	}
	return uint32(n), true, nil
}

func closeAll(ls []net.Listener) {
	for _, l := range ls {
		_ = l.Close()
	}
}

// newHTTPServer is the server of h, with the timeouts and limits of o. What net/http
// itself logs (a client's failed TLS handshake, a panic in a handler, an accept error)
// goes to o.Logger, in --log.format, rather than to stderr in the log package's format,
// which a JSON log's reader cannot parse: see serverLog.
func newHTTPServer(h http.Handler, o Options) *http.Server {
	srv := &http.Server{
		Handler:           reached(h),
		ErrorLog:          log.New(&serverLog{logger: o.Logger}, "", 0),
		ReadHeaderTimeout: headerTimeout(o.ReadTimeout),
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: maxStreams, MaxReadFrameSize: maxFrameBytes,
			MaxReceiveBufferPerConnection: maxBodyAhead, MaxReceiveBufferPerStream: maxBodyAhead},
	}
	// web.Serve puts exporter-toolkit's handler in front of Handler, which checks passwords
	// and answers some requests itself (401 without the right password, 429 past its rate
	// limit, 500 when the web config no longer parses): the front must come before it, so
	// it is put in front of whatever Handler is when the server starts serving, before its
	// first connection.
	srv.BaseContext = func(net.Listener) context.Context {
		srv.Handler = newFront(srv.Handler, o.Logger)
		if o.conns != nil {
			srv.Handler = o.conns.handler(srv.Handler)
		}
		return context.Background()
	}
	if o.conns != nil {
		srv.ConnState, srv.ConnContext = o.conns.track, o.conns.connContext
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){"h2": o.conns.serveHTTP2}
		srv.RegisterOnShutdown(o.conns.goAwayAll)
	}
	if o.IdleTimeout == 0 {
		srv.IdleTimeout = -1 // net/http would take the read timeout
	}
	return srv
}

// serverLog writes what net/http logs to the exporter's logger, at error level, but for
// what a client's connection did wrong, which net/http logs once per connection: failed
// TLS handshakes (a port scan, or a load balancer's TCP check every few seconds, would
// fill the log with them), and HTTP/2 connections ended for the client's error (what is
// not HTTP/2 after negotiating it, a frame out of place, no SETTINGS in time), which any
// client may send over and over. Those are logged as the limiters log their refusals, the
// first and every thousandth of each kind, with the count and the last one's text; failed
// handshakes by their cause (handshakeCauses), so that a TCP check's, logged first, does
// not hide a scraper's for a thousand more. TLS handshakes sent to a plain HTTP listener,
// which net/http answers 400 without logging, are counted and logged the same way (see
// plainConn). Each is counted, in logwindow_tls_handshake_errors_total (handshakeErrors).
// A handshake refused because the web config does not load is no client's failure:
// webConfigErrors counted and logged it, and it is left out here, as is one whose
// connection the exporter closed itself.
type serverLog struct {
	logger     *slog.Logger
	handshakes [len(handshakeCauses)]atomic.Int64
	http2      atomic.Int64
	// plainTLS counts the connections to a plain HTTP listener that opened with a TLS
	// handshake (see plainConn).
	plainTLS atomic.Int64
}

// handshakeCauses are the causes of a failed TLS handshake told apart, each with its
// label value in logwindow_tls_handshake_errors_total and the starts (or, where starting
// with "*", the ends) of the errors net/http logs of them; the last, with none, is every
// other.
var handshakeCauses = [...]struct {
	label, cause string
	errors       []string
}{
	{"closed", "the client closed the connection, or sent nothing in time, before the handshake's end (a port scan, a TCP health check)",
		[]string{"EOF", "*connection reset by peer", "*i/o timeout", "*broken pipe"}},
	{"plain_http", "the client spoke plain HTTP to the TLS port (answered 400): its URL must be https://, or a Prometheus scrape config's scheme: https",
		[]string{"client sent an HTTP request to an HTTPS server"}},
	{"not_tls", "the client sent what is not TLS",
		[]string{"tls: first record does not look like a TLS handshake", "tls: unsupported SSLv2 handshake received"}},
	{"client_alert", "the client refused the exporter's certificate, or the handshake, with the alert in last: a bad certificate or unknown authority alert is a client that does not trust the exporter's certificate (expired, of a CA it does not know, or not of the name it asked for), and so is, over TLS 1.3, a bad record MAC, which is how an OpenSSL client's refusal (curl, Python, openssl s_client) reaches the exporter",
		[]string{"remote error: ", "local error: tls: bad record MAC"}},
	{"client_certificate", "the client gave no client certificate, or one the web config's client_ca_file or client_allowed_sans does not accept",
		[]string{"tls: client didn't provide a certificate", "tls: failed to verify certificate", "tls: failed to parse client certificate",
			"tls: invalid signature by the client certificate", "client_allowed_sans:", "could not find allowed SANs", "error parsing client certificate"}},
	{"no_shared_parameters", "the client and the web config share no TLS version, cipher suite or curve: see its min_version, max_version, cipher_suites and curve_preferences",
		[]string{"tls: client offered only unsupported versions", "tls: no cipher suite supported", "tls: no key exchanges supported", "tls: client offered only incompatible point formats"}},
	{"other", "another cause, in last", nil},
}

// tlsToPlainCause is the label value in logwindow_tls_handshake_errors_total of the
// handshakes sent to a plain HTTP listener (see plainConn).
const tlsToPlainCause = "tls_to_plain_port"

// handshakeErrors are the serverLogs of the servers of every listener, which count the
// failed TLS handshakes of their clients: the collector of
// logwindow_tls_handshake_errors_total, by cause, summed over the listeners, every cause
// sent, 0 or not, so that a rate of it is there from the start.
type handshakeErrors []*serverLog

// Describe sends nothing: an unchecked collector, as the scrape limiter is.
func (h handshakeErrors) Describe(chan<- *prometheus.Desc) {}

// Collect sends logwindow_tls_handshake_errors_total.
func (h handshakeErrors) Collect(ch chan<- prometheus.Metric) {
	for i, c := range handshakeCauses {
		var n int64
		for _, l := range h {
			n += l.handshakes[i].Load()
		}
		ch <- prometheus.MustNewConstMetric(handshakeErrorsDesc, prometheus.CounterValue, float64(n), c.label)
	}
	var n int64
	for _, l := range h {
		n += l.plainTLS.Load()
	}
	ch <- prometheus.MustNewConstMetric(handshakeErrorsDesc, prometheus.CounterValue, float64(n), tlsToPlainCause)
}

var handshakeErrorsDesc = selfmetric.TLSHandshakeErrors.Desc()

// handshakeCause is the index in handshakeCauses of err, what net/http logged of a failed
// handshake after its client's address.
func handshakeCause(err string) int {
	for i, c := range handshakeCauses {
		if slices.ContainsFunc(c.errors, func(e string) bool {
			if end, ok := strings.CutPrefix(e, "*"); ok {
				return strings.HasSuffix(err, end)
			}
			return strings.HasPrefix(err, e)
		}) {
			return i
		}
	}
	return len(handshakeCauses) - 1
}

// http2ClientErrors start what net/http's HTTP/2 server logs of a connection it ends for
// what its client sent, or did not send in time.
var http2ClientErrors = []string{
	"http2: server: error reading preface from client",
	"http2: server connection error from",
	"http2: server closing client connection",
	"http2: received GOAWAY",
	"timeout waiting for SETTINGS frames from",
}

func (l *serverLog) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	switch {
	case strings.HasPrefix(msg, "http: TLS handshake error from "):
		// "http: TLS handshake error from <address>: <error>"
		_, err, _ := strings.Cut(strings.TrimPrefix(msg, "http: TLS handshake error from "), ": ")
		if strings.HasPrefix(err, webConfigRefused) {
			return len(p), nil // webConfigErrors counted and logged it
		}
		if strings.HasSuffix(err, net.ErrClosed.Error()) {
			// The exporter closed the connection: connLimiter, to stay within
			// --web.max-connections (which it logs), or the shutdown.
			return len(p), nil
		}
		i := handshakeCause(err)
		l.warnSome(&l.handshakes[i], "TLS handshakes failed: "+handshakeCauses[i].cause+"; the first and every 1000th of this cause are logged",
			"failed", "last", msg)
	case slices.ContainsFunc(http2ClientErrors, func(prefix string) bool { return strings.HasPrefix(msg, prefix) }):
		l.warnSome(&l.http2, "HTTP/2 connections ended for their client's error (not HTTP/2, a frame out of place or past 16 KiB, no SETTINGS in time); the first and every 1000th are logged",
			"ended", "last", msg)
	default:
		l.logger.Error(msg)
	}
	return len(p), nil
}

// warnSome counts one more of a kind in n and warns of it, msg with the count as counted
// and args, for the first and every thousandth only.
func (l *serverLog) warnSome(n *atomic.Int64, msg, counted string, args ...any) {
	if c := n.Add(1); c == 1 || c%1000 == 0 {
		l.logger.Warn(msg, append([]any{counted, c}, args...)...)
	}
}

// tlsToPlain warns, as of a failed handshake, of a client that opened a TLS handshake on a
// plain HTTP listener: net/http answers it 400 without a word, and the client says only
// that the answer is not TLS ("wrong version number", "first record does not look like a
// TLS handshake").
func (l *serverLog) tlsToPlain(client net.Addr) {
	l.warnSome(&l.plainTLS, "TLS handshakes sent to the plain HTTP port (answered 400): the client's URL must be http:// (a Prometheus scrape config's scheme: http, the default), or the exporter be given a web config (--web.config.file) with a tls_server_config; the first and every 1000th are logged",
		"sent", "client", client.String())
}

// plainListener is a listener served plain HTTP, whose connections are looked at for a
// client that speaks TLS to it (see plainConn).
type plainListener struct {
	net.Listener
	log *serverLog
}

// servePlain wraps l, to be served plain HTTP by srv, in a plainListener that logs to
// srv's serverLog; l as it is when srv logs elsewhere (a server not of newHTTPServer).
func servePlain(l net.Listener, srv *http.Server) net.Listener {
	log, ok := srv.ErrorLog.Writer().(*serverLog)
	if !ok {
		return l
	}
	return plainListener{Listener: l, log: log}
}

func (l plainListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	pc := &plainConn{Conn: c, log: l.log}
	if _, ok := c.(closeWriter); ok {
		// net/http half-closes a connection whose request body it did not read, so that
		// the client reads the answer before the close resets the connection.
		return plainCloseWriteConn{pc}, nil
	}
	return pc, nil
}

// closeWriter is a connection that can be half-closed, as a TCP one.
type closeWriter interface{ CloseWrite() error }

// plainConn is a connection to a plain HTTP listener, whose first read is looked at for
// the start of a TLS record carrying a handshake, which no HTTP request starts with: a
// ClientHello. Only the first read is looked at, which holds a client's first write but
// on a connection broken up very small, and the reads after it cost a flag's test.
type plainConn struct {
	net.Conn
	log *serverLog
	// looked is set by the first read of a byte. net/http reads a connection from one
	// goroutine at a time, and hands it on after a read with a lock: no race.
	looked bool
}

func (c *plainConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.looked && n > 0 {
		c.looked = true
		// A TLS record: content type 22 (handshake), then a version 3.x (SSL 3.0 to TLS 1.3).
		if n >= 3 && p[0] == 0x16 && p[1] == 0x03 && p[2] <= 0x0f {
			c.log.tlsToPlain(c.RemoteAddr())
		}
	}
	return n, err
}

// plainCloseWriteConn is a plainConn over a connection that can be half-closed, which
// net/http must still see it can.
type plainCloseWriteConn struct{ *plainConn }

func (c plainCloseWriteConn) CloseWrite() error { return c.Conn.(closeWriter).CloseWrite() }

// shutdown stops the servers: requests in flight get shutdownGrace to end, connections
// that sent none yet are closed at once (conns tracks them; without it Shutdown waits
// until each is 5 s old), and what is left after the grace is closed: a client that
// neither sends nor reads is no failure of the exporter's, whose exit status says how it
// stopped.
func shutdown(servers []*http.Server, conns *connLimiter, logger *slog.Logger) error {
	ctx, stop := context.WithTimeout(context.Background(), shutdownGrace)
	defer stop()
	done := make(chan error, len(servers))
	for _, srv := range servers {
		go func() { done <- srv.Shutdown(ctx) }()
	}
	if conns != nil {
		conns.closeFresh()
	}
	var err error
	late := false
	for range servers {
		e := <-done
		if errors.Is(e, context.DeadlineExceeded) {
			late = true
			continue
		}
		err = cmp.Or(err, e)
	}
	if late {
		logger.Warn("connections still open after the shutdown grace: closed", "grace", shutdownGrace)
		for _, srv := range servers {
			err = cmp.Or(err, srv.Close())
		}
	}
	return err
}

// NewRegistry holds the collectors of the self-metrics a scrape of /metrics reads; the
// rule families are written by the pipeline's collector next to them.
func NewRegistry(coll *rulescrape.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		coll,
		versioncollector.NewCollector(selfmetric.Namespace),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// scrapeCost is the cost a scrape of coll is charged by the limiter: its request read
// once (exporter.Negotiate), its rules' reads' cost told when asked (ScrapeCost).
func scrapeCost(coll *rulescrape.Collector) func(*http.Request) func() (int64, bool) {
	return func(r *http.Request) func() (int64, bool) {
		keep, format := exporter.Negotiate(r)
		return func() (int64, bool) { return coll.ScrapeCost(keep, format) }
	}
}

// limited serves h, the metrics, within lim, but a HEAD, for which h reads nothing
// (exporter.Handler): charged as a scrape, it would wait for a place or for room, be
// refused 503, or put a waiting scrape out of its place, for headers alone. So is a
// request whose query is not read whole, which h refuses at once (exporter.QueryError):
// priced, it would cost a whole scrape, its filters lost.
func limited(lim *scrapeLimiter, h http.Handler) http.Handler {
	scrapes := lim.handler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead || exporter.QueryError(r) != nil {
			h.ServeHTTP(w, r)
			return
		}
		scrapes.ServeHTTP(w, r)
	})
}

// NewMux serves metrics, the status page with its line tester and the lifecycle endpoints
// of p.
func NewMux(p *pipeline.Pipeline, coll *rulescrape.Collector, reg *prometheus.Registry, o Options) *http.ServeMux {
	logger := o.Logger
	mux := http.NewServeMux()
	var metrics http.Handler = exporter.Handler(coll, reg, slog.NewLogLogger(logger.Handler(), slog.LevelError))
	var admitPage func(http.Handler) http.Handler
	if o.MaxRequests > 0 {
		lim := newScrapeLimiter(o.MaxRequests, scrapeStall, scrapeWait, logger).withBudget(o.MaxScrapeBytes, scrapeCost(coll))
		reg.MustRegister(lim)
		metrics = limited(lim, metrics)
		admitPage = newScrapeLimiter(o.MaxRequests, scrapeStall, scrapeWait, logger).handler
	}
	mux.Handle(o.MetricsPath, metrics)
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Healthy.")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !p.Ready() {
			http.Error(w, "Not ready: inputs are still being opened.", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "Ready.")
	})
	reloads := o.reloads
	if reloads == nil {
		reloads = newReloader(func() error { return Reload(p, logger) }, logger)
	}
	waiting := make(chan struct{}, maxReloadWaiting)
	mux.Handle("/-/reload", sameOrigin(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !o.Lifecycle:
			http.Error(w, "Lifecycle API is not enabled (--web.enable-lifecycle).", http.StatusForbidden)
		case r.Method != http.MethodPost && r.Method != http.MethodPut:
			w.Header().Set("Allow", "POST, PUT")
			http.Error(w, "Use POST to reload.", http.StatusMethodNotAllowed)
		default:
			select {
			case waiting <- struct{}{}:
				defer func() { <-waiting }()
			default:
				w.Header().Set("Retry-After", "1")
				http.Error(w, "Too many reloads asked for at once: the one asked for next will read the file; retry once it has run.", http.StatusServiceUnavailable)
				return
			}
			if err := reloads.Reload(r.Context()); err != nil {
				// A refused rule file is the client's to fix; a panic is the exporter's.
				code := http.StatusBadRequest
				if errors.As(err, new(*pipeline.ReloadPanic)) {
					code = http.StatusInternalServerError
				}
				http.Error(w, err.Error(), code)
				return
			}
			fmt.Fprintln(w, "Reloaded.")
		}
	}))
	status.Register(mux, status.Options{
		Name:        o.Name,
		Source:      p,
		Gatherer:    reg,
		Windows:     coll,
		MetricsPath: o.MetricsPath,
		Logger:      logger,
		LineTester:  o.LineTester,
		Admit:       admitPage,
	})
	return mux
}

// maxReloadWaiting bounds the POST /-/reload requests in a reload at once, the one
// running it and those waiting to share the next: each holds its connection, which
// --web.max-connections cannot take back while its handler runs, and a slow reload
// (thousands of rules, a rule file on a hung file system) under hundreds of requests
// filled the connections and kept scrapers out. Those waiting already share one reload,
// so a request more is told to retry rather than made to wait.
const maxReloadWaiting = 16

// sameOrigin serves h but for a POST a browser sends from another site's page (a form
// posted to the exporter, with the basic auth credentials the browser holds for it),
// which gets 403: what the browser says of the request's origin (Sec-Fetch-Site, else
// Origin against Host) must be the exporter's. curl and scripts, which say nothing, are
// served.
func sameOrigin(h http.HandlerFunc) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Refused: a browser sent this request from another site's page.", http.StatusForbidden)
	}))
	return p.Handler(h)
}

// reservedPaths are served by the exporter itself; the metrics path may not shadow them.
var reservedPaths = []string{"/", "/-/healthy", "/-/ready", "/-/reload", status.ExplainPath}

// CheckTelemetryPath refuses a metrics path the mux cannot serve, which would otherwise
// panic after the inputs started: it registers the path next to the reserved ones on a
// scratch mux, which panics on a pattern it rejects or a conflict. It refuses too a path
// no scraper's request reaches, which would serve the metrics nowhere: one the mux
// redirects requests for (not clean), or holding a query or fragment, which a scraper
// sends apart from the path; and one holding a wildcard of the mux's patterns, which
// would serve them at every path of its shape.
func CheckTelemetryPath(path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%q cannot be served next to %s: %v", path, strings.Join(reservedPaths, ", "), r)
		}
	}()
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("%q must start with /", path)
	}
	if strings.ContainsAny(path, "?#") {
		return fmt.Errorf("%q holds a query or fragment (? or #), which a scraper sends apart from the path: give the path alone", path)
	}
	// As the mux cleans a request's path, keeping a trailing slash.
	cleaned := pathpkg.Clean(path)
	if strings.HasSuffix(path, "/") && cleaned != "/" {
		cleaned += "/"
	}
	if cleaned != path {
		return fmt.Errorf("%q is not a clean path: requests for it are redirected to %q, where nothing would be served; give %q", path, cleaned, cleaned)
	}
	if strings.ContainsAny(path, "{}") {
		return fmt.Errorf("%q holds { or }, which the mux reads as a wildcard: the metrics would be served at every path of its shape", path)
	}
	if slices.Contains(reservedPaths, path) {
		return fmt.Errorf("%q is the exporter's own path, beside %s: give another, as /metrics", path, strings.Join(slices.DeleteFunc(slices.Clone(reservedPaths), func(p string) bool { return p == path }), ", "))
	}
	mux := http.NewServeMux()
	for _, p := range append(slices.Clone(reservedPaths), path) {
		mux.Handle(p, http.NotFoundHandler())
	}
	return nil
}

// Reload is the one reload path shared by SIGHUP, POST /-/reload and the file watch,
// through a reloader.
func Reload(p *pipeline.Pipeline, logger *slog.Logger) error {
	if err := p.ReloadFile(); err != nil {
		if ins := (*pipeline.InputsNotStarted)(nil); errors.As(err, &ins) {
			logger.Error("reload failed: the new configuration is in force, but inputs did not start; they are tried again, then less and less often", "retry_in", pipeline.FirstInputRetry, "err", ins.Err)
			return err
		}
		if panicked := (*pipeline.ReloadPanic)(nil); errors.As(err, &panicked) {
			logger.Error("reload failed; the previous configuration keeps running", "err", err, "stack", string(panicked.Stack))
			return err
		}
		logger.Error("reload failed; the previous configuration keeps running", "err", err)
		return err
	}
	logger.Info("configuration reloaded")
	return nil
}
