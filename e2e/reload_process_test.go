package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// TestReloadRefusesDeepLogFormat rewrites the rule file of a running binary with a
// log_format of 500 variables each after a space, under the format's length cap but past
// the nesting Go's regexp allows; SIGHUP and POST /-/reload must each refuse it, naming
// the input and the key, and the process must keep serving the old rules.
func TestReloadRefusesDeepLogFormat(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "rules.yaml")
	logPath := filepath.Join(dir, "access.log")
	write := func(format string) {
		text := fmt.Sprintf("inputs:\n  - name: web\n    path: %s\n    log_format: '%s'\nrules:\n  - name: old_rule\n    help: h\n", logPath, format)
		if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("$remote_addr $status")
	p := testexec.StartExporter(t, bin, "--config.file="+cfgPath, "--web.enable-lifecycle")
	limit := func(m metrictest.Families) float64 {
		return metrictest.Value(m, "logwindow_rule_series_limit", map[string]string{"rule": "old_rule"})
	}
	vars := make([]string, 500)
	for i := range vars {
		vars[i] = fmt.Sprintf("$v%d", i)
	}
	write(strings.Join(vars, " "))
	const want = `input "web": log_format: the format ends with`

	if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.WaitLogged(t, "log_format: the format ends with") // the log is JSON: its quotes are escaped
	if exited, err := p.Exited(); exited {
		t.Fatalf("the exporter exited on SIGHUP: %v", err)
	}
	if m := p.Scrape(t); metrictest.Value(m, "logwindow_config_last_reload_successful", nil) != 0 || limit(m) < 0 {
		t.Error("after the refused SIGHUP: want the reload reported failed and old_rule kept")
	}

	resp, err := http.Post(p.URL()+"/-/reload", "text/plain", nil)
	if err != nil {
		t.Fatalf("POST /-/reload: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), cfgPath+":4: "+want) {
		t.Errorf("reload: HTTP %d %q; want 400 naming %s:4 and %q", resp.StatusCode, body, cfgPath, want)
	}
	if m := p.Scrape(t); metrictest.Value(m, "logwindow_config_last_reload_successful", nil) != 0 || limit(m) < 0 {
		t.Error("after the refused POST: want the reload reported failed and old_rule kept")
	}
}

// TestReloadRefusesWhatIsNoRuleFile puts, where a running binary's rule file was, what is
// no rule file: a FIFO no one writes to (a read of it would wait for a writer), a
// directory, a symlink loop, text saved as Latin-1, a value of megabytes. POST /-/reload
// must refuse each at once, naming the file (and the line where there is one) in a
// message of bounded size, and the process must keep serving the old rules; the rule file
// put back then reloads.
func TestReloadRefusesWhatIsNoRuleFile(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "rules.yaml")
	good := []byte("rules:\n  - name: old_rule\n    help: h\n    match: x\n")
	if err := os.WriteFile(cfgPath, good, 0o644); err != nil {
		t.Fatal(err)
	}
	p := testexec.StartExporter(t, bin, "--config.file="+cfgPath, "--web.enable-lifecycle")
	client := &http.Client{Timeout: 30 * time.Second}
	reload := func() (int, string) {
		t.Helper()
		resp, err := client.Post(p.URL()+"/-/reload", "text/plain", nil)
		if err != nil {
			t.Fatalf("POST /-/reload: %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	write := func(text string) func() error {
		return func() error { return os.WriteFile(cfgPath, []byte(text), 0o644) }
	}
	cases := []struct {
		name string
		put  func() error
		want string
	}{
		{"fifo", func() error { return syscall.Mkfifo(cfgPath, 0o644) }, cfgPath + ": not a regular file but a named pipe (FIFO)"},
		{"directory", func() error { return os.Mkdir(cfgPath, 0o755) }, cfgPath + ": not a regular file but a directory"},
		{"symlink loop", func() error { return os.Symlink(filepath.Base(cfgPath), cfgPath) }, cfgPath + ": too many levels of symbolic links"},
		{"latin-1", write("# caf\xe9\n" + string(good)), cfgPath + ":1: not valid YAML: invalid trailing UTF-8 octet: byte 0xe9 at column 6 is not UTF-8"},
		{"long value", write(string(good) + "    windows: ['" + strings.Repeat("9", 1<<20-100) + "']\n"),
			cfgPath + `:5: rule "old_rule": windows: "9999`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.Remove(cfgPath); err != nil {
				t.Fatal(err)
			}
			if err := c.put(); err != nil {
				t.Fatal(err)
			}
			code, body := reload()
			if code != http.StatusBadRequest || !strings.Contains(body, c.want) || len(body) > 4096 {
				t.Errorf("reload: HTTP %d %.300q (%d bytes); want 400 with %q, in at most 4 KiB", code, body, len(body), c.want)
			}
			m := p.Scrape(t)
			if metrictest.Value(m, "logwindow_config_last_reload_successful", nil) != 0 ||
				metrictest.Value(m, "logwindow_rule_series_limit", map[string]string{"rule": "old_rule"}) < 0 {
				t.Error("want the reload reported failed and old_rule kept")
			}
		})
	}
	if err := os.Remove(cfgPath); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := reload(); code != http.StatusOK {
		t.Errorf("the rule file put back: reload HTTP %d %q", code, body)
	}
}

// TestRuleFileTooLarge: a rule file past 1 MiB (a generator gone wrong: 16 MiB of rules
// took seconds and 550 MB to decode, twice the Helm chart's memory limit, before their
// count refused them) is refused by its size, before it is decoded, with an error naming
// it and its size: by --config.check and by the start, which exit 1, and by a reload of
// each kind (--config.watch, SIGHUP, POST /-/reload), the old rules serving on.
func TestRuleFileTooLarge(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	good := "rules:\n  - name: old_rule\n    help: h\n    match: x\n"
	big := good + strings.Repeat("# a line of a generated file, far too long\n", 25000)
	refused := fmt.Sprintf(": %d bytes, more than the 1 MiB (1048576 bytes) a rule file may hold", len(big))
	bigPath := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(bigPath, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--config.check"}, {"--web.listen-address=127.0.0.1:0"}} {
		t.Run(strings.Join(append([]string{"start"}, args...), " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testexec.DefaultTimeout)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, append([]string{"--config.file=" + bigPath}, args...)...).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), bigPath+refused) {
				t.Errorf("%v, output %.500q; want exit 1 naming %s%s", err, out, bigPath, refused)
			}
		})
	}

	cfgPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfgPath, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	p := testexec.StartExporter(t, bin, "--config.file="+cfgPath, "--web.enable-lifecycle", "--config.watch")
	// Put in place whole, as the kubelet updates a ConfigMap, for the watch to read it once.
	if err := os.Rename(bigPath, cfgPath); err != nil {
		t.Fatal(err)
	}
	refusals := func(n int) {
		t.Helper()
		if !await.Until(t, func() bool { return strings.Count(p.Log(), cfgPath+refused) >= n }) {
			t.Fatalf("the log holds %d refusals of the rule file, want %d:\n%s", strings.Count(p.Log(), cfgPath+refused), n, testexec.Tail(p.Output, 10))
		}
	}
	// The watch logs the refusal it reloads to report before the reload has run: the
	// reload's failure is awaited in the scrape, not taken from that line.
	kept := func(after string) {
		t.Helper()
		if !await.Until(t, func() bool {
			m := p.Scrape(t)
			return metrictest.Value(m, "logwindow_config_last_reload_successful", nil) == 0 &&
				metrictest.Value(m, "logwindow_rule_series_limit", map[string]string{"rule": "old_rule"}) >= 0
		}) {
			t.Errorf("after %s: want the reload reported failed and old_rule kept", after)
		}
	}
	refusals(1)
	kept("the watch")
	if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	refusals(2)
	kept("SIGHUP")
	resp, err := http.Post(p.URL()+"/-/reload", "text/plain", nil)
	if err != nil {
		t.Fatalf("POST /-/reload: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), cfgPath+refused) {
		t.Errorf("reload: HTTP %d %.300q; want 400 naming %s%s", resp.StatusCode, body, cfgPath, refused)
	}
	kept("POST /-/reload")
}
