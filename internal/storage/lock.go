package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// LockName is the file of a storage directory whose lock says that a process uses it.
const LockName = "lock"

// ErrLocked is the error of TakeLock, and of WaitLock once its wait is over, when another
// process holds the directory.
var ErrLocked = errors.New("the storage directory is used by another process")

// Lock is a storage directory taken by this process.
type Lock struct{ f *os.File }

// TakeLock takes dir for this process, so that two exporters given one directory do
// not read and write each other's snapshots: ErrLocked when another holds it. The lock
// goes with the process (a kill lets it go); Release lets it go before.
func TakeLock(dir string) (*Lock, error) {
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		// A directory this process may read but not write: another one may be locking it.
		if f, err = os.Open(path); err != nil {
			return nil, fmt.Errorf("snapshot: lock: %w", err)
		}
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return &Lock{f}, nil
}

// lockPoll is how often WaitLock tries the lock again: flock cannot be waited for with a
// bound, and a wait without one could not be given up.
const lockPoll = 100 * time.Millisecond

// ErrStopped is the error of WaitLock given up for its stop channel.
var ErrStopped = errors.New("stopped while waiting for the storage directory")

// WaitLock is TakeLock that, while another process holds dir, tries again until wait has
// passed (ErrLocked then), so that a process started while the one it replaces is still
// stopping restores the snapshot that one writes last. A wait ends early with ErrStopped
// once stop (which may be nil) is closed: a process told to stop meanwhile does not wait
// on. waiting, when not nil, is called once, when the wait begins.
func WaitLock(dir string, wait time.Duration, stop <-chan struct{}, waiting func()) (*Lock, error) {
	deadline := time.Now().Add(wait)
	l, err := TakeLock(dir)
	if !errors.Is(err, ErrLocked) || wait <= 0 {
		return l, err
	}
	if waiting != nil {
		waiting()
	}
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return nil, fmt.Errorf("%w: %w", ErrStopped, err)
		case <-tick.C:
		}
		if l, err = TakeLock(dir); !errors.Is(err, ErrLocked) || !time.Now().Before(deadline) {
			return l, err
		}
	}
}

// Release lets the directory go.
func (l *Lock) Release() { l.f.Close() }
