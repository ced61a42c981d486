package server

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// TestTLSKeptAliveConnectionFollowsWebConfig: a connection kept alive from before the web
// config, or a file it names, changed is held to the new config at its next request, as
// a new connection is at its handshake: a client whose CA was taken out of
// client_ca_file, whose SAN was taken out of client_allowed_sans, or whose TLS version is
// now below min_version is no longer served on it; certificates are otherwise checked at
// handshakes only, and a scraper keeps its connection for as long as it scrapes. A change
// that still accepts the client (the exporter's certificate renewed, a CA added) leaves
// it served on the connection it has, over HTTP/1.1 and HTTP/2.
func TestTLSKeptAliveConnectionFollowsWebConfig(t *testing.T) {
	const webConfig = "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n"
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, f *tlsFiles, caPEM []byte)
		// client is what the client asks for, beyond its certificate.
		client  *tls.Config
		refused bool
	}{
		{"CA taken out of client_ca_file", func(t *testing.T, f *tlsFiles, _ []byte) {
			other, _, _ := newCA(t, "other CA")
			f.write(t, "ca.pem", other)
		}, &tls.Config{}, true},
		{"SAN out of client_allowed_sans", func(t *testing.T, f *tlsFiles, _ []byte) {
			f.write(t, "web.yml", []byte(webConfig+"  client_allowed_sans: [other.example]\n"))
		}, &tls.Config{}, true},
		{"min_version raised", func(t *testing.T, f *tlsFiles, _ []byte) {
			f.write(t, "web.yml", []byte(webConfig+"  min_version: TLS13\n"))
		}, &tls.Config{MaxVersion: tls.VersionTLS12}, true},
		{"exporter's certificate renewed", func(t *testing.T, f *tlsFiles, _ []byte) {
			cert, key := newCert(t, "second", 0)
			f.write(t, "cert.pem", cert)
			f.write(t, "key.pem", key)
		}, &tls.Config{}, false},
		{"CA added to client_ca_file", func(t *testing.T, f *tlsFiles, caPEM []byte) {
			other, _, _ := newCA(t, "other CA")
			f.write(t, "ca.pem", append(other, caPEM...))
		}, &tls.Config{}, false},
		{"SAN kept in client_allowed_sans", func(t *testing.T, f *tlsFiles, _ []byte) {
			f.write(t, "web.yml", []byte(webConfig+"  client_allowed_sans: [other.example, scraper.example]\n"))
		}, &tls.Config{}, false},
	} {
		for _, proto := range []string{"HTTP/1.1", "HTTP/2.0"} {
			t.Run(tc.name+"/"+proto, func(t *testing.T) {
				f := newTLSFiles(t, "", "")
				f.write(t, "web.yml", []byte(webConfig))
				caPEM, ca, caKey := newCA(t, "scrapers' CA")
				f.write(t, "ca.pem", caPEM)
				f.age(t, 0)
				clock := testclock.New(time.Now().Add(time.Minute))
				var logged syncbuf.Buffer
				logger := slog.New(slog.NewTextHandler(&logged, nil))
				addr := serveTLSLogged(t, f.webConfig, newWebConfigErrors(f.webConfig, logger, clock.Now), logger)
				config := tc.client.Clone()
				config.InsecureSkipVerify = true
				config.Certificates = []tls.Certificate{clientCert(t, ca, caKey, "scraper.example")}
				transport := &http.Transport{TLSClientConfig: config, ForceAttemptHTTP2: proto == "HTTP/2.0"}
				defer transport.CloseIdleConnections()
				client := &http.Client{Timeout: 5 * time.Second, Transport: transport}
				get := func() (bool, error) {
					t.Helper()
					reused, served, err := getReused(t, client, addr)
					if err == nil && served != proto {
						t.Fatalf("served %s; want %s", served, proto)
					}
					return reused, err
				}
				if _, err := get(); err != nil {
					t.Fatalf("before the change: %v", err)
				}
				if reused, err := get(); err != nil || !reused {
					t.Fatalf("before the change, again: reused %v, %v; want the connection kept alive", reused, err)
				}
				tc.change(t, f, caPEM)
				reused, err := get()
				switch {
				case tc.refused && err == nil:
					t.Errorf("after the change: served (on the connection kept alive: %v); want refused", reused)
				case !tc.refused && err != nil:
					t.Errorf("after the change: %v; want served", err)
				case !tc.refused && !reused:
					t.Error("after the change: served on a new connection; want the one kept alive")
				}
				got := logged.String()
				if tc.refused && !strings.Contains(got, "no longer accepted") {
					t.Errorf("the closed connection is not logged:\n%s", got)
				}
				if strings.Contains(got, "panic") || strings.Contains(got, "level=ERROR") {
					t.Errorf("logged an error:\n%s", got)
				}
			})
		}
	}
}

// TestTLSKeptAliveConnectionSavedInPlace: a client CA file saved in place (truncated,
// then written) may be read by a request in between, cut short: a bundle without the CA
// of a client served on a connection kept alive closed that connection, and warned that
// its client was no longer accepted, at a save that took no CA out. A connection is
// checked against files changed within racyAge of the request once they settled; one
// whose CA was taken out for good is closed then.
func TestTLSKeptAliveConnectionSavedInPlace(t *testing.T) {
	f := newTLSFiles(t, "", "")
	f.write(t, "web.yml", []byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n"))
	other, _, _ := newCA(t, "other CA")
	caPEM, ca, caKey := newCA(t, "scrapers' CA")
	bundle := append(append([]byte{}, other...), caPEM...)
	f.write(t, "ca.pem", bundle)
	f.age(t, 0)
	clock := testclock.New(time.Now())
	var logged syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	addr := serveTLSLogged(t, f.webConfig, newWebConfigErrors(f.webConfig, logger, clock.Now), logger)
	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true,
		Certificates: []tls.Certificate{clientCert(t, ca, caKey, "scraper.example")}}}
	defer transport.CloseIdleConnections()
	client := &http.Client{Timeout: 5 * time.Second, Transport: transport}
	get := func() (bool, error) {
		t.Helper()
		reused, _, err := getReused(t, client, addr)
		return reused, err
	}
	if _, err := get(); err != nil {
		t.Fatalf("at the start: %v", err)
	}
	for _, save := range []struct {
		step string
		ca   []byte
	}{
		{"the client CA file cut short", bundle[:len(other)]},
		{"saved", bundle},
		{"saved, settled", bundle},
	} {
		f.write(t, "ca.pem", save.ca)
		if save.step == "saved, settled" {
			clock.Add(racyAge)
		}
		if reused, err := get(); err != nil || !reused {
			t.Fatalf("%s: reused %v, %v; want served on the connection kept alive:\n%s", save.step, reused, err, logged.String())
		}
	}
	if strings.Contains(logged.String(), "no longer accepted") {
		t.Errorf("a save that took no CA out closed a connection:\n%s", logged.String())
	}
	f.write(t, "ca.pem", other)
	clock.Add(racyAge)
	if _, err := get(); err == nil || !strings.Contains(logged.String(), "no longer accepted") {
		t.Errorf("the CA taken out, settled: %v; want the connection kept alive closed, and the request sent again on a new one refused:\n%s", err, logged.String())
	}
}

// TestKeptAliveRequestNotHeldByALoad: the files of the web config are loaded under a
// lock, by a handshake after they changed or while they fail to load, and stamped under
// it at each request of a connection kept alive. A request waited for the lock: a
// handshake whose files were read slowly (a network file system that hangs, a flood of
// handshakes while a key does not load) held every scrape on a connection kept alive,
// which only the handshakes waited for before. A request that finds the lock held is
// served, its connection checked at a later one.
func TestKeptAliveRequestNotHeldByALoad(t *testing.T) {
	configs, k, loading, release := loadHeld(t, &tls.Config{})
	handshake := make(chan error, 1)
	go func() {
		_, err := configs.get(&tls.ClientHelloInfo{})
		handshake <- err
	}()
	<-loading
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r = r.WithContext(context.WithValue(r.Context(), keptConnKey{}, k))
	served := make(chan struct{})
	go configs.recheck(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { close(served) })).ServeHTTP(httptest.NewRecorder(), r)
	select {
	case <-served:
	case <-hung(t): // a bound, not a wait: served at once, or never while the load lasts
		t.Error("a request on a connection kept alive waited for a handshake's load")
	}
	close(release)
	if err := <-handshake; err != nil {
		t.Fatal(err)
	}
	<-served
}

// TestKeptAliveRequestNotHeldByItsLook: a request kept alive that takes the lock of the
// web config's files stamps them, and loads them when they changed: on a file system
// that hangs (a network mount) it waited for as long as the hang, with its connection,
// which a scraper's timeout then closed, where the other connections kept alive were
// served. It is served after recheckWait at most, the look going on; the requests after
// it are served at once while it lasts, and once it ended the connection is checked at
// a later request.
func TestKeptAliveRequestNotHeldByItsLook(t *testing.T) {
	configs, k, loading, release := loadHeld(t, &tls.Config{ClientAuth: tls.RequireAnyClientCert})
	// serve serves a request of the connection, and tells whether it got to the handler
	// (else its connection was closed).
	serve := func() <-chan bool {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r = r.WithContext(context.WithValue(r.Context(), keptConnKey{}, k))
		served := make(chan bool, 1)
		go func() {
			ran := false
			defer func() {
				_ = recover() // http.ErrAbortHandler, of a connection closed
				served <- ran
			}()
			configs.recheck(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true })).ServeHTTP(httptest.NewRecorder(), r)
		}()
		return served
	}
	first := serve()
	<-loading
	for i, served := range []<-chan bool{first, serve()} {
		select {
		case ran := <-served:
			if !ran {
				t.Fatalf("request %d refused; want served", i+1)
			}
		case <-hung(t): // a bound, not a wait
			t.Fatalf("request %d on a connection kept alive waited for the look at the files, which hangs", i+1)
		}
	}
	close(release)
	for !configs.mu.TryLock() { // the look ends
		runtime.Gosched()
	}
	configs.mu.Unlock()
	// The config it loaded requires a certificate, which the connection (no handshake)
	// has not given.
	if <-serve() {
		t.Error("once the look ended, the connection was not checked against the config it loaded")
	}
}

// getReused gets https://addr/ with client, and reports whether the request was sent on
// the connection of the one before, and the protocol it was served by.
func getReused(t *testing.T, client *http.Client, addr string) (reused bool, proto string, err error) {
	t.Helper()
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodGet, "https://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return reused, "", err
	}
	resp.Body.Close()
	return reused, resp.Proto, nil
}

// TestTLSWebConfigCutShortUnsettledSinceStart: a handshake's client is held to the config
// kept before a change of the files (see TestTLSWebConfigCutShortWhileSaved), but none is
// kept until the files settled: a web config written just before the start (by the
// script that starts the exporter, or a volume mounted for its container), or rewritten
// over and over by a generator, then saved in place and read cut short, before
// client_auth_type and client_ca_file, let a client without a certificate through. It is
// held to the config the start loaded until one is kept.
func TestTLSWebConfigCutShortUnsettledSinceStart(t *testing.T) {
	f, ca, caKey := newMTLSFiles(t)
	// A minute ahead, every file written has settled; the web config is dated now by it,
	// written a moment before the start.
	clock := testclock.New(time.Now().Add(time.Minute))
	f.stampNow(t, clock)
	logger := slog.New(slog.DiscardHandler)
	addr := serveTLSLogged(t, f.webConfig, newWebConfigErrors(f.webConfig, logger, clock.Now), logger)
	get := mTLSGet(t, addr, ca, caKey)
	if err := get(true); err != nil {
		t.Fatalf("a client with a certificate: %v; want served", err)
	}
	// Read in the middle of a save, a second later: cut short.
	clock.Add(time.Second)
	f.saveNow(t, clock, []byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"))
	if err := get(false); err == nil {
		t.Error("a client without a certificate was served while the web config was saved")
	}
	if err := get(true); err != nil {
		t.Errorf("a client with a certificate: %v; want served", err)
	}
}

// TestTLSWebConfigCutShortWhileSaved: exporter-toolkit loads the web config again for a
// handshake after it changed, and a web config saved in place (truncated, then written)
// may be read in between, cut short before client_auth_type and client_ca_file: the
// handshake was made with what was read, which asks no client for a certificate, and a
// client without one was served, on a connection it kept until the change settled.
// While the files changed within racyAge, unsettled, a handshake's client must be
// accepted by the config kept before the change too; once the change settled it is the
// web config, and one that asks for no client certificate is served so.
func TestTLSWebConfigCutShortWhileSaved(t *testing.T) {
	f, ca, caKey := newMTLSFiles(t)
	// A minute ahead, every file written has settled; a save is made now by it by dating
	// the file so.
	clock := testclock.New(time.Now().Add(time.Minute))
	logger := slog.New(slog.DiscardHandler)
	addr := serveTLSLogged(t, f.webConfig, newWebConfigErrors(f.webConfig, logger, clock.Now), logger)
	get := mTLSGet(t, addr, ca, caKey)
	for i, step := range []struct {
		webConfig string // "" is as it was
		settle    bool
		withCert  bool
		served    bool
	}{
		{"", false, true, true},
		{"", false, false, false},
		// Read in the middle of a save: cut short.
		{"tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n", false, false, false},
		{"", false, true, true},
		// The save settled: the web config asks for no client certificate.
		{"", true, false, true},
	} {
		if step.webConfig != "" {
			f.saveNow(t, clock, []byte(step.webConfig))
		}
		if step.settle {
			clock.Add(racyAge)
		}
		if err := get(step.withCert); (err == nil) != step.served {
			t.Errorf("step %d, client certificate %v: %v; want served %v", i, step.withCert, err, step.served)
		}
	}
}

// TestTLSClientCAReplacedUnderGenerator: a change of the TLS files is taken once it
// settled, racyAge after they were written, a handshake's client held to the config
// before it meanwhile (see TestTLSWebConfigCutShortWhileSaved). A web config a generator
// writes again every second never settles by its file's times: a client CA file replaced
// by a new CA's went on refusing every client of the new CA, for as long as the
// generator ran, and a connection kept alive of a client of the CA taken out was served.
// What the files are read as whole the same at each load for racyAge has settled; a new
// client of the CA taken out is refused all along, one kept alive once the change
// settled.
func TestTLSClientCAReplacedUnderGenerator(t *testing.T) {
	f, oldCA, oldKey := newMTLSFiles(t)
	clock := testclock.New(time.Now().Add(time.Minute)) // every file written has settled
	logger := slog.New(slog.DiscardHandler)
	addr := serveTLSLogged(t, f.webConfig, newWebConfigErrors(f.webConfig, logger, clock.Now), logger)
	oldClient := mTLSGet(t, addr, oldCA, oldKey)
	if err := oldClient(true); err != nil {
		t.Fatalf("a client of the CA before the change: %v; want served", err)
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true,
		Certificates: []tls.Certificate{clientCert(t, oldCA, oldKey, "scraper.example")}}}
	defer transport.CloseIdleConnections()
	keptAlive := &http.Client{Timeout: 5 * time.Second, Transport: transport}
	if _, _, err := getReused(t, keptAlive, addr); err != nil {
		t.Fatalf("a client of the CA before the change, kept alive: %v; want served", err)
	}
	caPEM, newCA, newKey := newCA(t, "scrapers' new CA")
	f.write(t, "ca.pem", caPEM)
	if err := os.Chtimes(filepath.Join(f.dir, "ca.pem"), clock.Now(), clock.Now()); err != nil {
		t.Fatal(err)
	}
	newClient := mTLSGet(t, addr, newCA, newKey)
	webConfig := mustRead(t, f.webConfig)
	for i, newServed := range []bool{false, false, true, true} {
		// The generator dates what it writes.
		f.saveNow(t, clock, fmt.Appendf(slices.Clip(webConfig), "# written at %s\n", clock.Now()))
		if err := newClient(true); (err == nil) != newServed {
			t.Errorf("rewrite %d, a client of the new CA: %v; want served %v", i, err, newServed)
		}
		if err := oldClient(true); err == nil {
			t.Errorf("rewrite %d, a client of the CA taken out was served", i)
		}
		reused, _, err := getReused(t, keptAlive, addr)
		if served := err == nil; served == newServed || served && !reused {
			t.Errorf("rewrite %d, a client of the CA taken out, kept alive: served %v (on the connection kept alive: %v); want %v", i, served, reused, !newServed)
		}
		clock.Add(time.Second)
	}
}

// TestTLSCutShortUnderGenerator: what the files are read as the same, whole, for racyAge
// has settled (see TestTLSClientCAReplacedUnderGenerator), but a web config a generator
// saves in place in more than one write is read in the middle of each save as the same
// text cut short, here before client_auth_type: a client that connected alone in the
// middle of two saves racyAge apart (scrapers keep their connections alive, and read
// nothing between) had the second handshake, and every one after, asking no client for
// a certificate. A web config read as a strict prefix of the one read before is cut
// short. A change above the cut (another certificate file) has the first read cut short
// no prefix of the one before and the second the same as the first: a change of
// client_auth_type is not taken from reads alone.
func TestTLSCutShortUnderGenerator(t *testing.T) {
	// What a save is cut before, and whether a client of the CA (its SAN scraper.example)
	// is served once the saves are read whole.
	for _, cut := range []struct {
		name, sans, before string
		served             bool
	}{
		{"", "", "  client_auth_type", true},
		{", client_allowed_sans", "  client_allowed_sans: [other.example]\n", "  client_allowed_sans", false},
	} {
		for _, dated := range generatorDates {
			for _, changed := range []string{"", ", changed above the cut"} {
				t.Run(dated.name+changed+cut.name, func(t *testing.T) {
					f, ca, caKey := newMTLSFiles(t)
					clock := testclock.New(time.Now().Add(time.Minute)) // every file written has settled
					webConfig := append(mustRead(t, f.webConfig), cut.sans...)
					saves := webConfig
					if changed != "" {
						f.write(t, "cert2.pem", mustRead(t, filepath.Join(f.dir, "cert.pem")))
						saves = bytes.Replace(webConfig, []byte("cert.pem"), []byte("cert2.pem"), 1)
					}
					f.write(t, "web.yml", dated.write(webConfig, clock.Now()))
					logger := slog.New(slog.DiscardHandler)
					configErrors := newWebConfigErrors(f.webConfig, logger, clock.Now)
					addr := serveTLSLogged(t, f.webConfig, configErrors, logger)
					get := mTLSGet(t, addr, ca, caKey)
					// The first read since the start is one cut short.
					waitWatched(t, configErrors.watch)
					for i := range 3 {
						clock.Add(time.Minute)
						saved := dated.write(saves, clock.Now())
						f.saveNow(t, clock, saved[:bytes.Index(saved, []byte(cut.before))]) // read in the middle of the save
						if err := get(cut.sans != ""); err == nil {
							t.Errorf("save %d, read cut short: a client the web config refuses was served", i)
						}
						f.saveNow(t, clock, saved)
					}
					if err := get(true); (err == nil) != cut.served {
						t.Errorf("a client of the CA: %v; want served %v", err, cut.served)
					}
				})
			}
		}
	}
}

// TestTLSConfigUnderGeneratorLoadedOnce: the TLS config is kept, and handshakes load no
// files, while the files are unchanged (see TestTLSHandshakesReadNoFiles); a web config a
// generator writes again every second never is, and every handshake had the toolkit read
// and parse them all, a bundle of CAs among them, tens of milliseconds of a core that any
// client able to connect could ask for over and over. Once what the files are read as
// settled (see steady), a handshake that reads them as that, comments aside, is given
// the config loaded from it, with no load of its own; a change is loaded.
func TestTLSConfigUnderGeneratorLoadedOnce(t *testing.T) {
	f := newTLSFiles(t, "", "")
	webConfig := mustRead(t, f.webConfig)
	clock := testclock.New(time.Now().Add(time.Minute)) // every file written has settled
	var loads int
	configs := newTLSConfigs(f.webConfig, func(*tls.ClientHelloInfo) (*tls.Config, error) {
		loads++
		return &tls.Config{}, nil
	}, clock.Now, newWebConfigErrors(f.webConfig, slog.New(slog.DiscardHandler), clock.Now))
	for i, want := range []int{3, 3, 1, 0, 0} {
		// The generator dates what it writes.
		f.saveNow(t, clock, fmt.Appendf(slices.Clip(webConfig), "# written at %s\n", clock.Now()))
		before := loads
		for range 3 {
			if _, err := configs.get(&tls.ClientHelloInfo{}); err != nil {
				t.Fatal(err)
			}
		}
		if got := loads - before; got != want {
			t.Errorf("second %d of the generator: three handshakes loaded the files %d times; want %d", i, got, want)
		}
		clock.Add(time.Second)
	}
	f.saveNow(t, clock, append(slices.Clip(webConfig), "  min_version: TLS13\n"...))
	before := loads
	if _, err := configs.get(&tls.ClientHelloInfo{}); err != nil {
		t.Fatal(err)
	}
	if loads == before {
		t.Error("a change the generator wrote was not loaded")
	}
}

// TestTLSConfigSavedWhileLoaded: the TLS files are stamped, then loaded, and the config
// loaded is kept when the stamps had settled: a save in place of the web config begun in
// between was loaded, cut short before client_auth_type, and kept, the config every
// handshake's client is held to while a change is unsettled (see heldTo) among them: a
// client without a certificate was let through for as long as the save lasted. What was
// loaded is kept only when the stamps after the load are the ones before.
func TestTLSConfigSavedWhileLoaded(t *testing.T) {
	f := newTLSFiles(t, "", "")
	clock := testclock.New(time.Now().Add(time.Minute)) // every file written has settled
	required := &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	var save bool
	configs := newTLSConfigs(f.webConfig, func(*tls.ClientHelloInfo) (*tls.Config, error) {
		if !save {
			return required.Clone(), nil
		}
		// The save begins as the files are loaded: what is loaded is cut short.
		f.saveNow(t, clock, []byte("tls_server_config:\n  cert_file: cert.pem\n"))
		return &tls.Config{}, nil
	}, clock.Now, newWebConfigErrors(f.webConfig, slog.New(slog.DiscardHandler), clock.Now))
	if _, err := configs.get(&tls.ClientHelloInfo{}); err != nil {
		t.Fatal(err)
	}
	f.write(t, "key.pem", mustRead(t, filepath.Join(f.dir, "key.pem"))) // a change, settled
	save = true
	for i := range 2 {
		config, err := configs.get(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		// A client that gave no certificate, at the end of its handshake.
		if config.VerifyConnection == nil || config.VerifyConnection(tls.ConnectionState{Version: tls.VersionTLS13}) == nil {
			t.Errorf("handshake %d during the save: a client without a certificate is accepted", i+1)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newMTLSFiles makes the TLS files of a web config that asks every client for a
// certificate signed by a CA of its own, which it returns to sign clients' certificates.
func newMTLSFiles(t *testing.T) (*tlsFiles, *x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	f := newTLSFiles(t, "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n", "")
	caPEM, ca, caKey := newCA(t, "scrapers' CA")
	f.write(t, "ca.pem", caPEM)
	return f, ca, caKey
}

// mTLSGet returns how to get / from the server at addr on a new connection, with a
// certificate the CA signed or none, and what failed.
func mTLSGet(t *testing.T, addr string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) func(withCert bool) error {
	return func(withCert bool) error {
		t.Helper()
		config := &tls.Config{InsecureSkipVerify: true}
		if withCert {
			config.Certificates = []tls.Certificate{clientCert(t, ca, caKey, "scraper.example")}
		}
		transport := &http.Transport{TLSClientConfig: config}
		defer transport.CloseIdleConnections()
		resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: transport}).Get("https://" + addr + "/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
}

// loadHeld returns the TLS configs of new TLS files, settled, whose load waits, once
// begun (loading closed), until release is closed, then loads a copy of config; and a
// connection kept alive, over a pipe closed at the test's end, to put requests on.
func loadHeld(t *testing.T, config *tls.Config) (configs *tlsConfigs, k *keptConn, loading, release chan struct{}) {
	t.Helper()
	f := newTLSFiles(t, "", "")
	f.age(t, 0)
	loading, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	now := settledClock()
	configs = newTLSConfigs(f.webConfig, func(*tls.ClientHelloInfo) (*tls.Config, error) {
		once.Do(func() { close(loading) })
		<-release
		return config.Clone(), nil
	}, now, newWebConfigErrors(f.webConfig, slog.New(slog.DiscardHandler), now))
	conn, other := net.Pipe()
	t.Cleanup(func() {
		conn.Close()
		other.Close()
	})
	return configs, &keptConn{conn: tls.Server(conn, &tls.Config{})}, loading, release
}
