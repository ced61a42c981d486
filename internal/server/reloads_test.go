package server

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
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
		})
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
