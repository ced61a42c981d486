package follow

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// createAtOffset creates the file at path for a writer that writes at its own offset, not
// appending, as a shell's `>` does: truncated under it, it leaves a hole.
func createAtOffset(t *testing.T, path string) *os.File {
	t.Helper()
	return openToWrite(t, path, os.O_TRUNC)
}

// TestTruncatedUnderWriterAtOffset: a writer that does not append (a shell's `>`, a file
// opened without O_APPEND) writes on at its own offset after copytruncate empties its
// log, leaving the file a hole of NUL bytes up to there. The hole is no text: the first
// line written after the truncation is read as it was written, neither too long (a hole
// past the line cap) nor opened by NULs, whether the reader saw the file empty first or
// not, and so are the lines after a second truncation.
func TestTruncatedUnderWriterAtOffset(t *testing.T) {
	for _, c := range []struct {
		name string
		// lines is how many lines precede the truncation: their bytes are the hole.
		lines int
		// seen: the reader sees the file empty before the writer writes again.
		seen bool
	}{
		{name: "a hole past the line cap", lines: 3000},
		{name: "a hole past the line cap, seen empty", lines: 3000, seen: true},
		{name: "a hole within the line cap", lines: 10},
		{name: "a hole within the line cap, seen empty", lines: 10, seen: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "access.log")
			w := createAtOffset(t, log)
			writeLines(t, w, 1, c.lines)
			col := newCollector()
			f, _, _ := handDriven(t, log, col.handle)
			next := c.lines + 1
			for range 2 {
				if err := os.Truncate(log, 0); err != nil {
					t.Fatal(err)
				}
				if c.seen {
					f.readAll()
				}
				writeLines(t, w, next, next+9)
				next += 10
				f.readAll()
				f.readAll()
			}
			col.expectExactly(t, span{1, next - 1})
			if n := f.c.tooLong.Load(); n != 0 {
				t.Errorf("%d lines too long", n)
			}
		})
	}
}

// TestReplayAfterHole: a one-shot reads a log that a writer at its own offset left a
// hole in as a follower does: the lines after the hole, none too long nor opened by NULs.
func TestReplayAfterHole(t *testing.T) {
	log := filepath.Join(t.TempDir(), "access.log")
	w := createAtOffset(t, log)
	writeLines(t, w, 1, 3000)
	if err := os.Truncate(log, 0); err != nil {
		t.Fatal(err)
	}
	writeLines(t, w, 3001, 3010)
	col := newCollector()
	st, err := ReadToEnd(Options{Path: log}, col.handle)
	if err != nil {
		t.Fatal(err)
	}
	col.expectExactly(t, span{3001, 3010})
	if st.TooLong != 0 {
		t.Errorf("%d lines too long", st.TooLong)
	}
}

// TestResumeAfterHole: a follower stopped with a line after a hole begun but not ended
// has its position at the hole's end; the one resumed from there reads that line whole,
// not as the rest of a line begun before it.
func TestResumeAfterHole(t *testing.T) {
	log := filepath.Join(t.TempDir(), "access.log")
	w := createAtOffset(t, log)
	writeLines(t, w, 1, 20)
	col := newCollector()
	f, _, o := handDriven(t, log, col.handle)
	if err := os.Truncate(log, 0); err != nil {
		t.Fatal(err)
	}
	line := numbered(21)
	if _, err := w.Write(line[:10]); err != nil {
		t.Fatal(err)
	}
	f.readAll()
	g := resumed(t, f, o, col.handle)
	if _, err := w.Write(line[10:]); err != nil {
		t.Fatal(err)
	}
	g.readAll()
	col.expectExactly(t, span{1, 21})
}

// TestResumeAfterHoleCopyTruncated: a log that a writer at its own offset left beginning
// with a hole, read past it, then copied and truncated again while the exporter was down
// (its writer writing on at its offset, a longer hole): the log's first bytes are NULs as
// they were at the snapshot, but not the bytes it was read up to. The lines written
// between the snapshot and the copy are read from the copy, from the position, and the
// log's new lines once, whether a glob finds the copy or not. A log not rotated while down
// is read on from its position, whether lines were read past its hole or not.
func TestResumeAfterHoleCopyTruncated(t *testing.T) {
	for _, c := range []struct {
		name string
		glob bool
		// hole: the log is left a hole at the snapshot, none of its lines read past it.
		// copied: it is copied and truncated while down, between lines 41-50 and 51-60.
		hole, copied bool
	}{
		{name: "copied", copied: true},
		{name: "copied, a glob of the copy", glob: true, copied: true},
		{name: "not rotated"},
		{name: "not rotated, at the hole's end", hole: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "access.log")
			w := createAtOffset(t, log)
			writeLines(t, w, 1, 30) // past the first KiB: the hole is all the head
			path := log
			if c.glob {
				path += "*" // the copy, access.log.1, too
			}
			col := newCollector()
			f, _, o := handDriven(t, path, col.handle)
			last := 60
			if err := os.Truncate(log, 0); err != nil {
				t.Fatal(err)
			}
			if c.hole {
				if err := os.Truncate(log, 30*lineLen); err != nil { // as far as the writer's offset
					t.Fatal(err)
				}
				f.readAll()
				f.Stop()
				writeLines(t, w, 31, 40)
				last = 40
			} else {
				writeLines(t, w, 31, 40)
				f.readAll()
				f.Stop()
				writeLines(t, w, 41, 50)
			}
			if c.copied {
				copyFile(t, log, log+".1")
				if err := os.Truncate(log, 0); err != nil {
					t.Fatal(err)
				}
			}
			if !c.hole {
				writeLines(t, w, 51, 60)
			}
			o.FromBeginning, o.Resume, o.Taken = false, f.Positions(), time.Now().Add(-time.Second)
			g := discovered(t, o, col.handle)
			g.resumeRotated()
			g.readAll()
			g.readAll()
			col.expectExactly(t, span{1, last})
		})
	}
}

// TestTruncatedAfterStatAtStart: a file read from its start that is truncated between the
// reader's look at its size and its asking where the data begins (copytruncate at that
// moment) is not read on from the size it had: there is no hole, the file is empty. The
// lines written to it next are read, none skipped for bytes it no longer holds.
func TestTruncatedAfterStatAtStart(t *testing.T) {
	log := filepath.Join(t.TempDir(), "access.log")
	w := create(t, log)
	col := newCollector()
	f, _, _ := handDriven(t, log, col.handle)
	writeLines(t, w, 1, 10)
	truncate := true
	f.o.stat = func(file *os.File) (os.FileInfo, error) {
		fi, err := file.Stat()
		if truncate {
			truncate = false
			err = errors.Join(err, os.Truncate(file.Name(), 0))
		}
		return fi, err
	}
	f.readAll()
	writeLines(t, w, 11, 30)
	f.readAll()
	f.readAll()
	col.expectExactly(t, span{11, 30})
}

// TestReplayNULsEndingARead: a one-shot reads a file whose run of NUL bytes fills its read
// buffer to the end, text after it, as a follower reading it from the start does (the
// NULs asked whether they end the file), and returns; it has no stop to be asked.
func TestReplayNULsEndingARead(t *testing.T) {
	for _, c := range []struct {
		name string
		head string // the text before the NULs
		nuls int
		tail string // the text after them
	}{
		{name: "a run past the read buffer", head: "first\n", nuls: 2 * minBuffer, tail: "after the NULs\nlast\n"},
		// A log preallocated and never written (its writer crashed).
		{name: "NULs alone past the read buffer", nuls: 2 * minBuffer},
		// The buffer holds the longest line and its newline.
		{name: "a run ending the first read", head: "first\n", nuls: DefaultMaxLineBytes + 1 - len("first\n"), tail: "after the NULs\nlast\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "app.log")
			text := c.head + string(make([]byte, c.nuls)) + c.tail
			if err := os.WriteFile(log, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			var replayed, followed []string
			st, err := ReadToEnd(Options{Path: log}, func(_ string, line []byte) { replayed = append(replayed, string(line)) })
			if err != nil {
				t.Fatal(err)
			}
			f, _, _ := handDriven(t, log, func(_ string, line []byte) { followed = append(followed, string(line)) })
			if !slices.Equal(replayed, followed) || st.TooLong != f.c.tooLong.Load() {
				t.Errorf("replayed %d lines (%d too long), followed %d (%d too long)", len(replayed), st.TooLong, len(followed), f.c.tooLong.Load())
				for i := range min(len(replayed), len(followed)) {
					if replayed[i] != followed[i] {
						t.Errorf("line %d: replayed %.80q…, followed %.80q…", i, replayed[i], followed[i])
						break
					}
				}
			}
		})
	}
}
