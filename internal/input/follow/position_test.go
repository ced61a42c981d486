package follow

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestResume: a follower started with the positions of one that stopped hands on every
// line written since exactly once, whatever happened to the files meanwhile, and from
// the position even with start_at: end. Before the first line it tells Started where it
// reads each file from: the file of the position from there, wherever it is now, and the
// others from their start.
func TestResume(t *testing.T) {
	cases := []struct {
		name string
		glob bool
		// down is what happens while no follower runs; it writes lines 101..150. files is
		// how many files the resumed follower reads.
		down  func(t *testing.T, dir string, w *os.File)
		files int
	}{{
		name:  "appended",
		down:  func(t *testing.T, _ string, w *os.File) { writeLines(t, w, 101, 150) },
		files: 1,
	}, {
		name: "appended, rotated by rename, a new file",
		down: func(t *testing.T, dir string, w *os.File) {
			writeLines(t, w, 101, 120)
			rename(t, filepath.Join(dir, "access.log"), filepath.Join(dir, "access.log.1"))
			writeLines(t, w, 121, 130) // the writer has not reopened yet
			writeLines(t, create(t, filepath.Join(dir, "access.log")), 131, 150)
		},
		files: 2,
	}, {
		name: "a glob: a file created while down is read from its start",
		glob: true,
		down: func(t *testing.T, dir string, w *os.File) {
			writeLines(t, w, 101, 120)
			writeLines(t, create(t, filepath.Join(dir, "other.log")), 121, 150)
		},
		files: 2,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w := create(t, filepath.Join(dir, "access.log"))
			writeLines(t, w, 1, 100)
			o := modes[1].options(filepath.Join(dir, "access.log"))
			if tc.glob {
				o.Path = filepath.Join(dir, "*.log")
			}
			var hold sync.RWMutex
			o.Hold = hold.RLocker()
			o.FromBeginning = true
			first := newCollector()
			f := start(t, o, first.handle)
			waitFor(t, "the first lines", func() bool { return first.has(1, 100) })
			hold.Lock()
			positions := f.Positions()
			hold.Unlock()
			f.Stop()
			first.expectExactly(t, span{1, 100})

			tc.down(t, dir, w)
			o.FromBeginning = false
			o.Resume = positions
			next := newCollector()
			var from [][]Position
			o.Started = func(ps []Position) {
				next.mu.Lock()
				if len(next.paths) > 0 {
					t.Error("Started after a line was handed on")
				}
				next.mu.Unlock()
				from = append(from, ps)
			}
			start(t, o, next.handle)
			waitFor(t, "the lines written while down", func() bool { return next.has(101, 150) })
			next.expectExactly(t, span{101, 150})
			if len(from) != 1 || len(from[0]) != tc.files {
				t.Fatalf("Started with %+v, want once with %d files", from, tc.files)
			}
			for _, p := range from[0] {
				if !slices.Contains(positions, p) && p.Offset != 0 {
					t.Errorf("Started with %+v: neither a position resumed nor a file's start (positions %+v)", p, positions)
				}
			}
			for _, p := range positions {
				if !slices.Contains(from[0], p) {
					t.Errorf("Started without %+v, the position resumed", p)
				}
			}
		})
	}
}

// TestPositionsAtLineStarts: a position is at the first byte of the line after the last
// one handed on, and its head hash covers the file's first bytes up to it.
func TestPositionsAtLineStarts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	w := create(t, path)
	writeLines(t, w, 1, 3)
	if _, err := w.WriteString("partial"); err != nil {
		t.Fatal(err)
	}
	var hold sync.RWMutex
	o := modes[1].options(path)
	o.FromBeginning, o.Hold = true, hold.RLocker()
	c := newCollector()
	f := start(t, o, c.handle)
	waitFor(t, "three lines", func() bool { return c.has(1, 3) })
	hold.Lock()
	ps := f.Positions()
	hold.Unlock()
	want := int64(3 * len(numbered(1)))
	if len(ps) != 1 || ps[0].Offset != want || ps[0].Path != path {
		t.Fatalf("positions %+v, want one of %s at %d", ps, path, want)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf [headLen]byte
	if h, _ := headHash(fileBytes(b), want, &buf); h != ps[0].Head {
		t.Errorf("head %x, want %x", ps[0].Head, h)
	}
}

// fileBytes reads a file's bytes from memory.
type fileBytes []byte

func (b fileBytes) ReadAt(p []byte, off int64) (int, error) {
	return copy(p, b[off:]), nil
}

// TestResumeWithinLineTooLong: a line too long counts once, when it is found so, though
// the follower that found it stopped before its end and the one resumed from its position
// skips the rest of it; the lines after it are read as usual.
func TestResumeWithinLineTooLong(t *testing.T) {
	p := filepath.Join(t.TempDir(), "access.log")
	w := create(t, p)
	writeLines(t, w, 1, 100)
	if _, err := w.WriteString(strings.Repeat("z", 300)); err != nil {
		t.Fatal(err)
	}
	o := modes[1].options(p)
	o.FromBeginning, o.MaxLineBytes = true, 200
	first := newCollector()
	f := start(t, o, first.handle)
	waitFor(t, "the line too long found", func() bool { return f.Stats().TooLong == 1 })
	f.Stop()
	first.expectExactly(t, span{1, 100})

	if _, err := w.WriteString(strings.Repeat("z", 300) + "\n"); err != nil {
		t.Fatal(err)
	}
	writeLines(t, w, 101, 150)
	o.Resume = f.Positions()
	next := newCollector()
	g := start(t, o, next.handle)
	waitFor(t, "the lines after it", func() bool { return next.has(101, 150) })
	next.expectExactly(t, span{101, 150})
	if st := g.Stats(); st.TooLong != 0 || st.LinesRead != 50 {
		t.Errorf("resumed: %d lines read, %d too long; want 50 and none", st.LinesRead, st.TooLong)
	}
}

// TestAtLineStarts: the follower says where each line it hands on starts (Options.At),
// whatever ended the lines before it (a "\r\n", a line too long, skipped) and for a last
// line without a newline, handed on when its file is done with; a follower resumed from a
// line's Position hands that line on again, then the lines after it.
func TestAtLineStarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.log")
	long := strings.Repeat("z", 300)
	text := "one\r\n" + long + "\ntwo\nthree\nfour"
	w := create(t, path)
	if _, err := w.WriteString(text); err != nil {
		t.Fatal(err)
	}
	o := modes[1].options(path)
	o.FromBeginning, o.MaxLineBytes, o.At = true, 200, new(Line)
	var mu sync.Mutex
	starts := map[string]int64{}
	var two Position
	f := start(t, o, func(p string, line []byte) {
		mu.Lock()
		defer mu.Unlock()
		starts[string(line)] = o.At.Offset
		if p != path || o.At.Path != path {
			t.Errorf("line %q of %s at %s", line, p, o.At.Path)
		}
		if string(line) == "two" {
			var ok bool
			if two, ok = o.At.Position(); !ok {
				t.Error("no position for a line of a readable file")
			}
		}
	})
	waitFor(t, "three lines", func() bool { mu.Lock(); defer mu.Unlock(); return len(starts) == 3 })
	rename(t, path, path+".1") // its last line is handed on once the file is closed
	waitFor(t, "the last line", func() bool { mu.Lock(); defer mu.Unlock(); return len(starts) == 4 })
	f.Stop()
	for _, line := range []string{"one", "two", "three", "four"} {
		if want := int64(strings.Index(text, line)); starts[line] != want {
			t.Errorf("line %q handed on at %d, want %d", line, starts[line], want)
		}
	}
	var buf [headLen]byte
	if h, _ := headHash(fileBytes(text), starts["two"], &buf); two.Offset != starts["two"] || two.Head != h {
		t.Errorf("the position of line two is %+v, want offset %d, head %x", two, starts["two"], h)
	}

	o.At, o.Resume = nil, []Position{two}
	var again []string
	start(t, o, func(_ string, line []byte) { mu.Lock(); defer mu.Unlock(); again = append(again, string(line)) })
	waitFor(t, "the lines from two", func() bool { mu.Lock(); defer mu.Unlock(); return len(again) == 3 })
	if got := strings.Join(again, ","); got != "two,three,four" {
		t.Errorf("resumed at line two, read %s, want two,three,four", got)
	}
}
