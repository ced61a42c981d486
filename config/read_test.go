package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// TestLoadRefusesWhatIsNoRuleFile: a path that is not a regular file, or a file past
// MaxFileBytes, is refused with an error naming it, at once: a FIFO blocked the load (a
// reload, or the watch of the file) until something wrote to it, and a device such as
// /dev/zero was read until memory ran out. A file past the bound reached by links, as a
// ConfigMap's volume reaches it, is refused by its own size. A link to nothing says so;
// one round a loop does not. Load, of the file the exporter starts with, reads a pipe
// (TestLoadReadsAPipe): a FIFO no one writes to is read at once, and its error says it
// held nothing (not that the file has no rules).
func TestLoadRefusesWhatIsNoRuleFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("rules: [{name: a, match: x}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxFileBytes+1); err != nil {
		t.Fatal(err)
	}
	// A ConfigMap's volume: the file a link into ..data, a link to the update's directory.
	mounted := filepath.Join(dir, "rules.yaml")
	if err := errors.Join(os.Mkdir(filepath.Join(dir, "..2026_11_30"), 0o755),
		os.Link(big, filepath.Join(dir, "..2026_11_30", "rules.yaml")),
		os.Symlink("..2026_11_30", filepath.Join(dir, "..data")),
		os.Symlink(filepath.Join("..data", "rules.yaml"), mounted)); err != nil {
		t.Fatal(err)
	}
	// A link to nothing: a rule file moved away from under it, or a ConfigMap's key
	// renamed, whose link the kubelet keeps until the pod restarts. Its error said only
	// that the file, which ls lists, does not exist.
	dangling := filepath.Join(dir, "dangling.yaml")
	if err := os.Symlink("moved.yaml", dangling); err != nil {
		t.Fatal(err)
	}
	keyRemoved := filepath.Join(dir, "old-key.yaml")
	if err := os.Symlink(filepath.Join("..data", "old-key.yaml"), keyRemoved); err != nil {
		t.Fatal(err)
	}
	// A link that leads round in a loop leads somewhere: it is no file missing.
	loop := filepath.Join(dir, "loop.yaml")
	if err := os.Symlink("loop.yaml", loop); err != nil {
		t.Fatal(err)
	}
	// What a reload read is the pipeline's and the watch's business, not this test's.
	loadAgain := func(path string) (*Config, error) {
		data, _, err := ReadAgain(path)
		if err != nil {
			return nil, err
		}
		return Parse(data, path)
	}
	tests := []struct {
		path, want string
		load       func(string) (*Config, error)
	}{
		{loop, "reading config: open " + loop + ": too many levels of symbolic links", Load},
		{dangling, "reading config: open " + dangling + ": no such file or directory: it is a symbolic link to moved.yaml, which leads to no file", Load},
		{keyRemoved, "reading config: open " + keyRemoved + ": no such file or directory: it is a symbolic link to ..data/old-key.yaml, which leads to no file", loadAgain},
		{fifo, "reading config: " + fifo + ": not a regular file but a named pipe (FIFO); give the path of the rule file", loadAgain},
		{fifo, "reading config: " + fifo + ": read nothing from the pipe: its writer wrote nothing, or none had opened it (a named pipe is read at once, not waited on)", Load},
		{"/dev/zero", "reading config: /dev/zero: not a regular file but a character device; give the path of the rule file", Load},
		{dir, "reading config: " + dir + ": not a regular file but a directory; give the path of the rule file", Load},
		{dir, "reading config: " + dir + ": not a regular file but a directory; give the path of the rule file", loadAgain},
		{big, "reading config: " + big + ": 1048577 bytes, more than the 1 MiB (1048576 bytes) a rule file may hold; a rule file holds rules, not data", Load},
		{big, "reading config: " + big + ": 1048577 bytes, more than the 1 MiB (1048576 bytes) a rule file may hold; a rule file holds rules, not data", loadAgain},
		{mounted, "reading config: " + mounted + ": 1048577 bytes, more than the 1 MiB (1048576 bytes) a rule file may hold; a rule file holds rules, not data", loadAgain},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := tt.load(tt.path)
				done <- err
			}()
			// A load that waits on a writer waits for ever: until the test's timeout, not
			// a bound in seconds that a loaded machine passes.
			var err error
			if !await.Until(t, func() bool {
				select {
				case err = <-done:
					return true
				default:
					return false
				}
			}) {
				t.Fatal("Load did not return")
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("got %.300v, want %s", err, tt.want)
			}
			// The watch of the file tells a file missing a moment (a save) by it.
			if _, lerr := os.Lstat(tt.path); lerr == nil && strings.Contains(tt.want, "no such file") && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%v is not os.ErrNotExist", err)
			}
		})
	}
	if _, err := Load(filepath.Join(dir, "absent.yaml")); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "absent.yaml") {
		t.Errorf("a missing file: %v", err)
	}
}

// TestLoadReadsAPipe: the file the exporter starts with (or checks) may be a pipe, as
// `--config.file=/dev/stdin` and a shell's `--config.file=<(helm template …)` give it,
// read once and bounded as a file is; a reload, which would read it again (and wait on a
// writer that stays silent, holding the reload), refuses it.
func TestLoadReadsAPipe(t *testing.T) {
	rules := "inputs: [{path: /var/log/a.log}]\nrules: [{name: a_lines, help: Lines., match: x}]\n"
	pipe := func(t *testing.T, content string) string {
		t.Helper()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		go func() {
			w.WriteString(content)
			w.Close()
		}()
		return fmt.Sprintf("/proc/self/fd/%d", r.Fd())
	}
	t.Run("Load", func(t *testing.T) {
		cfg, err := Load(pipe(t, rules))
		if err != nil {
			t.Fatalf("a pipe: %v", err)
		}
		if len(cfg.Rules) != 1 || cfg.Rules[0].Name != "a_lines" {
			t.Errorf("a pipe loaded %d rules, want a_lines", len(cfg.Rules))
		}
	})
	t.Run("too large", func(t *testing.T) {
		path := pipe(t, strings.Repeat("#\n", MaxFileBytes/2+1))
		if _, err := Load(path); err == nil || !strings.HasSuffix(err.Error(), ": more than the 1 MiB (1048576 bytes) a rule file may hold; a rule file holds rules, not data") {
			t.Errorf("a pipe past MaxFileBytes: %v", err)
		}
	})
	t.Run("ReadAgain", func(t *testing.T) {
		path := pipe(t, rules)
		if _, _, err := ReadAgain(path); err == nil || err.Error() != "reading config: "+path+": not a regular file but a named pipe (FIFO); give the path of the rule file" {
			t.Errorf("a reload of a pipe: %v", err)
		}
	})
}
