package await

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
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

// giveUpEnv names the wait a run of this binary by TestGivesUp makes, and gives up.
const giveUpEnv = "AWAIT_GIVE_UP"

// gaveUp is what that run prints once its wait was given up no sooner than Deadline.
const gaveUp = "gave up at the deadline"

// TestGivesUp: each wait, for what never comes, gives up no sooner than Deadline and before
// the test binary's timeout, so that the test fails with what it waited for rather than
// panics at the timeout. Each runs in this binary run again with a timeout of a few
// seconds; its run need print only a line before that timeout, however loaded the machine.
func TestGivesUp(t *testing.T) {
	waits := []struct {
		name string
		wait func(t *testing.T) bool // false when the wait was given up
	}{
		{"After", func(t *testing.T) bool { <-After(t); return false }},
		{"Receive", func(t *testing.T) bool { _, ok := Receive(t, make(chan int)); return ok }},
		{"Until", func(t *testing.T) bool { return Until(t, func() bool { return false }) }},
	}
	if name := os.Getenv(giveUpEnv); name != "" {
		for _, w := range waits {
			if w.name == name {
				deadline := Deadline(t)
				if !w.wait(t) && !time.Now().Before(deadline) {
					fmt.Println(gaveUp)
				}
			}
		}
		return
	}
	// The runs are made side by side, not as parallel subtests, which -test.parallel (the
	// cores) would run a few at a time.
	outs := make([]bytes.Buffer, len(waits))
	cmds := make([]*exec.Cmd, len(waits))
	for i, w := range waits {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestGivesUp$", "-test.timeout=4s")
		cmds[i].Env = append(os.Environ(), giveUpEnv+"="+w.name)
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range waits {
		err := cmds[i].Wait()
		if !strings.Contains(outs[i].String(), gaveUp) {
			t.Errorf("%s: the wait did not give up at its deadline (%v):\n%s", w.name, err, outs[i].String())
		}
	}
}
