package follow

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// heard is what a reader of a file with a hole handed on, in blocks (Options.Block) or one
// by one, and what it counted.
type heard struct {
	lines                      []string
	read, tooLong, truncations uint64
	lost                       uint64
	inBlocks                   uint64 // lines taken in blocks, which the taker counts
}

func (h *heard) handle(_ string, line []byte) { h.lines = append(h.lines, string(line)) }

// block takes every block offered, as the pipeline's follower does.
func (h *heard) block(_ string, b []byte) bool {
	lines := strings.Split(string(b[:len(b)-1]), "\n")
	h.lines = append(h.lines, lines...)
	h.inBlocks += uint64(len(lines))
	return true
}

// holeFollower is a follower of path driven by hand, read from its start, its lines
// offered in blocks when block is set.
func holeFollower(t *testing.T, path string, block bool, h *heard) (*Follower, Options) {
	t.Helper()
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	o := Options{Path: path, FromBeginning: true, noNotify: true, now: clock.Now, RotationGrace: time.Minute, Logger: testLogger(t)}
	if block {
		o.Block = h.block
	}
	return discovered(t, o, h.handle), o
}

// counted notes what f counted in h.
func (h *heard) counted(f *Follower) {
	h.read, h.tooLong, h.truncations, h.lost = f.c.lines.Load(), f.c.tooLong.Load(), f.c.truncations.Load(), f.c.truncatedBytes.Load()
}

// readTurns lets a hand-driven follower read a few turns: NULs held back are looked at
// again, and text after them read.
func readTurns(f *Follower) {
	for range 3 {
		f.readAll()
	}
}

// TestHoleAtLineStart: a file with a hole of NUL bytes at a line's start (a writer at its
// own offset after copytruncate, a preallocation), text after it, is read on a catch-up as
// a follower present when the hole was made reads it: the same lines, none too long nor
// opened by NULs, and the same counts, whether the hole is read within one read, across a
// read's end, longer than the read buffer, sparse and of a GiB, or ends the file; a run
// too short to be a hole (minZeros) opens the next line's text for both. The catch-ups:
// a one-shot (--replay), a follower from the start (start_at: beginning) and one that read
// the lines before the hole and comes back after the rest was written, itself or resumed
// from its position (a restart), each with its lines handed on one by one or offered in
// blocks (the pipeline's).
func TestHoleAtLineStart(t *testing.T) {
	for _, c := range []struct {
		name          string
		before, after int   // numbered lines before and after the hole
		nuls          int64 // the hole's length
		sparse        bool  // made by extending the file (truncate), not written
	}{
		{name: "a small hole", before: 10, after: 10, nuls: 100},
		{name: "NULs too few for a hole", before: 10, after: 10, nuls: minZeros - 1},
		{name: "NULs as few as a hole", before: 10, after: 10, nuls: minZeros},
		{name: "a hole across a read's end", before: 400, after: 400, nuls: 40_000},
		{name: "a hole longer than the read buffer", before: 4099, after: 1, nuls: 3 * minBuffer},
		{name: "a hole ending the file", before: 10, nuls: 5000},
		{name: "a sparse hole of a GiB", before: 10, after: 10, nuls: 1 << 30, sparse: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			want := make([]string, 0, c.before+c.after)
			for n := 1; n <= c.before+c.after; n++ {
				want = append(want, strings.TrimSuffix(string(numbered(n)), "\n"))
			}
			if c.nuls < minZeros && c.after > 0 {
				want[c.before] = strings.Repeat("\x00", int(c.nuls)) + want[c.before]
			}
			// write makes the file at path: the lines before the hole, and the hole and the
			// lines after it when all is set.
			write := func(path string, all bool) {
				w := create(t, path)
				writeLines(t, w, 1, c.before)
				if !all {
					return
				}
				hole(t, w, c.nuls, c.sparse)
				writeLines(t, w, c.before+1, c.before+c.after)
			}

			for _, block := range []bool{false, true} {
				// The follower present: it reads the lines before the hole, waits at it, and
				// reads the lines after it as they are written.
				present := filepath.Join(dir, "present.log")
				if block {
					present = filepath.Join(dir, "present-block.log")
				}
				write(present, false)
				var p heard
				f, _ := holeFollower(t, present, block, &p)
				readTurns(f)
				w := openToWrite(t, present, os.O_APPEND)
				hole(t, w, c.nuls, c.sparse)
				readTurns(f)
				writeLines(t, w, c.before+1, c.before+c.after)
				readTurns(f)
				p.counted(f)
				if !slices.Equal(p.lines, want) {
					t.Fatalf("present, blocks %t: %s", block, differ(p.lines, want))
				}

				catchUps := []struct {
					name string
					read func(path string) heard
				}{
					{"from the start", func(path string) heard {
						write(path, true)
						var h heard
						f, _ := holeFollower(t, path, block, &h)
						readTurns(f)
						h.counted(f)
						return h
					}},
					{"behind", func(path string) heard {
						write(path, false)
						var h heard
						f, _ := holeFollower(t, path, block, &h)
						f.readAll()
						w := openToWrite(t, path, os.O_APPEND)
						hole(t, w, c.nuls, c.sparse)
						writeLines(t, w, c.before+1, c.before+c.after)
						readTurns(f)
						h.counted(f)
						return h
					}},
					{"resumed behind", func(path string) heard {
						write(path, false)
						var h heard
						f, o := holeFollower(t, path, block, &h)
						f.readAll()
						before := f.c.lines.Load()
						w := openToWrite(t, path, os.O_APPEND)
						hole(t, w, c.nuls, c.sparse)
						writeLines(t, w, c.before+1, c.before+c.after)
						g := resumed(t, f, o, h.handle)
						if block {
							g.r.block = h.block
						}
						readTurns(g)
						h.counted(g)
						h.read += before
						return h
					}},
				}
				if !block {
					catchUps = append(catchUps, struct {
						name string
						read func(path string) heard
					}{"a one-shot", func(path string) heard {
						write(path, true)
						var h heard
						st, err := ReadToEnd(Options{Path: path}, h.handle)
						if err != nil {
							t.Fatal(err)
						}
						h.read, h.tooLong, h.truncations = st.LinesRead, st.TooLong, st.Truncations
						return h
					}})
				}
				for i, cu := range catchUps {
					got := cu.read(filepath.Join(dir, strings.Repeat("x", i+1)+present[len(dir)+1:]))
					if !slices.Equal(got.lines, p.lines) {
						t.Errorf("%s, blocks %t: %s", cu.name, block, differ(got.lines, p.lines))
					}
					// In blocks the lines taken are the taker's to count, the follower's the rest.
					if got.read+got.inBlocks != p.read+p.inBlocks || got.tooLong != p.tooLong || got.truncations != p.truncations || got.lost != p.lost {
						t.Errorf("%s, blocks %t: counted %d lines read, %d too long, %d truncations, %d bytes lost; present %d, %d, %d, %d",
							cu.name, block, got.read+got.inBlocks, got.tooLong, got.truncations, got.lost, p.read+p.inBlocks, p.tooLong, p.truncations, p.lost)
					}
				}
			}
		})
	}
}

// hole writes n NUL bytes to w, or leaves a hole of n bytes (sparse) by extending its file
// as a writer at its own offset does after copytruncate.
func hole(t *testing.T, w *os.File, n int64, sparse bool) {
	t.Helper()
	if !sparse {
		if _, err := w.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		return
	}
	fi, err := w.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Truncate(fi.Size() + n); err != nil {
		t.Fatal(err)
	}
}

// differ says how got differs from want, lines of a file with a hole.
func differ(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("line %d: %.60q, want %.60q", i+1, got[i], want[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(got), len(want))
}

// TestHoleReadBounded: the NULs of a sparse hole of a GiB are passed over by asking the file
// system where its data begins, not read, when the hole opens within the block of the text
// before it: that block is data, the hole's next block none. Bounded by the bytes the
// process reads (rchar), not by time. Looked for from the hole's start, from within its
// first block, from a block of it, and by a one-shot read whose read ends in that first block
// (a pass at the hole, textAfter asked from there).
func TestHoleReadBounded(t *testing.T) {
	if _, err := readBytes(); err != nil {
		t.Skip("no count of the bytes read:", err)
	}
	const (
		// text is the lines before the hole, 130 of lineBytes: the second read of a
		// one-shot (minBuffer, a line cut at its end kept) ends in the block the hole opens.
		lineBytes = 1000
		text      = 130 * lineBytes
		holeLen   = 1 << 30
		bound     = 1 << 20 // bytes read, of the GiB
	)
	path := filepath.Join(t.TempDir(), "sparse.log")
	w := create(t, path)
	line := append(bytes.Repeat([]byte("x"), lineBytes-1), '\n')
	for range text / lineBytes {
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	hole(t, w, holeLen, true)
	if _, err := w.Write([]byte("after\n")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size := int64(text + holeLen + len("after\n"))
	for _, c := range []struct {
		name string
		read func() error
	}{
		{"from the hole's start", textAfterFrom(f, text, size)},
		{"from within its first block", textAfterFrom(f, text+50, size)},
		{"from a block of it", textAfterFrom(f, text+1<<20, size)},
		{"a one-shot", func() error {
			var h heard
			st, err := ReadToEnd(Options{Path: path}, h.handle)
			if err == nil && (st.LinesRead != text/lineBytes+1 || st.TooLong != 0 || h.lines[len(h.lines)-1] != "after") {
				err = fmt.Errorf("%d lines read, %d too long, the last %.20q", st.LinesRead, st.TooLong, h.lines[len(h.lines)-1])
			}
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, err := readBytes()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.read(); err != nil {
				t.Fatal(err)
			}
			after, err := readBytes()
			if err != nil {
				t.Fatal(err)
			}
			if after-before > bound {
				t.Errorf("%d bytes read, want at most %d", after-before, bound)
			}
		})
	}
}

// textAfterFrom asks textAfter where the NULs from off in f end, and says so unless at the
// text after them, size-len("after\n").
func textAfterFrom(f *os.File, off, size int64) func() error {
	return func() error {
		if got, want := textAfter(f, off, size, new(atomic.Bool)), size-int64(len("after\n")); got != want {
			return fmt.Errorf("textAfter from %d: %d, want %d", off, got, want)
		}
		return nil
	}
}

// readBytes is how many bytes the process has read by read and pread (Linux's rchar):
// the count goes up only with what is read, whatever the load.
func readBytes() (uint64, error) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, err
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "rchar: "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("no rchar")
}

// TestNULsAtReadEnd: NUL bytes that open a line at a read's end, some of them read and the
// rest of them with the next read, are a hole as they would be within one read only when
// minZeros or more: a line that opens with fewer is read with them, its lines handed on one
// by one or offered in blocks.
func TestNULsAtReadEnd(t *testing.T) {
	// first is what the first read of a one-shot holds (newLineReader).
	first := max(DefaultMaxLineBytes+1, minBuffer)
	for _, c := range []struct {
		name        string
		nuls, split int // the NULs that open the line, and of them how many the first read holds
	}{
		{"one, the first read's last byte", 1, 1},
		{"three, all in the first read", 3, 3},
		{"three, two in the first read", 3, 2},
		{"three, none in the first read", 3, 0},
		{"a hole of four, two in the first read", minZeros, 2},
		{"a hole of five, three in the first read", minZeros + 1, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			var text []byte
			var want []string
			for len(text)+1000 < first-c.split-100 {
				line := strings.Repeat("x", 999)
				text, want = append(append(text, line...), '\n'), append(want, line)
			}
			filler := strings.Repeat("f", first-c.split-len(text)-1)
			text, want = append(append(text, filler...), '\n'), append(want, filler)
			nuls := strings.Repeat("\x00", c.nuls)
			if c.nuls < minZeros {
				want = append(want, nuls+"y", "z")
			} else {
				want = append(want, "y", "z")
			}
			text = append(text, nuls+"y\nz\n"...)
			path := filepath.Join(t.TempDir(), "nuls.log")
			if err := os.WriteFile(path, text, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, block := range []bool{false, true} {
				var h heard
				o := Options{Path: path}
				if block {
					o.Block = h.block
				}
				st, err := ReadToEnd(o, h.handle)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(h.lines, want) || st.LinesRead+h.inBlocks != uint64(len(want)) || st.TooLong != 0 {
					t.Errorf("blocks %t: %s; %d lines counted, %d too long", block, differ(h.lines, want), st.LinesRead+h.inBlocks, st.TooLong)
				}
			}
		})
	}
}
