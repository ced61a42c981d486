package syslog

import (
	"bytes"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/input/syslog/syslogtest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/asother"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// A neighbour who may write the socket's directory swaps files there between bind and
// chmod: the file it points the socket's path at keeps its mode, and the socket ends up
// at its path, working, with the mode asked for.
func TestSocketCreationFollowsNoName(t *testing.T) {
	const victimMode, data = 0o600, "not yours"
	for _, tc := range []struct {
		name string
		swap func(t *testing.T, path, victim string)
	}{
		{"symlink at the socket's path", func(t *testing.T, path, victim string) {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				t.Error(err)
			}
			if err := os.Symlink(victim, path); err != nil {
				t.Error(err)
			}
		}},
		{"hard link at the socket's path", func(t *testing.T, path, victim string) {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				t.Error(err)
			}
			if err := os.Link(victim, path); err != nil {
				t.Error(err)
			}
		}},
		{"directory holding the bound socket swapped for a symlink", func(t *testing.T, path, victim string) {
			// The neighbour's own directory, where the socket's name leads to the victim.
			decoy := t.TempDir()
			if err := os.Symlink(victim, filepath.Join(decoy, boundName)); err != nil {
				t.Error(err)
			}
			entries, err := os.ReadDir(filepath.Dir(path))
			if err != nil {
				t.Error(err)
			}
			swapped := 0
			for _, e := range entries {
				if !e.IsDir() || !strings.HasPrefix(e.Name(), "."+filepath.Base(path)) {
					continue
				}
				dir := filepath.Join(filepath.Dir(path), e.Name())
				if err := os.Rename(dir, dir+".moved"); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(decoy, dir); err != nil {
					t.Error(err)
				}
				swapped++
			}
			if swapped != 1 {
				t.Errorf("swapped %d directories beside the socket, want the one it was bound in", swapped)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.sock")
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte(data), victimMode); err != nil {
				t.Fatal(err)
			}
			afterBind = func(path string) { tc.swap(t, path, victim) }
			t.Cleanup(func() { afterBind = func(string) {} })
			c := newCollector()
			listen(t, Options{Network: "unixgram", Addr: path}, c.handle)

			if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != victimMode {
				t.Errorf("the file swapped in: %v, %v; want its mode %v kept", fi.Mode(), err, fs.FileMode(victimMode))
			}
			if b, err := os.ReadFile(victim); err != nil || !bytes.Equal(b, []byte(data)) {
				t.Errorf("the file swapped in now holds %q, %v", b, err)
			}
			fi, err := os.Lstat(path)
			if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != DefaultSocketMode {
				t.Fatalf("at the socket's path: %v, %v; want a socket %v", fi.Mode(), err, DefaultSocketMode)
			}
			syslogtest.Send(t, "unixgram", path, nginxDatagram)
			if got := c.wait(t, 1); !slices.Equal(got, []string{nginxLine}) {
				t.Errorf("lines = %q", got)
			}
		})
	}
}

// A directory swapped in for the private one between its creation and its opening is
// refused unless it is the exporter's alone.
func TestOpenPrivate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  fs.FileMode
		owner int
		ok    bool
	}{
		{"the exporter's, 0700", 0o700, os.Geteuid(), true},
		{"open to all", 0o777, os.Geteuid(), false},
		{"readable by the group", 0o750, os.Geteuid(), false},
		{"another user's", 0o700, os.Geteuid() + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			if err := os.Mkdir(filepath.Join(parent, "d"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(parent, "d"), tc.mode); err != nil {
				t.Fatal(err)
			}
			if tc.owner != os.Geteuid() {
				if err := os.Chown(filepath.Join(parent, "d"), tc.owner, -1); err != nil {
					t.Skipf("cannot give the directory to another user: %v", err)
				}
			}
			pfd, err := syscall.Open(parent, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Close(pfd)
			dfd, err := openPrivate(pfd, "d")
			if (err == nil) != tc.ok {
				t.Fatalf("openPrivate: %v, want ok %v", err, tc.ok)
			}
			if err == nil {
				syscall.Close(dfd)
			}
		})
	}
}

// In a set-group-ID directory (a Kubernetes volume with the pod's fsGroup) the socket
// takes the directory's group, which nginx's workers share, although it is bound in a
// directory of its own first.
func TestSocketTakesDirectoryGroup(t *testing.T) {
	gid := -1
	if os.Geteuid() == 0 {
		gid = 4242
	} else {
		groups, _ := os.Getgroups()
		for _, g := range groups {
			if g != os.Getegid() {
				gid = g
			}
		}
	}
	if gid < 0 {
		t.Skip("no group to give the directory but the process' own")
	}
	dir := t.TempDir()
	if err := os.Chown(dir, -1, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, os.ModeSetgid|0o770); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s.sock")
	listen(t, Options{Network: "unixgram", Addr: path}, func(string, []byte) {})
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := int(fi.Sys().(*syscall.Stat_t).Gid); got != gid {
		t.Errorf("socket group = %d, want the directory's %d", got, gid)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Errorf("directory holds %v, %v; want the socket alone", entries, err)
	}
}

// A socket file removed or replaced while the exporter runs (rm, an emptyDir cleaned,
// another exporter started on the path) leaves the socket read but out of every sender's
// reach. Each check binds it again, with the mode asked for, once nothing live holds the
// path: a live socket of another process and a file that is not a socket are left alone
// and tried again at each check. Each loss is counted once, however many checks it lasts.
func TestSocketBoundAgain(t *testing.T) {
	const line = "<13>Nov 24 01:02:03 h t: again"
	for _, tc := range []struct {
		name string
		// replace does what happens to the socket file; the returned func, if any, is
		// what lets the path go later (the other process exits, the file is removed).
		replace func(t *testing.T, path string) (release func())
	}{
		{"removed", func(t *testing.T, path string) func() {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
		{"replaced by another process's live socket", func(t *testing.T, path string) func() {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return func() { c.Close() } // its file stays, a stale socket
		}},
		{"replaced by a regular file", func(t *testing.T, path string) func() {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("data"), 0o644); err != nil {
				t.Fatal(err)
			}
			return func() {
				if b, err := os.ReadFile(path); err != nil || string(b) != "data" {
					t.Errorf("the regular file at the socket's path was touched: %q, %v", b, err)
				}
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.sock")
			c := newCollector()
			// The test runs the checks itself: the listener's own comes after an hour.
			l := listen(t, Options{Network: "unixgram", Addr: path, SocketMode: 0o600, CheckInterval: time.Hour}, c.handle)
			first, err := statID(path)
			if err != nil {
				t.Fatal(err)
			}
			l.checkSocket() // the socket in place: nothing to do
			if n := l.Stats().ErrorsByReason["socket"]; n != 0 {
				t.Fatalf("a socket in place counted %d losses", n)
			}
			release := tc.replace(t, path)
			if release != nil {
				other, _ := statID(path)
				for range 3 {
					l.checkSocket()
					if id, _ := statID(path); id != other {
						t.Fatalf("what holds the path was replaced")
					}
				}
				release()
			}
			l.checkSocket()
			fi, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if id, _ := statID(path); fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 || id == first {
				t.Fatalf("not bound again: %v", fi.Mode())
			}
			syslogtest.Send(t, "unixgram", path, line)
			if got := c.wait(t, 1); !slices.Equal(got, []string{"again"}) {
				t.Errorf("lines = %q", got)
			}
			if s := l.Stats(); s.ErrorsByReason["socket"] != 1 || s.Errors != 1 {
				t.Errorf("errors = %d %v, want the loss counted once", s.Errors, s.ErrorsByReason)
			}
			l.Stop()
			if _, err := os.Lstat(path); !os.IsNotExist(err) {
				t.Errorf("the socket bound again is still there after Stop: %v", err)
			}
		})
	}
}

// The listener checks its socket on its own, every CheckInterval.
func TestSocketCheckedEveryInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	c := newCollector()
	listen(t, Options{Network: "unixgram", Addr: path, CheckInterval: time.Millisecond}, c.handle)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if !await.Until(t, func() bool {
		fi, err := os.Lstat(path)
		return err == nil && fi.Mode().Type() == fs.ModeSocket
	}) {
		t.Fatal("the removed socket was not bound again")
	}
	syslogtest.Send(t, "unixgram", path, "<13>Nov 24 01:02:03 h t: back")
	if got := c.wait(t, 1); !slices.Equal(got, []string{"back"}) {
		t.Errorf("lines = %q", got)
	}
}

// CheckUnixPath tells, without creating anything, what would keep bindUnix from creating
// the socket at a path: its directory missing, not a directory, or not one this user may
// add to, or a file at the path that is not a socket. It does what bindUnix does with
// each (refuses or binds), but for a live socket, which the exporter being checked may
// well hold; and it leaves the directory as it was.
func TestCheckUnixPath(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the socket's path
		other bool                                  // check as another user than the directory's
		want  string                                // "" for none
	}{
		{"nothing there", func(t *testing.T, dir string) string { return filepath.Join(dir, "s.sock") }, false, ""},
		{"a stale socket", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "s.sock")
			c, _, err := bindUnix(path, DefaultSocketMode, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			c.Close() // the file stays, no one receives on it
			return path
		}, false, ""},
		{"the directory missing", func(t *testing.T, dir string) string { return filepath.Join(dir, "run", "s.sock") }, false,
			"the socket's directory DIR/run does not exist"},
		{"the directory a file", func(t *testing.T, dir string) string {
			if err := os.WriteFile(filepath.Join(dir, "run"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "run", "s.sock")
		}, false, "the socket's directory DIR/run is not a directory"},
		{"a file at the path", func(t *testing.T, dir string) string {
			if err := os.WriteFile(filepath.Join(dir, "s.sock"), []byte("data"), 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "s.sock")
		}, false, "DIR/s.sock exists and is not a socket; refusing to replace it"},
		{"the directory not writable", func(t *testing.T, dir string) string {
			run := filepath.Join(dir, "run")
			if err := os.Mkdir(run, 0o755); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(run, "s.sock")
		}, true, "the socket's directory DIR/run is not one this user (uid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tc.setup(t, dir)
			var err, bindErr error
			check := func() {
				before := dirTree(t, dir)
				err = CheckUnixPath(path)
				if after := dirTree(t, dir); !slices.Equal(after, before) {
					t.Errorf("the check changed the directory: %q, was %q", after, before)
				}
				var c *net.UnixConn
				if c, _, bindErr = bindUnix(path, DefaultSocketMode, slog.New(slog.DiscardHandler)); bindErr == nil {
					c.Close()
				}
			}
			if tc.other {
				asother.Run(t, []string{dir}, check)
			} else {
				check()
			}
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			switch {
			case want == "" && err != nil:
				t.Errorf("error %v; want none", err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("error %v; want one saying %q", err, want)
			case (err == nil) != (bindErr == nil):
				t.Errorf("the check says %v, binding says %v", err, bindErr)
			}
		})
	}
}

// dirTree lists the entries under dir with their modes.
func dirTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, p+" "+fi.Mode().String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A sender may attach open files to a datagram (SCM_RIGHTS): a receiver that reads its
// control messages gets them installed as descriptors of its own, which it must close.
// Anyone who may write the socket could otherwise send datagrams of a dozen files each
// until the exporter runs out of descriptors (no log file opened, no scrape accepted),
// or keep deleted files' space in use. The lines still arrive.
func TestSocketPassedFilesNotKept(t *testing.T) {
	c := newCollector()
	path := filepath.Join(t.TempDir(), "s.sock")
	listen(t, Options{Network: "unixgram", Addr: path}, c.handle)
	passed, err := os.CreateTemp(t.TempDir(), "passed")
	if err != nil {
		t.Fatal(err)
	}
	defer passed.Close()
	// Unconnected: net refuses WriteMsgUnix on a connected datagram socket.
	sender, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(sender)
	fds := make([]int, 8)
	for i := range fds {
		fds[i] = int(passed.Fd())
	}
	const datagrams = 20
	for range datagrams {
		err := syscall.Sendmsg(sender, []byte("<13>Nov 24 01:02:03 h t: with files"), syscall.UnixRights(fds...), &syscall.SockaddrUnix{Name: path}, 0)
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := c.wait(t, datagrams); got[0] != "with files" {
		t.Errorf("lines = %q", got)
	}
	// The handler saw every datagram, so each was read: what it brought is open by now.
	if n := openFilesOf(t, passed.Name()); n != 1 {
		t.Errorf("%s is open %d times after %d datagrams passed it, want once (the test's own)", passed.Name(), n, datagrams)
	}
}

// openFilesOf counts this process's descriptors of the file at path.
func openFilesOf(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}

// A socket bound again in place of one whose file was removed or replaced hands on what
// the old socket's receive buffer still holds, sent by a sender connected to it before
// the file went, as Stop hands on the last socket's: the old socket was closed with them,
// lost and counted nowhere.
func TestSocketBoundAgainDrainsOld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c := newCollector()
	// The test runs the check itself; the old socket's reader is held on the first
	// datagram until it was told to stop, so the others wait in the receive buffer.
	l := listen(t, Options{Network: "unixgram", Addr: path, CheckInterval: time.Hour,
		received: func() { once.Do(func() { close(held); <-release }) },
		stopping: sync.OnceFunc(func() { close(release) }),
	}, c.handle)
	sender, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	sent := []string{"a", "b", "c", "d", "e"}
	for _, d := range sent {
		if _, err := sender.Write([]byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	<-held
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	l.checkSocket()
	syslogtest.Send(t, "unixgram", path, "f") // to the socket bound again
	l.Stop()
	want := append(sent, "f")
	if got := c.snapshot(); !slices.Equal(got, want) {
		t.Errorf("handed on: %q, want %q", got, want)
	}
	if s := l.Stats(); received(s) != uint64(len(want)) || s.LinesRead != uint64(len(want)) {
		t.Errorf("%d datagrams received, %d lines, want %d of each", received(s), s.LinesRead, len(want))
	}
}
