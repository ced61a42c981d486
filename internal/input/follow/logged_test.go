package follow

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each file is logged at info as it is picked up, under the input its caller names: those
// present at start with the offset they are read from, and those that appear later (a
// path missing at start, a glob's new file) when a scan finds them. The test makes the
// scans itself, so no clock or file event is waited for.
func TestPickedUpFilesLogged(t *testing.T) {
	cases := []struct {
		name, path string // path is relative to the test's directory
	}{
		{"file", "access.log"},
		{"glob", "*.log"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var log bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{
				Level: slog.LevelInfo,
				// Without the time, a line is the same at every run.
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				},
			})).With("input", "web")
			f, err := newFollower(Options{Path: filepath.Join(dir, c.path), Logger: logger, noNotify: true}, func(string, []byte) {})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(f.Stop)
			if c.name == "glob" {
				if err := os.WriteFile(filepath.Join(dir, "old.log"), []byte("a line\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f.discover(true)
			if err := os.WriteFile(filepath.Join(dir, "access.log"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			f.discover(false)
			f.discover(false) // a file already followed is not logged again

			var want []string
			if c.name == "glob" {
				want = append(want, fmt.Sprintf(`level=INFO msg="following file" input=web path=%s offset=7`, filepath.Join(dir, "old.log")))
			}
			want = append(want, fmt.Sprintf(`level=INFO msg="following new file" input=web path=%s offset=0`, filepath.Join(dir, "access.log")))
			if got := strings.TrimSuffix(log.String(), "\n"); got != strings.Join(want, "\n") {
				t.Errorf("log:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}
