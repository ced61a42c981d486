package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/common/promslog"
)

// TestFrontLetsOtherCredentialsThrough: exporter-toolkit checks with bcrypt only basic
// auth credentials it can read; a bearer token (a scraper's, with or without basic auth
// configured), another scheme or basic auth it cannot decode costs no check, so requests
// with them are never answered 429, however many come from one address (a proxy's) while
// others wait in the toolkit (here: for their web config to be read).
func TestFrontLetsOtherCredentialsThrough(t *testing.T) {
	for _, tc := range []struct{ name, first, second string }{
		{"bearer tokens", "Bearer token-a", "Bearer token-b"},
		{"another scheme", "AWS4-HMAC-SHA256 Credential=a", "AWS4-HMAC-SHA256 Credential=b"},
		{"basic auth that does not decode", "Basic !!!", "Basic ???"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hold, held := make(chan struct{}), make(chan struct{}, 2)
			toolkit := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") == tc.first {
					held <- struct{}{}
					<-hold
				}
				reached(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})).ServeHTTP(w, r)
			})
			f := newFront(toolkit, promslog.NewNopLogger())
			request := func(auth string) *httptest.ResponseRecorder {
				r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				r.RemoteAddr = "10.0.0.1:40000"
				r.Header.Set("Authorization", auth)
				w := httptest.NewRecorder()
				f.ServeHTTP(w, r)
				return w
			}
			first := make(chan int, 1)
			go func() { first <- request(tc.first).Code }()
			select {
			case <-held:
			case <-hung(t):
				t.Fatal("the first request does not reach the toolkit")
			}
			if code := request(tc.second).Code; code != http.StatusOK {
				t.Errorf("a second request from the address while the first is in the toolkit: HTTP %d, want 200", code)
			}
			close(hold)
			if code := <-first; code != http.StatusOK {
				t.Errorf("the first request: HTTP %d, want 200", code)
			}
		})
	}
}

// TestFrontOneCheckPerAddress: a request whose basic auth credentials have not passed is
// checked beside one from another address, and answered 429 beside one from its own:
// every peer of a unix socket has one ("@"), a vsock peer its context ID's. Once both are
// answered, the address is checked again, whatever it is (net/http leaves it empty when
// the connection has none).
func TestFrontOneCheckPerAddress(t *testing.T) {
	for _, tc := range []struct {
		name, first, second string
		// refused: the second is answered 429 while the first is checked.
		refused bool
	}{
		{"two addresses", "10.0.0.1:40000", "10.0.0.2:40000", false},
		{"one address", "10.0.0.1:40000", "10.0.0.1:40001", true},
		{"unix socket peers", "@", "@", true},
		{"vsock peers", "host(2):1024", "vm(3):1024", false},
		{"no address", "", "", true},
		// A Kubernetes node's pods share its /64: a pod guessing passwords beside a
		// Prometheus must not take its check.
		{"two addresses of one IPv6 /64", "[2001:db8::1]:40000", "[2001:db8::ffff:2]:40000", false},
		{"IPv4 and IPv4-mapped IPv6", "10.0.0.1:40000", "[::ffff:10.0.0.1]:40001", true},
		// Every host on a link has an address of fe80::/64: no host's allocation.
		{"two hosts' IPv6 link-local addresses", "[fe80::1%eth0]:40000", "[fe80::2%eth0]:40000", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hold, held := make(chan struct{}), make(chan struct{}, 1)
			// The toolkit's check, which lets no password pass; the first is held.
			toolkit := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Hold") != "" {
					held <- struct{}{}
					<-hold
				}
				http.Error(w, "", http.StatusUnauthorized)
			})
			f := newFront(toolkit, promslog.NewNopLogger())
			request := func(addr, password string, holding bool) int {
				r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				r.RemoteAddr = addr
				r.SetBasicAuth("prometheus", password)
				if holding {
					r.Header.Set("X-Hold", "1")
				}
				w := httptest.NewRecorder()
				f.ServeHTTP(w, r)
				return w.Code
			}
			first := make(chan int, 1)
			go func() { first <- request(tc.first, "guess0", true) }()
			select {
			case <-held:
			case <-hung(t):
				t.Fatal("the first request is not being checked")
			}
			want := http.StatusUnauthorized
			if tc.refused {
				want = http.StatusTooManyRequests
			}
			if code := request(tc.second, "guess1", false); code != want {
				t.Errorf("a second request while the first is checked: HTTP %d, want %d", code, want)
			}
			close(hold)
			if code := <-first; code != http.StatusUnauthorized {
				t.Errorf("the first request: HTTP %d, want 401", code)
			}
			for _, addr := range []string{tc.first, tc.second} {
				if code := request(addr, "guess2", false); code != http.StatusUnauthorized {
					t.Errorf("a request from %q after both were answered: HTTP %d, want 401", addr, code)
				}
			}
		})
	}
}

// heldCheck stands for exporter-toolkit's password check behind the front: the password
// "right" passes, to handlers that answer 200; any other is answered 401 with
// WWW-Authenticate, as the toolkit answers it. A request with X-Hold is held in the check
// until hold is closed (held receives as it is). checks counts the requests it sees.
func heldCheck(hold <-chan struct{}, held chan<- struct{}, checks *atomic.Int64) http.Handler {
	handlers := reached(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		checks.Add(1)
		if r.Header.Get("X-Hold") != "" {
			held <- struct{}{}
			<-hold
		}
		if _, password, _ := r.BasicAuth(); password == "right" {
			handlers.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", "Basic")
		http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
	})
}

// watched is a request's context that says (asked is closed) when the front first
// watches it for the client going away: as the request begins to wait for a check.
type watched struct {
	context.Context
	once  sync.Once
	asked chan struct{}
}

func watch(ctx context.Context) *watched {
	return &watched{Context: ctx, asked: make(chan struct{})}
}

func (c *watched) Done() <-chan struct{} {
	c.once.Do(func() { close(c.asked) })
	return c.Context.Done()
}

// frontRequest is a request to f for /metrics from addr with password, in ctx (a
// context.Background when nil), held in the check when holding; it returns the reply.
func frontRequest(f http.Handler, ctx context.Context, addr, password string, holding bool) *httptest.ResponseRecorder {
	return frontRequestWithBody(f, ctx, addr, password, holding, "")
}

// frontRequestWithBody is frontRequest with a body (none when empty).
func frontRequestWithBody(f http.Handler, ctx context.Context, addr, password string, holding bool, body string) *httptest.ResponseRecorder {
	if ctx == nil {
		ctx = context.Background()
	}
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/metrics", strings.NewReader(body))
	if body == "" {
		r = httptest.NewRequestWithContext(ctx, http.MethodGet, "/metrics", nil)
	}
	r.RemoteAddr = addr
	r.SetBasicAuth("prometheus", password)
	if holding {
		r.Header.Set("X-Hold", "1")
	}
	w := httptest.NewRecorder()
	f.ServeHTTP(w, r)
	return w
}

// waiting waits for c to be watched (see hung), failing if reply comes first: the
// request was answered rather than made to wait.
func waiting(t *testing.T, c *watched, reply <-chan *httptest.ResponseRecorder) {
	t.Helper()
	select {
	case <-c.asked:
	case w := <-reply:
		t.Fatalf("a request whose credentials are being checked: HTTP %d at once, want it to wait for the check", w.Code)
	case <-hung(t):
		t.Fatal("a request whose credentials are being checked neither waits nor is answered")
	}
}

// TestFrontSameCredentialsWaitForTheirCheck: a request whose credentials are in the
// toolkit's check already (two scrapers sharing them behind one proxy, a page and its
// favicon, the first after a start) waits for that check rather than being answered 429,
// though it comes from the address being checked. When the credentials pass, it goes on
// as credentials that passed; when they do not, it gets the check's reply (401, with
// WWW-Authenticate) without being checked itself, but for the checked request's
// "Connection: close" (it had a body left unread).
func TestFrontSameCredentialsWaitForTheirCheck(t *testing.T) {
	for _, tc := range []struct {
		name, first, second, password string
		// body is the first request's.
		body string
		want int
		// checks is how many requests the toolkit sees: the waiter goes on to it only when
		// the credentials passed (answered from the toolkit's cache).
		checks int64
	}{
		{"passing, one address", "10.0.0.1:40000", "10.0.0.1:40001", "right", "", http.StatusOK, 2},
		{"passing, unix socket peers", "@", "@", "right", "", http.StatusOK, 2},
		{"passing, two addresses", "10.0.0.1:40000", "10.0.0.2:40000", "right", "", http.StatusOK, 2},
		{"failing, one address", "10.0.0.1:40000", "10.0.0.1:40001", "wrong", "", http.StatusUnauthorized, 1},
		{"failing, no address", "", "", "wrong", "", http.StatusUnauthorized, 1},
		{"failing, the checked with a body", "10.0.0.1:40000", "10.0.0.1:40001", "wrong", "x=1", http.StatusUnauthorized, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hold, held := make(chan struct{}), make(chan struct{}, 1)
			var checks atomic.Int64
			f := newFront(heldCheck(hold, held, &checks), promslog.NewNopLogger())
			first := make(chan *httptest.ResponseRecorder, 1)
			go func() { first <- frontRequestWithBody(f, nil, tc.first, tc.password, true, tc.body) }()
			select {
			case <-held:
			case <-hung(t):
				t.Fatal("the first request is not being checked")
			}
			ctx := watch(context.Background())
			second := make(chan *httptest.ResponseRecorder, 1)
			go func() { second <- frontRequest(f, ctx, tc.second, tc.password, false) }()
			waiting(t, ctx, second)
			if n := checks.Load(); n != 1 {
				t.Errorf("the toolkit saw %d requests while the first was checked, want 1", n)
			}
			close(hold)
			w := <-second
			if got := w.Header().Get("Connection"); got != "" {
				t.Errorf("the waiter, without a body: Connection %q, want none", got)
			}
			for _, w := range []*httptest.ResponseRecorder{<-first, w} {
				if w.Code != tc.want {
					t.Errorf("HTTP %d, want %d", w.Code, tc.want)
				}
				if got, want := w.Header().Get("WWW-Authenticate"), map[bool]string{true: "Basic"}[tc.want == http.StatusUnauthorized]; got != want {
					t.Errorf("WWW-Authenticate %q, want %q", got, want)
				}
			}
			if n := checks.Load(); n != tc.checks {
				t.Errorf("the toolkit saw %d requests, want %d", n, tc.checks)
			}
		})
	}
}

// TestFrontWaitersPerCheck: a client repeating one wrong password on many connections at
// once holds one in the check and waitersPerCheck waiting for it; one more is answered
// 429 at once. A waiter whose client goes away leaves at once, making room for another.
// When the check fails, the waiters get its 401, and none is checked.
func TestFrontWaitersPerCheck(t *testing.T) {
	const addr = "10.0.0.1:40000"
	hold, held := make(chan struct{}), make(chan struct{}, 1)
	var checks atomic.Int64
	f := newFront(heldCheck(hold, held, &checks), promslog.NewNopLogger())
	first := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- frontRequest(f, nil, addr, "wrong", true) }()
	select {
	case <-held:
	case <-hung(t):
		t.Fatal("the first request is not being checked")
	}
	// wait sends a request with the password being checked, which waits for the check.
	wait := func() (context.CancelFunc, <-chan *httptest.ResponseRecorder) {
		ctx, cancel := context.WithCancel(context.Background())
		c := watch(ctx)
		reply := make(chan *httptest.ResponseRecorder, 1)
		go func() { reply <- frontRequest(f, c, addr, "wrong", false) }()
		waiting(t, c, reply)
		return cancel, reply
	}
	var cancels []context.CancelFunc
	var replies []<-chan *httptest.ResponseRecorder
	for range waitersPerCheck {
		cancel, reply := wait()
		t.Cleanup(cancel)
		cancels, replies = append(cancels, cancel), append(replies, reply)
	}
	if code := frontRequest(f, nil, addr, "wrong", false).Code; code != http.StatusTooManyRequests {
		t.Errorf("a request past the waiters: HTTP %d, want 429 at once", code)
	}
	// The first waiter's client goes away: it leaves the wait before the check ends, and
	// another takes its place.
	cancels[0]()
	select {
	case <-replies[0]:
	case <-hung(t):
		t.Fatal("a waiter whose client went away still waits")
	}
	_, reply := wait()
	replies[0] = reply
	close(hold)
	if w := <-first; w.Code != http.StatusUnauthorized {
		t.Errorf("the request checked: HTTP %d, want 401", w.Code)
	}
	for _, reply := range replies {
		if w := <-reply; w.Code != http.StatusUnauthorized {
			t.Errorf("a waiter once the check failed: HTTP %d, want 401", w.Code)
		}
	}
	if n := checks.Load(); n != 1 {
		t.Errorf("the toolkit saw %d requests, want the one checked", n)
	}
}

// TestFrontWaitersOfACheckThatPanics: when the toolkit's check ends in a panic without a
// reply (net/http recovers it and drops the connection), those waiting for it are not
// held: they get 429, to try again, and the credentials are checked anew.
func TestFrontWaitersOfACheckThatPanics(t *testing.T) {
	hold, held := make(chan struct{}), make(chan struct{}, 1)
	var checks atomic.Int64
	check := heldCheck(hold, held, &checks)
	toolkit := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			checks.Add(1)
			held <- struct{}{}
			<-hold
			panic(http.ErrAbortHandler)
		}
		check.ServeHTTP(w, r)
	})
	f := newFront(toolkit, promslog.NewNopLogger())
	first := make(chan any, 1)
	go func() {
		defer func() { first <- recover() }()
		frontRequest(f, nil, "10.0.0.1:40000", "right", true)
	}()
	select {
	case <-held:
	case <-hung(t):
		t.Fatal("the first request is not being checked")
	}
	ctx := watch(context.Background())
	second := make(chan *httptest.ResponseRecorder, 1)
	go func() { second <- frontRequest(f, ctx, "10.0.0.1:40001", "right", false) }()
	waiting(t, ctx, second)
	close(hold)
	if p := <-first; p != http.ErrAbortHandler {
		t.Fatalf("the first request's check: %v, want its panic", p)
	}
	if w := <-second; w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Errorf("a waiter once the check panicked: HTTP %d, Retry-After %q; want 429, 1", w.Code, w.Header().Get("Retry-After"))
	}
	if w := frontRequest(f, nil, "10.0.0.1:40001", "right", false); w.Code != http.StatusOK || checks.Load() != 2 {
		t.Errorf("the credentials after the panic: HTTP %d, %d checks; want 200 from a check of their own", w.Code, checks.Load())
	}
}
