package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"
)

// TestHeadOfMetricsNotLimited: a HEAD of the metrics path reads nothing for the body it
// does not send (exporter.Handler), but went through the scrape limiter as a scrape does:
// charged a scrape's cost (the whole budget while it is unknown), it waited up to 5 s for
// a place or for room, got 503 when none came, and, when max scrapes waited, put the one
// that had waited longest out with a 503: a probe that sends HEAD kept a scraper out. A
// HEAD is served at once, past the limiter; a GET still waits for its place. So is a GET
// whose query is not read whole (exporter.QueryError), which the handler refuses at
// once: priced, it cost a whole scrape, its name[] filters lost.
func TestHeadOfMetricsNotLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newScrapeLimiter(1, time.Second, 5*time.Second, slog.New(slog.DiscardHandler))
		start := time.Now()
		g := newGate()
		running := serveAt(l, start, httptest.NewRecorder(), g, "/metrics") // the one place
		synctest.Wait()
		served := 0
		h := limited(l, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))
		for _, tc := range []struct {
			method, target string
			code           int
			after          time.Duration
			served         int
		}{
			{http.MethodHead, "/metrics", http.StatusOK, 0, 1},
			{http.MethodGet, "/metrics?name[]=a;name[]=b", http.StatusOK, 0, 2},
			{http.MethodGet, "/metrics?name[]=a", http.StatusServiceUnavailable, 5 * time.Second, 2},
		} {
			began := time.Now()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
			if took := time.Since(began); rec.Code != tc.code || took != tc.after || served != tc.served {
				t.Errorf("%s %s while a scrape holds the one place: %d after %v, served %d times; want %d after %v, served %d times",
					tc.method, tc.target, rec.Code, took, served, tc.code, tc.after, tc.served)
			}
		}
		close(g.open)
		<-running
	})
}
