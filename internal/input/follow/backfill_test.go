package follow

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Backfill is called once for each file present at Start and positioned at its end, with
// that offset and the bytes before it, before the file's first line; not for a file that
// appears later or with FromBeginning; and Ready waits for it.
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
			f, err := Start(Options{
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
			if !fromBeginning && f.Ready() {
				t.Error("ready before the backfill ran")
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
