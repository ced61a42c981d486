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

// Deadline is when a wait of t gives up: nine tenths of the way from now to the test
// binary's timeout, the rest left for the failure's report and the test's cleanup; the
// zero time when there is no timeout (-timeout 0), and the wait goes on for ever.
func Deadline(t *testing.T) time.Time {
	end, ok := t.Deadline()
	if !ok {
		return time.Time{}
	}
	now := time.Now()
	return now.Add(end.Sub(now) * 9 / 10)
}

// Until reports whether cond holds, looking again every few milliseconds until it does or
// Deadline passes.
func Until(t *testing.T, cond func() bool) bool {
	t.Helper()
	deadline := Deadline(t)
	for !cond() {
		if !deadline.IsZero() && time.Now().After(deadline) {
			return false
		}
		time.Sleep(poll)
	}
	return true
}
