package follow

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// lister lists directories as listDir does, except that while broken the
// listing of dir fails with err, or, with err nil, succeeds without a name.
type lister struct {
	dir string

	mu     sync.Mutex
	broken bool
	err    error
	calls  int // listings of dir
}

func (l *lister) list(dir string) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if dir != l.dir {
		return listDir(dir)
	}
	l.calls++
	switch {
	case !l.broken:
		return listDir(dir)
	case l.err != nil:
		return nil, &os.PathError{Op: "open", Path: dir, Err: l.err}
	}
	return nil, nil
}

func (l *lister) set(broken bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.broken, l.err = broken, err
}

func (l *lister) listings() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// outage is what the tests below do to a glob's directory for a while: break
// its listing, and mend it.
type outage struct {
	break_, mend func(t *testing.T)
	// errors is the count of errors the outage gives, once however many scans
	// see it.
	errors uint64
}

// A glob's directory that cannot be listed for longer than the rotation grace,
// followed from the end, 1,000 lines before Start and 1,000 after, then 10
// after the directory is listable again: exactly the 1,010 lines written after
// Start are read, the outage is one error and no rotation. Taking the failed
// listing for every file leaving its path closed the files after the grace and
// read them again from their first line once the directory could be listed:
// 3,010 lines.
func TestUnlistableDirectory(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EACCES, syscall.EMFILE, syscall.ENFILE, syscall.EIO} {
		for _, m := range modes {
			t.Run(errno.Error()+"/"+m.name, func(t *testing.T) {
				dir := t.TempDir()
				l := &lister{dir: dir}
				listOutage(t, m, dir, l, outage{
					break_: func(*testing.T) { l.set(true, errno) },
					mend:   func(*testing.T) { l.set(false, nil) },
					errors: 1,
				})
			})
		}
	}
	// A listing that succeeds but lacks the file while it is still at its path
	// (device and inode there unchanged) does not mean it left.
	for _, m := range modes {
		t.Run("listing without the file/"+m.name, func(t *testing.T) {
			dir := t.TempDir()
			l := &lister{dir: dir}
			listOutage(t, m, dir, l, outage{
				break_: func(*testing.T) { l.set(true, nil) },
				mend:   func(*testing.T) { l.set(false, nil) },
			})
		})
	}
}

// The reproduction with a real chmod of the directory to execute only (its
// entries can be looked at, not listed: 711 to a reader that is not its
// owner), run as nobody when the test runs as root.
func TestChmodDirectory(t *testing.T) {
	asNobody(t, func(t *testing.T) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) {
				dir := t.TempDir()
				chmod := func(mode os.FileMode) func(*testing.T) {
					return func(t *testing.T) {
						if err := os.Chmod(dir, mode); err != nil {
							t.Fatal(err)
						}
					}
				}
				t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
				listOutage(t, m, dir, &lister{dir: dir}, outage{break_: chmod(0o111), mend: chmod(0o755), errors: 1})
			})
		}
	})
}

func listOutage(t *testing.T, m mode, dir string, l *lister, out outage) {
	p := filepath.Join(dir, "a.log")
	w := create(t, p)
	writeLines(t, w, 1, 1000)
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	o := m.options(filepath.Join(dir, "*.log"))
	o.RotationGrace, o.now, o.list = time.Hour, clock.Now, l.list
	o.PollInterval = 20 * time.Millisecond // the scans that see the outage
	c := newCollector()
	f := start(t, o, c.handle)
	writeLines(t, w, 1001, 2000)
	waitFor(t, "the lines written after Start", func() bool { return c.has(1001, 2000) })

	// scanned waits for two more listings of dir and a full turn of the
	// reader after them, so that the follower judged the directory and the
	// reader the file.
	scanned := func(what string) {
		n := l.listings()
		waitFor(t, what, func() bool { return l.listings() >= n+2 })
		waitTurns(t, f, 2, what+", then a turn of the reader")
	}
	out.break_(t)
	scanned("listings during the outage")
	clock.Add(2 * time.Hour) // past the grace, as though the outage lasted that long
	scanned("listings past the grace")
	out.mend(t)
	scanned("listings after the outage")
	writeLines(t, w, 2001, 2010)
	waitFor(t, "the lines written after the outage", func() bool { return c.has(2001, 2010) })
	c.expectExactly(t, span{1001, 2010})
	if s := f.Stats(); s.Errors != out.errors || s.Rotations != 0 || openUnder(f, p) != 1 {
		t.Errorf("stats %+v, %d files open: want %d errors, no rotation, the file open", s, openUnder(f, p), out.errors)
	}
}

// In a glob over several directories, one that cannot be listed keeps its
// files as they are and does not keep the files of the others from leaving.
func TestUnlistableSubdirectory(t *testing.T) {
	dir := t.TempDir()
	var w [2]*os.File
	for i, sub := range []string{"p1", "p2"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		w[i] = create(t, filepath.Join(dir, sub, "a.log"))
	}
	l := &lister{dir: filepath.Join(dir, "p1")}
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	o := modes[1].options(filepath.Join(dir, "*", "*.log"))
	o.RotationGrace, o.now, o.list = time.Hour, clock.Now, l.list
	c := newCollector()
	f := start(t, o, c.handle)
	writeLines(t, w[0], 1, 10)
	writeLines(t, w[1], 11, 20)
	waitFor(t, "lines of both files", func() bool { return c.has(1, 20) })
	l.set(true, syscall.EACCES)
	if err := os.Remove(filepath.Join(dir, "p2", "a.log")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted file taken as gone", func() bool { return f.Stats().Rotations >= 1 })
	clock.Add(2 * time.Hour)
	waitFor(t, "the deleted file closed", func() bool { return len(f.Stats().Files) <= 1 })
	if n := openUnder(f, filepath.Join(dir, "p1", "a.log")); n != 1 {
		t.Fatalf("p1/a.log: %d open, want 1: a directory that cannot be listed says nothing of its files", n)
	}
	writeLines(t, w[0], 21, 30)
	waitFor(t, "the lines after", func() bool { return c.has(21, 30) })
	c.expectExactly(t, span{1, 30})
	if s := f.Stats(); s.Errors != 1 || s.Rotations != 1 || len(s.Files) != 1 || s.Files[0].Path != filepath.Join(dir, "p1", "a.log") {
		t.Errorf("stats %+v: want one error, p1/a.log still open", s)
	}
}

// ReadToEnd reports a directory it could not list, and reads the others.
func TestReadToEndUnlistable(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"p1", "p2"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, sub, "a.log"), []byte(sub+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := &lister{dir: filepath.Join(dir, "p1"), broken: true, err: syscall.EIO}
	var got []string
	s, err := ReadToEnd(Options{Path: filepath.Join(dir, "*", "*.log"), list: l.list}, func(_ string, line []byte) {
		got = append(got, string(line))
	})
	if err == nil || !strings.Contains(err.Error(), "input/output error") {
		t.Errorf("error %v, want the listing's", err)
	}
	if strings.Join(got, " ") != "p2" || s.Errors != 1 {
		t.Errorf("lines %q, stats %+v: want p2's line and one error", got, s)
	}
}
