package follow

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// Backfill is called once for each file present at Start and positioned at its end, with
// that offset and the bytes before it, before the file's first line; not for a file that
// appears later or with FromBeginning. Ready waits for it BackfillReadyWait at most (a
// startupProbe must not kill a long fill), and Stats counts the files still to fill.
func TestBackfill(t *testing.T) {
	for _, fromBeginning := range []bool{false, true} {
		t.Run(map[bool]string{false: "start at end", true: "from the beginning"}[fromBeginning], func(t *testing.T) {
			dir := t.TempDir()
			old := filepath.Join(dir, "a.log")
			if err := os.WriteFile(old, []byte("one\ntwo\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var calls []string
			var lines []string
			release := make(chan struct{})
			clock := testclock.New(time.Unix(1_700_000_000, 0))
			f, err := Start(Options{
				now:           clock.Now,
				Path:          filepath.Join(dir, "*.log"),
				FromBeginning: fromBeginning,
				PollInterval:  10 * time.Millisecond,
				Backfill: func(path string, file io.ReaderAt, end int64) {
					<-release
					b := make([]byte, end)
					if _, err := file.ReadAt(b, 0); err != nil {
						t.Error(err)
					}
					mu.Lock()
					defer mu.Unlock()
					calls = append(calls, filepath.Base(path)+":"+string(b))
					if len(lines) > 0 {
						t.Errorf("backfill after lines %q", lines)
					}
				},
			}, func(_ string, line []byte) {
				mu.Lock()
				defer mu.Unlock()
				lines = append(lines, string(line))
			})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Stop()
			if !fromBeginning {
				if f.Ready() {
					t.Error("ready before the backfill ran")
				}
				if got := f.Stats().Backfilling; got != 1 {
					t.Errorf("files still to backfill = %d, want 1", got)
				}
				clock.Add(BackfillReadyWait - time.Second)
				if f.Ready() {
					t.Errorf("ready before BackfillReadyWait, the backfill still running")
				}
				clock.Add(time.Second)
				if !f.Ready() {
					t.Errorf("not ready BackfillReadyWait after the first scan, the backfill still running")
				}
			}
			close(release)
			if err := os.WriteFile(filepath.Join(dir, "b.log"), []byte("new\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := create(t, old).WriteString("three\n"); err != nil {
				t.Fatal(err)
			}
			want := 2
			if fromBeginning {
				want = 4
			}
			waitFor(t, "the lines after start", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(lines) == want
			})
			waitFor(t, "ready", f.Ready)
			waitFor(t, "every file backfilled", func() bool { return f.Stats().Backfilling == 0 })
			mu.Lock()
			defer mu.Unlock()
			wantCalls := "[a.log:one\ntwo\n]"
			if fromBeginning {
				wantCalls = "[]"
			}
			if got := fmt.Sprint(calls); got != wantCalls {
				t.Errorf("backfill calls %q, want %q", got, wantCalls)
			}
		})
	}
}

// What the caller waited before Start (the pipeline's wait for the storage lock) counts in
// Ready's wait for the backfill: the two together stay within BackfillReadyWait (plus the
// first scan), not one after the other past a startupProbe of a minute.
func TestBackfillReadyWaitCountsWaited(t *testing.T) {
	for _, c := range []struct {
		name   string
		waited time.Duration
		ready  time.Duration // after the first scan, the backfill still running
	}{
		{"no wait before", 0, BackfillReadyWait},
		{"the storage lock's 20s", 20 * time.Second, BackfillReadyWait - 20*time.Second},
		{"the storage lock's whole wait", BackfillReadyWait, 0},
		{"longer than the bound", BackfillReadyWait + time.Minute, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "a.log"), []byte("one\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			release := make(chan struct{})
			clock := testclock.New(time.Unix(1_700_000_000, 0))
			f, err := Start(Options{
				now:          clock.Now,
				Path:         filepath.Join(dir, "*.log"),
				PollInterval: 10 * time.Millisecond,
				Waited:       c.waited,
				Backfill:     func(string, io.ReaderAt, int64) { <-release },
			}, func(string, []byte) {})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Stop()
			defer close(release)
			if c.ready > 0 {
				clock.Add(c.ready - time.Second)
				if f.Ready() {
					t.Errorf("ready %s after the first scan, %s waited before: want %s", c.ready-time.Second, c.waited, c.ready)
				}
				clock.Add(time.Second)
			}
			if !f.Ready() {
				t.Errorf("not ready %s after the first scan, %s waited before, the backfill still running", c.ready, c.waited)
			}
			if got := f.Stats().Backfilling; got != 1 {
				t.Errorf("files still to backfill = %d, want 1: the readiness above is not the wait's", got)
			}
		})
	}
}
