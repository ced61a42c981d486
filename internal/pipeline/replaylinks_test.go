package pipeline

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
	"github.com/logwindow/logwindow_exporter/internal/testutil/asother"
)

// A symlink planted under a replayed glob's directory to a file out of the glob's root is
// not followed, as the live follower does not follow it: --replay, --explain and
// --config.check --sample read the glob's other files, then fail naming the link. A link
// that stays in the root is read.
func TestOneShotsRefuseSymlinksOutOfTheRoot(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(filepath.Join(logs, "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"logs/a.log": "GET / 200\n", "logs/old/b.txt": "GET / 404\n", "secret.log": "GET / 500\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"b.log": "old/b.txt", "evil.log": "../secret.log"} {
		if err := os.Symlink(target, filepath.Join(logs, link)); err != nil {
			t.Fatal(err)
		}
	}
	glob := filepath.Join(logs, "*.log")
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s'}
rules:
  - {name: web, match: ' (?P<status>\d{3})$', labels: {status: '${status}'}}
`, glob), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	refusal := filepath.Join(logs, "evil.log") + " resolves to "
	wantErr := func(t *testing.T, mode string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), mode+" "+glob+": "+refusal) ||
			!strings.Contains(err.Error(), "a symbolic link out of the glob's root is not followed") {
			t.Errorf("%s: %v; want the link named as refused", mode, err)
		}
	}
	opts := Options{Now: time.Now, Summary: io.Discard}

	var out strings.Builder
	err = Replay(cfg, []string{glob}, opts, &out)
	wantErr(t, "replay", err)
	for _, line := range []string{`web_total{status="200"} 1`, `web_total{status="404"} 1`} {
		if !strings.Contains(out.String(), line+"\n") {
			t.Errorf("replay lacks %s:\n%s", line, out.String())
		}
	}
	if strings.Contains(out.String(), `status="500"`) {
		t.Errorf("replay read the link's target:\n%s", out.String())
	}

	lines, err := explainAll(cfg, glob, 10, opts)
	wantErr(t, "explain", err)
	if len(lines) != 2 {
		t.Errorf("explain: %d lines, want those of a.log and b.log", len(lines))
	}

	wantErr(t, "sample", Sample(cfg, []string{glob}, opts))
}

// The one-shots read every file of their globs they can, then fail naming, a line each,
// every file they could not read and every directory they could not list: a FIFO, a file
// of no permission, a directory of none. Names are those whoever can write in the
// directory chose: a newline in one is written escaped, and forges no line of the error
// (a log line, another file's error). A file that two matches reach (a symlink to a
// directory within the root), or that two of the files given name, is read once, as the
// live follower reads it.
func TestOneShotsReadPastUnreadableFiles(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	for name, data := range map[string]string{
		"a.log": "GET / 200\n", "sub/b.log": "GET / 404\n", "secret.log": "GET / 500\n", "locked/c.log": "GET / 503\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(logs, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(logs, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	forged := filepath.Join(logs, "x\nlevel=error msg=forged.log")
	if err := syscall.Mkfifo(forged, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(logs, "link")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"secret.log", "locked"} {
		if err := os.Chmod(filepath.Join(logs, name), 0); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s/*/*.log'}
  - {name: top, path: '%s/*.log'}
rules:
  - {name: web, match: ' (?P<status>\d{3})$', labels: {status: '${status}'}}
`, logs, logs), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(logs, "*.log"), filepath.Join(logs, "*", "*.log"), filepath.Join(logs, "a.log")}
	wantErr := func(t *testing.T, mode string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", mode)
		}
		lines := strings.Split(err.Error(), "\n")
		for _, l := range lines {
			if !strings.HasPrefix(l, mode+" ") {
				t.Errorf("%s: error line %q is not the one-shot's", mode, l)
			}
		}
		for _, want := range []string{
			filepath.Join(logs, "secret.log") + ": permission denied",
			filepath.Join(logs, "locked") + ": permission denied",
			strconv.Quote(forged + ": not a regular file but a named pipe (FIFO)"),
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error\n%v\nlacks %s", mode, err, want)
			}
		}
	}
	opts := Options{Now: time.Now, Summary: io.Discard}
	var out strings.Builder
	var explained int
	var replayErr, explainErr, sampleErr error
	asother.Run(t, []string{logs, filepath.Join(logs, "sub")}, func() {
		replayErr = Replay(cfg, files, opts, &out)
		var lines []explain.Line
		lines, explainErr = explainAll(cfg, files[1], 10, opts)
		explained = len(lines)
		sampleErr = Sample(cfg, files, opts)
	})
	wantErr(t, "replay", replayErr)
	for _, line := range []string{`web_total{status="200"} 1`, `web_total{status="404"} 1`} {
		if !strings.Contains(out.String(), line+"\n") {
			t.Errorf("replay lacks %s:\n%s", line, out.String())
		}
	}
	for _, status := range []string{"500", "503"} {
		if strings.Contains(out.String(), `status="`+status+`"`) {
			t.Errorf("replay read a file it may not read:\n%s", out.String())
		}
	}
	if explainErr == nil || !strings.Contains(explainErr.Error(), "explain "+files[1]+": open "+filepath.Join(logs, "locked")+": permission denied") {
		t.Errorf("explain: %v; want the locked directory named", explainErr)
	}
	if explained != 1 {
		t.Errorf("explain: %d lines, want sub/b.log's, once", explained)
	}
	wantErr(t, "sample", sampleErr)
}
