package follow

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// scanned is a Follower driven by the test: its first scan made, no goroutine
// of its own. Its files are closed at the end of the test.
func scanned(t *testing.T, o Options, c *collector) *Follower {
	t.Helper()
	o.noNotify = true
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	f, err := newFollower(o, c.handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	f.discover(true)
	return f
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// A glob's match that cannot be opened (a FIFO, /dev/null through a symlink
// within the root, a directory) is counted under its reason and logged once,
// however many scans see it, and does not hold readiness: the input is ready
// once it has listed its glob and opened what it could. It waited for every
// match before, so that one such file kept /-/ready at 503 for good.
func TestReadyDespiteUnopenable(t *testing.T) {
	dir := t.TempDir()
	w := create(t, filepath.Join(dir, "a.log"))
	writeLines(t, w, 1, 10)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	mkdirs(t, filepath.Join(dir, "dir.log"))
	symlink(t, os.DevNull, filepath.Join(dir, "devnull"))
	symlink(t, filepath.Join(dir, "devnull"), filepath.Join(dir, "null.log"))
	c := newCollector()
	f := scanned(t, Options{Path: filepath.Join(dir, "*.log"), FromBeginning: true}, c)
	if !f.Ready() {
		t.Fatal("not ready after the first scan")
	}
	for range 3 {
		f.discover(false)
	}
	f.readAll()
	c.expectExactly(t, span{1, 10})
	s := f.Stats()
	want := map[string]uint64{"not_regular": 1, "symlink": 1}
	for r, n := range s.ErrorsByReason {
		if n != want[r] {
			t.Errorf("errors %q: %d, want %d", r, n, want[r])
		}
	}
	if len(s.ErrorsByReason) != int(numReasons) || s.Errors != 2 {
		t.Errorf("stats %+v: want every reason present and 2 errors", s)
	}
}

// Symlinks in a glob's tree: the files are read under the paths the glob
// matched; a file named by several is read once, under the path without a
// symlink; a symlink out of the glob's root (to a file, to a directory) is
// refused, counted once and logged. A path without a glob is the user's own
// choice and may be a symlink to anywhere.
func TestGlobSymlinks(t *testing.T) {
	base := t.TempDir()
	pods := filepath.Join(base, "pods")
	outside := filepath.Join(base, "outside")
	pod := filepath.Join(pods, "ns1_pod1_u1", "nginx")
	mkdirs(t, pod, filepath.Join(outside, "nginx"), filepath.Join(pods, "a0_thief_u2", "nginx"), filepath.Join(pods, "ns2_pod2_u3", "nginx"))
	w := create(t, filepath.Join(pod, "0.log"))
	writeLines(t, w, 1, 10)
	secret := create(t, filepath.Join(outside, "nginx", "0.log"))
	writeLines(t, secret, 101, 110)
	// The same file under a pod that sorts first, through a file symlink and
	// through a directory symlink.
	symlink(t, filepath.Join(pod, "0.log"), filepath.Join(pods, "a0_thief_u2", "nginx", "0.log"))
	symlink(t, filepath.Join(pods, "ns1_pod1_u1"), filepath.Join(pods, "a1_thief_u4"))
	// Out of the root: a file and a directory.
	symlink(t, filepath.Join(outside, "nginx", "0.log"), filepath.Join(pods, "ns2_pod2_u3", "nginx", "0.log"))
	symlink(t, outside, filepath.Join(pods, "ns3_pod3_u5"))

	c := newCollector()
	f := scanned(t, Options{Path: filepath.Join(pods, "*_*_*", "nginx", "*.log"), FromBeginning: true}, c)
	for range 3 {
		f.discover(false)
	}
	f.readAll()
	c.expectExactly(t, span{1, 10})
	s := f.Stats()
	if len(s.Files) != 1 || s.Files[0].Path != filepath.Join(pod, "0.log") {
		t.Errorf("files %+v: want the pod's own path only", s.Files)
	}
	c.mu.Lock()
	for p := range c.paths {
		if p != filepath.Join(pod, "0.log") {
			t.Errorf("lines under %s", p)
		}
	}
	c.mu.Unlock()
	if s.ErrorsByReason["symlink"] != 2 || s.Errors != 2 {
		t.Errorf("errors %v: want the two symlinks out of the root, once each", s.ErrorsByReason)
	}

	// A file swapped for a symlink out of the root between the look at it and
	// its opening is refused by the check of what was opened.
	t.Run("symlink swapped in after the look", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "logs")
		mkdirs(t, dir)
		p := filepath.Join(dir, "a.log")
		create(t, p).Close()
		o := Options{Path: filepath.Join(dir, "*.log"), FromBeginning: true}
		o.look = func(path string, follow bool) (os.FileInfo, error) {
			fi, err := look(path, follow)
			if path == p && !follow && err == nil && fi.Mode().IsRegular() {
				if err := os.Remove(p); err != nil {
					t.Error(err)
				}
				symlink(t, filepath.Join(outside, "nginx", "0.log"), p)
			}
			return fi, err
		}
		c := newCollector()
		f := scanned(t, o, c)
		f.discover(false)
		f.readAll()
		c.expectExactly(t)
		if s := f.Stats(); len(s.Files) != 0 || s.ErrorsByReason["symlink"] != 1 || s.Errors != 1 {
			t.Errorf("stats %+v: want nothing read, the symlink counted once", s)
		}
	})

	t.Run("relative glob", func(t *testing.T) {
		t.Chdir(base)
		c := newCollector()
		f := scanned(t, Options{Path: filepath.Join("pods", "*_*_*", "nginx", "*.log"), FromBeginning: true}, c)
		f.readAll()
		c.expectExactly(t, span{1, 10})
		if s := f.Stats(); len(s.Files) != 1 || s.Files[0].Path != filepath.Join("pods", "ns1_pod1_u1", "nginx", "0.log") {
			t.Errorf("files %+v: want the pod's own path only", s.Files)
		}
	})
	t.Run("path without a glob", func(t *testing.T) {
		link := filepath.Join(t.TempDir(), "access.log")
		symlink(t, filepath.Join(outside, "nginx", "0.log"), link)
		c := newCollector()
		f := scanned(t, Options{Path: link, FromBeginning: true}, c)
		f.readAll()
		c.expectExactly(t, span{101, 110})
		if s := f.Stats(); s.Errors != 0 {
			t.Errorf("errors %v", s.ErrorsByReason)
		}
	})
}

// counting counts what discovery lists and looks at.
type counting struct{ listings, looks atomic.Int64 }

func (n *counting) options(o Options) Options {
	o.list = func(dir string) ([]string, error) { n.listings.Add(1); return listDir(dir) }
	o.look = func(path string, follow bool) (os.FileInfo, error) { n.looks.Add(1); return look(path, follow) }
	return o
}

func (n *counting) take() (listings, looks int64) {
	return n.listings.Swap(0), n.looks.Swap(0)
}

// A glob over 1,000 pod directories through 5 s of churn (1,500 pods created,
// half of them deleted), with the events inotify sends, then idle. Each event
// that was not a write made a scan of the whole glob, each directory listed
// twice or three times (781,102 listings for the first 150 pods); now events
// mark the directories they name, which a scan looks at and lists at most
// once per poll interval, and an idle poll looks at each directory (one
// stat) without listing any.
func TestChurnCost(t *testing.T) {
	root := t.TempDir()
	pod := func(i int) string { return filepath.Join(root, fmt.Sprintf("ns_pod%d_u", i)) }
	mkpod := func(i int) {
		mkdirs(t, filepath.Join(pod(i), "nginx"))
		if err := os.WriteFile(filepath.Join(pod(i), "nginx", "0.log"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const pods, churn = 1000, 1500
	for i := range pods {
		mkpod(i)
	}
	// Directories count as settled (their mtime well before the clock).
	clock := testclock.New(time.Now().Add(time.Hour))
	var n counting
	const poll = 250 * time.Millisecond
	// A real inotify watcher, whose events the test does not read: it feeds
	// the ones the kernel sends itself, at the pace of the churn.
	f, err := newFollower(n.options(Options{Path: filepath.Join(root, "*_*_*", "nginx", "*.log"), PollInterval: poll, now: clock.Now, Logger: testLogger(t)}), newCollector().handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	f.discover(true)
	if l, _ := n.take(); l != 1+2*pods {
		t.Errorf("first scan: %d listings, want %d", l, 1+2*pods)
	}

	// The churn: a pod created every 3.3 ms, the oldest deleted every other
	// one; the events are those of inotify on the watched directories.
	var scans int
	event := func(name string) {
		f.tree.changed(name)
		if f.due() {
			f.rescan()
			scans++
		}
	}
	step := 5 * time.Second / churn
	deleted := pods + churn
	for i := range churn {
		clock.Add(step)
		mkpod(pods + i)
		event(pod(pods + i))
		if i%2 == 1 {
			d := pods + i/2
			if err := os.RemoveAll(pod(d)); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{filepath.Join(pod(d), "nginx", "0.log"), filepath.Join(pod(d), "nginx"), pod(d)} {
				event(name)
			}
			deleted = d
		}
		if f.due() { // the tick, a poll interval after the last scan, if no event came first
			f.discover(false)
			scans++
		}
	}
	listings, looks := n.take()
	t.Logf("churn: %d scans, %d listings, %d looks", scans, listings, looks)
	if maxScans := 2 * int(5*time.Second/poll+1); scans > maxScans {
		t.Errorf("%d scans during 5 s of churn, want at most %d (one per poll interval for events, one per tick)", scans, maxScans)
	}
	// Each new pod is listed once or twice (its pod and nginx directories), the
	// root once per scan.
	if max := int64(2*churn + 2*scans); listings > max {
		t.Errorf("%d listings, want at most %d", listings, max)
	}
	// A scan of what events named looks at those directories and the new
	// files, a few looks per pod created or deleted: a look at every
	// directory would be 2,000 or more per scan.
	if max := int64(6 * churn); looks > max {
		t.Errorf("%d looks, want at most %d", looks, max)
	}

	// What the churn left is what is read, once the deleted pods' files were
	// idle for the grace period.
	clock.Add(poll)
	f.discover(false)
	clock.Add(DefaultRotationGrace)
	f.readAll()
	n.take()
	live := pods + churn - (churn / 2)
	if got := len(f.Stats().Files); got != live {
		t.Errorf("%d files read, want %d", got, live)
	}
	if _, err := os.Stat(pod(deleted)); err == nil {
		t.Errorf("%s not deleted", pod(deleted))
	}

	// Ten seconds idle.
	const idle = 10 * time.Second
	for range int(idle / poll) {
		clock.Add(poll)
		f.discover(false)
	}
	listings, looks = n.take()
	t.Logf("idle %s: %d listings, %d looks", idle, listings, looks)
	if want := int64(idle/poll) * int64(1+2*live); listings != 0 || looks != want {
		t.Errorf("idle: %d listings, %d looks; want none listed, one look per directory per poll (%d)", listings, looks, want)
	}
}
