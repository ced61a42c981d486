package follow

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// TestStartLater: with Options.Later, Start returns before its first scan, which the
// discovery goroutine makes: a reload starts its new followers so without holding the
// pipeline's lock for their listing. Until the scan is done the follower is not ready and
// its positions wait for it; they are then where Start would have read from. A Stop
// meanwhile waits for the scan and leaves its positions, no line read.
func TestStartLater(t *testing.T) {
	for _, stop := range []bool{false, true} {
		t.Run(map[bool]string{false: "read", true: "stopped while it lists"}[stop], func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "a.log")
			if err := os.WriteFile(log, []byte("before the start\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			listing, listed := make(chan struct{}), make(chan struct{})
			release := sync.OnceFunc(func() { close(listed) })
			t.Cleanup(release) // had Start not returned
			var once sync.Once
			var lines atomic.Int32
			o := Options{Path: filepath.Join(dir, "*.log"), Later: true, noNotify: true, Logger: testLogger(t), listed: func() {
				once.Do(func() { close(listing); <-listed })
			}}
			started := make(chan *Follower, 1)
			go func() {
				f, err := Start(o, func(string, []byte) { lines.Add(1) })
				if err != nil {
					t.Error(err)
				}
				started <- f
			}()
			f, ok := await.Receive(t, started)
			if !ok {
				t.Fatal("Start waits for its first scan")
			}
			if f == nil {
				return
			}
			t.Cleanup(f.Stop)
			t.Cleanup(release) // before Stop, which waits for the scan held
			<-listing
			if f.Ready() {
				t.Error("ready before its first scan")
			}
			positions := make(chan []Position, 1)
			go func() { positions <- f.Positions() }()
			if !await.Until(t, func() bool { return len(positions) > 0 || blockedIn("follow.(*Follower).Positions") }) || len(positions) > 0 {
				t.Fatalf("positions %+v before the first scan", <-positions)
			}
			stopped := make(chan struct{})
			if stop {
				go func() { f.Stop(); close(stopped) }()
				if !await.Until(t, func() bool { return chanClosed(stopped) || blockedIn("follow.(*Follower).Stop") }) || chanClosed(stopped) {
					t.Fatal("stopped before its first scan was done")
				}
			}
			release()
			ps, _ := await.Receive(t, positions)
			want := []Position{{Path: log, Offset: int64(len("before the start\n"))}}
			if !slices.EqualFunc(ps, want, func(a, b Position) bool { return a.Path == b.Path && a.Offset == b.Offset }) {
				t.Errorf("positions %+v, want %+v", ps, want)
			}
			if stop {
				await.Receive(t, stopped)
				if n := lines.Load(); n != 0 {
					t.Errorf("%d lines read by a follower stopped in its first scan", n)
				}
				return
			}
			if !await.Until(t, f.Ready) {
				t.Error("not ready after its first scan")
			}
		})
	}
}

// TestStartLaterStarted: with Options.Later, Positions waits for Started too, which the
// discovery goroutine calls after its first scan: a pipeline's snapshot taken meanwhile
// would have the positions of a CRI input's files without the messages in parts Started
// gives back to its joiner (lost at the next restart), and would read the joiner as
// Started writes to it.
func TestStartLaterStarted(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.log"), []byte("before the start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	starting, started := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(started) })
	o := Options{Path: filepath.Join(dir, "*.log"), Later: true, noNotify: true, Logger: testLogger(t), Started: func([]Position) {
		close(starting)
		<-started
	}}
	f, err := Start(o, func(string, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	t.Cleanup(release) // before Stop, which waits for Started held
	<-starting
	positions := make(chan []Position, 1)
	go func() { positions <- f.Positions() }()
	if !await.Until(t, func() bool { return len(positions) > 0 || blockedIn("follow.(*Follower).Positions") }) || len(positions) > 0 {
		t.Fatalf("positions %+v while Started runs", <-positions)
	}
	select {
	case <-f.Scanned():
		t.Error("scanned while Started runs")
	default:
	}
	release()
	if ps, _ := await.Receive(t, positions); len(ps) != 1 {
		t.Errorf("positions %+v after Started, want the one file's", ps)
	}
}

// blockedIn reports whether a goroutine is blocked (not running nor runnable) in the
// function fn, as a stack trace names it: its package's last element first.
func blockedIn(fn string) bool {
	for _, g := range await.Stacks() {
		head, _, _ := bytes.Cut(g, []byte("\n"))
		if !bytes.Contains(head, []byte("[running]")) && !bytes.Contains(head, []byte("[runnable]")) && bytes.Contains(g, []byte("/"+fn+"(")) {
			return true
		}
	}
	return false
}

// chanClosed reports whether c is closed.
func chanClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
