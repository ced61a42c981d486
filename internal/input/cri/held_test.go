package cri

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// heap is the heap in use after a collection.
func heap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// The reproduction: files each ending in a 60 KB P line, then gone. HeldBytes follows the
// heap the Joiner holds, and Release gives it back. Before Release existed, the joined
// parts of every file stayed for the life of the input (575 MB RSS for 4,100 files).
func TestHeldBytesIsTheHeap(t *testing.T) {
	big := 4100
	if testing.Short() {
		big = 400
	}
	for _, tc := range []struct {
		name    string
		files   int
		part    int // bytes of the P line's message
		streams []string
	}{
		{"60 KB parts", big, 60_000, []string{"stdout"}},
		// Small enough to be cheap, many enough for the heap's noise (some 20 KB) not to count.
		{"small parts", 4100, 16, []string{"stdout", "stderr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := tc.files
			sources := make([]string, files)
			for i := range sources {
				sources[i] = fmt.Sprintf("/var/log/containers/web-%d_default_nginx-0123456789abcdef.log", i)
			}
			lines := make([][]byte, len(tc.streams))
			for i, s := range tc.streams {
				lines[i] = []byte("2024-03-01T12:00:00.123456789Z " + s + " P " + strings.Repeat("x", tc.part))
			}
			j := New(64 << 10)
			before := heap()
			for _, src := range sources {
				for _, l := range lines {
					j.Feed(src, l)
				}
			}
			grown := heap() - before
			held := j.HeldBytes()
			t.Logf("%d files, %d streams of %d bytes: heap grew %d bytes, HeldBytes %d (%.2f)", files, len(tc.streams), tc.part, grown, held, float64(held)/float64(grown))
			if held < grown*8/10 || held > grown*12/10 {
				t.Errorf("HeldBytes %d, the heap grew %d: want within 20%%", held, grown)
			}
			for _, src := range sources {
				j.Release(src)
			}
			left := heap() - before
			t.Logf("after Release: %d bytes above the start, HeldBytes %d", left, j.HeldBytes())
			if j.HeldBytes() != 0 || left > max(grown/20, 256<<10) {
				t.Errorf("after Release: HeldBytes %d, heap %d bytes above the start: want 0 and about nothing", j.HeldBytes(), left)
			}
			runtime.KeepAlive(sources)
			runtime.KeepAlive(lines)
		})
	}
}
