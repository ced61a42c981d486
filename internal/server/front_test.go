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
