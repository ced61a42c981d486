package follow

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// TestPreallocatedFilledIn: a writer that preallocates its file's space (NUL bytes up to
// the file's end) and fills it in at its own offset, its lines read however the file came
// to be followed: present at the start (start_at: end, or from its beginning), appearing
// after it at the input's path or a glob's, or preallocating once followed (as log4j2's
// memory-mapped appender extends its file). The NULs are held back until text is written
// over them: each fill-in is read once, none taken for a truncation that reads the file
// again from its start, and the NULs held back are no bytes behind (the lag self-metric).
func TestPreallocatedFilledIn(t *testing.T) {
	const nuls = 200 << 10 // past the read buffer
	for _, c := range []struct {
		name string
		// later: the file comes to the path after the first scan; glob: the input is a
		// glob; beginning: from its beginning (start_at: beginning); grows: the writer
		// preallocates only after the file was followed to its end.
		later, glob, beginning, grows bool
		// whole: the file is the NULs alone when first seen; written: the NULs are
		// written, not a hole the file system makes of its new length.
		whole, written bool
		want           span
	}{
		{name: "present at the start, from its end", want: span{11, 40}},
		{name: "present at the start, from its beginning", beginning: true, want: span{1, 40}},
		{name: "appears after the start", later: true, want: span{1, 40}},
		{name: "appears after the start, NULs written", later: true, written: true, want: span{1, 40}},
		{name: "appears after the start, preallocated whole", later: true, whole: true, want: span{11, 40}},
		{name: "appears after the start, preallocated whole, NULs written", later: true, whole: true, written: true, want: span{11, 40}},
		{name: "appears after the start in a glob", later: true, glob: true, want: span{1, 40}},
		{name: "preallocates once followed", grows: true, beginning: true, want: span{1, 40}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "app.log")
			path := log
			if c.glob {
				path = filepath.Join(dir, "*.log")
			}
			col := newCollector()
			clock := testclock.New(time.Unix(1_700_000_000, 0))
			o := Options{Path: path, FromBeginning: c.beginning, noNotify: true, now: clock.Now, RotationGrace: time.Minute, Logger: testLogger(t)}
			var f *Follower
			if c.later || c.grows {
				f = discovered(t, o, col.handle)
				f.readAll()
			}
			w := openToWrite(t, log, 0)
			if !c.whole {
				writeLines(t, w, 1, 10)
			}
			if c.grows {
				f.discover(false)
				settle(f, clock)
			}
			preallocate(t, w, nuls, c.written)
			if f == nil {
				f = discovered(t, o, col.handle)
			} else {
				f.discover(false)
			}
			check := func(when string) {
				t.Helper()
				settle(f, clock)
				if f.readAll() {
					t.Errorf("%s: more to read where only NULs are", when)
				}
				for _, fs := range f.Stats().Files {
					if fs.BytesBehind != 0 {
						t.Errorf("%s: %s is %d bytes behind, want 0: the NULs held back are none", when, fs.Path, fs.BytesBehind)
					}
				}
			}
			check("preallocated")
			for from := 11; from <= 40; from += 10 {
				writeLines(t, w, from, from+9)
				check("filled in")
			}
			if fi, err := os.Stat(log); err != nil || fi.Size() < nuls {
				t.Fatalf("the fill-in went past the space preallocated: %v %v", fi, err)
			}
			col.expectExactly(t, c.want)
			if n := f.c.truncations.Load(); n != 0 {
				t.Errorf("%d truncations", n)
			}
		})
	}
}

// preallocate makes w's file n bytes longer with NUL bytes, written or a hole, w's offset
// left where it was, where the writer fills them in.
func preallocate(t *testing.T, w *os.File, n int64, written bool) {
	t.Helper()
	fi, err := w.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if written {
		_, err = w.WriteAt(make([]byte, n), fi.Size())
	} else {
		err = w.Truncate(fi.Size() + n)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestNULsThenText: NUL bytes that end a file when read, with text written after them
// later rather than over them, are taken for a hole (a crashed writer's lost bytes, then
// its successor's lines): the line they cut is handed on as it was, and the text after
// them opens a line. Where they were a line's own, written apart from its rest with a
// read in between, that line is handed on as two (its head and its rest, both
// malformed), and its NULs are dropped: nothing else is lost or read twice. Which of the
// two the NULs were cannot be told from the file, and a crash's cost (its successor's
// first line glued to the line cut, and lost) is the greater.
func TestNULsThenText(t *testing.T) {
	log := filepath.Join(t.TempDir(), "app.log")
	w := create(t, log)
	writeLines(t, w, 1, 10)
	col := newCollector()
	f, clock, _ := handDriven(t, log, col.handle)
	line := numbered(11)
	head, rest := line[:30], line[30:]
	if _, err := w.Write(append(slices.Clip(head), make([]byte, 16)...)); err != nil {
		t.Fatal(err)
	}
	settle(f, clock)
	if _, err := w.Write(rest); err != nil {
		t.Fatal(err)
	}
	writeLines(t, w, 12, 20)
	settle(f, clock)
	lost, dup, _ := col.tally(span{1, 10}, span{12, 20})
	if lost+dup != 0 {
		t.Errorf("lost %d, duplicated %d", lost, dup)
	}
	want := []string{string(head), string(rest[:len(rest)-1])}
	if !slices.Equal(col.malformed, want) {
		t.Errorf("malformed %q, want %q", col.malformed, want)
	}
	if n := f.c.truncations.Load(); n != 0 {
		t.Errorf("%d truncations", n)
	}
}

// TestHeldNULsThenRewritten: a file whose trailing NUL bytes are held back (space
// preallocated, not filled in yet) is truncated, shrunk or rewritten before the writer
// fills them in. What is written then is read, once: nothing waits for the file to grow
// past where the NULs ended before.
func TestHeldNULsThenRewritten(t *testing.T) {
	const nuls = 200 << 10
	for _, c := range []struct {
		name string
		// text: lines 1-10 precede the NULs.
		text bool
		// change is done to the file once its NULs are held back.
		change func(t *testing.T, log string, w *os.File)
		want   []span
	}{
		{
			name: "truncated to zero, lines appended",
			text: true,
			change: func(t *testing.T, log string, _ *os.File) {
				truncate(t, log, 0)
				writeLines(t, create(t, log), 11, 20)
			},
			want: []span{{1, 20}},
		},
		{
			name: "truncated to zero by a new writer that preallocates and fills in",
			text: true,
			change: func(t *testing.T, log string, _ *os.File) {
				w := openToWrite(t, log, os.O_TRUNC)
				preallocate(t, w, nuls, false)
				writeLines(t, w, 11, 20)
			},
			want: []span{{1, 20}},
		},
		{
			name: "NULs alone, truncated to zero, lines appended",
			change: func(t *testing.T, log string, _ *os.File) {
				truncate(t, log, 0)
				writeLines(t, create(t, log), 11, 20)
			},
			want: []span{{11, 20}},
		},
		{
			name: "shrunk within the NULs, lines appended after them",
			text: true,
			change: func(t *testing.T, log string, _ *os.File) {
				truncate(t, log, 10*lineLen+nuls/2)
				writeLines(t, create(t, log), 11, 20)
			},
			want: []span{{1, 20}},
		},
		{
			// Between two looks: the follower sees the file longer than the NULs were, and
			// nothing of it shorter.
			name: "shrunk within the NULs, lines appended past their end",
			text: true,
			change: func(t *testing.T, log string, _ *os.File) {
				truncate(t, log, 10*lineLen+nuls/2)
				writeLines(t, create(t, log), 11, 11+int(nuls/lineLen))
			},
			want: []span{{1, 11 + int(nuls/lineLen)}},
		},
		{
			name: "shrunk within the NULs, lines appended up to their end",
			text: true,
			change: func(t *testing.T, log string, _ *os.File) {
				truncate(t, log, 10*lineLen+nuls-20*lineLen)
				writeLines(t, create(t, log), 11, 30)
			},
			want: []span{{1, 30}},
		},
		{
			name: "NULs alone, truncated under a writer at its own offset",
			change: func(t *testing.T, log string, w *os.File) {
				truncate(t, log, 0)
				if _, err := w.Seek(nuls/2, 0); err != nil {
					t.Fatal(err)
				}
				writeLines(t, w, 11, 20)
			},
			want: []span{{11, 20}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "app.log")
			w := openToWrite(t, log, 0)
			if c.text {
				writeLines(t, w, 1, 10)
			}
			preallocate(t, w, nuls, false)
			col := newCollector()
			f, clock, _ := handDriven(t, log, col.handle)
			settle(f, clock)
			c.change(t, log, w)
			settle(f, clock)
			col.expectExactly(t, c.want...)
			for _, fs := range f.Stats().Files {
				if fs.BytesBehind != 0 {
					t.Errorf("%s is %d bytes behind, want 0", fs.Path, fs.BytesBehind)
				}
			}
		})
	}
}

// truncate makes the file at path size bytes long.
func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// TestPreallocatedFilledInNULsFirst: a writer fills in the space it preallocated with a
// line that opens with NUL bytes of its own (four or more, as many as space preallocated
// shows), and lines after it. Its NULs cannot be told from the space still to fill in, nor
// from a hole that a writer at its own offset leaves: the line is read from after them,
// as after a hole, without them. It is read at the second look that finds its text within
// zerosLook bytes of where the NULs held back begin; a line opening with more waits for
// the fill-in to reach where they end, or for the file to be cut within them. Fewer than
// minZeros are text (UTF-16BE opens a line so): the line is read with them. A line without
// NULs whose first bytes are stored last (a memcpy into a file mapped in memory), a look
// in between, is read whole: the look sees what a line opening with NULs shows.
func TestPreallocatedFilledInNULsFirst(t *testing.T) {
	const nuls = 200 << 10
	for _, c := range []struct {
		name string
		open int // NULs opening line 11
		// headLast: the first headLast bytes of line 11 are written after the rest, a look
		// in between.
		headLast int
		// beyond: the writer preallocates more once it filled in lines 11-20, and writes
		// lines from 21 on past where the NULs ended.
		beyond bool
		want   []span
	}{
		{name: "fewer NULs than space shows", open: minZeros - 1, want: []span{{1, 10}, {12, 20}}},
		{name: "a few NULs", open: 8, want: []span{{1, 20}}},
		{name: "no NULs, the head stored last", headLast: 32, want: []span{{1, 20}}},
		{name: "a few NULs, then past the space", open: 8, beyond: true, want: []span{{1, 20 + int(nuls/lineLen)}}},
		{name: "NULs past the look", open: zerosLook + 1, beyond: true, want: []span{{1, 20 + int(nuls/lineLen)}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "app.log")
			w := openToWrite(t, log, 0)
			writeLines(t, w, 1, 10)
			preallocate(t, w, nuls, false)
			col := newCollector()
			f, clock, _ := handDriven(t, log, col.handle)
			settle(f, clock)
			line := append(make([]byte, c.open), numbered(11)...)
			at, err := w.Seek(0, io.SeekCurrent)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.WriteAt(line[c.headLast:], at+int64(c.headLast)); err != nil {
				t.Fatal(err)
			}
			f.readAll()
			if _, err := w.WriteAt(line[:c.headLast], at); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Seek(int64(len(line)), io.SeekCurrent); err != nil {
				t.Fatal(err)
			}
			writeLines(t, w, 12, 20)
			settle(f, clock)
			if 0 < c.open && c.open < minZeros {
				col.mu.Lock()
				if want := string(bytes.TrimSuffix(line, []byte("\n"))); !slices.Equal(col.malformed, []string{want}) {
					t.Errorf("lines not numbered: %q, want line 11 with its NULs", col.malformed)
				}
				col.malformed = nil
				col.mu.Unlock()
			}
			if !c.beyond {
				col.expectExactly(t, c.want...)
				return
			}
			preallocate(t, w, nuls, false)
			writeLines(t, w, 21, 20+int(nuls/lineLen))
			settle(f, clock)
			col.expectExactly(t, c.want...)
		})
	}
}
