package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// A glob that matches a file which cannot be read as a log (a FIFO, a directory, a
// symlink out of its root) does not hold /-/ready: the exporter is ready once it reads
// what it can, and counts each refusal by its reason. Before, /-/ready answered 503 for
// as long as the FIFO stood, and a startupProbe restarted the exporter in a loop.
func TestReadyDespiteFilesItCannotRead(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	if err := os.Mkdir(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	const line = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"` + "\n"
	if err := os.WriteFile(filepath.Join(logs, "a.log"), []byte(strings.Repeat(line, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(logs, "fifo.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(logs, "dir.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "secret")
	if err := os.WriteFile(outside, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(logs, "escape.log")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "rules.yaml")
	rules := "inputs:\n  - {name: web, path: '" + filepath.Join(logs, "*.log") + "', start_at: beginning, log_format: combined}\n" +
		"rules:\n  - {name: requests, labels: {status: '${status}'}}\n"
	if err := os.WriteFile(cfg, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	// StartExporter waits for /-/ready to answer 200, and fails the test if it never does.
	p := testexec.StartExporter(t, bin, "--config.file="+cfg, "--input.poll-interval=50ms")
	m := p.WaitCheck(t, func(m metrictest.Families) error {
		return metrictest.Match(m, []metrictest.Sample{
			{Family: "requests_total", Labels: map[string]string{"status": "200"}, Want: 3},
			{Family: "logwindow_input_errors_total", Labels: map[string]string{"input": "web", "reason": "symlink"}, Want: 1},
		})
	})
	if n := metrictest.Sum(m, "logwindow_input_lines_total"); n != 3 {
		t.Errorf("%v lines read, want the 3 of a.log alone (nothing of the symlink's target)", n)
	}
	notRegular := 0.0
	for _, s := range m["logwindow_input_errors_total"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "reason" && l.GetValue() == "not_regular" {
				notRegular = s.GetCounter().GetValue()
			}
		}
	}
	if notRegular < 1 {
		t.Errorf("the FIFO and the directory counted %v times as not_regular, want at least once", notRegular)
	}
}
