//go:build unix

package storage

import (
	"errors"
	"syscall"
	"testing"
)

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }

// A directory is taken by one holder at a time: another is refused with ErrLocked until
// the first lets it go.
func TestTakeLock(t *testing.T) {
	dir := t.TempDir()
	first, err := TakeLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TakeLock(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second holder: %v, want ErrLocked", err)
	}
	first.Release()
	second, err := TakeLock(dir)
	if err != nil {
		t.Fatalf("once the first let it go: %v", err)
	}
	second.Release()
}
