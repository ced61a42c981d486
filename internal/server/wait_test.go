package server

import (
	"testing"
	"time"
)

// hangMargin is how long before the test binary's -timeout a wait for what must happen
// gives up, to fail naming what it waited for rather than by the binary's panic.
const hangMargin = 30 * time.Second

// hung is ready once t has waited so long that it hangs: hangMargin before the test
// binary's -timeout, or never without one. A wait of a few seconds for what happens at
// once over loopback failed on a loaded machine, which may take as long; the binary's
// timeout is reached only by a hang.
func hung(t *testing.T) <-chan time.Time {
	if _, ok := t.Deadline(); !ok {
		return nil
	}
	return time.After(time.Until(hangDeadline(t)))
}

// hangDeadline is the deadline of a connection's reads and writes in t, when hung is
// ready; zero, none, without a -timeout.
func hangDeadline(t *testing.T) time.Time {
	d, ok := t.Deadline()
	if !ok {
		return time.Time{}
	}
	// Half the time left at most, for a short -timeout.
	return d.Add(-min(hangMargin, time.Until(d)/2))
}
