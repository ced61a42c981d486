package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
