package follow

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// The last line of a file without a newline (its writer died mid-line) is
// handed on once nothing can complete it, and not before: when the file,
// having left its path, is closed after the grace period, and when it is
// truncated or rewritten under the read offset. It counts as any line, or as
// too long past the cap. Stop hands nothing on: the file may go on.
func TestLastLineWithoutNewline(t *testing.T) {
	const maxLine = 200
	short := "00000011 half a li"
	long := strings.Repeat("z", maxLine+100)
	remove := func(t *testing.T, p string, _ *os.File) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	truncate := func(refill int) func(*testing.T, string, *os.File) {
		return func(t *testing.T, _ string, w *os.File) {
			if err := w.Truncate(0); err != nil {
				t.Fatal(err)
			}
			writeLines(t, w, 101, 100+refill)
		}
	}
	for _, tc := range []struct {
		name    string
		last    string
		end     func(t *testing.T, p string, w *os.File)
		refill  int  // lines written after the truncation
		handed  bool // the last line is handed on
		tooLong uint64
	}{
		{name: "deleted", last: short, end: remove, handed: true},
		{name: "renamed away", last: short, end: func(t *testing.T, p string, _ *os.File) { rename(t, p, p+".1") }, handed: true},
		{name: "truncated", last: short, end: truncate(3), refill: 3, handed: true},
		{name: "truncated and refilled past the offset", last: short, end: truncate(30), refill: 30, handed: true},
		{name: "too long, deleted", last: long, end: remove, tooLong: 1},
		{name: "too long, truncated", last: long, end: truncate(3), refill: 3, tooLong: 1},
		{name: "stopped", last: short},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			w := create(t, p)
			clock := testclock.New(time.Unix(1_700_000_000, 0))
			o := modes[1].options(p)
			o.MaxLineBytes, o.RotationGrace, o.now = maxLine, time.Hour, clock.Now
			c := newCollector()
			f := start(t, o, c.handle)
			writeLines(t, w, 1, 10)
			if _, err := w.WriteString(tc.last); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the whole lines", func() bool { return c.has(1, 10) })
			waitTurns(t, f, 2, "two turns of the reader, which read the last line")
			if tc.end != nil {
				tc.end(t, p, w)
			}
			if tc.end != nil && tc.refill == 0 {
				// Past the grace only once the file is known to have left.
				waitFor(t, "the file taken as gone", func() bool { return f.Stats().Rotations == 1 })
			}
			clock.Add(2 * time.Hour)
			switch {
			case tc.refill > 0:
				waitFor(t, "the lines after the truncation", func() bool { return c.has(101, 100+tc.refill) })
			case tc.end != nil:
				waitFor(t, "the file closed", func() bool { return openUnder(f, p) == 0 })
			}
			f.Stop()
			var want []string
			if tc.handed {
				want = []string{tc.last}
			}
			c.mu.Lock()
			got := c.malformed
			c.mu.Unlock()
			if !slices.Equal(got, want) {
				t.Errorf("lines that are not whole numbered lines: %.40q, want %.40q", got, want)
			}
			if s := f.Stats(); s.TooLong != tc.tooLong {
				t.Errorf("too long %d, want %d", s.TooLong, tc.tooLong)
			}
		})
	}
}

// events records what a Follower's callbacks and handler saw, in order.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
}

func (e *events) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

func (e *events) count(s string) int {
	n := 0
	for _, x := range e.get() {
		if x == s {
			n++
		}
	}
	return n
}

// Options.Closed comes once no file is read under a path any more, after the
// last line read there, in the reading goroutine (the handler's): not while a
// successor is read under the path, and for every path at Stop.
func TestClosed(t *testing.T) {
	dir := t.TempDir()
	rotated, deleted, moved := filepath.Join(dir, "rotated.log"), filepath.Join(dir, "deleted.log"), filepath.Join(dir, "moved.log")
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	var e events
	o := modes[1].options(filepath.Join(dir, "*.log"))
	o.RotationGrace, o.now = time.Hour, clock.Now
	o.Closed = func(path string) { e.add("closed " + filepath.Base(path)) }
	f := start(t, o, func(path string, line []byte) { e.add(filepath.Base(path) + " " + string(line)) })
	for _, p := range []string{rotated, deleted, moved} {
		if _, err := create(t, p).WriteString("1\n"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the first lines", func() bool { return len(e.get()) == 3 })

	rename(t, rotated, rotated+".1") // out of the glob
	if _, err := create(t, rotated).WriteString("2\n"); err != nil {
		t.Fatal(err)
	}
	w := create(t, deleted)
	if err := os.Remove(deleted); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("last"); err != nil {
		t.Fatal(err)
	}
	rename(t, moved, filepath.Join(dir, "renamed.log")) // within the glob
	waitFor(t, "both rotations seen", func() bool { return f.Stats().Rotations == 2 })
	waitFor(t, "the moved file's old path closed", func() bool { return e.count("closed moved.log") == 1 })
	waitTurns(t, f, 2, "two turns of the reader, which read the deleted file's last line")
	clock.Add(2 * time.Hour)
	waitFor(t, "the deleted file closed", func() bool { return e.count("closed deleted.log") == 1 })
	waitFor(t, "the rotated file closed", func() bool { return openUnder(f, rotated) == 1 })
	waitTurns(t, f, 2, "two more turns of the reader")
	if n := e.count("closed rotated.log"); n != 0 {
		t.Errorf("rotated.log closed %d times while its successor is read there", n)
	}
	got := e.get()
	if i := slices.Index(got, "closed deleted.log"); i < 1 || got[i-1] != "deleted.log last" {
		t.Errorf("events %q: want the deleted file's last line just before it is closed", got)
	}
	f.Stop()
	for _, p := range []string{"rotated.log", "renamed.log"} {
		if n := e.count("closed " + p); n != 1 {
			t.Errorf("%s closed %d times at Stop, want 1; events %q", p, n, e.get())
		}
	}
	if n := e.count("closed deleted.log") + e.count("closed moved.log"); n != 2 {
		t.Errorf("paths closed before were closed again at Stop: events %q", e.get())
	}
}

// Options.TooLong is told of each line skipped for its length, by its first
// bytes, before the line after it is handed on; and Options.Closed of each
// file ReadToEnd read.
func TestTooLongAndClosedReadToEnd(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a")
	huge := strings.Repeat("h", 3*minBuffer) // longer than the read buffer
	if err := os.WriteFile(p, []byte("x\n123456789\ny\n"+huge+"\nz\nlong last"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	_, err := ReadToEnd(Options{
		Path:         p,
		MaxLineBytes: 8,
		TooLong: func(_ string, head []byte) bool {
			if len(head) < 9 {
				t.Errorf("head %q: want at least the cap and a byte", head)
			}
			got = append(got, "long "+string(head[:9]))
			return true
		},
		Closed: func(path string) { got = append(got, "closed "+filepath.Base(path)) },
	}, func(_ string, line []byte) { got = append(got, string(line)) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"x", "long 123456789", "y", "long hhhhhhhhh", "z", "long long last", "closed a"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// Options.CaughtUp comes in the reading goroutine once every line written so far was
// handed on, before it waits for more: after the last line of a file several reads long,
// and again after the lines appended later, never between a file's lines while more of it
// is there to read.
func TestCaughtUp(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.log")
			var text strings.Builder
			for i := range 3000 { // some 300 KB: several reads of 64 KiB
				text.WriteString(strconv.Itoa(i) + " " + strings.Repeat("x", 100) + "\n")
			}
			w := create(t, path)
			if _, err := w.WriteString(text.String()); err != nil {
				t.Fatal(err)
			}
			var e events
			o := m.options(path)
			o.FromBeginning = true
			o.CaughtUp = func() { e.add("caught up") }
			start(t, o, func(_ string, line []byte) { e.add(string(line[:strings.IndexByte(string(line), ' ')])) })
			waitFor(t, "the reader caught up", func() bool { return e.count("caught up") > 0 })
			if _, err := w.WriteString("3000 appended\n3001 appended\n"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the appended lines read", func() bool { return e.count("3001") == 1 })
			waitFor(t, "the reader caught up again", func() bool {
				got := e.get()
				return got[len(got)-1] == "caught up"
			})
			next := 0 // the line expected next
			for i, ev := range e.get() {
				if ev == "caught up" {
					if next != 3000 && next != 3002 {
						t.Fatalf("event %d: caught up before line %d was handed on", i, next)
					}
					continue
				}
				if ev != strconv.Itoa(next) {
					t.Fatalf("event %d: line %q, want %d", i, ev, next)
				}
				next++
			}
		})
	}
}

// cutLocker is an Options.Hold that takes a cut each time it is taken, as a snapshot
// does: the files' positions and how many lines were handed on before them.
type cutLocker struct {
	sync.Mutex
	f       *Follower
	handed  *int
	cuts    [][]Position
	handeds []int
}

func (l *cutLocker) Lock() {
	l.Mutex.Lock()
	l.cuts = append(l.cuts, l.f.Positions())
	l.handeds = append(l.handeds, *l.handed)
}

// A rotated file's last line without a newline, handed on when the file is retired, is
// in every cut either among the lines handed on or after its file's position: a cut
// taken between the file's retiring and that line's handing on lacked both, and a
// restart from it (after a kill) lost the line.
func TestRetiredLastLineInEveryCut(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "access.log")
	w := create(t, p)
	writeLines(t, w, 1, 3)
	const last = "00000004 half a line"
	if _, err := w.WriteString(last); err != nil {
		t.Fatal(err)
	}
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	handed := 0
	var lines []string
	l := &cutLocker{handed: &handed}
	f, err := newFollower(Options{Path: p, FromBeginning: true, noNotify: true, now: clock.Now, RotationGrace: time.Minute, Hold: l, Logger: testLogger(t)},
		func(_ string, line []byte) { handed++; lines = append(lines, string(line)) })
	if err != nil {
		t.Fatal(err)
	}
	l.f = f
	t.Cleanup(f.Stop)
	f.discover(true)
	f.readAll()
	fi, err := w.Stat()
	if err != nil {
		t.Fatal(err)
	}
	id := idOf(fi)
	rename(t, p, p+".1")
	f.discover(false)
	clock.Add(2 * time.Minute)
	f.readAll()
	if !slices.Contains(lines, last) || openUnder(f, p) != 0 {
		t.Fatalf("lines %q, %d files open: want the last line handed on and its file closed", lines, openUnder(f, p))
	}
	for i, cut := range l.cuts {
		if l.handeds[i] == len(lines) {
			continue // every line handed on before the cut
		}
		if !slices.ContainsFunc(cut, func(pos Position) bool { return pos.Dev == id.dev && pos.Ino == id.ino }) {
			t.Errorf("cut %d: %d of %d lines handed on, and no position of the file they are in: %+v", i, l.handeds[i], len(lines), cut)
		}
	}
}
