package pipeline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
)

// An input whose files given to --replay, --sample or --explain are empty read no line:
// the check checked nothing, the replay's zeros say nothing of the rules, and the
// explanation is of no line, so each fails, naming the input and the files, where they
// said OK with exit 0. So does a file no input reads that gives the rules no line (empty,
// or each line too long): a path that is neither an input's file nor holds a line. A file
// given by name that is empty beside the input's files of lines (a log just rotated,
// replayed with the file rotated away from it) is no error, but the input's line names it.
func TestOneShotsFailOnEmptyFiles(t *testing.T) {
	const good = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"` + "\n"
	long := strings.Repeat("x", 300) + "\n"
	for _, tc := range []struct {
		name  string
		files map[string]string // under the test's directory; in/ is the input's
		given []string          // the files given, * a glob
		err   string            // the error after the mode; "" none
		line  string            // what the summary says, "" nothing checked
	}{
		{"an empty file", map[string]string{"in/a.log": ""}, []string{"in/*.log"},
			": input web read no line: the files given are empty: DIR/in/*.log", ""},
		{"empty files", map[string]string{"in/a.log": "", "in/b.log": ""}, []string{"in/*.log"},
			": input web read no line: the files given are empty: DIR/in/*.log", ""},
		{"an empty file beside one of lines", map[string]string{"in/a.log": "", "in/b.log": good}, []string{"in/*.log"}, "", ""},
		{"empty files given by name", map[string]string{"in/a.log": "", "in/b.log": ""}, []string{"in/a.log", "in/b.log"},
			": input web read no line: the files given are empty: DIR/in/a.log, DIR/in/b.log", "input web: 0 of 0 lines fit (2 files given empty: DIR/in/a.log, DIR/in/b.log)"},
		{"an empty file given by name beside one of lines", map[string]string{"in/a.log": "", "in/b.log": good}, []string{"in/a.log", "in/b.log"},
			"", "input web: 1 of 1 lines fit (1 file given empty: DIR/in/a.log)"},
		{"an empty file no input reads", map[string]string{"other.log": ""}, []string{"other.log"},
			" DIR/other.log: it is empty, and no input reads this file (inputs: web: DIR/in/*.log)", ""},
		{"an empty file no input reads beside one of lines", map[string]string{"in/b.log": good, "other.log": ""}, []string{"in/b.log", "other.log"},
			" DIR/other.log: it is empty, and no input reads this file", ""},
		{"a glob no input reads of empty files", map[string]string{"other/a.log": "", "other/b.log": ""}, []string{"other/*.log"},
			" DIR/other/*.log: the files it matches are empty, and no input reads this file", ""},
		{"a file no input reads of lines too long", map[string]string{"other.log": long + long}, []string{"other.log"},
			" DIR/other.log: no rule read a line of it, its 2 lines are longer than --input.max-line-bytes, and no input reads this file", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tc.files {
				path := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var given []string
			for _, g := range tc.given {
				given = append(given, filepath.Join(dir, g))
			}
			cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: web, path: '%s', log_format: combined}]\nrules: [{name: requests, labels: {status: '${status}'}}]\n", filepath.Join(dir, "in", "*.log")), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			modes := map[string]func(Options) error{
				"replay": func(o Options) error { return Replay(cfg, given, o, &bytes.Buffer{}) },
				"sample": func(o Options) error { return Sample(cfg, given, o) },
			}
			if len(given) == 1 { // --explain takes one file
				modes["explain"] = func(o Options) error {
					return Explain(cfg, given[0], 100, o, func(explain.Line) error { return nil })
				}
			}
			want := strings.ReplaceAll(tc.err, "DIR", dir)
			for mode, run := range modes {
				var summary bytes.Buffer
				err := run(Options{Now: time.Now, Summary: &summary, MaxLineBytes: 200})
				if want == "" && err != nil || want != "" && (err == nil || !strings.HasPrefix(err.Error(), mode+want)) {
					t.Errorf("%s: %v, want error %q", mode, err, mode+want)
				}
				if line := strings.ReplaceAll(tc.line, "DIR", dir); !strings.Contains(summary.String(), line) {
					t.Errorf("%s: summary %q, want %q", mode, summary.String(), line)
				}
			}
		})
	}
}
