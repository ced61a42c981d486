package syslog

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/input/syslog/syslogtest"
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
