package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
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

	p := testexec.StartExporter(t, bin, "--config.file="+filepath.Join(mount, "rules.yaml"), "--config.watch")
	limit := func(m metrictest.Families, rule string) float64 {
		return metrictest.Value(m, "logwindow_rule_series_limit", map[string]string{"rule": rule})
	}
	if m := p.Scrape(t); limit(m, "first_rule") < 0 || limit(m, "second_rule") >= 0 {
		t.Fatal("before the update: want first_rule only")
	}

	// The watch settles for 1 s before it reloads.
	update(rules("first_rule", "second_rule"))
	p.WaitFor(t, "the updated rules are loaded", func(m metrictest.Families) bool { return limit(m, "second_rule") >= 0 })

	update("rules: [")
	m := p.WaitFor(t, "the bad update is refused", func(m metrictest.Families) bool {
		return metrictest.Value(m, "logwindow_config_last_reload_successful", nil) == 0
	})
	if limit(m, "second_rule") < 0 {
		t.Error("after a refused update, the previous rules are gone")
	}
}
