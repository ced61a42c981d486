package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/filestat"
)

// LockName is the file of a storage directory whose lock says that a process uses it.
const LockName = "lock"

// ErrLocked is the error of TakeLock, and of WaitLock once its wait is over, when another
// process holds the directory.
var ErrLocked = errors.New("the storage directory is used by another process")

// Lock is a storage directory taken by this process.
type Lock struct {
	f        *os.File
	replaced error
}

// TakeLock takes dir for this process, so that two exporters given one directory do
// not read and write each other's snapshots: ErrLocked when another holds it. The lock
// goes with the process (a kill lets it go); Release lets it go before.
//
// The lock file is made readable by all: the lock is taken on a file opened read-only
// too, so that an exporter run as another user later (a chart's runAsUser changed) takes
// it as it is. One this process may not open at all (another user's of mode 0600, as
// earlier builds made them) is replaced by a file of its own, locked first, and
// Replaced says why: it was left by an exporter that ran as another user, which is
// stopped before this one starts (a DaemonSet's rollout without surge); one that still
// ran would hold the file replaced, and the two the directory, until it stopped. A FIFO
// is locked as a file is, without waiting for a writer; a socket, a device or a symbolic
// link is refused with an error naming it: a link would have the file it leads to, made
// where it leads when missing, opened for writing and made readable by all.
//
// Once it holds the directory, it removes the replacements (lockTmp) that a process which
// crashed in the middle of its takeover left.
func TakeLock(dir string) (*Lock, error) {
	l, err := takeLock(dir)
	if err == nil {
		removeStaleTmps(dir)
	}
	return l, err
}

// lockTmp names the files a takeover makes to rename over the lock file.
const lockTmp = LockName + ".tmp-"

// removeStaleTmps removes the takeovers' files (lockTmp) in dir that no process holds
// locked, under the directory's lock: a takeover makes, locks and renames its file under
// that lock, so one found there is one a process left when it died between the making
// and the rename. Where the directory cannot be locked, none is removed: a takeover made
// there without the lock could be between the two; nor while another process holds the
// lock, which it does for a moment, unless it hangs: the next start removes them.
func removeStaleTmps(dir string) {
	names := named(dir, lockTmp)
	if len(names) == 0 {
		return
	}
	unlock, err := lockDir(dir, false)
	if err != nil {
		return
	}
	defer unlock()
	for _, name := range names {
		if fi, err := os.Lstat(name); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		// O_NONBLOCK: a FIFO put in its place since the look would wait for a writer.
		f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			err = lockFile(f)
			f.Close()
			if errors.Is(err, ErrLocked) {
				continue
			}
		}
		_ = os.Remove(name)
	}
}

// takeLock is TakeLock without the removal of stale takeovers' files.
func takeLock(dir string) (*Lock, error) {
	path := filepath.Join(dir, LockName)
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&(fs.ModeSocket|fs.ModeDevice|fs.ModeSymlink) != 0 {
		return nil, fmt.Errorf("snapshot: lock: %s is %s, not a regular file: remove it", path, filestat.TypeName(fi.Mode()))
	}
	f, err := openLock(path)
	if errors.Is(err, fs.ErrPermission) {
		return takeOver(dir, path, err)
	}
	return lockOpened(f, err)
}

// openLock opens the lock file at path, made when missing, to lock it: read-write when
// this process may, else read-only.
func openLock(path string) (*os.File, error) {
	// O_NONBLOCK: the open of a FIFO for reading alone would wait for a writer.
	// noFollow: a symbolic link put in its place since TakeLock's look.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK|noFollow, 0o644)
	if err == nil {
		// One this process made may have been made under a umask that left it its own;
		// one another user made and it may write stays as that user set it.
		_ = f.Chmod(0o644)
		return f, nil
	}
	// A directory this process may read but not write: another one may be locking it.
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|noFollow, 0)
}

// lockOpened locks f, the lock file as openLock opened it (err the error of its open).
func lockOpened(f *os.File, err error) (*Lock, error) {
	if err != nil {
		return nil, fmt.Errorf("snapshot: lock: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return &Lock{f: f}, nil
}

// takeOver replaces the lock file at path, which this process may not open (refused
// says why), with a new file of its own, locked before it takes the place: a process
// that opens the lock file after the rename finds it locked. The replacement is made
// under a lock of the directory, after a second look at the lock file: of two exporters
// given one directory and started at once, the second finds the first's replacement,
// which it may open, locked (ErrLocked), rather than replace it too.
func takeOver(dir, path string, refused error) (*Lock, error) {
	// Where the directory cannot be locked (NFS locks only files open for writing), the
	// second look alone narrows the race.
	if unlock, err := lockDir(dir, true); err == nil {
		defer unlock()
	}
	if f, err := openLock(path); !errors.Is(err, fs.ErrPermission) {
		return lockOpened(f, err)
	}
	f, err := os.CreateTemp(dir, lockTmp+"*")
	if err != nil {
		return nil, fmt.Errorf("snapshot: lock: %w; cannot replace it: %w", refused, err)
	}
	fail := func(err error) (*Lock, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(fmt.Errorf("snapshot: lock: %w", err))
	}
	if err := lockFile(f); err != nil {
		return fail(err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fail(fmt.Errorf("snapshot: lock: %w; cannot replace it: %w", refused, err))
	}
	return &Lock{f: f, replaced: refused}, nil
}

// Replaced is why TakeLock replaced the lock file it found, nil when it did not.
func (l *Lock) Replaced() error { return l.replaced }

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

// Held reports whether the lock file at dir is still the file l holds. A directory
// removed (rm -r, a volume cleaned) or replaced while the process runs, or its lock file
// removed, takes the lock along: the file l holds is in no directory any more, and another
// process given dir takes the one at its place, made again, as free. The error is why it
// cannot be told (a directory this process may no longer search, chmod 000): the lock
// file may still be l's, which a process that let it go would hand to another.
func (l *Lock) Held(dir string) (bool, error) {
	at, err := os.Lstat(filepath.Join(dir, LockName))
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("snapshot: lock: %w", err)
	}
	held, err := l.f.Stat()
	if err != nil {
		return false, fmt.Errorf("snapshot: lock: %w", err)
	}
	return os.SameFile(at, held), nil
}

// Release lets the directory go.
func (l *Lock) Release() { l.f.Close() }
