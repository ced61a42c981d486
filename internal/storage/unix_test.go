//go:build unix

package storage

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/asother"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
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

// A lock file another user left (an exporter run as root, before the chart ran it as
// another user: mode 0600), or a FIFO at its place, is taken over: the start neither
// waits forever (the open of a FIFO for reading waited for a writer) nor goes on without
// a lock (the file could not be opened), and the lock it takes keeps out the next holder.
// A lock file made by one user is taken by another as it is, read-only.
func TestTakeLockLeftByAnother(t *testing.T) {
	for _, tc := range []struct {
		name string
		// make makes DIR/lock as the tests' user.
		make func(path string) error
		// replaced: the lock file is replaced by one of the user taking it.
		replaced bool
	}{
		{"a file of mode 0600, another user's", func(path string) error { return refused(os.WriteFile(path, nil, 0o600), path) }, true},
		{"a FIFO the user may read", func(path string) error { return syscall.Mkfifo(path, 0o644) }, false},
		{"a FIFO the user may not open", func(path string) error { return refused(syscall.Mkfifo(path, 0o600), path) }, true},
		{"a lock this package made", func(path string) error {
			l, err := TakeLock(filepath.Dir(path))
			if err == nil {
				l.Release()
			}
			return err
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, LockName)
			if err := tc.make(path); err != nil {
				t.Fatal(err)
			}
			before, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			var l *Lock
			asother.Run(t, []string{dir}, func() { l, err = TakeLock(dir) })
			if err != nil {
				t.Fatalf("TakeLock: %v", err)
			}
			defer l.Release()
			after, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if replaced := !os.SameFile(before, after); replaced != tc.replaced || (l.Replaced() != nil) != tc.replaced {
				t.Errorf("replaced %v (Replaced: %v), want %v", replaced, l.Replaced(), tc.replaced)
			}
			if _, err := TakeLock(dir); !errors.Is(err, ErrLocked) {
				t.Errorf("a second holder: %v, want ErrLocked", err)
			}
		})
	}
}

// refused makes the file at path one the user asother.Run runs as may not open, after
// err, the error of its making.
func refused(err error, path string) error {
	if err != nil || os.Geteuid() == 0 {
		return err // asother.Run's user is another than its owner, root
	}
	return os.Chmod(path, 0)
}

// A lock file that can be neither locked nor replaced (a socket) is a clear error at once.
func TestTakeLockSocket(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, LockName))
	if err != nil {
		t.Skip(err)
	}
	defer ln.Close()
	if _, err := TakeLock(dir); err == nil || errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "is a socket, not a regular file") {
		t.Fatalf("TakeLock: %v, want an error saying it is a socket", err)
	}
}

// Exporters started at once as a user that may not open the lock file another user left
// (each replaces it) hold the directory one at a time: one takes it, the others find it
// taken (ErrLocked), however their replacements interleave.
func TestTakeOverRace(t *testing.T) {
	const exporters, rounds = 4, 200
	for round := range rounds {
		dir := t.TempDir()
		if err := refused(os.WriteFile(filepath.Join(dir, LockName), nil, 0o600), filepath.Join(dir, LockName)); err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		taken := make(chan *Lock, exporters)
		errs := make(chan error, exporters)
		var wg sync.WaitGroup
		for range exporters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				asother.Run(t, []string{dir}, func() {
					<-start
					l, err := TakeLock(dir)
					if err == nil {
						taken <- l
					} else if !errors.Is(err, ErrLocked) {
						errs <- err
					}
				})
			}()
		}
		close(start)
		wg.Wait()
		close(taken)
		close(errs)
		for err := range errs {
			t.Errorf("round %d: TakeLock: %v", round, err)
		}
		var held []*Lock
		for l := range taken {
			held = append(held, l)
		}
		for _, l := range held {
			l.Release()
		}
		if len(held) != 1 {
			t.Fatalf("round %d: %d of %d exporters hold the directory, want 1", round, len(held), exporters)
		}
	}
}

// A takeover's file (lock.tmp-*) that a process left when it died between making it and
// renaming it over the lock file is removed by the next TakeLock; one a process holds (a
// takeover under way) is left, as is every other file.
func TestTakeLockRemovesStaleTakeovers(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"lock.tmp-1", "lock.tmp-2", "lock.tmp-held", "lock.tmpx", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	held, err := os.Open(filepath.Join(dir, "lock.tmp-held"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := lockFile(held); err != nil {
		t.Fatal(err)
	}
	l, err := TakeLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got, want := strings.Join(names, " "), "lock lock.tmp-held lock.tmpx notes.txt"; got != want {
		t.Errorf("files %s, want %s", got, want)
	}
}

// A lock file that is a symbolic link is refused with an error naming it: the exporter,
// root in many a DaemonSet, would otherwise make the file it points to where it leads
// (anywhere, for a dangling one), open it for writing and make it readable by all.
func TestTakeLockRefusesSymlink(t *testing.T) {
	for _, tc := range []struct {
		name   string
		exists bool
	}{{"to a file", true}, {"dangling", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, elsewhere := t.TempDir(), t.TempDir()
			target := filepath.Join(elsewhere, "secret")
			if tc.exists {
				if err := os.WriteFile(target, []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(target, filepath.Join(dir, LockName)); err != nil {
				t.Fatal(err)
			}
			l, err := TakeLock(dir)
			if err == nil {
				l.Release()
			}
			if err == nil || errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "is a symbolic link, not a regular file") {
				t.Errorf("TakeLock: %v, want an error saying it is a symbolic link", err)
			}
			fi, err := os.Stat(target)
			switch {
			case !tc.exists && err == nil:
				t.Errorf("the link's target was made")
			case tc.exists && (err != nil || fi.Mode().Perm() != 0o600):
				t.Errorf("the link's target: %v, %v; want it as it was, mode 0600", fi.Mode(), err)
			}
		})
	}
}

// The removal of stale takeovers' files does not wait for the directory's lock: a process
// that holds it (for ever, hung) keeps them for the next start, and does not hold up this
// one.
func TestTakeLockDoesNotWaitToRemoveStaleTakeovers(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "lock.tmp-1")
	if err := os.WriteFile(stale, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockDir(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	took := make(chan error, 1)
	go func() {
		l, err := TakeLock(dir)
		if err == nil {
			l.Release()
		}
		took <- err
	}()
	err, ok := await.Receive(t, took)
	if !ok {
		unlock()
		t.Fatal("TakeLock waits for the directory's lock")
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("the stale file, removed without the directory's lock: %v", err)
	}
}

// The stale takeovers' files removed are those of the directory locked alone, whatever
// its name: one with glob characters names no other directory's.
func TestTakeLockRemovesStaleTakeoversOfItsDirectoryOnly(t *testing.T) {
	parent := t.TempDir()
	dir, other := filepath.Join(parent, "a?[b]"), filepath.Join(parent, "axb")
	for _, d := range []string{dir, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "lock.tmp-1"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l, err := TakeLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, err := os.Stat(filepath.Join(dir, "lock.tmp-1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the directory's own stale file: %v, want it removed", err)
	}
	if _, err := os.Stat(filepath.Join(other, "lock.tmp-1")); err != nil {
		t.Errorf("another directory's file, which its glob-like name matches: %v", err)
	}
}
