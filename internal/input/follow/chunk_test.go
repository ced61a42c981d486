package follow

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestChunk: Options.Chunk runs in the reading goroutine after each read and before the
// lines it completed, so that a handler can read a clock once per chunk: every line sees
// the chunk that completed it, a line written later a later chunk, and the lines of one
// read share one.
func TestChunk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(path, []byte(strings.Repeat("x\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	chunks := 0 // written by Chunk, read by the handler: one goroutine, no lock needed there
	var seen []int
	f, err := Start(Options{Path: path, FromBeginning: true, PollInterval: 5 * time.Millisecond, Chunk: func() { chunks++ }},
		func(_ string, _ []byte) {
			mu.Lock()
			seen = append(seen, chunks)
			mu.Unlock()
		})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	wait := func(n int) []int {
		t.Helper()
		var got []int
		waitFor(t, fmt.Sprintf("%d lines", n), func() bool {
			mu.Lock()
			defer mu.Unlock()
			got = append(got[:0], seen...)
			return len(got) >= n
		})
		return got
	}
	first := wait(100)
	if first[0] < 1 || first[99] != first[0] {
		t.Errorf("the first 100 lines, one read, saw chunks %d..%d, want one chunk", first[0], first[99])
	}
	if _, err := create(t, path).WriteString("y\n"); err != nil {
		t.Fatal(err)
	}
	if got := wait(101); got[100] <= got[99] {
		t.Errorf("a line written later saw chunk %d, the earlier ones %d", got[100], got[99])
	}
}
