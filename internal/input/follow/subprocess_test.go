package follow

// Cases of the tailing matrix that need a process of their own: an exhausted
// inotify limit and a file we are not allowed to read, which root always may.

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// helperEnv names the test a re-executed test binary runs as the child.
const helperEnv = "FOLLOW_TEST_CHILD"

func isChild(t *testing.T) bool { return os.Getenv(helperEnv) == t.Name() }

// runChild re-executes the test binary to run only the current test, as the
// child, and fails if the child fails.
func runChild(t *testing.T, exe string, env []string, attr *syscall.SysProcAttr) error {
	t.Helper()
	cmd := exec.Command(exe, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+t.Name()), env...)
	cmd.SysProcAttr = attr
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	if err == nil {
		t.Logf("child output:\n%s", out)
	}
	return err // the child could not be started
}

// with no inotify instance left, Start neither exits nor fails: it
// polls, counts the error, and loses nothing.
//
// The child runs in a user namespace of its own, where it may lower
// user.max_inotify_instances for itself alone and exhaust it, unprivileged
// and without taking instances from the other processes of the user. Where
// user namespaces are not allowed it exhausts the real per-user limit.
func TestInotifyExhausted(t *testing.T) {
	if isChild(t) {
		inotifyExhausted(t)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	err = runChild(t, exe, nil, &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	})
	if err != nil {
		t.Logf("no user namespace (%v): exhausting the real per-user limit", err)
		if err := runChild(t, exe, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func inotifyExhausted(t *testing.T) {
	lowered := os.WriteFile("/proc/sys/user/max_inotify_instances", []byte("4"), 0) == nil
	var held []*fsnotify.Watcher
	defer func() {
		for _, w := range held {
			_ = w.Close()
		}
	}()
	for {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			t.Logf("inotify exhausted after %d instances (limit lowered in our user namespace: %v): %v", len(held), lowered, err)
			break
		}
		held = append(held, w)
		if len(held) > 1<<16 {
			t.Fatal("could not exhaust inotify instances")
		}
	}
	p := filepath.Join(t.TempDir(), "access.log")
	w := create(t, p)
	c := newCollector()
	o := modes[0].options(p) // asks for inotify
	clock := clocked(&o)
	f := start(t, o, c.handle)
	if s := f.Stats(); !s.Polling || s.Errors != 1 {
		t.Fatalf("stats %+v: want polling and the inotify failure counted", s)
	}
	writeLines(t, w, 1, 1000)
	waitFollowed(t, f, w)
	rename(t, p, p+".1")
	w = create(t, p)
	writeLines(t, w, 1001, 2000)
	waitRetired(t, f, clock, "every line, rotated file closed", func() bool { return c.has(1, 2000) && openUnder(f, p) == 1 })
	c.expectExactly(t, span{1, 2000})
}

// after a rotation the rotated file is made unreadable (we keep
// reading it through the descriptor we hold) and the new file is created
// unreadable (as logrotate's "create 0600 root adm" does to a reader not in
// the group): the follower stays up, counts the error once, and reads the
// new file from its start once it is readable.
func TestUnreadable(t *testing.T) {
	asNobody(t, func(t *testing.T) {
		for _, m := range modes {
			t.Run(m.name, func(t *testing.T) { unreadable(t, m) })
		}
	})
}

// asNobody runs the test's body: here when not root, else in a child process
// running as nobody, since permission bits do not stop root.
func asNobody(t *testing.T, body func(t *testing.T)) {
	t.Helper()
	if os.Geteuid() != 0 {
		body(t)
		return
	}
	if isChild(t) {
		t.Fatal("the child runs as root")
	}
	// The test binary sits in a directory only root may enter: copy it
	// where nobody can run it, with a temporary directory nobody may use.
	dir, err := os.MkdirTemp("", "follow-as-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, tmp} {
		if err := os.Chmod(d, 0o777|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "follow.test")
	copyExecutable(t, exe)
	const nobody = 65534
	err = runChild(t, exe, []string{"TMPDIR=" + tmp}, &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: nobody, Gid: nobody},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyExecutable(t *testing.T, to string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

func unreadable(t *testing.T, m mode) {
	p := filepath.Join(t.TempDir(), "access.log")
	old := create(t, p)
	writeLines(t, old, 1, 100)
	c := newCollector()
	o := m.options(p)
	// The late writer below writes a line at a time; on a loaded machine it can pause
	// for longer than any grace in seconds, which would close the rotated file before its
	// last lines, as the grace is meant to: the grace passes once they were read.
	clock := new(ahead)
	o.FromBeginning, o.RotationGrace, o.now = true, time.Hour, clock.Now
	f := start(t, o, c.handle)
	waitFor(t, "the first lines", func() bool { return c.has(1, 100) })

	rename(t, p, p+".1")
	if err := os.Chmod(p+".1", 0); err != nil {
		t.Fatal(err)
	}
	cur, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	if r, err := os.Open(p); err == nil {
		_ = r.Close()
		t.Fatal("the new file is readable: the test must not run as root")
	}
	writeLines(t, cur, 201, 300)
	writeLines(t, old, 101, 200) // the late writer, into the now unreadable rotated file
	waitFor(t, "the error counted and the rotated file read to its end", func() bool {
		return f.Stats().Errors == 1 && c.has(101, 200)
	})
	if !f.Ready() {
		t.Error("no longer ready: readiness is about startup")
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	clock.Add(o.RotationGrace)
	waitFor(t, "the new file read from its start", func() bool { return c.has(201, 300) && openUnder(f, p) == 1 })
	c.expectExactly(t, span{1, 300})
	if s := f.Stats(); s.Errors != 1 || s.Rotations != 1 {
		t.Errorf("stats %+v: want the error counted once and one rotation", s)
	}
}
