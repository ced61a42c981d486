//go:build unix

package storage

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// noFollow refuses a symbolic link as the lock file.
const noFollow = syscall.O_NOFOLLOW

// lockFile takes an exclusive lock of f without waiting for it.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("%w: %s is locked", ErrLocked, f.Name())
		}
		return fmt.Errorf("snapshot: lock %s: %w", f.Name(), err)
	}
}

// lockDir takes an exclusive lock of dir, with wait waiting for it (another process holds
// it for the time of a rename), and returns its release: the lock file's replacements
// (takeOver) are made one at a time, each after a look at what the one before left.
func lockDir(dir string, wait bool) (func(), error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(d.Fd()), how)
		switch {
		case err == nil:
			return func() { d.Close() }, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		d.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
}
