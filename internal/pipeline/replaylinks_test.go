package pipeline

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
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

	lines, err := Explain(cfg, glob, 10, opts)
	wantErr(t, "explain", err)
	if len(lines) != 2 {
		t.Errorf("explain: %d lines, want those of a.log and b.log", len(lines))
	}

	wantErr(t, "sample", Sample(cfg, []string{glob}, opts))
}
