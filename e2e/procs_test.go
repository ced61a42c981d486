package e2e

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// required is set in CI, which installs every program the test runs: a missing one fails
// the test there instead of skipping it.
var required = os.Getenv("LOGWINDOW_E2E") == "1"

// stopTimeout is how long a program may take to exit after SIGTERM before it is killed.
const stopTimeout = 10 * time.Second

// lookTools returns the path of each named program. It skips the test, naming every
// missing program, when one is not installed, and fails it instead under LOGWINDOW_E2E=1.
// Debian installs nginx in /usr/sbin, which is not on a non-root user's PATH.
func lookTools(t *testing.T, names ...string) map[string]string {
	t.Helper()
	paths := map[string]string{}
	var missing []string
	for _, name := range names {
		p, err := exec.LookPath(name)
		if err != nil {
			p, err = exec.LookPath(filepath.Join("/usr/sbin", name))
		}
		if err != nil {
			missing = append(missing, name)
			continue
		}
		paths[name] = p
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("%s not on PATH nor in /usr/sbin: install Debian's nginx and prometheus packages to run the end-to-end test", strings.Join(missing, ", "))
		if required {
			t.Fatal(msg + " (LOGWINDOW_E2E=1 requires it)")
		}
		t.Skip(msg)
	}
	return paths
}

// freePort returns a loopback TCP port that nothing listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is a program the test started. Its stdout and stderr go to a file, so that no
// goroutine of the test copies them and nothing is lost when it is killed.
type proc struct {
	name   string
	cmd    *exec.Cmd
	output string        // the file holding its stdout and stderr
	done   chan struct{} // closed once it has exited
	err    error         // what Wait returned, set before done is closed

	stopOnce sync.Once
	stopErr  error
}

// startProc launches argv (see launch). A cleanup stops it (see stop), fails the test when
// it did not exit cleanly, and on any failure of the test logs the end of its output and of
// the files in logs.
func startProc(t *testing.T, dir, name string, argv []string, logs ...string) *proc {
	t.Helper()
	p, err := launch(dir, name, argv)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started %s, pid %d: %s", name, p.cmd.Process.Pid, strings.Join(argv, " "))
	t.Cleanup(func() {
		began := time.Now()
		if err := p.stop(stopTimeout); err != nil {
			t.Errorf("%s (pid %d): %v", name, p.cmd.Process.Pid, err)
		} else {
			t.Logf("stopped %s (pid %d) in %v", name, p.cmd.Process.Pid, since(began))
		}
		if t.Failed() {
			for _, f := range append([]string{p.output}, logs...) {
				t.Logf("end of %s:\n%s", filepath.Base(f), tail(f, 40))
			}
		}
	})
	return p
}

// launch starts argv in a process group of its own, its output going to dir/name.out.
func launch(dir, name string, argv []string) (*proc, error) {
	p := &proc{name: name, output: filepath.Join(dir, name+".out"), done: make(chan struct{})}
	f, err := os.Create(p.output)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child has its own copy
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	// Its own group, so that a kill reaches its children too (nginx's workers).
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the program has exited, and if so how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop ends the program by its PID: SIGTERM, then SIGKILL to its group after timeout.
// It returns an error unless the program exited by itself with status 0 after SIGTERM;
// a program that had already exited before is an error too, since nothing here expects
// one to. Later calls return the first call's result.
func (p *proc) stop(timeout time.Duration) error {
	p.stopOnce.Do(func() {
		if gone, err := p.exited(); gone {
			p.stopErr = fmt.Errorf("exited before the test stopped it: %v", err)
			return
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			p.stopErr = fmt.Errorf("SIGTERM: %v", err)
		}
		select {
		case <-p.done:
			if p.err != nil && p.stopErr == nil {
				p.stopErr = fmt.Errorf("exit after SIGTERM: %v", p.err)
			}
			return
		case <-time.After(timeout):
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		p.stopErr = fmt.Errorf("still running %v after SIGTERM: killed", timeout)
	})
	return p.stopErr
}

// waitHTTP polls url until it answers 200, failing the test when p exits first or when
// timeout passes.
func waitHTTP(t *testing.T, p *proc, url string, timeout time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	var last string
	for deadline := time.Now().Add(timeout); ; {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if gone, err := p.exited(); gone {
			t.Fatalf("%s exited (%v) before %s answered", p.name, err, url)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer 200 within %v: %s", url, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tail returns about the last n lines of a file, for failure reports.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// TestProcStop checks that stop ends a program however it treats SIGTERM, children
// included, and says when it did not exit cleanly.
func TestProcStop(t *testing.T) {
	cases := []struct {
		name    string
		script  string // prints a line (the pid of a child, if any) once its traps are set
		exits   bool   // by itself: stop is called after that
		wantErr string // "" for a clean stop
	}{
		{"exits on SIGTERM", `trap 'exit 0' TERM; echo; while :; do sleep 0.01; done`, false, ""},
		{"dies of SIGTERM", `echo; exec sleep 30`, false, "exit after SIGTERM: signal: terminated"},
		{"ignores SIGTERM, as does its child", `trap '' TERM; sleep 30 & echo $!; wait`, false, "after SIGTERM: killed"},
		{"exited before", `echo; exit 3`, true, "exited before the test stopped it: exit status 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := launch(t.TempDir(), "sh", []string{"sh", "-c", c.script})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.stop(time.Second) }) // when the test fails early
			var out []byte
			for deadline := time.Now().Add(startTimeout); len(out) == 0; time.Sleep(10 * time.Millisecond) {
				if out, err = os.ReadFile(p.output); err != nil || time.Now().After(deadline) {
					t.Fatalf("no line from the script: %v", err)
				}
			}
			if c.exits {
				<-p.done
			}
			err = p.stop(300 * time.Millisecond)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("stop: %v, want %q", err, c.wantErr)
			}
			if gone, _ := p.exited(); !gone {
				t.Fatal("stop returned while the program runs")
			}
			if child, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil {
				waitGone(t, child)
			}
		})
	}
}

// waitGone waits until process pid no longer runs: gone, or a zombie its new parent has
// not reaped yet.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(startTimeout); ; time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		// The state follows the parenthesised command name.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && bytes.HasPrefix(stat[i+1:], []byte(" Z")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d still runs after its group was killed: %s", pid, stat)
		}
	}
}
