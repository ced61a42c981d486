package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// replayFamilies writes rules and log to a temporary directory, replays the log through the
// built exporter bin and returns the families of its output.
func replayFamilies(t *testing.T, bin, rules string, log []byte) map[string]*dto.MetricFamily {
	t.Helper()
	dir := t.TempDir()
	logPath, rulesPath := filepath.Join(dir, "app.log"), filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(logPath, log, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rulesPath, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--config.file="+rulesPath, "--replay="+logPath).Output()
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}
