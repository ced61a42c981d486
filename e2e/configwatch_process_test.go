package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"

	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
)

// TestConfigWatchProcess runs the binary with --config.watch on a rule file laid out as a
// mounted ConfigMap and updates it the way the kubelet does: the new rules are loaded, a
// bad update is refused with the old rules kept.
func TestConfigWatchProcess(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	mount := filepath.Join(dir, "rules")
	if err := os.Mkdir(mount, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "access.log")
	rules := func(names ...string) string {
		text := fmt.Sprintf("inputs:\n  - path: %s\nrules:\n", logPath)
		for _, n := range names {
			text += fmt.Sprintf("  - name: %s\n    match: '%s'\n", n, n)
		}
		return text
	}
	version := 0
	update := func(content string) {
		version++
		v := filepath.Join(mount, fmt.Sprintf("..2026_%d", version))
		if err := os.Mkdir(v, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(v, "rules.yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Base(v), filepath.Join(mount, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(mount, "..data_tmp"), filepath.Join(mount, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	update(rules("first_rule"))
	if err := os.Symlink("..data/rules.yaml", filepath.Join(mount, "rules.yaml")); err != nil {
		t.Fatal(err)
	}

	p := startProcess(t, bin, "--config.file="+filepath.Join(mount, "rules.yaml"), "--config.watch")
	limit := func(rule string) float64 {
		m, _ := p.scrape()
		return metrictest.Value(m, "logwindow_rule_series_limit", map[string]string{"rule": rule})
	}
	if limit("first_rule") < 0 || limit("second_rule") >= 0 {
		t.Fatal("before the update: want first_rule only")
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second) // the watch settles for 1 s
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 20s\n%s", what, p.logs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	update(rules("first_rule", "second_rule"))
	waitFor("the updated rules are loaded", func() bool { return limit("second_rule") >= 0 })

	update("rules: [")
	waitFor("the bad update is refused", func() bool {
		m, _ := p.scrape()
		return metrictest.Value(m, "logwindow_config_last_reload_successful", nil) == 0
	})
	if limit("second_rule") < 0 {
		t.Error("after a refused update, the previous rules are gone")
	}
}
