package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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
			case <-time.After(2 * time.Second):
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
			case <-time.After(2 * time.Second):
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
