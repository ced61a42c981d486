package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"
)

// slowAuth stands for exporter-toolkit's basic auth in front of h, where web.Serve puts
// it: a request whose Authorization is good passes at once (as its check is cached); any
// other is checked as long as bcrypt would take, here until check is closed, then gets
// 401. checking receives a value as each check begins.
func slowAuth(h http.Handler, good string, checking chan<- struct{}, check <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == good {
			h.ServeHTTP(w, r)
			return
		}
		checking <- struct{}{}
		<-check
		w.Header().Set("WWW-Authenticate", "Basic")
		http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
	})
}

// TestPasswordGuessesHoldNoConnection: clients guessing passwords cannot fill
// --web.max-connections while exporter-toolkit checks their guesses one at a time with
// bcrypt (tens of milliseconds each, or seconds at a higher cost), nor make a scraper
// whose password passed before wait behind them. Two guesses are checked at once; one
// more gets 429 at once. Over real sockets, with four connections allowed, the guesses
// from four addresses.
func TestPasswordGuessesHoldNoConnection(t *testing.T) {
	const max = 4
	ts, g := startGuessed(t, max)

	scrapeOnce(t, ts.URL+"/metrics", guessedUser, guessedPassword, g.gone) // its password passes

	replies := make(chan reply, max)
	for i := range max {
		// Each from an address of its own (127.0.0.2, .3, ...).
		go func() { replies <- guess(t, ts, byte(2+i), i) }()
	}
	for range max - unverifiedAtOnce {
		if r := <-replies; r.err != nil || r.status != http.StatusTooManyRequests {
			t.Fatalf("a guess past the two checked: HTTP %d, %v; want 429 at once, not held while the others are checked", r.status, r.err)
		}
		let(t, g.gone, "the connection of a guess refused")
	}
	for range unverifiedAtOnce {
		select {
		case <-g.checking:
		case <-hung(t):
			t.Fatal("two guesses are not being checked")
		}
	}
	// Two guesses still being checked, the scraper gets in, and past them.
	scrapeOnce(t, ts.URL+"/metrics", guessedUser, guessedPassword, g.gone)
	g.release()
	for range unverifiedAtOnce {
		if r := <-replies; r.err != nil || r.status != http.StatusUnauthorized {
			t.Errorf("a guess checked: HTTP %d, %v; want 401", r.status, r.err)
		}
	}
}

// TestPasswordGuessesFromOneAddress: a client guessing passwords from one address, on as
// many connections as it likes, has one guess checked at a time, so that a scraper
// from another address whose password has not passed yet (the first scrape after a
// start) is checked beside it rather than refused.
func TestPasswordGuessesFromOneAddress(t *testing.T) {
	const max = 8
	ts, g := startGuessed(t, max)

	// The guesses come from 127.0.0.2, the scraper from 127.0.0.1.
	replies := make(chan reply, max)
	for i := range max - 1 {
		go func() { replies <- guess(t, ts, 2, i) }()
	}
	for range max - 2 {
		if r := <-replies; r.err != nil || r.status != http.StatusTooManyRequests {
			t.Fatalf("a guess from the address of one being checked: HTTP %d, %v; want 429 at once", r.status, r.err)
		}
		let(t, g.gone, "the connection of a guess refused")
	}
	select {
	case <-g.checking:
	case <-hung(t):
		t.Fatal("no guess is being checked")
	}
	// The scraper's password is checked (here: passes at once) while a guess is.
	scrapeOnce(t, ts.URL+"/metrics", guessedUser, guessedPassword, g.gone)
}

// TestPasswordRepeatedOnManyConnections: a client repeating one wrong password on many
// connections at once, from one address, over real sockets, has it checked once: one
// request is checked, waitersPerCheck wait for that check and get its 401, and the rest
// get 429 at once, their connections let go while the check lasts.
func TestPasswordRepeatedOnManyConnections(t *testing.T) {
	const max, refused = 8, 2
	ts, g := startGuessed(t, max)

	replies := make(chan reply, max)
	for range 1 + waitersPerCheck + refused {
		go func() { replies <- guess(t, ts, 2, 0) }()
	}
	for range refused {
		if r := <-replies; r.err != nil || r.status != http.StatusTooManyRequests {
			t.Fatalf("a request past those waiting for the check of its password: HTTP %d, %v; want 429 at once", r.status, r.err)
		}
		let(t, g.gone, "the connection of a request refused")
	}
	select {
	case <-g.checking:
	case <-hung(t):
		t.Fatal("the password is not being checked")
	}
	g.release()
	for range 1 + waitersPerCheck {
		if r := <-replies; r.err != nil || r.status != http.StatusUnauthorized {
			t.Errorf("a request with the password checked: HTTP %d, %v; want 401", r.status, r.err)
		}
	}
	if n := len(g.checking); n != 0 {
		t.Errorf("the password was checked %d more times, want once", n)
	}
}

// The user and password of the scraper in front of slowAuth (startGuessed).
const guessedUser, guessedPassword = "prometheus", "s3cret"

// guessed is a server whose password checks startGuessed holds: checking receives as each
// check begins, release lets them all end (at the test's end at the latest), gone
// receives as each connection goes.
type guessed struct {
	checking <-chan struct{}
	release  func()
	gone     <-chan struct{}
}

// startGuessed serves the exporter's handlers behind slowAuth, which passes
// guessedUser's password at once and holds every other, with at most max connections.
func startGuessed(t *testing.T, max int) (*httptest.Server, guessed) {
	t.Helper()
	e := startExporter(t, false)
	coll := e.p.Collector()
	o := Options{Logger: promslog.NewNopLogger(), MetricsPath: "/metrics", ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = newHTTPServer(NewMux(e.p, coll, NewRegistry(coll), o), o)
	checking, check := make(chan struct{}, max), make(chan struct{})
	ts.Config.Handler = slowAuth(ts.Config.Handler, "Basic "+basicAuth(guessedUser, guessedPassword), checking, check)
	gone := holdAtMost(ts.Config, max)
	ts.Start()
	t.Cleanup(ts.Close)
	release := sync.OnceFunc(func() { close(check) })
	t.Cleanup(release)
	return ts, guessed{checking: checking, release: release, gone: gone}
}

// reply is what a guess got: an HTTP status, or the error that kept it from one.
type reply struct {
	status int
	err    error
}

// guess sends ts a request with guessedUser's n-th wrong password from 127.0.0.ip, on a
// connection of its own, and waits for its reply until t hangs (see hung).
func guess(t *testing.T, ts *httptest.Server, ip byte, n int) reply {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, ip)}}
	c, err := dialer.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		return reply{err: err}
	}
	defer c.Close()
	_ = c.SetDeadline(hangDeadline(t))
	fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n\r\n", basicAuth(guessedUser, fmt.Sprint("guess", n)))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return reply{err: err}
	}
	resp.Body.Close()
	return reply{status: resp.StatusCode}
}
