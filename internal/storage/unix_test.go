//go:build unix

package storage

import (
	"errors"
	"syscall"
	"testing"
	"time"
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

// WaitLock gives up once its wait has passed, having said once that it waits, and takes
// the directory as soon as its holder lets it go.
func TestWaitLock(t *testing.T) {
	dir := t.TempDir()
	first, err := TakeLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	waited := 0
	if _, err := WaitLock(dir, 2*lockPoll, nil, func() { waited++ }); !errors.Is(err, ErrLocked) || waited != 1 {
		t.Fatalf("WaitLock while held: %v, said it waits %d times; want ErrLocked, once", err, waited)
	}
	took := make(chan error, 1)
	go func() {
		l, err := WaitLock(dir, time.Minute, nil, func() { first.Release() })
		if err == nil {
			l.Release()
		}
		took <- err
	}()
	if err := <-took; err != nil {
		t.Fatalf("WaitLock once its holder let go: %v", err)
	}
}

// A wait for the lock ends once its stop channel is closed, the lock still held.
func TestWaitLockStopped(t *testing.T) {
	dir := t.TempDir()
	first, err := TakeLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	stop := make(chan struct{})
	if _, err := WaitLock(dir, time.Hour, stop, func() { close(stop) }); !errors.Is(err, ErrStopped) {
		t.Fatalf("WaitLock stopped: %v, want ErrStopped", err)
	}
}
