package follow

import (
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
			t.Cleanup(release)
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
			<-listing
			if f.Ready() {
				t.Error("ready before its first scan")
			}
			positions := make(chan []Position, 1)
			go func() { positions <- f.Positions() }()
			stopped := make(chan struct{})
			if stop {
				go func() { f.Stop(); close(stopped) }()
			}
			select {
			case ps := <-positions:
				t.Fatalf("positions %+v before the first scan", ps)
			case <-stopped:
				t.Fatal("stopped before its first scan was done")
			default:
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
