package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/dashboard"
)

// TestDashboardFlag: --dashboard prints the generator's dashboard for the loaded rules and
// exits 0, and a rule file that does not load is an error, not a dashboard.
func TestDashboardFlag(t *testing.T) {
	cfg, err := config.Load("example-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := dashboard.New(cfg, dashboard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--dashboard", "--config.file=example-rules.yaml"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !bytes.Equal(stdout.Bytes(), want) {
		t.Errorf("--dashboard printed %d bytes, not the dashboard of example-rules.yaml", stdout.Len())
	}

	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"--dashboard", "--config.file=testdata/missing.yaml"}, &stdout, &stderr); code != 1 || stdout.Len() > 0 || !strings.Contains(stderr.String(), "missing.yaml") {
		t.Errorf("missing rule file: exit %d, stdout %d bytes, stderr %q; want 1, nothing, the error", code, stdout.Len(), stderr.String())
	}
}
