package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// LockName is the file of a storage directory whose lock says that a process uses it.
const LockName = "lock"

// ErrLocked is the error of Lock when another process uses the directory.
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

// Release lets the directory go.
func (l *Lock) Release() { l.f.Close() }
