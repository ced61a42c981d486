package await

import (
	"testing"
	"time"
)

// TestDeadline: a wait ends before the test binary's timeout, and ends too in a binary
// that has none (-timeout 0), where a wait for ever would hang CI.
func TestDeadline(t *testing.T) {
	got := time.Until(Deadline(t))
	end, ok := t.Deadline()
	if !ok {
		if got <= 0 || got > untimed {
			t.Errorf("no timeout: a wait ends in %v, want at most %v", got, untimed)
		}
		return
	}
	if left := time.Until(end); got <= 0 || got >= left {
		t.Errorf("a wait ends in %v, want before the timeout in %v", got, left)
	}
}

// TestReceive: a wait for a channel returns what it delivers, and ends as well when the
// channel is closed (the word a done channel gives).
func TestReceive(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if v, ok := Receive(t, ch); v != 7 || !ok {
		t.Errorf("Receive = %v, %v; want 7, true", v, ok)
	}
	close(ch)
	if v, ok := Receive(t, ch); v != 0 || !ok {
		t.Errorf("Receive of a closed channel = %v, %v; want 0, true", v, ok)
	}
}

// TestAfter: the channel of a wait on several delivers no sooner than Deadline.
func TestAfter(t *testing.T) {
	deadline := Deadline(t)
	select {
	case <-After(t):
		if time.Now().Before(deadline) {
			t.Error("After delivered before Deadline")
		}
	default:
	}
}
