//go:build unix

package pipeline

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/testutil/asother"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

// A FIFO where the storage directory should be does not hold the start: every open of
// it, as a directory to lock, read and set the snapshot aside in, fails at once (an open
// for reading alone would wait for a writer), and the exporter starts empty.
func TestStorageDirectoryFIFO(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(dir, 0o600); err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	cfg, o := storedOn(t, strings.ReplaceAll(persistRules, "LOG", filepath.Join(t.TempDir(), "access.log")), dir, &out, Options{SnapshotInterval: time.Hour})
	started := make(chan *Pipeline, 1)
	go func() {
		p, err := Start(cfg, o)
		if err != nil {
			t.Error(err)
		}
		started <- p
	}()
	p, ok := await.Receive(t, started)
	if !ok {
		t.Fatalf("Start still waiting:\n%s", out.String())
	}
	if p == nil {
		return
	}
	defer p.Stop()
	if s := p.StorageStats(); s.RestoreFailures != 1 {
		t.Errorf("storage stats %+v, want the snapshot not restored", s)
	}
	if err := p.Snapshot(); err == nil {
		t.Error("a snapshot into a FIFO succeeded")
	}
}

// A storage directory the exporter's user may no longer search (chmod 000, an owner or a
// volume's permissions changed) is not taken for one removed: its lock file may still be
// the one the exporter holds. The snapshot fails for the permission, said and counted
// once, and the lock is kept, so that another exporter given the directory does not take
// it meanwhile; once the permission is back, snapshots are written again. Before, the
// exporter logged the directory removed, counted that and the write, and let the lock go.
func TestStorageDirectoryUnsearchable(t *testing.T) {
	var out syncbuf.Buffer
	p, dir := startSnapshotted(t, &out)
	if err := os.Chmod(dir, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o750) })
	var err error
	asother.Run(t, []string{filepath.Dir(dir)}, func() { err = p.Snapshot() })
	if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("the snapshot into a directory that may not be searched: %v, want a permission error", err)
	}
	if strings.Contains(out.String(), "was removed or replaced") {
		t.Errorf("a directory that may not be searched is logged as removed:\n%s", out.String())
	}
	if s := p.StorageStats(); s.Failures != 1 {
		t.Errorf("storage stats %+v, want the snapshot counted as one failure", s)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if l, err := storage.TakeLock(dir); !errors.Is(err, storage.ErrLocked) {
		if l != nil {
			l.Release()
		}
		t.Errorf("another exporter takes the directory: %v, want ErrLocked", err)
	}
	if err := p.Snapshot(); err != nil {
		t.Fatalf("the snapshot once the directory may be searched again: %v", err)
	}
	if s := p.StorageStats(); s.Failures != 1 || s.Snapshots != 2 {
		t.Errorf("storage stats %+v, want one failure beside two snapshots written", s)
	}
}

// A storage directory's lock file replaced while the exporter runs by a symbolic link, here
// to another exporter's lock file, cannot be locked again: that is said, as at start
// (cannot lock the storage directory), and the snapshot is written unguarded beside it.
// The file the link leads to is not opened: the other exporter keeps its lock, and its
// file its mode. Before, the loss alone was logged, and the snapshots went on unguarded
// without a word of it.
func TestStorageLockFileReplacedBySymlink(t *testing.T) {
	var out syncbuf.Buffer
	p, dir := startSnapshotted(t, &out)
	other := t.TempDir()
	held, err := storage.TakeLock(other)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	otherLock := filepath.Join(other, storage.LockName)
	if err := os.Chmod(otherLock, 0o600); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, storage.LockName)
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(otherLock, lock); err != nil {
		t.Fatal(err)
	}
	if err := p.Snapshot(); err != nil {
		t.Errorf("the snapshot beside a lock file that cannot be locked: %v", err)
	}
	if !strings.Contains(out.String(), "cannot lock the storage directory") {
		t.Errorf("the lock not taken again is not logged:\n%s", out.String())
	}
	if s := p.StorageStats(); s.Failures != 1 || s.Snapshots != 2 {
		t.Errorf("storage stats %+v, want the loss counted as a failure beside two snapshots written", s)
	}
	if fi, err := os.Lstat(lock); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced (%v)", err)
	}
	if fi, err := os.Stat(otherLock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the other exporter's lock file was changed: %v (%v)", fi.Mode(), err)
	}
	if l, err := storage.TakeLock(other); !errors.Is(err, storage.ErrLocked) {
		if l != nil {
			l.Release()
		}
		t.Errorf("the other exporter's directory is taken: %v, want ErrLocked", err)
	}
	// Said once, not at each snapshot written unguarded after it; and again when the lock,
	// taken once the link went, is lost so a second time.
	const again = "cannot lock the storage directory again"
	if err := p.Snapshot(); err != nil {
		t.Errorf("a second snapshot beside a lock file that cannot be locked: %v", err)
	}
	if n := strings.Count(out.String(), again); n != 1 {
		t.Errorf("the lock not taken again is logged %d times in two snapshots, want once:\n%s", n, out.String())
	}
	for _, link := range []bool{false, true} {
		if err := os.Remove(lock); err != nil {
			t.Fatal(err)
		}
		if link {
			if err := os.Symlink(otherLock, lock); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Snapshot(); err != nil {
			t.Errorf("a snapshot once the link was removed (put back %v): %v", link, err)
		}
	}
	if n := strings.Count(out.String(), again); n != 2 {
		t.Errorf("the lock lost a second time is logged %d times in all, want twice:\n%s", n, out.String())
	}
}
