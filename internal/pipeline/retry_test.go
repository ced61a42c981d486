package pipeline

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// TestRetryInputsNotStarted: a reload that leaves an input not started (its address is
// taken) is followed by tries to start it, whatever made the reload: 30 s later, then at
// twice the wait each time up to 5 minutes, each logged. A refused reload meanwhile does
// not stop them; they start the input of the configuration in force, not what the file
// holds now; the one that starts it makes the reload that left it successful.
func TestRetryInputsNotStarted(t *testing.T) {
	taken, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fileRules := fmt.Sprintf("inputs:\n  - {name: web, path: %s}\nrules:\n  - {name: requests, match: x}\n", filepath.Join(dir, "access.log"))
	write(fileRules)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	p, out := startLogged(t, cfg, clock.Now)

	withSys := strings.Replace(fileRules, "inputs:\n", "inputs:\n  - {name: sys, syslog: udp://"+taken.LocalAddr().String()+"}\n", 1)
	write(withSys)
	if err := p.ReloadFile(); !errors.As(err, new(*InputsNotStarted)) {
		t.Fatalf("reload with a taken address: %v; want the input not started", err)
	}
	tries := func() int { return strings.Count(out.String(), "still did not start") }

	// The ticks of Start's goroutine, every expireEvery, over 20 minutes.
	var at []time.Duration
	for elapsed := expireEvery; elapsed <= 20*time.Minute; elapsed += expireEvery {
		clock.Add(expireEvery)
		before := tries()
		p.retryInputs()
		if tries() > before {
			at = append(at, elapsed)
		}
		if elapsed == 105*time.Second {
			write("inputs: [") // refused, and not to be read by a retry
			if err := p.ReloadFile(); err == nil || errors.As(err, new(*InputsNotStarted)) {
				t.Fatalf("reload of a broken file: %v; want it refused", err)
			}
		}
	}
	min := time.Minute
	want := []time.Duration{30 * time.Second, 90 * time.Second, 210 * time.Second, 7*min + 30*time.Second, 12*min + 30*time.Second, 17*min + 30*time.Second}
	if !slices.Equal(at, want) {
		t.Errorf("tried at %v, want %v", at, want)
	}
	nr := p.InputsNotRunning()
	if len(nr) != 1 {
		t.Fatalf("inputs not running: %v; want sys", nr)
	}
	// What the status page shows: the next try, 5 minutes after the last.
	if next := time.Unix(1_700_000_000, 0).Add(22*min + 30*time.Second); !nr[0].Retry.Equal(next) {
		t.Errorf("sys is tried again at %v, want %v", nr[0].Retry, next)
	}

	// Freed: the next try starts it, in the configuration in force (the refused file is
	// not read). The last reload was refused, and stays so.
	_ = taken.Close()
	clock.Add(5 * time.Minute)
	p.retryInputs()
	if nr := p.InputsNotRunning(); len(nr) != 0 {
		t.Fatalf("after the address was freed, inputs not running: %v", nr)
	}
	if err := p.ReloadError(); err == nil || errors.As(err, new(*InputsNotStarted)) {
		t.Errorf("the refused reload's error became %v", err)
	}
	if !strings.Contains(out.String(), "the inputs that had not started are running") {
		t.Errorf("the start is not logged:\n%s", out.String())
	}
	if got := p.gen.Load().cfg.Inputs; len(got) != 2 {
		t.Errorf("the configuration in force has %d inputs, want web and sys", len(got))
	}
	n := tries()
	clock.Add(10 * time.Minute)
	p.retryInputs()
	if tries() != n {
		t.Error("tried again once every input runs")
	}
}

// TestRetryMakesTheReloadSuccessful: when the reload that left an input not started is
// the last one, the retry that starts it makes it successful, as a reload of the same
// file would have: logwindow_config_last_reload_successful goes back to 1.
func TestRetryMakesTheReloadSuccessful(t *testing.T) {
	taken, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg, err := config.Parse(fmt.Appendf(nil, "inputs:\n  - {name: web, path: %s}\nrules:\n  - {name: requests, match: x}\n", filepath.Join(dir, "access.log")), filepath.Join(dir, "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	withSys, err := config.Parse(fmt.Appendf(nil, "inputs:\n  - {name: sys, syslog: udp://%s}\n  - {name: web, path: %s}\nrules:\n  - {name: requests, match: x}\n", taken.LocalAddr(), filepath.Join(dir, "access.log")), filepath.Join(dir, "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	p, _ := startLogged(t, cfg, clock.Now)
	if err := p.Reload(withSys); !errors.As(err, new(*InputsNotStarted)) {
		t.Fatalf("reload with a taken address: %v", err)
	}
	if p.reloadStats().Successful {
		t.Fatal("the reload that left an input not started counts as successful")
	}
	_ = taken.Close()
	clock.Add(FirstInputRetry)
	p.retryInputs()
	if r := p.reloadStats(); !r.Successful || !r.LastSuccess.Equal(clock.Now()) || !r.Inputs["sys"] {
		t.Errorf("after the retry started the input: %+v; want successful, now, sys running", r)
	}
}
