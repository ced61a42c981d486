package follow

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRefilledWithinPass: a file truncated and refilled past the read offset (rewritten
// whole, with other lines) between two reads of one pass, while the reader is more than a
// buffer behind its end. What the second read finds is the new file's, from the middle of
// it: the rewrite is seen there, as it is before a pass, and the new file read from its
// start, each of its lines once, none of the old file's lines after the offset; the line
// the rewrite cut is handed on as it was (malformed, as any line a truncation cuts).
func TestRefilledWithinPass(t *testing.T) {
	for _, c := range []struct {
		name  string
		after int // the new file's lines: fewer bytes than the old one, or more
	}{
		{name: "refilled shorter, past the offset", after: 1500},
		{name: "refilled longer", after: 3000},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "app.log")
			writeLines(t, create(t, log), 1, 2000) // 2000 lines: 4 reads of the buffer
			col := newCollector()
			refilled := false
			handle := func(path string, line []byte) {
				col.handle(path, line)
				if n, ok := parseNumbered(line); ok && n == 10 && !refilled {
					refilled = true
					w := openToWrite(t, log, os.O_TRUNC)
					writeLines(t, w, 5001, 5000+c.after)
				}
			}
			f, _, _ := handDriven(t, log, handle)
			for range 3 {
				f.readAll()
			}
			// The first read's lines, up to the one it cut: a buffer's worth.
			read := int(int64(minBuffer) / lineLen)
			lost, dup, malformed := col.tally(span{1, read}, span{5001, 5000 + c.after})
			t.Logf("lost=%d duplicated=%d malformed=%d", lost, dup, malformed)
			if lost != 0 || dup != 0 || malformed > 1 {
				t.Errorf("want the old file's lines of the first read and the new file's once, at most one line cut")
			}
			if n := f.c.truncations.Load(); n != 1 {
				t.Errorf("%d truncations, want 1", n)
			}
		})
	}
}
