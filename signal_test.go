package main

import (
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"

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
		// A signal a process sends itself is delivered before kill returns: without a
		// handler the test binary ends here.
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Error(err)
		}
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
