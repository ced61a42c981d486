package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadRefusesWhatIsNoRuleFile: a path that is not a regular file, or a file past
// MaxFileBytes, is refused with an error naming it, at once: a FIFO blocked the load (a
// reload, or the watch of the file) until something wrote to it, and a device such as
// /dev/zero was read until memory ran out.
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
	tests := []struct{ path, want string }{
		{fifo, notRegular(t, fifo)},
		{"/dev/zero", notRegular(t, "/dev/zero")},
		{dir, notRegular(t, dir)},
		{big, big + ": larger than 16 MiB; a rule file holds rules, not data"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := Load(tt.path)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || err.Error() != "reading config: "+tt.want {
					t.Errorf("got %.300v, want reading config: %s", err, tt.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Load did not return")
			}
		})
	}
	if _, err := Load(filepath.Join(dir, "absent.yaml")); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "absent.yaml") {
		t.Errorf("a missing file: %v", err)
	}
}

// notRegular is the message of a path that is not a regular file.
func notRegular(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s: not a regular file (mode %s, as ls -l shows it); give the path of the rule file", path, fi.Mode())
}
