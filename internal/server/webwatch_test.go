package server

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/crypto/bcrypt"

	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// TestStartOnlyKeysChangedAtRuntime: exporter-toolkit reads the web config again for
// each request, for its passwords and headers, but takes some of its keys at the start
// only: whether an address serves TLS, whether it serves HTTP/2, its rate_limit. A change
// to them went unnoticed: a tls_server_config added to the web config of an exporter
// serving plain HTTP left its scrapers sending passwords and metrics in plain text, and
// one switched to https:// was told the exporter needs a tls_server_config, which it had;
// a rate_limit raised left clients answered 429. Such a change is warned of, once, naming
// the key and the restart that takes it; a change of other keys, or back to what the
// start took, is not. One taken out of it refused every handshake with "TLS config is not
// present": the refusal says so.
func TestStartOnlyKeysChangedAtRuntime(t *testing.T) {
	const withTLS = "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
	const withoutTLS = "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"
	const rateLimit = "rate_limit:\n  burst: 1000\n  interval: 1ms\n"
	type step struct {
		webConfig string // "" is as it was, the start's at the first step
		want      string // in the warning; "" is none
	}
	for _, tc := range []struct {
		name  string
		start string
		steps []step
	}{
		{"plain HTTP", withoutTLS + rateLimit, []step{
			{"", ""},
			{"http_server_config:\n  headers:\n    X-Frame-Options: deny\n" + rateLimit, ""},
			{withoutTLS + "rate_limit:\n  burst: 2000\n  interval: 1ms\n", "rate_limit"},
			{withoutTLS + "rate_limit:\n  burst: 2000\n  interval: 1ms\n# the same\n", ""},
			{withoutTLS + rateLimit, ""},
			// A key misspelled: the toolkit answers 500, which webConfigErrors tells; the
			// rate_limit is not taken for gone.
			{withoutTLS + "rate_limits:\n  burst: 1\n", ""},
			{withTLS + rateLimit, "tls_server_config added: this address serves plain HTTP"},
		}},
		// A rate_limit without an interval, or with one below zero, limits nothing, as
		// none does: a change among them changes nothing served, and one from them to a
		// limit is warned of.
		{"rate_limit that limits nothing", withoutTLS + "rate_limit:\n  burst: 5\n", []step{
			{"", ""},
			{withoutTLS, ""},
			{withoutTLS + "rate_limit:\n  burst: 3\n  interval: -1s\n", ""},
			{withoutTLS + "rate_limit:\n  interval: 0s\n", ""},
			{withoutTLS + rateLimit, "rate_limit changed: the start's is in force, which limits nothing"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "", "")
			f.write(t, "web.yml", []byte(tc.start))
			var logged syncbuf.Buffer
			logger := slog.New(slog.NewTextHandler(&logged, nil))
			addr := servePlainLogged(t, f.webConfig, newWebConfigErrors(f.webConfig, logger, settledClock()), logger)
			for i, step := range tc.steps {
				if step.webConfig != "" {
					f.write(t, "web.yml", []byte(step.webConfig))
				}
				before := strings.Count(logged.String(), "level=WARN")
				for range 2 {
					resp, err := http.Get("http://" + addr + "/")
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if want := http.StatusNotFound; resp.StatusCode != want && (resp.StatusCode != http.StatusInternalServerError || !strings.Contains(step.webConfig, "rate_limits")) {
						t.Fatalf("step %d: served %d; want the handler's 404", i, resp.StatusCode)
					}
				}
				got := logged.String()
				warned := strings.Count(got, "level=WARN") - before
				switch {
				case step.want == "" && warned != 0:
					t.Errorf("step %d: warned, want not:\n%s", i, got)
				case step.want != "" && (warned != 1 || !strings.Contains(got, step.want) || !strings.Contains(got, "restart")):
					t.Errorf("step %d: warned %d times; want once, of %q and the restart:\n%s", i, warned, step.want, got)
				}
			}
		})
	}
	t.Run("HTTP/2 switched off", func(t *testing.T) {
		f := newTLSFiles(t, "", "")
		var logged syncbuf.Buffer
		logger := slog.New(slog.NewTextHandler(&logged, nil))
		addr := serveTLSLogged(t, f.webConfig, newWebConfigErrors(f.webConfig, logger, settledClock()), logger)
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		// The first request is served before the change, once the web config was read.
		for _, webConfig := range []string{"", withTLS + "http_server_config:\n  http2: false\n"} {
			if webConfig != "" {
				f.write(t, "web.yml", []byte(webConfig))
			}
			resp, err := client.Get("https://" + addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if got := logged.String(); !strings.Contains(got, "http_server_config.http2") || !strings.Contains(got, "restart") {
			t.Errorf("HTTP/2 switched off is not warned of, with the restart:\n%s", got)
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

// TestPasswordHashBrokenAtRuntime: a basic_auth_users hash edited, while the exporter
// runs, into what is no bcrypt hash (the password itself, as a user who copies the docs
// may put it; a hash cut short or whose $ a template ate) made exporter-toolkit answer
// every request of that user 401 with no word, for the start refuses such a web config.
// Those requests were then answered 500, before the toolkit: that told any client which
// users the web config holds, and which have a broken hash, and let it past rate_limit
// and without the configured headers. They are answered as a wrong password is, the
// rate limit and headers with it, while they are counted in
// logwindow_web_config_errors_total and logged naming the user; another user's are
// served as before.
func TestPasswordHashBrokenAtRuntime(t *testing.T) {
	good, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	// Five requests in all, the last past the burst.
	const more = "http_server_config:\n  headers:\n    X-Frame-Options: deny\nrate_limit:\n  burst: 4\n  interval: 1h\n"
	users := func(scraper string) []byte {
		return []byte(more + "basic_auth_users:\n  scraper: '" + scraper + "'\n  other: '" + string(good) + "'\n")
	}
	for _, tc := range []struct {
		name      string
		webConfig string
		serve     func(t *testing.T, path string, errors *webConfigErrors, logger *slog.Logger) (url string, client *http.Client)
	}{
		{"plain HTTP", "", func(t *testing.T, path string, errors *webConfigErrors, logger *slog.Logger) (string, *http.Client) {
			srv := newHTTPServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), Options{Logger: logger})
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- serveOn(l, srv, &web.FlagConfig{WebConfigFile: &path}, errors, logger) }()
			t.Cleanup(func() {
				_ = srv.Close()
				<-served
			})
			return "http://" + l.Addr().String() + "/", http.DefaultClient
		}},
		{"TLS", "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n", func(t *testing.T, path string, errors *webConfigErrors, logger *slog.Logger) (string, *http.Client) {
			addr := serveTLSLogged(t, path, errors, logger)
			return "https://" + addr + "/", &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "", "")
			f.write(t, "web.yml", append([]byte(tc.webConfig), users(string(good))...))
			var logged syncbuf.Buffer
			logger := slog.New(slog.NewTextHandler(&logged, nil))
			errors := newWebConfigErrors(f.webConfig, logger, settledClock())
			url, client := tc.serve(t, f.webConfig, errors, logger)
			// get returns the answer to user's request, without its Date.
			get := func(user, password string) string {
				t.Helper()
				req, err := http.NewRequest(http.MethodGet, url, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.SetBasicAuth(user, password)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				resp.Header.Del("Date")
				return fmt.Sprintf("%d %v %q", resp.StatusCode, resp.Header, body)
			}
			if got := get("scraper", "secret"); !strings.HasPrefix(got, "200 ") {
				t.Fatalf("before the change: %s; want 200", got)
			}
			f.write(t, "web.yml", append([]byte(tc.webConfig), users("secret")...))
			wrong := get("other", "wrong")
			if !strings.HasPrefix(wrong, "401 ") || !strings.Contains(wrong, "Www-Authenticate:[Basic]") || !strings.Contains(wrong, "X-Frame-Options:[deny]") {
				t.Fatalf("a wrong password: %s; want 401, asking for basic auth, with the web config's headers", wrong)
			}
			if got := get("scraper", "secret"); got != wrong {
				t.Errorf("the user whose hash is broken: %s\nwant the answer to a wrong password: %s", got, wrong)
			}
			if got := get("other", "secret"); !strings.HasPrefix(got, "200 ") {
				t.Errorf("another user's request: %s; want 200", got)
			}
			if got := get("scraper", "secret"); !strings.HasPrefix(got, "429 ") {
				t.Errorf("the user whose hash is broken, past the rate limit's burst: %s; want 429", got)
			}
			if got := testutil.ToFloat64(errors); got != 2 {
				t.Errorf("logwindow_web_config_errors_total %v; want 2", got)
			}
			if got := logged.String(); !strings.Contains(got, `scraper`) || !strings.Contains(got, "bcrypt") {
				t.Errorf("the log does not name the user and its hash:\n%s", got)
			}
		})
	}
}

// TestPasswordHashBrokenCheckedAsAStranger: the toolkit fails a broken hash at once,
// where it checks a wrong password with bcrypt, which takes tens of milliseconds: the
// time of the answer would tell the users whose hash is broken. Their requests are handed
// to it as of a user the web config does not hold, with their password, whom it checks
// against a hash of its own, as long as a wrong password takes; a name the web config
// holds is not taken for that user.
func TestPasswordHashBrokenCheckedAsAStranger(t *testing.T) {
	good := passwordHash(t, "secret")
	f := newTLSFiles(t, "", "")
	f.write(t, "web.yml", []byte("basic_auth_users:\n  scraper: secret\n  stranger: '"+good+"'\n  stranger_: '"+good+"'\n"))
	watch := newWebConfigErrors(f.webConfig, slog.New(slog.DiscardHandler), settledClock()).watch
	var user, password string
	h := watch.handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		user, password, _ = r.BasicAuth()
	}), "a:1", startOnly{}, startRead{})
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth("scraper", "secret")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if user == "scraper" || user == "stranger" || user == "stranger_" || password != "secret" {
		t.Errorf("the toolkit was handed user %q, password %q; want a user the web config does not hold, password %q", user, password, "secret")
	}
}

// TestWebConfigUsersGoneWhileSaved: exporter-toolkit reads the web config for each
// request, and serves every request without a password when it holds no
// basic_auth_users. A web config saved in place (truncated, then written) read in
// between, empty or cut short before basic_auth_users, served a client without a
// password, or with a wrong one, anything it asked for, a POST /-/reload among them: a
// client sending requests over and over gets some through at each such save. While the
// web config changed within racyAge, unsettled, a request the toolkit lets through must
// pass the basic auth of the web config last read, settled, too; once the change settled
// it is the web config, and a web config that no longer asks for passwords is served so.
func TestWebConfigUsersGoneWhileSaved(t *testing.T) {
	good := passwordHash(t, "secret")
	const served, refused = http.StatusNotFound, http.StatusUnauthorized // the handler's 404
	type step struct {
		webConfig string // "" is as it was
		settle    bool
		user      string
		password  string
		want      int
	}
	save := []step{
		// Read between its truncation and its write: no basic_auth_users.
		{"\n", false, "", "", refused},
		{"", false, "scraper", "wrong", refused},
		{"", false, "scraper", "secret", served},
		{"", false, "other", "secret", refused},
		// Cut short before them.
		{"http_server_config:\n  headers:\n    X-Frame-Options: deny\n", false, "", "", refused},
		// The save settled: the web config holds no users.
		{"", true, "", "", served},
	}
	for _, tc := range []struct {
		name string
		// unsettled dates the web config now at the start, so that the watch does not
		// read it: the start's read holds.
		unsettled bool
		steps     []step
	}{
		{"read before the save", false, append([]step{{"", false, "", "", refused}, {"", false, "scraper", "secret", served}}, save...)},
		{"not read since the start", true, append([]step{{"", false, "", "", refused}}, save...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "", "")
			f.write(t, "web.yml", []byte("basic_auth_users:\n  scraper: '"+good+"'\n"))
			// The clock is a minute ahead, when every file written has settled; a save is
			// made now by it by dating the file so.
			clock := testclock.New(time.Now().Add(time.Minute))
			if tc.unsettled {
				f.stampNow(t, clock)
			}
			logger := slog.New(slog.DiscardHandler)
			addr := servePlainLogged(t, f.webConfig, newWebConfigErrors(f.webConfig, logger, clock.Now), logger)
			get := basicAuthGet(t, addr)
			for i, step := range tc.steps {
				if step.webConfig != "" {
					f.saveNow(t, clock, []byte(step.webConfig))
				}
				if step.settle {
					clock.Add(racyAge)
				}
				if got := get(step.user, step.password); got != step.want {
					t.Errorf("step %d, user %q, password %q: %d; want %d", i, step.user, step.password, got, step.want)
				}
			}
		})
	}
}

// TestWebConfigSavedWhileWatchReads: the watch stamps the web config, then reads it when
// it settled: a save in place begun in between was read, empty or cut short, and taken
// for the web config, a web config without basic_auth_users among them, which then
// held no request to the users of the web config before it while the save lasted (see
// TestWebConfigUsersGoneWhileSaved). What it read is taken only when the web config's
// stamp after the read is the one before.
func TestWebConfigSavedWhileWatchReads(t *testing.T) {
	good := passwordHash(t, "secret")
	f := newTLSFiles(t, "", "")
	f.write(t, "web.yml", []byte("basic_auth_users:\n  scraper: '"+good+"'\n"))
	clock := testclock.New(time.Now().Add(time.Minute))
	logger := slog.New(slog.DiscardHandler)
	configErrors := newWebConfigErrors(f.webConfig, logger, clock.Now)
	var once sync.Once
	configErrors.watch.readConfig = func(path string) (*web.Config, []byte, error) {
		// The save begins: the file is truncated.
		once.Do(func() {
			f.write(t, "web.yml", nil)
			if err := os.Chtimes(f.webConfig, clock.Now(), clock.Now()); err != nil {
				t.Error(err)
			}
		})
		return readWebConfig(path)
	}
	addr := servePlainLogged(t, f.webConfig, configErrors, logger)
	for i := range 2 {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("request %d without a password while the web config is saved: %d; want 401", i, resp.StatusCode)
		}
	}
}

// TestWebConfigPasswordChangedUnderGenerator: while the web config is unsettled, a
// request the toolkit lets through is held to the users of the web config last read,
// settled (see TestWebConfigUsersGoneWhileSaved). A web config a generator writes again
// every second (a template rendered in a loop) never settles: a password changed in it
// had the toolkit refuse the old password and the watch the new one, every request
// answered 401 for as long as the generator ran. A request passes the users of the web
// config as the watch reads it too, which are users of the file, if fewer when read cut
// short; one without a password, or with the old one, is still refused.
func TestWebConfigPasswordChangedUnderGenerator(t *testing.T) {
	users := func(password string) []byte {
		return []byte("basic_auth_users:\n  scraper: '" + passwordHash(t, password) + "'\n")
	}
	f := newTLSFiles(t, "", "")
	f.write(t, "web.yml", users("old"))
	clock := testclock.New(time.Now().Add(time.Minute)) // every file written has settled
	logger := slog.New(slog.DiscardHandler)
	addr := servePlainLogged(t, f.webConfig, newWebConfigErrors(f.webConfig, logger, clock.Now), logger)
	get := basicAuthGet(t, addr)
	if got := get("scraper", "old"); got != http.StatusNotFound {
		t.Fatalf("before the change: %d; want the handler's 404", got)
	}
	// The generator writes the new password, and again each second, never settling.
	for i := range 4 {
		f.saveNow(t, clock, users("new"))
		for _, step := range []basicAuthTry{
			{"scraper", "new", http.StatusNotFound},
			{"scraper", "old", http.StatusUnauthorized},
			{"", "", http.StatusUnauthorized},
		} {
			if got := get(step.user, step.password); got != step.want {
				t.Errorf("rewrite %d, user %q, password %q: %d; want %d", i, step.user, step.password, got, step.want)
			}
		}
		clock.Add(time.Second)
	}
}

// TestWebConfigChangeSettledUnderGenerator: a change of the web config is taken once it
// settled, racyAge after it was written (see TestWebConfigUsersGoneWhileSaved). A web
// config a generator writes again every second (a template rendered in a loop) never
// settles by its file's times: a password turned into what is no bcrypt hash was refused
// as a wrong one with no word, for as long as the generator ran. What the watch reads
// whole the same at each read for racyAge, with nothing else read between, has settled: a
// read in the middle of a save (cut short) starts the wait again. Every user taken out is
// the exception: a client alone can time its reads to the middle of two saves (see
// TestWebConfigChangedThenCutShortUnderGenerator), so that is taken once the file's times
// settled, when the generator stopped ("" below: nothing written).
func TestWebConfigChangeSettledUnderGenerator(t *testing.T) {
	good := passwordHash(t, "secret")
	const noUsers = "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
	brokenHash := "basic_auth_users:\n  scraper: secret\n  other: '" + good + "'\n"
	type rewrite struct {
		webConfig string // what the generator writes, a second after the one before
		try       basicAuthTry
		logged    bool // a bcrypt hash is logged of, counted in logwindow_web_config_errors_total
	}
	for _, tc := range []struct {
		name     string
		rewrites []rewrite
	}{
		{"basic_auth_users taken out", []rewrite{
			{noUsers, basicAuthTry{"", "", http.StatusUnauthorized}, false},
			{noUsers, basicAuthTry{"", "", http.StatusUnauthorized}, false},
			{noUsers, basicAuthTry{"", "", http.StatusUnauthorized}, false},
			{noUsers, basicAuthTry{"", "", http.StatusUnauthorized}, false},
			{"", basicAuthTry{"", "", http.StatusUnauthorized}, false},
			{"", basicAuthTry{"", "", http.StatusNotFound}, false},
		}},
		{"a hash broken", []rewrite{
			{brokenHash, basicAuthTry{"scraper", "secret", http.StatusUnauthorized}, false},
			{brokenHash, basicAuthTry{"scraper", "secret", http.StatusUnauthorized}, false},
			{brokenHash, basicAuthTry{"scraper", "secret", http.StatusUnauthorized}, true},
			{brokenHash, basicAuthTry{"other", "secret", http.StatusNotFound}, true},
		}},
		{"read cut short between", []rewrite{
			{brokenHash, basicAuthTry{"scraper", "secret", http.StatusUnauthorized}, false},
			{"basic_auth_users:\n", basicAuthTry{"scraper", "secret", http.StatusNotFound}, false}, // the users of before
			{brokenHash, basicAuthTry{"scraper", "secret", http.StatusUnauthorized}, false},
			{brokenHash, basicAuthTry{"scraper", "secret", http.StatusUnauthorized}, false},
			{brokenHash, basicAuthTry{"scraper", "secret", http.StatusUnauthorized}, true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "", "")
			f.write(t, "web.yml", []byte("basic_auth_users:\n  scraper: '"+good+"'\n  other: '"+good+"'\n"))
			clock := testclock.New(time.Now().Add(time.Minute)) // every file written has settled
			var logged syncbuf.Buffer
			logger := slog.New(slog.NewTextHandler(&logged, nil))
			configErrors := newWebConfigErrors(f.webConfig, logger, clock.Now)
			addr := servePlainLogged(t, f.webConfig, configErrors, logger)
			get := basicAuthGet(t, addr)
			if got := get("scraper", "secret"); got != http.StatusNotFound {
				t.Fatalf("before the change: %d; want the handler's 404", got)
			}
			for i, step := range tc.rewrites {
				if step.webConfig != "" { // The generator dates what it writes.
					f.saveNow(t, clock, []byte(step.webConfig+"# written at "+clock.Now().String()+"\n"))
				}
				if got := get(step.try.user, step.try.password); got != step.try.want {
					t.Errorf("rewrite %d, user %q, password %q: %d; want %d", i, step.try.user, step.try.password, got, step.try.want)
				}
				counted := testutil.ToFloat64(configErrors) > 0
				if told := counted && strings.Contains(logged.String(), "bcrypt hash"); told != step.logged || counted != step.logged {
					t.Errorf("rewrite %d: the broken hash counted %v, logged %v; want %v:\n%s", i, counted, told, step.logged, logged.String())
				}
				clock.Add(time.Second)
			}
		})
	}
}

// TestWebConfigCutShortUnderGenerator: what the watch reads the same, whole, for racyAge
// has settled (see TestWebConfigChangeSettledUnderGenerator), but a web config a
// generator saves in place in more than one write is read in the middle of each save as
// the same text cut short, here before basic_auth_users: a client that asked alone in
// the middle of two saves racyAge apart had the users taken out, and every request
// served without a password until the web config was read otherwise. A web config read
// as a strict prefix of the one read before is cut short. A change above the cut (a
// header's value) has the first read cut short no prefix of the one before and the second
// the same as the first: users taken out are not taken from reads alone.
func TestWebConfigCutShortUnderGenerator(t *testing.T) {
	good := passwordHash(t, "secret")
	webConfig := []byte("http_server_config:\n  headers:\n    X-Frame-Options: deny\nbasic_auth_users:\n  scraper: '" + good + "'\n")
	for _, dated := range generatorDates {
		for _, changed := range []string{"", ", changed above the cut"} {
			t.Run(dated.name+changed, func(t *testing.T) {
				saves := webConfig
				if changed != "" {
					saves = bytes.Replace(webConfig, []byte("deny"), []byte("sameorigin"), 1)
				}
				f := newTLSFiles(t, "", "")
				clock := testclock.New(time.Now().Add(time.Minute)) // every file written has settled
				f.write(t, "web.yml", dated.write(webConfig, clock.Now()))
				get := serveWatched(t, f, clock) // the first read since the start is one cut short
				for i := range 3 {
					clock.Add(time.Minute)
					saved := dated.write(saves, clock.Now())
					f.saveNow(t, clock, saved[:bytes.Index(saved, []byte("basic_auth_users"))]) // read in the middle of the save
					if got := get("", ""); got != http.StatusUnauthorized {
						t.Errorf("save %d, read cut short: %d without a password; want 401", i, got)
					}
					f.saveNow(t, clock, saved)
				}
				if got := get("scraper", "secret"); got != http.StatusNotFound {
					t.Errorf("the scraper: %d; want the handler's 404", got)
				}
			})
		}
	}
}

// TestWebConfigCommentedOutUnderGenerator: the trailing basic_auth_users of a web config
// a generator writes again every second, commented out, leave the text read a prefix of
// the one before, comment lines aside, as a read cut short is (see
// TestWebConfigCutShortUnderGenerator): the change is not taken while the generator
// writes, as the operations guide says, and requests still need the password.
func TestWebConfigCommentedOutUnderGenerator(t *testing.T) {
	good := passwordHash(t, "secret")
	head := "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
	f := newTLSFiles(t, "", "")
	clock := testclock.New(time.Now().Add(time.Minute))
	f.write(t, "web.yml", []byte(head+"basic_auth_users:\n  scraper: '"+good+"'\n"))
	get := serveWatched(t, f, clock)
	for i := range 3 {
		clock.Add(time.Minute)
		f.saveNow(t, clock, []byte(head+"#basic_auth_users:\n#  scraper: '"+good+"'\n"))
		if got := get("", ""); got != http.StatusUnauthorized {
			t.Errorf("save %d: %d without a password; want 401", i, got)
		}
	}
}

// generatorDates are how a generator may date what it writes.
var generatorDates = []struct {
	name  string
	write func(text []byte, at time.Time) []byte
}{
	{"undated", func(text []byte, _ time.Time) []byte { return text }},
	{"dated at the end", func(text []byte, at time.Time) []byte {
		return fmt.Appendf(slices.Clip(text), "# written at %s\n", at)
	}},
	{"dated at the top", func(text []byte, at time.Time) []byte {
		return append(fmt.Appendf(nil, "# Generated at %s: do not edit.\n", at), text...)
	}},
}

// waitWatched waits for the start to have read the web config, and served c's first
// listener.
func waitWatched(t *testing.T, c *webConfigWatch) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		n := len(c.listeners)
		c.mu.Unlock()
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the web config's watch serves no listener")
		}
	}
}

// TestWebConfigEmptiedWhileRunning: a change that lets more through is taken once it
// settled, racyAge after it was written (see TestWebConfigUsersGoneWhileSaved). A save
// that truncates the web config and writes it more than that later (`fetch > web.yml`,
// whose shell truncates it at once, the fetch taking seconds) left it empty long enough
// to be taken: every request was served without a password until the write. A web config
// that sets nothing at all, while the one before asked for passwords, is not taken for
// their removal: requests are held to them, and that is warned of, until it sets
// something again or the exporter restarts; one that keeps a key (a header) is taken.
func TestWebConfigEmptiedWhileRunning(t *testing.T) {
	good := passwordHash(t, "secret")
	users := "basic_auth_users:\n  scraper: '" + good + "'\n"
	for _, tc := range []struct {
		name, saved string
		want        int
		warned      bool
	}{
		{"empty", "", http.StatusUnauthorized, true},
		{"comments alone", "# generated\n", http.StatusUnauthorized, true},
		{"an empty section", "basic_auth_users: {}\n", http.StatusUnauthorized, true},
		{"a header kept", "http_server_config:\n  headers:\n    X-Frame-Options: deny\n", http.StatusNotFound, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "", "")
			f.write(t, "web.yml", []byte(users))
			clock := testclock.New(time.Now().Add(time.Minute)) // every file written has settled
			var logged syncbuf.Buffer
			logger := slog.New(slog.NewTextHandler(&logged, nil))
			addr := servePlainLogged(t, f.webConfig, newWebConfigErrors(f.webConfig, logger, clock.Now), logger)
			get := basicAuthGet(t, addr)
			if got := get("", ""); got != http.StatusUnauthorized {
				t.Fatalf("before the save: %d; want 401", got)
			}
			f.saveNow(t, clock, []byte(tc.saved))
			for range 3 {
				clock.Add(racyAge)
				if got := get("", ""); got != tc.want {
					t.Errorf("%s, settled: %d without a password; want %d", tc.name, got, tc.want)
				}
			}
			if got := get("scraper", "secret"); got != http.StatusNotFound {
				t.Errorf("%s, settled: the scraper got %d; want the handler's 404", tc.name, got)
			}
			if warned := strings.Count(logged.String(), "sets nothing"); warned != map[bool]int{true: 1}[tc.warned] {
				t.Errorf("warned %d times that the web config sets nothing; want it %v, once:\n%s", warned, tc.warned, logged.String())
			}
			// Written at last: taken as any change.
			f.saveNow(t, clock, []byte("http_server_config:\n  headers:\n    X-Frame-Options: deny\n"))
			clock.Add(racyAge)
			if got := get("", ""); got != http.StatusNotFound {
				t.Errorf("%s, then a web config without users, settled: %d without a password; want the handler's 404", tc.name, got)
			}
		})
	}
}

// TestWebConfigCutShortAtStart: the users a request is held to while the web config is
// unsettled are those the start read (see TestWebConfigUsersGoneWhileSaved): a web config
// saved in place as the exporter starts, read by the start between its truncation and
// its write, held it to none, and a read of the toolkit cut short again, as the save goes
// on, let a client without a password through. It is held to the users of the web config
// as the watch reads it too.
func TestWebConfigCutShortAtStart(t *testing.T) {
	good := passwordHash(t, "secret")
	webConfig := []byte("basic_auth_users:\n  scraper: '" + good + "'\n")
	f := newTLSFiles(t, "", "")
	f.write(t, "web.yml", nil) // the start reads it truncated
	clock := testclock.New(time.Now().Add(time.Minute))
	tk, configErrors := watchedToolkit(t, f, clock)
	// The save goes on, written and dated now; the toolkit reads it cut short again.
	written := func() {
		f.write(t, "web.yml", webConfig)
		if err := os.Chtimes(f.webConfig, clock.Now(), clock.Now()); err != nil {
			t.Error(err)
		}
	}
	written()
	h := configErrors.watch.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.write(t, "web.yml", nil)
		defer written()
		tk.handler.ServeHTTP(w, r)
	}), "a:1", startOnly{}, tk.read)
	for i, step := range []basicAuthTry{
		{"", "", http.StatusUnauthorized},
		{"scraper", "wrong", http.StatusUnauthorized},
		{"scraper", "secret", http.StatusNotFound},
	} {
		if got := basicAuthStatus(h, step.user, step.password); got != step.want {
			t.Errorf("step %d, user %q, password %q: %d; want %d", i, step.user, step.password, got, step.want)
		}
	}
}

// TestWebConfigSavedAfterWatchLooked: the watch looks at the web config's stamp before
// exporter-toolkit reads the web config, and held a request to the users it last read
// only when the stamp had changed. A save in place (truncated, then written) of a web
// config settled long before, begun between the look and the toolkit's read, had the
// toolkit read it empty and serve the request without a password: a client sending
// requests over and over gets some through at each such save. What the toolkit let
// through is held to the users the watch read unless the web config is, after the
// toolkit's read, still the one the watch read.
func TestWebConfigSavedAfterWatchLooked(t *testing.T) {
	good := passwordHash(t, "secret")
	f := newTLSFiles(t, "", "")
	webConfig := []byte("basic_auth_users:\n  scraper: '" + good + "'\n")
	f.write(t, "web.yml", webConfig)
	clock := testclock.New(time.Now().Add(time.Minute)) // every file written has settled
	tk, configErrors := watchedToolkit(t, f, clock)
	// save is what the web config is read as by the toolkit, saved after the watch
	// looked; nil: none. The save then ends: the web config is written whole again.
	var save []byte
	h := configErrors.watch.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if save != nil {
			f.write(t, "web.yml", save)
			defer f.write(t, "web.yml", webConfig)
		}
		tk.handler.ServeHTTP(w, r)
	}), "a:1", startOnly{}, tk.read)
	for i, step := range []struct {
		save     string // "" is none
		user     string // "" sends no password
		password string
		want     int
	}{
		{"", "", "", http.StatusUnauthorized},
		{"", "scraper", "secret", http.StatusNotFound},
		// Read between its truncation and its write.
		{"\n", "", "", http.StatusUnauthorized},
		{"\n", "scraper", "wrong", http.StatusUnauthorized},
		{"\n", "scraper", "secret", http.StatusNotFound},
	} {
		save = nil
		if step.save != "" {
			save = []byte(step.save)
		}
		if got := basicAuthStatus(h, step.user, step.password); got != step.want {
			t.Errorf("step %d, saved %q after the look, user %q, password %q: %d; want %d", i, step.save, step.user, step.password, got, step.want)
		}
	}
}

// TestCostlyHashAddedAtRuntime: the start warns of a password hash of a bcrypt cost above
// 12, which takes a core half a second or more at each check; one put in the web config
// while the exporter runs was not warned of. It is, once, naming the user; one the start
// already had is not warned of again.
func TestCostlyHashAddedAtRuntime(t *testing.T) {
	// Hashes of cost 10 and 14 (bcrypt.Cost reads the cost from the hash alone).
	const usual = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"
	const costly = "$2y$14$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"
	f := newTLSFiles(t, "", "")
	f.write(t, "web.yml", []byte("basic_auth_users:\n  first: "+costly+"\n  second: "+usual+"\n"))
	var logged syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	addr := servePlainLogged(t, f.webConfig, newWebConfigErrors(f.webConfig, logger, settledClock()), logger)
	for i, webConfig := range []string{"", "basic_auth_users:\n  first: " + costly + "\n  second: " + costly + "\n", ""} {
		if webConfig != "" {
			f.write(t, "web.yml", []byte(webConfig))
		}
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		warned := strings.Count(logged.String(), "bcrypt cost")
		if want := min(i, 1); warned != want {
			t.Fatalf("step %d: warned %d times of a costly hash; want %d:\n%s", i, warned, want, logged.String())
		}
	}
	if got := logged.String(); !strings.Contains(got, "user=second cost=14") {
		t.Errorf("the warning does not name the user and the cost:\n%s", got)
	}
}

// TestWebConfigSavedNonAtomically: a web config saved in place (truncated, then written:
// a shell's >, an editor that keeps the inode) may be read by a request in between,
// empty or cut short. The watch took what it read for a change, and warned, at a save
// that changed nothing, that tls_server_config was taken out or rate_limit changed, then
// warned again of a costly hash it had already told. What it reads within racyAge of the
// web config's change is left until that change settled; a change that settled is told.
func TestWebConfigSavedNonAtomically(t *testing.T) {
	// A hash of cost 14 (bcrypt.Cost reads the cost from the hash alone).
	const users = "basic_auth_users:\n  scraper: $2y$14$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n"
	const withTLS = "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
	for _, tc := range []struct {
		name, webConfig string
		// changed is webConfig with a key taken at the start only changed, and want what
		// its warning names.
		changed, want string
	}{
		{"plain HTTP", users + "rate_limit:\n  burst: 1000\n  interval: 1ms\n",
			users + "rate_limit:\n  burst: 2000\n  interval: 1ms\n", "rate_limit changed"},
		{"TLS", withTLS + users, withTLS + users + "http_server_config:\n  http2: false\n", "http_server_config.http2 changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "", "")
			f.write(t, "web.yml", []byte(tc.webConfig))
			f.age(t, 0)
			clock := testclock.New(time.Now())
			var logged syncbuf.Buffer
			logger := slog.New(slog.NewTextHandler(&logged, nil))
			errors := newWebConfigErrors(f.webConfig, logger, clock.Now)
			url, client := "", &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			defer client.CloseIdleConnections()
			if strings.Contains(tc.webConfig, "tls_server_config") {
				url = "https://" + serveTLSLogged(t, f.webConfig, errors, logger) + "/"
			} else {
				url = "http://" + servePlainLogged(t, f.webConfig, errors, logger) + "/"
			}
			warned := func() int { return strings.Count(logged.String(), "level=WARN") }
			get := func(step string) {
				t.Helper()
				// Kept alive: with TLS, the connection of the first request, which needs no
				// handshake while the web config is cut short.
				resp, err := client.Get(url)
				if err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body) // for the connection to be kept alive
				resp.Body.Close()
			}
			get("at the start")
			start := warned()
			for _, cut := range []int{0, len(tc.webConfig) / 2} {
				f.write(t, "web.yml", []byte(tc.webConfig[:cut]))
				get(fmt.Sprintf("cut to %d bytes", cut))
			}
			f.write(t, "web.yml", []byte(tc.webConfig))
			get("saved")
			clock.Add(racyAge)
			get("saved, settled")
			if n := warned() - start; n != 0 {
				t.Fatalf("a save that changed nothing, read in the middle: warned %d times; want none:\n%s", n, logged.String())
			}
			f.write(t, "web.yml", []byte(tc.changed))
			get("changed")
			clock.Add(racyAge)
			get("changed, settled")
			if n := warned() - start; n != 1 || !strings.Contains(logged.String(), tc.want) {
				t.Errorf("a change that settled: warned %d times; want once, of %q:\n%s", n, tc.want, logged.String())
			}
		})
	}
}

// servePlainLogged serves a 404 with the web config at path, which has no TLS, as Serve
// serves it, until the test ends, and returns its address.
func servePlainLogged(t *testing.T, path string, configErrors *webConfigErrors, logger *slog.Logger) string {
	t.Helper()
	return serveListening(t, newHTTPServer(http.NotFoundHandler(), Options{Logger: logger}), path, configErrors, logger)
}

// serveListening serves srv as the exporter does (serveOn, the web config at path) on a
// port of the loopback until the test ends, and returns its address.
func serveListening(t *testing.T, srv *http.Server, path string, configErrors *webConfigErrors, logger *slog.Logger) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- serveOn(l, srv, &web.FlagConfig{WebConfigFile: &path}, configErrors, logger) }()
	t.Cleanup(func() {
		_ = srv.Close()
		<-served
	})
	return l.Addr().String()
}

// settledClock is a clock a minute ahead, by which the files a test writes have settled
// as soon as they are written: the web config is taken at the next request (see
// webConfigWatch).
func settledClock() func() time.Time {
	return testclock.New(time.Now().Add(time.Minute)).Now
}

// TestWebConfigWarnedOncePerFile: with several --web.listen-address, each listener had a
// watch of its own on the one web config, and each warned of its change: a start-only key
// changed, or a costly bcrypt hash added, was logged once per address, where it is said
// once. It is logged once, naming the addresses it holds for.
func TestWebConfigWarnedOncePerFile(t *testing.T) {
	const rateLimit = "rate_limit:\n  burst: 1000\n  interval: 1ms\n"
	cheap, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	// Of cost 13 to bcrypt.Cost, which reads only its prefix; no password is checked.
	costly := strings.Replace(string(cheap), fmt.Sprintf("$%02d$", bcrypt.MinCost), "$13$", 1)
	f := newTLSFiles(t, "", "")
	f.write(t, "web.yml", []byte(rateLimit))
	var logged syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	configErrors := newWebConfigErrors(f.webConfig, logger, settledClock())
	addrs := []string{servePlainLogged(t, f.webConfig, configErrors, logger), servePlainLogged(t, f.webConfig, configErrors, logger)}
	get := func() {
		for _, addr := range addrs {
			for range 2 {
				resp, err := http.Get("http://" + addr + "/")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
		}
	}
	get()
	f.write(t, "web.yml", []byte("rate_limit:\n  burst: 2000\n  interval: 1ms\nbasic_auth_users:\n  alice: "+costly+"\n"))
	get()
	got := logged.String()
	for _, want := range []string{"rate_limit changed", "bcrypt cost"} {
		if n := strings.Count(got, want); n != 1 {
			t.Errorf("%q logged %d times; want once:\n%s", want, n, got)
		}
	}
	for _, addr := range addrs {
		if !strings.Contains(got, addr) {
			t.Errorf("the warning does not name %s:\n%s", addr, got)
		}
	}
}

// TestWebConfigWarnedPerStart: listeners whose starts took different start-only keys (the
// web config saved between them) are each told of their own: one warning for those a
// change leaves alike, another for the rest, and none for one the change gives what it
// took.
func TestWebConfigWarnedPerStart(t *testing.T) {
	var logged syncbuf.Buffer
	c := newWebConfigErrors("web.yml", slog.New(slog.NewTextHandler(&logged, nil)), time.Now).watch
	tls, plain := startOnly{tls: true, http2: true}, startOnly{http2: true}
	c.handler(http.NotFoundHandler(), "a:1", plain, startRead{})
	c.handler(http.NotFoundHandler(), "b:2", plain, startRead{})
	c.handler(http.NotFoundHandler(), "c:3", tls, startRead{})
	c.warnStartOnly(tls)
	got := logged.String()
	if n := strings.Count(got, "level=WARN"); n != 1 || !strings.Contains(got, `address="a:1, b:2"`) || !strings.Contains(got, "tls_server_config added") {
		t.Errorf("TLS added to what a:1 and b:2 took: %d warnings; want one, naming both:\n%s", n, got)
	}
	c.warnStartOnly(plain)
	got = logged.String()
	if n := strings.Count(got, "level=WARN"); n != 2 || !strings.Contains(got, "address=c:3") || !strings.Contains(got, "tls_server_config taken out") {
		t.Errorf("TLS taken out of what c:3 took: %d warnings in all; want a second, naming c:3:\n%s", n, got)
	}
}

// serveWatched serves f's web config over plain HTTP on clock, once its watch looked at
// it, and returns basicAuthGet of the address.
func serveWatched(t *testing.T, f *tlsFiles, clock *testclock.Clock) func(user, password string) int {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	configErrors := newWebConfigErrors(f.webConfig, logger, clock.Now)
	get := basicAuthGet(t, servePlainLogged(t, f.webConfig, configErrors, logger))
	waitWatched(t, configErrors.watch)
	return get
}

// basicAuthGet returns how to get / from the server at addr over plain HTTP as user, with
// password (no credentials for user ""), and the status it answered.
func basicAuthGet(t *testing.T, addr string) func(user, password string) int {
	return func(user, password string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
}

// basicAuthTry is a request as user, with password (none for user ""), and the status
// it is to be answered with.
type basicAuthTry struct {
	user, password string
	want           int
}

// passwordHash is password's bcrypt hash for basic_auth_users, at the lowest cost.
func passwordHash(t *testing.T, password string) string {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(hash)
}

// watchedToolkit sets up exporter-toolkit over f's web config, to serve the handler's
// 404, with the web config's watch on clock; closed at the test's end.
func watchedToolkit(t *testing.T, f *tlsFiles, clock *testclock.Clock) (*toolkit, *webConfigErrors) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	configErrors := newWebConfigErrors(f.webConfig, logger, clock.Now)
	tk, err := setUpToolkit(&net.TCPAddr{}, reached(http.NotFoundHandler()), &web.FlagConfig{WebConfigFile: &f.webConfig}, configErrors, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tk.close)
	return tk, configErrors
}

// basicAuthStatus is the status h answers a request for / with, as user with password
// (no credentials for user "").
func basicAuthStatus(h http.Handler, user, password string) int {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// TestWebConfigManyUsersRemembered: while the web config is unsettled (a generator
// writes it again every second, and then it always is), each request the toolkit lets
// through is checked against the users of the web config the watch read (see passes),
// with bcrypt unless its credentials passed before. Those remembered were forgotten all
// at once when sixteen were: with more scrapers than that, each with its password, every
// scrape paid a bcrypt check, one at a time, as long as the generator ran. Credentials
// that passed once pass again without one.
func TestWebConfigManyUsersRemembered(t *testing.T) {
	const scrapers = 40
	c := newWebConfigErrors("web.yml", slog.New(slog.DiscardHandler), time.Now).watch
	users := map[string]string{}
	for i := range scrapers {
		users[fmt.Sprint("scraper", i)] = passwordHash(t, fmt.Sprint("secret", i))
	}
	request := func(i int) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.SetBasicAuth(fmt.Sprint("scraper", i), fmt.Sprint("secret", i))
		return r
	}
	for i := range scrapers {
		if !c.passes(request(i), users) {
			t.Fatalf("scraper %d did not pass", i)
		}
	}
	// No check can be made now: one made would wait until the test ends.
	c.bcryptMu.Lock()
	defer c.bcryptMu.Unlock()
	done := make(chan int, scrapers)
	go func() {
		for i := range scrapers {
			if !c.passes(request(i), users) {
				t.Errorf("scraper %d did not pass again", i)
			}
			done <- i
		}
	}()
	for i := range scrapers {
		select {
		case <-done:
		case <-hung(t):
			t.Fatalf("scraper %d, which passed before, is checked with bcrypt again", i)
		}
	}
}
