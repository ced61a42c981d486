package follow

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// TestStartAtEndOnNULs: a log that ends with a line begun and NUL bytes after it when the
// exporter starts at its end (start_at: end). The NULs are space its writer preallocated,
// which it fills in at its own offset, or the bytes a crashed writer lost, after which its
// successor appends: either way the lines written next are read once, the rest of the line
// begun before the start is no line, and nothing read before the start is read (the
// fill-in is no truncation). The NULs left at the end are not read while nothing follows
// them: the reader has nothing to do then. So again for a follower resumed from the
// positions of one stopped in between.
func TestStartAtEndOnNULs(t *testing.T) {
	for _, c := range []struct {
		name string
		nuls int
		// fill: the writer writes over the NULs from where its text ends; otherwise a
		// successor appends after them.
		fill, resume bool
		// only: the file holds nothing but the NULs, its writer's space preallocated whole.
		only bool
	}{
		{name: "preallocated whole, filled in", nuls: 8 << 10, fill: true, only: true},
		{name: "preallocated, filled in", nuls: 8 << 10, fill: true},
		{name: "preallocated past the read buffer, filled in", nuls: 200 << 10, fill: true},
		{name: "preallocated, filled in, resumed", nuls: 8 << 10, fill: true, resume: true},
		{name: "crashed writer, successor appends", nuls: 5000},
		{name: "crashed writer, successor appends, resumed", nuls: 5000, resume: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "access.log")
			w := openToWrite(t, log, 0)
			line := numbered(101)
			if !c.only {
				writeLines(t, w, 1, 100)
				if _, err := w.Write(line[:20]); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.Write(make([]byte, c.nuls)); err != nil {
				t.Fatal(err)
			}
			if c.fill {
				// The writer's offset is its text's end, within its preallocated space.
				if _, err := w.Seek(-int64(c.nuls), 1); err != nil {
					t.Fatal(err)
				}
			} else {
				w = create(t, log)
			}
			col := newCollector()
			clock := testclock.New(time.Unix(1_700_000_000, 0))
			o := Options{Path: log, noNotify: true, now: clock.Now, RotationGrace: time.Minute, Logger: testLogger(t)}
			f := discovered(t, o, col.handle)
			if f.readAll() {
				t.Error("more to read where only NULs are")
			}
			if c.fill && !c.only {
				if _, err := w.Write(line[20:]); err != nil {
					t.Fatal(err)
				}
			}
			writeLines(t, w, 102, 110)
			f.readAll()
			f.readAll()
			if c.resume {
				f = resumed(t, f, o, col.handle)
			}
			writeLines(t, w, 111, 120)
			for range 3 {
				f.readAll()
			}
			if c.fill {
				before := 100*lineLen + 20
				if c.only {
					before = 0
				}
				if fi, err := os.Stat(log); err != nil || fi.Size() != before+int64(c.nuls) {
					t.Fatalf("the fill-in changed the file's size: %v %v", fi, err)
				}
				if f.readAll() {
					t.Error("more to read where only NULs are")
				}
			}
			col.expectExactly(t, span{102, 120})
			if n := f.c.truncations.Load(); n != 0 {
				t.Errorf("%d truncations", n)
			}
		})
	}
}

// TestTextEnd: where the NULs ending a file begin.
func TestTextEnd(t *testing.T) {
	for _, c := range []struct {
		data string
		want int64
	}{
		{"", 0},
		{"ab\n", 3},
		{"ab\x00\x00\x00\x00", 2},
		{"ab\x00\x00", 4}, // a character of UTF-16 or UTF-32, not space preallocated
		{"a\n\x00", 3},
		{"\x00\x00\x00\x00", 0},
		{"\x00\x00", 2},
		{"\xe2\x82\xac\x00\x00\x00\x00", 3},
		{"a\x00b", 3},
		{"a" + string(make([]byte, 10000)), 1},
		{"\n" + string(make([]byte, 4096)), 1},
	} {
		if got := textEnd(bytes.NewReader([]byte(c.data)), int64(len(c.data))); got != c.want {
			t.Errorf("textEnd(%.20q, %d bytes) = %d, want %d", c.data, len(c.data), got, c.want)
		}
	}
	// More NULs than are read back over: from the end.
	big := append([]byte("a"), make([]byte, maxZeros)...)
	if got := textEnd(bytes.NewReader(big), int64(len(big))); got != int64(len(big)) {
		t.Errorf("textEnd of a line and %d NULs = %d, want the end", maxZeros, got)
	}
}
