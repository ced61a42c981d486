package testexec

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// TestMain removes the exporters testexec.BuildExporter built for the tests.
func TestMain(m *testing.M) {
	os.Exit(Main(m))
}

// launchScript runs a shell script and returns once it printed a line (the pid of a
// child, if any), which it does after setting its traps.
func launchScript(t *testing.T, script string) (p *Proc, line string) {
	t.Helper()
	p, err := Launch(t.TempDir(), "sh", []string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() }) // when the test fails early
	var out []byte
	if !await.Until(t, func() bool {
		if out, err = os.ReadFile(p.Output); err != nil {
			t.Fatal(err)
		}
		return len(out) > 0
	}) {
		t.Fatal("no line from the script")
	}
	return p, strings.TrimSpace(string(out))
}

// TestProcStop checks that Stop ends a program however it treats SIGTERM, children
// included, and says when it did not exit cleanly.
func TestProcStop(t *testing.T) {
	cases := []struct {
		name    string
		script  string // prints a line (the pid of a child, if any) once its traps are set
		exits   bool   // by itself: Stop is called after that
		killed  bool   // by Kill: Stop is called after that
		wantErr string // "" for a clean stop
	}{
		{"exits on SIGTERM", `trap 'exit 0' TERM; echo; while :; do sleep 0.01; done`, false, false, ""},
		{"dies of SIGTERM", `echo; exec sleep 30`, false, false, "exit after SIGTERM: signal: terminated"},
		{"ignores SIGTERM, as does its child", `trap '' TERM; sleep 30 & echo $!; wait`, false, false, "after SIGTERM: killed"},
		{"exited before", `echo; exit 3`, true, false, "exited before the test stopped it: exit status 3"},
		{"killed before", `echo; exec sleep 30`, false, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, out := launchScript(t, c.script)
			if c.exits {
				<-p.Done()
			}
			if c.killed {
				_ = p.Kill()
			}
			err := p.Stop(300 * time.Millisecond)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("Stop: %v, want %q", err, c.wantErr)
			}
			if again := p.Stop(time.Second); again != err {
				t.Errorf("second Stop: %v, want the first's %v", again, err)
			}
			if gone, _ := p.Exited(); !gone {
				t.Fatal("Stop returned while the program runs")
			}
			if child, err := strconv.Atoi(out); err == nil {
				waitGone(t, child)
			}
		})
	}
}

// TestProcKill checks that Kill ends the program's whole group at once, may be called
// again, and leaves the times of its life.
func TestProcKill(t *testing.T) {
	p, out := launchScript(t, `trap '' TERM; sleep 30 & echo $!; wait`)
	child, err := strconv.Atoi(out)
	if err != nil {
		t.Fatal(err)
	}
	if p.Ended() != (time.Time{}) {
		t.Errorf("Ended() = %v while it runs, want the zero time", p.Ended())
	}
	for i := range 2 {
		if err := p.Kill(); err == nil || err.Error() != "signal: killed" {
			t.Errorf("Kill #%d: %v, want signal: killed", i+1, err)
		}
	}
	waitGone(t, child)
	if !p.Ended().After(p.Started()) {
		t.Errorf("Ended() %v is not after Started() %v", p.Ended(), p.Started())
	}
	if p.Cmd.ProcessState == nil {
		t.Error("no ProcessState after Kill")
	}
}

// TestProcDiesWithParent checks that a program outlives no process that started it, even
// one that exits without stopping it, as a test binary killed by its timeout does: this
// test runs its own binary as that process.
func TestProcDiesWithParent(t *testing.T) {
	if dir := os.Getenv("TESTEXEC_PARENT_DIR"); dir != "" {
		p, err := Launch(dir, "sleep", []string{"sleep", "30"})
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		fmt.Println(p.Cmd.Process.Pid)
		os.Exit(0) // no cleanup, no Stop
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), "TESTEXEC_PARENT_DIR="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("parent: %v\n%s", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("parent printed %q, want a pid", out)
	}
	waitGone(t, pid)
}

// waitGone waits until process pid no longer runs: gone, or a zombie its new parent has
// not reaped yet.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	var stat []byte
	if !await.Until(t, func() bool {
		var err error
		if stat, err = os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err != nil {
			return true
		}
		// The state follows the parenthesised command name.
		i := bytes.LastIndexByte(stat, ')')
		return i >= 0 && bytes.HasPrefix(stat[i+1:], []byte(" Z"))
	}) {
		t.Fatalf("process %d still runs: %s", pid, stat)
	}
}

// recorder is a testing.TB whose cleanups, failures and logs the test runs and reads.
type recorder struct {
	testing.TB
	cleanups []func()
	errors   []string
	skips    []string
	logs     []string
}

func (r *recorder) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(f string, a ...any) { r.errors = append(r.errors, fmt.Sprintf(f, a...)) }
func (r *recorder) Logf(f string, a ...any)   { r.logs = append(r.logs, fmt.Sprintf(f, a...)) }
func (r *recorder) Failed() bool              { return len(r.errors) > 0 }

// Fatalf records the failure and ends the goroutine, as testing.T's does.
func (r *recorder) Fatalf(f string, a ...any) {
	r.Errorf(f, a...)
	runtime.Goexit()
}

// Fatal records the failure and ends the goroutine, as testing.T's does.
func (r *recorder) Fatal(a ...any) {
	r.errors = append(r.errors, fmt.Sprint(a...))
	runtime.Goexit()
}

// Skip records the skip and ends the goroutine, as testing.T's does.
func (r *recorder) Skip(a ...any) {
	r.skips = append(r.skips, fmt.Sprint(a...))
	runtime.Goexit()
}

// TestStartTestCleanup checks what StartTest's cleanup reports: only the stop for a
// program that exits cleanly on SIGTERM; for one that died before, a failure with the end
// of its output and of the other logs.
func TestStartTestCleanup(t *testing.T) {
	other := filepath.Join(t.TempDir(), "other.log")
	if err := os.WriteFile(other, []byte("other 1\nother 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		script   string // prints a line once its trap is set
		exits    bool   // by itself: the cleanup runs after that
		wantErr  string // "" for none
		wantLogs []string
	}{
		{"clean stop", `trap 'exit 0' TERM; echo up; while :; do sleep 0.01; done`, false,
			"", []string{"stopped sh (pid "}},
		{"died before", `echo first; echo last; exit 3`, true,
			"sh (pid ", []string{"exited before the test stopped it: exit status 3", "end of sh.out:\nfirst\nlast", "end of other.log:\nother 1\nother 2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &recorder{TB: t}
			p := StartTest(r, t.TempDir(), "sh", []string{"sh", "-c", c.script}, other)
			if !await.Until(t, func() bool { return Tail(p.Output, 1) != "" }) {
				t.Fatal("no line from the script")
			}
			if c.exits {
				<-p.Done()
			}
			if len(r.cleanups) != 1 {
				t.Fatalf("%d cleanups registered, want 1", len(r.cleanups))
			}
			r.cleanups[0]()
			if got := strings.Join(r.errors, "\n"); c.wantErr == "" && got != "" || !strings.Contains(got, c.wantErr) {
				t.Errorf("errors %q, want %q", got, c.wantErr)
			}
			logs := strings.Join(append(r.errors, r.logs...), "\n")
			for _, want := range c.wantLogs {
				if !strings.Contains(logs, want) {
					t.Errorf("logs do not hold %q:\n%s", want, logs)
				}
			}
		})
	}
}

func TestTail(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, text string
		n          int
		want       string
	}{
		{"longer", "a\nb\nc\nd\n", 2, "c\nd"},
		{"shorter", "a\nb\n", 5, "a\nb"},
		{"no final newline", "a\nb\nc", 1, "c"},
		{"empty", "", 3, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
			if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := Tail(path, c.n); got != c.want {
				t.Errorf("Tail(%q, %d) = %q, want %q", c.text, c.n, got, c.want)
			}
		})
	}
	if got := Tail(filepath.Join(dir, "missing"), 3); !strings.Contains(got, "no such file") {
		t.Errorf("Tail of a missing file = %q, want the error", got)
	}
}

// TestLookTools checks that a program is found on PATH, and that a missing one skips the
// test, or fails it under LOGWINDOW_E2E=1, naming it and how to install it.
func TestLookTools(t *testing.T) {
	if got := LookTools(t, "coreutils", "sh")["sh"]; filepath.Base(got) != "sh" {
		t.Errorf("sh found at %q", got)
	}
	for _, required := range []bool{false, true} {
		t.Run(fmt.Sprintf("required=%v", required), func(t *testing.T) {
			defer func(was bool) { Required = was }(Required)
			Required = required
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				LookTools(r, "apt-get install it", "sh", "no-such-program-here")
				t.Error("LookTools returned")
			}()
			<-done
			want := "no-such-program-here not on PATH nor in /usr/sbin (apt-get install it)"
			if required {
				want += " with LOGWINDOW_E2E=1"
			}
			if got := strings.Join(append(r.errors, r.skips...), "\n"); got != want || len(r.errors) > 0 != required {
				t.Errorf("errors %q, skips %q; want %q", r.errors, r.skips, want)
			}
		})
	}
}

// TestFreePort checks that the port and the address can be listened on.
func TestFreePort(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{addr, fmt.Sprintf("127.0.0.1:%d", FreePort(t))} {
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("listen on %s: %v", a, err)
		}
		l.Close()
	}
}

// TestBuildExporter builds the exporter from this package's directory, which is not the
// module root, and runs it; a second test gets the same build, by a name of its own.
func TestBuildExporter(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the exporter")
	}
	var (
		bins  []string
		files []os.FileInfo
	)
	for _, name := range []string{"first", "second"} {
		t.Run(name, func(t *testing.T) {
			bin := BuildExporter(t, false)
			out, err := exec.Command(bin, "--version").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "logwindow_exporter") {
				t.Fatalf("%s --version: %v\n%s", bin, err, out)
			}
			fi, err := os.Stat(bin)
			if err != nil {
				t.Fatal(err)
			}
			bins, files = append(bins, bin), append(files, fi)
		})
	}
	if len(bins) != 2 {
		t.FailNow()
	}
	if filepath.Dir(bins[0]) == filepath.Dir(bins[1]) {
		t.Errorf("both tests got the exporter in %s", filepath.Dir(bins[0]))
	}
	if !os.SameFile(files[0], files[1]) {
		t.Errorf("%s and %s are two builds", bins[0], bins[1])
	}
	if _, err := os.Stat(bins[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s outlived its test (%v)", bins[0], err)
	}
}

// TestSharedBuild: test binaries that want the exporter from a shared directory of builds
// at the same time (two goroutines here, each with a lock of its own) get one build, and
// one that comes later gets it without building again.
func TestSharedBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the exporter")
	}
	shared := t.TempDir()
	bins, errs := make([]string, 2), make([]error, 2)
	var wg sync.WaitGroup
	for i := range bins {
		wg.Go(func() { bins[i], errs[i] = sharedBuild(shared, false) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	later, err := sharedBuild(shared, false)
	if err != nil {
		t.Fatal(err)
	}
	first, err := os.Stat(bins[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{bins[1], later} {
		if fi, err := os.Stat(bin); err != nil || !os.SameFile(first, fi) {
			t.Errorf("%s (%v) is not the first build, %s", bin, err, bins[0])
		}
	}
	if out, err := exec.Command(later, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "logwindow_exporter") {
		t.Errorf("%s --version: %v\n%s", later, err, out)
	}
	if left, _ := filepath.Glob(filepath.Join(shared, "*.tmp-*")); len(left) > 0 {
		t.Errorf("builds left in progress: %v", left)
	}
}

// TestSharedBuildsEnvHonoured runs this binary's TestBuildExporter with SharedBuildsEnv
// naming a directory that holds a build already, a script standing for the exporter:
// the test must run that one, not build its own (and leave it where it is).
func TestSharedBuildsEnvHonoured(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	shared := t.TempDir()
	ran := filepath.Join(shared, "ran")
	if err := os.Mkdir(filepath.Join(shared, buildName(false)), 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\necho logwindow_exporter >>%q\necho logwindow_exporter\n", ran)
	if err := os.WriteFile(filepath.Join(shared, buildName(false), "logwindow_exporter"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestBuildExporter$", "-test.count=1")
	cmd.Env = append(os.Environ(), SharedBuildsEnv+"="+shared, "TMPDIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("TestBuildExporter with %s=%s: %v\n%s", SharedBuildsEnv, shared, err, out)
	}
	if out, err := os.ReadFile(ran); err != nil || strings.Count(string(out), "\n") != 2 {
		t.Errorf("TestBuildExporter ran the shared build %d times, want 2 (%v)", strings.Count(string(out), "\n"), err)
	}
}

func TestParsePrometheusVersion(t *testing.T) {
	for _, c := range []struct {
		name, out    string
		major, minor int
		ok           bool
	}{
		{"debian", "prometheus, version 2.42.0+ds (branch: debian/sid, revision: 2.42.0+ds-5+b5)\n  build user: team\n", 2, 42, true},
		{"release", "prometheus, version 3.16.0 (branch: HEAD, revision: 0123abc)\n", 3, 16, true},
		{"stamped build of the module", "prometheus, version 3.16.0 (branch: , revision: unknown)\n", 3, 16, true},
		{"unstamped", "prometheus, version  (branch: , revision: unknown)\n", 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			major, minor, ok := parsePrometheusVersion([]byte(c.out))
			if major != c.major || minor != c.minor || ok != c.ok {
				t.Errorf("parsePrometheusVersion(%q) = %d, %d, %v; want %d, %d, %v", c.out, major, minor, ok, c.major, c.minor, c.ok)
			}
		})
	}
}

// TestBuildsOfAnEndedBinaryRemoved checks that the directory of the exporters a test
// binary built, left behind when it ended without Main's removal (a test that panicked,
// the -timeout's panic), is removed by the next test binary's Main, and that a directory
// whose test binary still runs is left to it. It runs its own binary as those binaries,
// with their temporary directory in one of the test's.
func TestBuildsOfAnEndedBinaryRemoved(t *testing.T) {
	if os.Getenv("TESTEXEC_BUILDS_PANIC") != "" {
		dir, err := buildsDir()
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		fmt.Println(dir)
		panic("a test panicked")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// The next binary runs no test: its Main alone.
	run := func(panics bool) (string, error) {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		if panics {
			cmd.Args[1] = "-test.run=^" + t.Name() + "$"
			cmd.Env = append(cmd.Env, "TESTEXEC_BUILDS_PANIC=1")
		}
		out, err := cmd.Output()
		return string(out), err
	}
	out, err := run(true)
	if err == nil {
		t.Fatalf("the binary whose test panics exited 0:\n%s", out)
	}
	left, _, _ := strings.Cut(out, "\n")
	if _, err := os.Stat(left); err != nil || !strings.HasPrefix(left, tmp) {
		t.Fatalf("the binary whose test panicked left no directory of its builds in %s (printed %q): %v", tmp, out, err)
	}
	// A directory of builds of a binary that still runs: this one's, made in tmp.
	t.Setenv("TMPDIR", tmp)
	live, held, err := makeBuildsDir()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if out, err := run(false); err != nil {
		t.Fatalf("the next binary: %v\n%s", err, out)
	}
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the builds the panicked binary left are still there after the next binary's Main: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the next binary's Main removed the builds of a binary that still runs: %v", err)
	}
}
