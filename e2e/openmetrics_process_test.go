package e2e

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// The whole /metrics asked for as OpenMetrics, the Go and process collectors' families
// included, is read by Python's prometheus_client, whose parser holds a scrape to what
// OpenMetrics 1.0 requires: a family's metadata once and before its samples, which
// client_golang's go_memstats_alloc_bytes and go_memstats_alloc_bytes_total (one family
// name in OpenMetrics) broke.
func TestOpenMetricsWholeScrape(t *testing.T) {
	python := ""
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import prometheus_client.openmetrics.parser").Run() == nil {
			python = path
			break
		}
	}
	if python == "" {
		if os.Getenv("LOGWINDOW_E2E") != "" {
			t.Fatal("no python3 with prometheus_client (Debian: apt-get install python3-prometheus-client)")
		}
		t.Skip("no python3 with prometheus_client (Debian: apt-get install python3-prometheus-client)")
	}
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	sample, err := os.ReadFile(filepath.Join("..", "examples", "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "access.log"), sample, 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile(filepath.Join("..", "examples", "quickstart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rules = bytes.ReplaceAll(rules, []byte("path: examples/*.log"), []byte("path: "+filepath.Join(dir, "*.log")))
	cfg := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfg, rules, 0o644); err != nil {
		t.Fatal(err)
	}
	p := testexec.StartExporter(t, bin, "--config.file="+cfg)
	p.WaitLines(t, float64(bytes.Count(sample, []byte("\n"))))
	scrape, err := p.Fetch("/metrics", http.Header{"Accept": {"application/openmetrics-text;version=1.0.0"}})
	if err != nil {
		t.Fatal(err)
	}
	const script = `import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
for f in text_string_to_metric_families(sys.stdin.read()):
    print(f.name, f.type)
`
	cmd := exec.Command(python, "-c", script)
	cmd.Stdin = bytes.NewReader(scrape)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("prometheus_client's OpenMetrics parser: %v\n%s", err, out)
	}
	for _, want := range []string{
		"go_memstats_alloc_bytes gauge", "process_cpu_seconds counter", "go_gc_duration_seconds summary",
		"nginx_http_requests counter", "nginx_http_requests_window gauge", "logwindow_input_lines counter",
	} {
		if !strings.Contains("\n"+string(out), "\n"+want+"\n") {
			t.Errorf("parsed families lack %q:\n%s", want, out)
		}
	}
}
