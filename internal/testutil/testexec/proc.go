package testexec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// StopTimeout is how long a program StartTest started may take to exit after SIGTERM
// before its cleanup kills it: generous for a loaded CI machine.
const StopTimeout = 10 * time.Second

// Proc is a program Start started. One goroutine waits for it, so that its exit is seen at
// once, by any number of callers, without a second Wait.
type Proc struct {
	// Cmd is the running command; its ProcessState is set once Done is closed.
	Cmd *exec.Cmd
	// Name names the program in messages.
	Name string
	// Output is the file holding its stdout and stderr when Launch started it, else "".
	Output string

	started time.Time
	ended   time.Time     // when Wait returned, set before done is closed
	err     error         // what Wait returned, set before done is closed
	done    chan struct{} // closed once it has exited and been waited for

	killed   atomic.Bool // Kill was called while it ran
	stopOnce sync.Once
	stopErr  error
}

// Start starts cmd in a process group of its own, so that Stop and Kill reach its
// children too (nginx's workers), and with SIGKILL as its parent-death signal, so that a
// test binary killed by its timeout before its cleanups run leaves no program behind.
func Start(cmd *exec.Cmd) (*Proc, error) {
	return start(cmd, filepath.Base(cmd.Path))
}

func start(cmd *exec.Cmd, name string) (*Proc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	p := &Proc{Cmd: cmd, Name: name, done: make(chan struct{})}
	started := make(chan error)
	go func() {
		// The kernel sends the parent-death signal when the thread that started the
		// program ends, not the process: the waiter keeps that thread until the program
		// has exited, so that no other goroutine can end it (golang/go#27505).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		p.started = time.Now()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		p.ended = time.Now()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

// Launch starts argv (see Start) with its stdout and stderr going to the file
// dir/name.out: no goroutine of the caller copies them, and nothing is lost when the
// program is killed.
func Launch(dir, name string, argv []string) (*Proc, error) {
	return launch(dir, name, argv, nil)
}

// launch is Launch with env added to the program's environment.
func launch(dir, name string, argv, env []string) (*Proc, error) {
	output := filepath.Join(dir, name+".out")
	f, err := os.Create(output)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child has its own copy
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	p, err := start(cmd, name)
	if err != nil {
		return nil, err
	}
	p.Output = output
	return p, nil
}

// StartTest launches argv (see Launch) for a test. A cleanup stops it (see Stop, with
// StopTimeout), fails the test when it did not exit cleanly, and on any failure of the
// test logs the end of its output and of the files in logs.
func StartTest(tb testing.TB, dir, name string, argv []string, logs ...string) *Proc {
	tb.Helper()
	p, err := Launch(dir, name, argv)
	if err != nil {
		tb.Fatal(err)
	}
	stopAtCleanup(tb, p, logs...)
	return p
}

// stopAtCleanup logs that p started and has the test's cleanup stop it: see StartTest.
func stopAtCleanup(tb testing.TB, p *Proc, logs ...string) {
	tb.Helper()
	tb.Logf("started %s, pid %d: %s", p.Name, p.Cmd.Process.Pid, strings.Join(p.Cmd.Args, " "))
	tb.Cleanup(func() {
		began := time.Now()
		if err := p.Stop(StopTimeout); err != nil {
			tb.Errorf("%s (pid %d): %v", p.Name, p.Cmd.Process.Pid, err)
		} else {
			tb.Logf("stopped %s (pid %d) in %v", p.Name, p.Cmd.Process.Pid, time.Since(began).Round(time.Millisecond))
		}
		if tb.Failed() {
			for _, f := range append([]string{p.Output}, logs...) {
				tb.Logf("end of %s:\n%s", filepath.Base(f), Tail(f, 40))
			}
		}
	})
}

// Done is closed once the program has exited and been waited for.
func (p *Proc) Done() <-chan struct{} {
	return p.done
}

// Exited reports whether the program has exited, and if so what Wait returned.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Wait waits for the program to exit and returns what exec.Cmd.Wait returned.
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// Started is the time just before the program was started.
func (p *Proc) Started() time.Time {
	return p.started
}

// Ended is the time its exit was seen; the zero time until Done is closed.
func (p *Proc) Ended() time.Time {
	select {
	case <-p.done:
		return p.ended
	default:
		return time.Time{}
	}
}

// Stop ends the program by its PID: SIGTERM, then SIGKILL to its group after timeout.
// It returns an error unless the program exited by itself with status 0 after SIGTERM;
// a program that had already exited before is an error too, since a caller that stops a
// program expects it to run, unless the caller ended it with Kill (a test that kills
// the exporter on purpose and starts another). Later calls return the first call's
// result.
func (p *Proc) Stop(timeout time.Duration) error {
	p.stopOnce.Do(func() {
		if gone, err := p.Exited(); gone {
			if !p.killed.Load() {
				p.stopErr = fmt.Errorf("exited before the test stopped it: %v", err)
			}
			return
		}
		if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
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
		_ = p.Kill()
		p.stopErr = fmt.Errorf("still running %v after SIGTERM: killed", timeout)
	})
	return p.stopErr
}

// Kill sends SIGKILL to the program's group, unless the program has exited, then waits
// for it and returns what Wait returned. Calling it again only returns that again.
func (p *Proc) Kill() error {
	if gone, _ := p.Exited(); !gone {
		p.killed.Store(true)
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	}
	return p.Wait()
}
