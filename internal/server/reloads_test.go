package server

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/common/promslog"

	"github.com/logwindow/logwindow_exporter/internal/pipeline"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

// TestReloadsShared: a reload reads and compiles the whole rule file, a second or more of
// a core for thousands of rules, one at a time: twenty POST /-/reload at once (a sidecar,
// a script and the watch each reacting to one change, or any client that reaches the
// endpoint) reloaded it twenty times in turn, half a minute of a core. Those asked for
// while a reload runs share the next one, begun after they were asked for, and are each
// told its outcome.
func TestReloadsShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int64
		release := make(chan error)
		r := newReloader(func() error {
			runs.Add(1)
			return <-release
		}, promslog.NewNopLogger())
		var wg sync.WaitGroup
		errs := make([]error, 6)
		wg.Go(func() { errs[0] = r.Reload() })
		synctest.Wait() // the first runs
		for i := 1; i < len(errs); i++ {
			wg.Go(func() { errs[i] = r.Reload() })
		}
		synctest.Wait()
		if n := runs.Load(); n != 1 {
			t.Fatalf("%d reloads run at once; want 1", n)
		}
		second := errors.New("the second reload's error")
		release <- nil
		synctest.Wait()
		release <- second
		wg.Wait()
		if n := runs.Load(); n != 2 {
			t.Errorf("%d reloads run for %d asked for, five while the first ran; want 2", n, len(errs))
		}
		if errs[0] != nil {
			t.Errorf("the first: %v; want its own reload's outcome, none", errs[0])
		}
		for i, err := range errs[1:] {
			if err != second {
				t.Errorf("request %d asked for while the first ran: %v; want the second reload's outcome", i+1, err)
			}
		}
		// Asked for once none runs: a reload of its own.
		go func() { release <- nil }()
		if err := r.Reload(); err != nil || runs.Load() != 3 {
			t.Errorf("a reload asked for alone: %v, %d reloads in all; want none, 3", err, runs.Load())
		}
	})
}

// TestReloadRequestsWaitingBounded: POST /-/reload requests asked for while a reload runs
// wait for the next one, each holding its connection, which the connection limit cannot
// take back while its handler runs: hundreds of them against a slow reload (thousands of
// rules, a rule file on a hung file system) filled --web.max-connections, and a scraper's
// new connection was closed at once. Past maxReloadWaiting at once, a request is answered
// 503 at once with Retry-After; those waiting are each told the reload's outcome.
func TestReloadRequestsWaitingBounded(t *testing.T) {
	e := startExporter(t, true)
	coll := e.p.Collector()
	release := make(chan error)
	o := Options{Logger: promslog.NewNopLogger(), MetricsPath: "/metrics", Lifecycle: true,
		reloads: newReloader(func() error { return <-release }, promslog.NewNopLogger())}
	mux := NewMux(e.p, coll, NewRegistry(coll), o)

	const asked = maxReloadWaiting + 24
	answers := make(chan *httptest.ResponseRecorder, asked)
	for range asked {
		go func() {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/-/reload", nil))
			answers <- rec
		}()
	}
	// Those past the bound are answered while the reload still runs.
	deadline := time.After(10 * time.Second)
	for range asked - maxReloadWaiting {
		select {
		case rec := <-answers:
			if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
				t.Fatalf("a request answered while the reload runs: %d %q (Retry-After %q); want 503 with Retry-After", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
			}
		case <-deadline:
			t.Fatalf("requests past %d waiting for a reload were not answered while it ran", maxReloadWaiting)
		}
	}
	select {
	case rec := <-answers:
		t.Fatalf("a request answered (%d %q) while %d waited for the reload; want them all waiting", rec.Code, rec.Body, maxReloadWaiting)
	default:
	}
	// The first request's reload, then the one those asked for meanwhile share (if any
	// came after the first began).
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case release <- nil:
			case <-done:
				return
			}
		}
	}()
	for range maxReloadWaiting {
		if rec := <-answers; rec.Code != http.StatusOK {
			t.Errorf("a request that waited: %d %q; want 200, the reload's outcome", rec.Code, rec.Body)
		}
	}
}

// TestReloadPanicTold: a reload that panics (a bug) is a failed reload for everyone who
// asked for it: the one that ran it and those joined to it are told its panic, which is
// logged with its stack, and the next reload runs. Those joined were told it succeeded
// (POST /-/reload answered "Reloaded."), and the panic went on up, ending the process
// when SIGHUP or the rule file's watch ran the reload.
func TestReloadPanicTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged syncbuf.Buffer
		release := make(chan struct{})
		var runs atomic.Int64
		r := newReloader(func() error {
			switch runs.Add(1) {
			case 1:
				<-release
			case 2:
				panic("a bug in the reload")
			}
			return nil
		}, slog.New(slog.NewTextHandler(&logged, nil)))
		var wg sync.WaitGroup
		wg.Go(func() { _ = r.Reload() })
		synctest.Wait() // the first runs
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { errs[i] = r.Reload() })
		}
		synctest.Wait() // the others wait for the next, which panics
		close(release)
		wg.Wait()
		for i, err := range errs {
			if !errors.As(err, new(*pipeline.ReloadPanic)) || !strings.Contains(err.Error(), "a bug in the reload") {
				t.Errorf("reload %d of those sharing the one that panicked: %v; want its panic", i, err)
			}
		}
		if log := logged.String(); strings.Count(log, "reload failed") != 1 || !strings.Contains(log, "a bug in the reload") || !strings.Contains(log, "stack=") {
			t.Errorf("logged: %s; want the failed reload once, with its panic and stack", log)
		}
		if err := r.Reload(); err != nil || runs.Load() != 3 {
			t.Errorf("the reload after: %v, %d run in all; want none, 3", err, runs.Load())
		}
	})
}

// TestReloadPanicAnswered: POST /-/reload whose reload panicked is answered 500 with the
// panic, not 400 as a refused rule file, nor a connection ended without a reply.
func TestReloadPanicAnswered(t *testing.T) {
	e := startExporter(t, true)
	coll := e.p.Collector()
	o := Options{Logger: promslog.NewNopLogger(), MetricsPath: "/metrics", Lifecycle: true,
		reloads: newReloader(func() error { panic("a bug in the reload") }, promslog.NewNopLogger())}
	rec := httptest.NewRecorder()
	NewMux(e.p, coll, NewRegistry(coll), o).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/-/reload", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "a bug in the reload") {
		t.Errorf("POST /-/reload whose reload panicked: %d %q; want 500 with the panic", rec.Code, rec.Body)
	}
}
