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

// TestReadCheckedAllocatesNothing: a checked read, made at every read of a pass but its
// first, allocates nothing. The bytes before the offset it reads were once read into an
// array of its own, which the syscall's iovec sent to the heap: a KiB allocated, and
// faulted in fresh, per read of a catch-up.
func TestReadCheckedAllocatesNothing(t *testing.T) {
	log := filepath.Join(t.TempDir(), "app.log")
	writeLines(t, create(t, log), 1, 200)
	file, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	tr := &tracked{f: file, path: log}
	buf := make([]byte, 4096)
	n, err := file.ReadAt(buf, 0)
	if err != nil || n != len(buf) {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	tr.noteRead(buf)
	tr.off = int64(n)
	var before [tailLen]byte
	allocs := testing.AllocsPerRun(100, func() {
		if got, err := tr.readChecked(buf, &before); got != len(buf) || err != nil {
			t.Fatalf("readChecked: %d bytes, %v", got, err)
		}
	})
	if allocs != 0 {
		t.Errorf("a checked read allocates %v times, want none", allocs)
	}
}
