package follow

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// TestHalfLineAcrossCopyTruncate: a line written in part before logrotate's copytruncate
// copies the log, and its rest after the truncation (its writer wrote it in two writes, or
// a buffered writer flushed in the middle of it), with a glob that matches the copy. The
// line is handed on as two: its head, at the copy's end (read from the log before the
// copy, handed on at the truncation; else read from the copy, handed on once the copy
// leaves the glob), and its rest, opening the log. Nothing else is lost or read twice.
// Whether the bytes opening the log are a line's rest or a line of a writer that began
// anew (its predecessor cut, dead in the middle of a line) cannot be told from them.
func TestHalfLineAcrossCopyTruncate(t *testing.T) {
	for _, c := range []struct {
		name string
		// seen: the reader read the line's head before the copy.
		seen bool
	}{
		{name: "head read before the copy", seen: true},
		{name: "head not read before the copy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "access.log")
			w := create(t, log)
			col := newCollector()
			clock := testclock.New(time.Unix(1_700_000_000, 0))
			o := Options{Path: filepath.Join(dir, "access.log*"), FromBeginning: true, noNotify: true, now: clock.Now, RotationGrace: time.Minute, Logger: testLogger(t)}
			f := discovered(t, o, col.handle)
			writeLines(t, w, 1, 10)
			line := numbered(11)
			if _, err := w.Write(line[:40]); err != nil {
				t.Fatal(err)
			}
			if c.seen {
				settle(f, clock)
			}
			copyFile(t, log, log+".1")
			if err := os.Truncate(log, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(line[40:]); err != nil {
				t.Fatal(err)
			}
			writeLines(t, w, 12, 20)
			f.discover(false)
			settle(f, clock)
			// The copy goes, as logrotate's rotate count has it go.
			if err := os.Remove(log + ".1"); err != nil {
				t.Fatal(err)
			}
			f.discover(false)
			settle(f, clock)
			if lost, dup, _ := col.tally(span{1, 10}, span{12, 20}); lost+dup != 0 {
				t.Errorf("lost %d, duplicated %d", lost, dup)
			}
			want := []string{string(line[:40]), string(line[40 : len(line)-1])}
			if got := slices.Sorted(slices.Values(col.malformed)); !slices.Equal(got, want) {
				t.Errorf("malformed %q, want %q", got, want)
			}
		})
	}
}

// TestLineReadInPartCopyFoundFirst: a line its writer wrote whole, read in part (the
// reader looked while the write was under way), then logrotate's copytruncate, whose copy
// a glob of the rotated names found before the reader turned to the log again, but had not
// judged yet: the reader, finding the log truncated, judges the copy first, which holds
// the line's rest, so the line is handed on once, whole, from the copy, not as its head,
// and the copy read on from within it (its rest no line). A new file that cannot wait for
// the log (not named as one of its rotated files, or the log read up to no line's end) is
// judged in its turn, once the truncation is kept: judged before, with nothing it may be a
// copy of, it would be read from its start, what was read of the log counted twice; the
// line is handed on as its head then, cut.
func TestLineReadInPartCopyFoundFirst(t *testing.T) {
	for _, c := range []struct {
		name string
		copy string // the copy's name
		// lines is how many whole lines the log holds before the one read in part.
		lines int
		cut   bool // the line read in part is handed on as its head
	}{
		{name: "named as rotated", copy: "access.log.1", lines: 10},
		{name: "not named as rotated", copy: "access.log.old", lines: 10, cut: true},
		{name: "no line read whole", copy: "access.log.1", cut: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "access.log")
			w := create(t, log)
			col := newCollector()
			f, clock, _ := handDriven(t, filepath.Join(dir, "access.log*"), col.handle)
			writeLines(t, w, 1, c.lines)
			line := numbered(c.lines + 1)
			if _, err := w.Write(line[:40]); err != nil {
				t.Fatal(err)
			}
			f.readAll()
			if _, err := w.Write(line[40:]); err != nil {
				t.Fatal(err)
			}
			copyFile(t, log, filepath.Join(dir, c.copy))
			f.discover(false)
			if err := os.Truncate(log, 0); err != nil {
				t.Fatal(err)
			}
			writeLines(t, w, c.lines+2, 20)
			f.readAll() // the truncation read before the copy's turn, within the grace
			settle(f, clock)
			if !c.cut {
				col.expectExactly(t, span{1, 20})
				return
			}
			if lost, dup, malformed := col.tally(span{1, 20}); lost != 1 || dup != 0 || malformed != 1 {
				t.Errorf("lost=%d duplicated=%d malformed=%d, want the line read in part cut, nothing else", lost, dup, malformed)
			}
		})
	}
}

// TestCopyFoundFirstJudgedPastGrace: logrotate's copytruncate, whose copy a glob of the
// rotated names found before the reader read the log's truncation, and which the reader
// came to judge only past the rotation grace after (stalled: a loaded machine): the copy
// is read on from where the log was read up to, as it would be within the grace, not
// from its start, whose lines were read from the log. A new file of another directory
// that begins as the log did (a replica's log) is no copy of it, read from its start.
func TestCopyFoundFirstJudgedPastGrace(t *testing.T) {
	for _, c := range []struct {
		name string
		new  string // the new file, copied from the log, under the glob's directory
		// from is the first line of it read (11, past its last: none).
		from int
	}{
		{name: "copy", new: "a/access.log.1", from: 11},
		{name: "another directory's log", new: "b/access.log", from: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, sub := range []string{"a", "b"} {
				if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			log := filepath.Join(dir, "a", "access.log")
			w := create(t, log)
			col, other := newCollector(), newCollector()
			f, clock, _ := handDriven(t, filepath.Join(dir, "*", "access.log*"), func(path string, line []byte) {
				if path == log {
					col.handle(path, line)
				} else {
					other.handle(path, line)
				}
			})
			writeLines(t, w, 1, 10)
			f.readAll()
			copyFile(t, log, filepath.Join(dir, c.new))
			f.discover(false)
			if err := os.Truncate(log, 0); err != nil {
				t.Fatal(err)
			}
			writeLines(t, w, 11, 20)
			f.mu.Lock()
			logFile := f.files[0]
			f.mu.Unlock()
			f.step(logFile, log) // the log's turn only: the truncation read, the new file not judged
			clock.Add(2 * time.Minute)
			settle(f, clock)
			col.expectExactly(t, span{1, 20})
			other.expectExactly(t, span{c.from, 10})
		})
	}
}
