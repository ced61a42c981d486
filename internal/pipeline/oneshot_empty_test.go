package pipeline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
)

// An input whose files given to --replay, --sample or --explain are empty read no line:
// the check checked nothing, the replay's zeros say nothing of the rules, and the
// explanation is of no line, so each fails, naming the input, where they said OK with
// exit 0.
func TestOneShotsFailOnEmptyFiles(t *testing.T) {
	const good = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"` + "\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		err   string
	}{
		{"an empty file", map[string]string{"a.log": ""}, "input web read no line: the files given are empty"},
		{"empty files", map[string]string{"a.log": "", "b.log": ""}, "input web read no line: the files given are empty"},
		{"an empty file beside one of lines", map[string]string{"a.log": "", "b.log": good}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			glob := filepath.Join(dir, "*.log")
			cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: web, path: '%s', log_format: combined}]\nrules: [{name: requests, labels: {status: '${status}'}}]\n", glob), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			for mode, run := range map[string]func(Options) error{
				"replay": func(o Options) error { return Replay(cfg, []string{glob}, o, &bytes.Buffer{}) },
				"sample": func(o Options) error { return Sample(cfg, []string{glob}, o) },
				"explain": func(o Options) error {
					return Explain(cfg, glob, 100, o, func(explain.Line) error { return nil })
				},
			} {
				err := run(Options{Now: time.Now, Summary: &bytes.Buffer{}})
				if tc.err == "" && err != nil || tc.err != "" && (err == nil || err.Error() != mode+": "+tc.err) {
					t.Errorf("%s: %v, want error %q", mode, err, tc.err)
				}
			}
		})
	}
}
