package e2e

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// The whole /metrics asked for as OpenMetrics, the Go and process collectors' families
// included, is read by Python's prometheus_client, whose parser holds a scrape to what
// OpenMetrics 1.0 requires: a family's metadata once and before its samples, which
// client_golang's go_memstats_alloc_bytes and go_memstats_alloc_bytes_total (one family
// name in OpenMetrics) broke.
func TestOpenMetricsWholeScrape(t *testing.T) {
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
	out := testexec.ParseOpenMetrics(t, scrape)
	for _, want := range []string{
		"go_memstats_alloc_bytes gauge", "process_cpu_seconds counter", "go_gc_duration_seconds summary",
		"nginx_http_requests counter", "nginx_http_requests_window gauge", "logwindow_input_lines counter",
	} {
		if !strings.Contains("\n"+out, "\n"+want+" ") {
			t.Errorf("parsed families lack %q:\n%s", want, out)
		}
	}
}

// TestOpenMetricsNegativeValues: a value rule fed negative values (a log's -1 for
// "unknown") drops them as negative, so its _total, a counter, is never negative and
// Python's OpenMetrics parser, which refuses a whole scrape with a negative counter, reads
// it.
func TestOpenMetricsNegativeValues(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.log"), []byte("-5\n2\n-10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "rules.yaml")
	rules := "inputs: [{path: " + filepath.Join(dir, "*.log") + ", start_at: beginning}]\n" +
		"rules: [{name: delta, match: '^(?P<v>-?[0-9.]+)', value: v}]\n"
	if err := os.WriteFile(cfg, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	p := testexec.StartExporter(t, bin, "--config.file="+cfg)
	m := p.WaitLines(t, 3)
	if got := metrictest.Value(m, "delta_total", nil); got != 2 {
		t.Errorf("delta_total %v, want 2", got)
	}
	if got := metrictest.Value(m, "logwindow_rule_dropped_lines_total", map[string]string{"rule": "delta", "reason": "negative"}); got != 2 {
		t.Errorf("%v lines dropped as negative, want 2", got)
	}
	scrape, err := p.Fetch("/metrics", http.Header{"Accept": {"application/openmetrics-text;version=1.0.0"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := testexec.ParseOpenMetrics(t, scrape); !strings.Contains("\n"+out, "\ndelta counter ") {
		t.Errorf("parsed families lack delta:\n%s", out)
	}
}
