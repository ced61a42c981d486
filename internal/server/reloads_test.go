package server

import (
	"errors"
	"io"
	"log/slog"
	"net"
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
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
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
		wg.Go(func() { errs[0] = r.Reload(t.Context()) })
		synctest.Wait() // the first runs
		for i := 1; i < len(errs); i++ {
			wg.Go(func() { errs[i] = r.Reload(t.Context()) })
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
		if err := r.Reload(t.Context()); err != nil || runs.Load() != 3 {
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
	deadline := hung(t)
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
		wg.Go(func() { _ = r.Reload(t.Context()) })
		synctest.Wait() // the first runs
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { errs[i] = r.Reload(t.Context()) })
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
		if err := r.Reload(t.Context()); err != nil || runs.Load() != 3 {
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

// TestReloadWaiterLeaves: a POST /-/reload waiting for a reload that another request
// runs lets go of its connection once its client goes away, where it held it (and its
// place among the 16 requests in a reload) until the reload ended, which a rule file on
// a hung file system puts off for good. Over real sockets: the reload is held, a request
// runs it, a second waits to share the next, and the third's client closes its
// connection.
func TestReloadWaiterLeaves(t *testing.T) {
	e := startExporter(t, true)
	coll := e.p.Collector()
	release := make(chan struct{})
	var runs atomic.Int64
	o := Options{Logger: promslog.NewNopLogger(), MetricsPath: "/metrics", Lifecycle: true,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute,
		reloads: newReloader(func() error {
			runs.Add(1)
			<-release
			return nil
		}, promslog.NewNopLogger())}
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = newHTTPServer(NewMux(e.p, coll, NewRegistry(coll), o), o)
	gone := holdAtMost(ts.Config, 10)
	ts.Start()
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) }) // before the server closes, which waits for the reload's handlers

	post := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "POST /-/reload HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	post() // runs the reload, held
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	post() // runs the next, once the first ends
	// The third must come after the second is the one that runs the next reload: else
	// the third runs it, and the one that runs a reload goes on whether or not its
	// client went away.
	for !asked(o.reloads) {
		time.Sleep(time.Millisecond)
	}
	post().Close()
	if !await.Until(t, func() bool {
		select {
		case <-gone:
			return true
		default:
			return false
		}
	}) {
		t.Fatal("the connection of a POST /-/reload whose client went away is held while the reload it waits for runs")
	}
}

// asked says whether a reload is asked for that runs once the running one ends.
func asked(r *reloader) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next != nil
}
