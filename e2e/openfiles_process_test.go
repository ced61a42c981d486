package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

const openFilesRules = `
global: {windows: [1m]}
inputs: [{name: web, path: %s, start_at: beginning}]
rules:
  - name: http_requests
    match: '^GET (?P<path>\S+)$'
    labels: {path: '${path}'}
`

// TestOpenFileLimit runs the exporter under `ulimit -n 100` with a glob of more files
// than that, there at the start or appearing once it serves: the inputs keep open only
// what the limit leaves them beside the HTTP side, so the exporter starts and /metrics
// answers (before, the start exited on the listener's "too many open files", and files
// appearing later made every accept fail). Each file holds one line: every file is
// counted, read or waiting (errors{reason="open"}), and a file deleted gives its place to
// one that waits, whose line is then read.
func TestOpenFileLimit(t *testing.T) {
	const (
		nofile = 100
		files  = 200
	)
	bin := testexec.BuildExporter(t, false)
	for _, c := range []struct {
		name string
		// before files are there at the start, the others appear once the exporter serves.
		before int
	}{
		{name: "at start", before: files},
		{name: "after start", before: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			logs := filepath.Join(dir, "logs")
			if err := os.Mkdir(logs, 0o755); err != nil {
				t.Fatal(err)
			}
			create := func(from, to int) {
				for i := from; i < to; i++ {
					writeFile(t, filepath.Join(logs, fmt.Sprintf("f%03d.log", i)), []byte("GET /a\n"), 0o644)
				}
			}
			create(0, c.before)
			cfgPath := filepath.Join(dir, "rules.yaml")
			writeFile(t, cfgPath, fmt.Appendf(nil, openFilesRules, filepath.Join(logs, "*.log")), 0o644)
			limited := filepath.Join(dir, "limited")
			writeFile(t, limited, fmt.Appendf(nil, "#!/bin/sh\nulimit -n %d || exit 1\nexec '%s' \"$@\"\n", nofile, bin), 0o755)
			e := testexec.StartExporter(t, limited, "--config.file="+cfgPath, "--input.rotation-grace=100ms")
			create(c.before, files)

			waiting := func(m metrictest.Families) float64 {
				return metrictest.Value(m, "logwindow_input_errors_total", map[string]string{"input": "web", "reason": "open"})
			}
			m := e.WaitFor(t, "every file is read or waits", func(m metrictest.Families) bool {
				return metrictest.Sum(m, "logwindow_input_lines_total")+waiting(m) == files
			})
			read := metrictest.Sum(m, "logwindow_input_lines_total")
			if read == 0 || waiting(m) == 0 {
				t.Fatalf("read %v files, %v wait: want some of each under ulimit -n %d", read, waiting(m), nofile)
			}
			if !strings.Contains(e.Log(), `"msg":"files wait to be opened`) {
				t.Errorf("no warning says files wait to be opened; log:\n%s", testexec.Tail(e.Output, 20))
			}
			if n := strings.Count(e.Log(), `"msg":"files wait to be opened`); n != 1 {
				t.Errorf("%d warnings say files wait, want 1", n)
			}

			// A file read gives its place up once deleted (after the rotation grace): a
			// waiting one is opened, and its line read.
			open := followed(t, e.Log())
			if len(open) == 0 {
				t.Fatal("no file followed in the log")
			}
			if err := os.Remove(open[0]); err != nil {
				t.Fatal(err)
			}
			e.WaitLines(t, read+1)
		})
	}
}

// followed are the paths the exporter's JSON log says it follows.
func followed(t *testing.T, log string) []string {
	t.Helper()
	var paths []string
	for line := range strings.Lines(log) {
		var l struct{ Msg, Path string }
		if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, "following ") {
			paths = append(paths, l.Path)
		}
	}
	return paths
}
