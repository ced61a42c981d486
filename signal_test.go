package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

// TestHangupWhileTheRulesLoad: SIGHUP is caught before the rule file is read, which takes
// seconds for thousands of rules: a SIGHUP sent meanwhile (a generator that writes the
// rules and sends SIGHUP each time, a reloader started beside the exporter) killed the
// process with the signal's default action, exit 129 and nothing logged, as the server
// caught it only once it started. It is the reload it asks for once the exporter runs,
// which reads the file again: it may have changed since the start read it.
func TestHangupWhileTheRulesLoad(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte("inputs: [{path: "+filepath.Join(dir, "access.log")+"}]\nrules: [{name: r, match: x}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load := loadConfig
	t.Cleanup(func() { loadConfig = load })
	loadConfig = func(path string) (*config.Config, error) {
		// A signal is handed to every channel that catches it at once: once this one has
		// it, so has run's if run caught it before the load, and no channel the server
		// makes later gets it too (which would reload though run lost it). Without this
		// channel the test binary would end here when run does not catch it.
		sent := make(chan os.Signal, 1)
		signal.Notify(sent, syscall.SIGHUP)
		defer signal.Stop(sent)
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Error(err)
		}
		await.Receive(t, sent)
		return load(path)
	}
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	var stderr syncbuf.Buffer
	exited := make(chan int, 1)
	go func() {
		exited <- run([]string{"--config.file=" + rules, "--web.listen-address=127.0.0.1:0", "--series.max-bytes=64MiB"}, io.Discard, &stderr)
	}()
	if !await.Until(t, func() bool { return strings.Contains(stderr.String(), "configuration reloaded") }) {
		t.Errorf("a SIGHUP while the rules loaded was not taken for a reload:\n%s", stderr.String())
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, ok := await.Receive(t, exited); !ok || code != 0 {
		t.Errorf("exit %d (ended %v); want 0 after SIGTERM:\n%s", code, ok, stderr.String())
	}
}

// hangupEnv, in the environment of this test binary run again, names the one-shot flag
// TestOneShotsDieOfHangup runs in it.
const hangupEnv = "LOGWINDOW_TEST_HANGUP_ONE_SHOT"

// TestOneShotsDieOfHangup: the one-shots (--config.check, --dashboard, --replay, --explain)
// do not catch SIGHUP, which run catches for the server alone: a terminal closed under a
// check or a replay of a large file ends it, where a caught SIGHUP would be dropped with
// no server to reload. Each runs in this binary run again, which the SIGHUP it sends
// itself while its rule file loads must end.
func TestOneShotsDieOfHangup(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte("rules: [{name: r, match: x}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := filepath.Join(dir, "access.log")
	if err := os.WriteFile(lines, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	oneShots := map[string]string{
		"check":     "--config.check",
		"dashboard": "--dashboard",
		"replay":    "--replay=" + lines,
		"explain":   "--explain=" + lines,
	}
	if name := os.Getenv(hangupEnv); name != "" {
		loadConfig = func(path string) (*config.Config, error) {
			if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			// The signal ends the process; a wait given up is a SIGHUP caught.
			await.Receive(t, make(chan struct{}))
			return nil, fmt.Errorf("%s: the SIGHUP was caught", name)
		}
		t.Fatalf("exit %d", run([]string{"--config.file=" + rules, oneShots[name]}, io.Discard, os.Stderr))
	}
	timeout := time.Duration(0) // none: await's own bound
	if end, ok := t.Deadline(); ok {
		timeout = time.Until(end) / 2
	}
	// Side by side, each given half of what is left of this binary's time, so that one
	// that catches the signal gives up its wait before this test is out of time.
	names := slices.Sorted(maps.Keys(oneShots))
	outs := make([]bytes.Buffer, len(names))
	cmds := make([]*exec.Cmd, len(names))
	for i, name := range names {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestOneShotsDieOfHangup$", fmt.Sprintf("-test.timeout=%v", timeout))
		cmds[i].Env = append(os.Environ(), hangupEnv+"="+name)
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range names {
		err := cmds[i].Wait()
		if ws, ok := cmds[i].ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGHUP {
			t.Errorf("%s: not ended by SIGHUP (%v):\n%s", oneShots[name], err, outs[i].String())
		}
	}
}
