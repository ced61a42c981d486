package pipeline

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
)

// A file given to --replay or --explain is its input's however it is spelled: relative to
// the working directory, through a symlink, or under a symlinked directory of the input's
// glob; its path captures are those of the path its input names it by. A file no input reads is warned of, and fails the one-shot when no rule matched
// any of its lines.
func TestReplayedFileFindsItsInput(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"logs", "pods"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("logs/access.log", "GET / 200\nGET / 200\nGET / 503\n")
	write("pods/a.log", "GET / 404\n")
	write("copy.log", "GET / 200\n")
	link("logs/access.log", "link.log")
	link("pods", "podlink")
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s/logs/access.log'}
  - {name: pods, path: '%s/podlink/*.log', path_captures: '/podlink/(?P<pod>[^/.]+)\.log$'}
rules:
  - {name: web, match: ' (?P<status>\d{3})$', labels: {status: '${status}'}, inputs: [web]}
  - {name: pods, match: ' (?P<status>\d{3})$', labels: {pod: '${pod}', status: '${status}'}, inputs: [pods]}
`, dir, dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)

	cases := []struct {
		name, file string
		want       string // a line of the replay's output
		noInput    bool
	}{
		{"as the input writes it", filepath.Join(dir, "logs/access.log"), `web_total{status="200"} 2`, false},
		{"relative", "logs/access.log", `web_total{status="200"} 2`, false},
		{"relative, another spelling", "./pods/../logs/access.log", `web_total{status="503"} 1`, false},
		{"through a symlink", "link.log", `web_total{status="200"} 2`, false},
		{"in a glob under a symlinked directory", "pods/a.log", `pods_total{pod="a",status="404"} 1`, false},
		{"a glob, relative", "podlink/*.log", `pods_total{pod="a",status="404"} 1`, false},
		{"no input's", "copy.log", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			opts := Options{Now: time.Now, Logger: slog.New(slog.NewTextHandler(&log, nil))}
			var out strings.Builder
			err := Replay(cfg, []string{c.file}, opts, &out)
			if c.want != "" && !strings.Contains(out.String(), c.want+"\n") {
				t.Errorf("replay lacks %s:\n%s", c.want, out.String())
			}
			warned := strings.Contains(log.String(), "no input reads this file") && strings.Contains(log.String(), "file="+c.file)
			if warned != c.noInput {
				t.Errorf("warned %v, want %v; log:\n%s", warned, c.noInput, log.String())
			}
			if c.noInput {
				if err == nil || !strings.Contains(err.Error(), "replay "+c.file+": no rule matched") || !strings.Contains(err.Error(), "web: "+dir+"/logs/access.log") {
					t.Errorf("replay: %v; want an error naming the file and the inputs' paths", err)
				}
			} else if err != nil {
				t.Error(err)
			}

			lines, err := explainAll(cfg, c.file, 10, opts)
			if c.noInput != (err != nil) {
				t.Errorf("explain: %v; want an error %v", err, c.noInput)
			}
			if len(lines) == 0 || lines[0].Unmatched != c.noInput {
				t.Errorf("explain: %+v; want the first line counted: %v", lines, !c.noInput)
			}
		})
	}
}

// A glob given as an input's relative glob is written is that input's, read as it reads
// it, as it is made absolute for an input of an absolute glob.
func TestReplayedRelativeGlobOfRelativeInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "logs", "a.log"), []byte("GET / 200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(`
inputs:
  - {name: web, path: 'logs/*.log'}
rules:
  - {name: web, match: ' (?P<status>\d{3})$', labels: {status: '${status}'}, inputs: [web]}
`), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var log bytes.Buffer
	var out strings.Builder
	err = Replay(cfg, []string{"logs/*.log"}, Options{Now: time.Now, Logger: slog.New(slog.NewTextHandler(&log, nil))}, &out)
	if err != nil || !strings.Contains(out.String(), `web_total{status="200"} 1`+"\n") || strings.Contains(log.String(), "no input reads this file") {
		t.Errorf("replay: %v; log:\n%s\noutput:\n%s\nwant the input's rule to count the line", err, log.String(), out.String())
	}
}

// A file no input reads is counted by the rules that read every input, with a warning
// and no error; --explain and --sample, which fail on such a file when no rule matched
// any of its lines, do not fail on it when one did.
func TestReplayOfNoInputsFileCounted(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "copy.log")
	if err := os.WriteFile(file, []byte("GET / 200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s/access.log'}
rules:
  - {name: all, match: ' (?P<status>\d{3})$', labels: {status: '${status}'}}
`, dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	var out strings.Builder
	if err := Replay(cfg, []string{file}, Options{Now: time.Now, Logger: slog.New(slog.NewTextHandler(&log, nil))}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `all_total{status="200"} 1`) || !strings.Contains(log.String(), "no input reads this file") {
		t.Errorf("want the line counted and a warning; output:\n%s\nlog:\n%s", out.String(), log.String())
	}
	if err := Replay(cfg, []string{file}, Options{Now: time.Now}, io.Discard); err != nil {
		t.Errorf("replay without a logger: %v", err)
	}
	opts := Options{Now: time.Now, Summary: io.Discard, Logger: slog.New(slog.DiscardHandler)}
	lines, err := explainAll(cfg, file, 10, opts)
	if err != nil || len(lines) != 1 || lines[0].Unmatched {
		t.Errorf("explain: %+v, %v; want the line matched and no error", lines, err)
	}
	if err := Sample(cfg, []string{file}, opts); err != nil {
		t.Errorf("sample: %v", err)
	}
}

// TestMissingFileNotWarnedOfItsInput: a file given to a one-shot that does not exist fails
// it as missing; it is not first warned of as a file no input reads, which a relative path
// under an input's glob would otherwise be (it cannot be compared with the input's files).
func TestMissingFileNotWarnedOfItsInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d", "a.log"), []byte("GET / 200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: d, path: '%s/d/*.log'}
rules:
  - {name: web, match: ' (?P<status>\d{3})$', labels: {status: '${status}'}}
`, dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, file := range []string{"d/missing.log", "e/*.log"} {
		t.Run(file, func(t *testing.T) {
			var log bytes.Buffer
			opts := Options{Now: time.Now, Logger: slog.New(slog.NewTextHandler(&log, nil))}
			err := Replay(cfg, []string{"d/a.log", file}, opts, io.Discard)
			if err == nil || !strings.Contains(err.Error(), file) {
				t.Errorf("replay: %v; want an error naming %s", err, file)
			}
			if strings.Contains(log.String(), "no input reads this file") {
				t.Errorf("warned of a file no input reads:\n%s", log.String())
			}
		})
	}
}

// A file no input reads fails a one-shot on one line whatever its name: a newline in it
// (a glob's match, named by whoever can write in its directory) is written escaped, as
// a file that could not be read is (fileError), and forges no line of the error.
func TestNoInputErrorOneLine(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "copy\nreplay forged.log: no rule matched.log")
	if err := os.WriteFile(file, []byte("POST / 200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: web, path: '%s/access.log'}]\nrules: [{name: web, match: 'GET (?P<status>\\d{3})$', labels: {status: '${status}'}}]\n", dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Now: time.Now, Logger: slog.New(slog.DiscardHandler)}
	for _, tc := range []struct {
		mode string
		run  func() error
	}{
		{"replay", func() error { return Replay(cfg, []string{file}, opts, io.Discard) }},
		{"explain", func() error { _, err := explainAll(cfg, file, 10, opts); return err }},
		// --config.check --sample too: an OK and exit 0 would let the mistake pass.
		{"sample", func() error { return Sample(cfg, []string{file}, opts) }},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			err := tc.run()
			if err == nil {
				t.Fatal("no error")
			}
			if want := tc.mode + " " + explain.Display(file) + ": no rule matched any of its 1 lines"; strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q, want one line opening %q", err, want)
			}
		})
	}
}

// A one-shot lists each input's files once, however many files it is given: through a
// symlink to the input's directory, every file given, and the log of every rotated one,
// is compared with the input's files, which were globbed and stat'd again for each, so
// that a glob of thousands of files took minutes. The input's files are stat'd once each
// (for the rotated files' logs, when the files given are spelled as the input spells
// them), and every file given is still its input's, rotated ones under their log's path.
func TestOneShotListsInputsOnce(t *testing.T) {
	const logs, rotated = 30, 10
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range logs {
		name := filepath.Join(logDir, fmt.Sprintf("f%02d.log", i))
		if err := os.WriteFile(name, []byte("GET / 200\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if i < rotated {
			if err := os.WriteFile(name+".1", []byte("GET / 200\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(logDir, link); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: app, path: '%s/*.log', path_captures: '/(?P<file>f\d+)\.log$'}
rules:
  - {name: web, match: ' (?P<status>\d{3})$', labels: {file: '${file}'}, inputs: [app]}
`, logDir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stats := countStats(t)

	for _, c := range []struct {
		name, glob string
	}{
		{"through a symlink", filepath.Join(link, "f*")},
		{"as the input spells it", filepath.Join(logDir, "f*")},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := Options{Now: time.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			*stats = 0
			var out strings.Builder
			if err := Replay(cfg, []string{c.glob}, opts, &out); err != nil {
				t.Fatal(err)
			}
			if *stats != logs {
				t.Errorf("replay stat'd the input's files %d times, want %d", *stats, logs)
			}
			if want := `web_total{file="f00"} 2`; !strings.Contains(out.String(), want+"\n") || strings.Count(out.String(), "web_total{") != logs {
				t.Errorf("replay: want %d series, %s among them:\n%s", logs, want, out.String())
			}

			*stats = 0
			lines, err := explainAll(cfg, c.glob, logs+rotated, opts)
			if err != nil {
				t.Fatal(err)
			}
			if *stats != logs {
				t.Errorf("explain stat'd the input's files %d times, want %d", *stats, logs)
			}
			counted := 0
			for _, l := range lines {
				if l.Counted && l.Input == "app" {
					counted++
				}
			}
			if len(lines) != logs+rotated || counted != len(lines) {
				t.Errorf("explain: %d lines, %d counted by the input's rule; want %d, all", len(lines), counted, logs+rotated)
			}
		})
	}
}

// countStats counts the stats of globs' matches (statMatch) while the test runs.
func countStats(t *testing.T) *int {
	n := new(int)
	statMatch = func(name string) (os.FileInfo, error) {
		*n++
		return os.Stat(name)
	}
	t.Cleanup(func() { statMatch = os.Stat })
	return n
}
