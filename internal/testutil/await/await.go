// Package await waits, in tests, for what the code under test does in goroutines of its
// own: until it is done, or until shortly before the test binary's own timeout (go test
// -timeout), never by a bound in seconds, which a loaded machine passes (two cores shared
// with other jobs, under -race) where a quiet one does not.
package await

import (
	"testing"
	"time"
)

// poll is how often Until looks: often enough that a test waits little past the event.
const poll = 5 * time.Millisecond

// untimed is how long a wait goes on in a test binary with no timeout (-timeout 0, or a
// binary run by hand, whose -test.timeout is 0): go test's own default, so that a wait
// for what never comes fails, with what was awaited, instead of hanging a CI job.
const untimed = 10 * time.Minute

// Deadline is when a wait of t gives up: nine tenths of the way from now to the test
// binary's timeout, the rest left for the failure's report and the test's cleanup; untimed
// from now when the binary has no timeout.
func Deadline(t *testing.T) time.Time {
	now := time.Now()
	end, ok := t.Deadline()
	if !ok {
		return now.Add(untimed)
	}
	return now.Add(end.Sub(now) * 9 / 10)
}

// Until reports whether cond holds, looking again every few milliseconds until it does or
// Deadline passes; a wait given up is logged with how long it went on, so that the
// caller's failure reads as the wait's and not as a wrong value.
func Until(t *testing.T, cond func() bool) bool {
	t.Helper()
	start := time.Now()
	deadline := Deadline(t)
	for !cond() {
		if time.Now().After(deadline) {
			t.Logf("gave up waiting after %v, shortly before the test binary's timeout", time.Since(start).Round(time.Millisecond))
			return false
		}
		time.Sleep(poll)
	}
	return true
}

// After is a channel that delivers once Deadline passes: the case of a wait on several
// channels at once (a select) that gives the wait up.
func After(t *testing.T) <-chan time.Time {
	return time.After(time.Until(Deadline(t)))
}

// Receive waits for ch to deliver a value, or to be closed (the zero value then), until
// Deadline: ok is false only when the wait was given up, which is logged as Until logs
// it, so that a test waiting on a goroutine's word fails with what it waited for rather
// than hangs, or fails early on a loaded machine as a bound in seconds would.
func Receive[T any](t *testing.T, ch <-chan T) (v T, ok bool) {
	t.Helper()
	start := time.Now()
	select {
	case v = <-ch:
		return v, true
	case <-After(t):
		t.Logf("gave up waiting after %v, shortly before the test binary's timeout", time.Since(start).Round(time.Millisecond))
		return v, false
	}
}
