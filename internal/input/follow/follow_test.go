package follow

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// filler makes numbered lines look like access log lines, so that a line
// cut or glued anywhere is recognised as malformed.
const filler = `10.1.2.3 - - [21/Nov/2025:10:00:00 +0000] "GET /api/v1/items?id=42 HTTP/1.1" 200 512 "-" "curl/8.5.0" 0.004`

func numbered(n int) []byte { return fmt.Appendf(nil, "%08d %s\n", n, filler) }

// lineLen is the length of every numbered line, newline included.
var lineLen = int64(len(numbered(0)))

func parseNumbered(line []byte) (int, bool) {
	if len(line) != int(lineLen)-1 || line[8] != ' ' || string(line[9:]) != filler {
		return 0, false
	}
	n := 0
	for _, b := range line[:8] {
		if b < '0' || b > '9' {
			return 0, false
		}
		n = n*10 + int(b-'0')
	}
	return n, true
}

// collector is a input.Handler that counts numbered lines exactly.
type collector struct {
	mu        sync.Mutex
	seen      map[int]int
	malformed []string
	paths     map[string]int
	gate      *gate
}

func newCollector() *collector {
	return &collector{seen: make(map[int]int), paths: make(map[string]int)}
}

func (c *collector) handle(path string, line []byte) {
	n, ok := parseNumbered(line)
	c.mu.Lock()
	if ok {
		c.seen[n]++
	} else {
		c.malformed = append(c.malformed, string(line))
	}
	c.paths[path]++
	g := c.gate
	c.mu.Unlock()
	if g != nil && ok {
		g.pass(n)
	}
}

// has reports whether every line from..to arrived.
func (c *collector) has(from, to int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := from; n <= to; n++ {
		if c.seen[n] == 0 {
			return false
		}
	}
	return true
}

// span is a range of line numbers, both ends included.
type span struct{ from, to int }

// tally counts the lines of want never seen, extra copies (including lines
// outside want), and lines that are not numbered lines at all.
func (c *collector) tally(want ...span) (lost, dup, malformed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wanted := make(map[int]bool)
	for _, sp := range want {
		for n := sp.from; n <= sp.to; n++ {
			wanted[n] = true
			if c.seen[n] == 0 {
				lost++
			}
		}
	}
	for n, k := range c.seen {
		if wanted[n] {
			k--
		}
		dup += k
	}
	return lost, dup, len(c.malformed)
}

// expectExactly fails unless every line of want arrived once and nothing
// else did; it logs the measured numbers for the report.
func (c *collector) expectExactly(t *testing.T, want ...span) {
	t.Helper()
	lost, dup, malformed := c.tally(want...)
	t.Logf("lines %v: lost=%d duplicated=%d malformed=%d", want, lost, dup, malformed)
	if lost+dup+malformed != 0 {
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("want every line exactly once; first malformed: %.80q", append(c.malformed, "")[0])
	}
}

// gate blocks the handler on one line until released.
type gate struct {
	at      int
	reached chan struct{}
	release chan struct{}
}

func newGate(at int) *gate {
	return &gate{at: at, reached: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) pass(n int) {
	if n == g.at {
		close(g.reached)
		<-g.release
	}
}

func (g *gate) wait(t *testing.T) {
	t.Helper()
	select {
	case <-g.reached:
	case <-givenUp(t):
		t.Fatalf("handler never reached line %d", g.at)
	}
}

// waitFor waits for what the follower's goroutines do with real files, until cond holds
// or shortly before the test binary's timeout (await): a bound in seconds fails on a
// loaded machine, under -race, where a quiet one passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !await.Until(t, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// waitTurns waits for n turns of f's reader over its files from now (what), waking it at
// each look: the turns come without a real wait for the poll's tick, which wakes an idle
// reader otherwise. n = 2 has one begin after the call: a whole turn, which looked at
// every file as it was then.
func waitTurns(t *testing.T, f *Follower, n uint64, what string) {
	t.Helper()
	from := f.turns.Load()
	waitFor(t, what, func() bool {
		f.poke()
		return f.turns.Load() >= from+n
	})
}

// givenUp is closed, for a select that waits for what may never come (a goroutine blocked
// on a FIFO), when a wait gives up: shortly before the test binary's timeout (await).
func givenUp(t *testing.T) <-chan time.Time {
	return time.After(time.Until(await.Deadline(t)))
}

// ahead is the real time moved on by hand, for a follower's clock (Options.now): its
// rotation grace passes when the test says (Add), not when a loaded machine stalls a
// writer past it; its polls go by the real time as ever.
type ahead struct{ by atomic.Int64 }

// Now is the real time moved on by what Add added.
func (a *ahead) Now() time.Time { return time.Now().Add(time.Duration(a.by.Load())) }

// Add moves the clock on by d.
func (a *ahead) Add(d time.Duration) { a.by.Add(int64(d)) }

// clocked gives o a clock of its own, returned, for a test that has the rotation grace of
// options' follower pass (waitRetired).
func clocked(o *Options) *ahead {
	clock := new(ahead)
	o.now = clock.Now
	return clock
}

// waitRetired waits for what, cond, which the files that left their path being closed
// makes true, moving clock, f's, on by its rotation grace at each look and waking its
// reader, which retires the files idle for the grace: the grace passes when the test says
// so, without a real wait for it or for the poll's tick that would wake the reader. The
// test has written every line first: a file the rotation grace closes is read no more.
// The clock moves only after a whole turn of the reader that began once they were
// written: a turn begun before may have found a file at its end and judge it idle after
// its last lines came, which the clock moved on would close it without.
func waitRetired(t *testing.T, f *Follower, clock *ahead, what string, cond func() bool) {
	t.Helper()
	waitTurns(t, f, 2, what+": a turn of the reader after the last line")
	waitFor(t, what, func() bool {
		if cond() {
			return true
		}
		clock.Add(f.o.RotationGrace)
		f.poke()
		return false
	})
}

// mode is a way of noticing changes: inotify with a slow safety poll, so that
// inotify does the work, or polling alone.
type mode struct {
	name     string
	noNotify bool
	poll     time.Duration
}

var modes = []mode{
	{name: "inotify", poll: 500 * time.Millisecond},
	{name: "poll", noNotify: true, poll: 10 * time.Millisecond},
}

// options follows path in mode m. Its rotation grace is a time no test waits for, so that
// a loaded machine stalling a writer past it cannot have a file closed before its last
// lines: a test passes it by its follower's clock (clocked, waitRetired).
func (m mode) options(path string) Options {
	return Options{Path: path, PollInterval: m.poll, RotationGrace: time.Hour, noNotify: m.noNotify}
}

// testLogger sends a Follower's log to the test's log, shown on failure or with -v.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func start(t *testing.T, o Options, h input.Handler) *Follower {
	t.Helper()
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	f, err := Start(o, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	return f
}

func create(t *testing.T, path string) *os.File {
	t.Helper()
	return openToWrite(t, path, os.O_APPEND)
}

// openToWrite opens the file at path to write, creating it, with flag besides; the file
// is closed when the test ends.
func openToWrite(t *testing.T, path string, flag int) *os.File {
	t.Helper()
	w, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// writeLines writes lines from..to, one write() per line, as nginx does.
func writeLines(t *testing.T, w *os.File, from, to int) {
	t.Helper()
	for n := from; n <= to; n++ {
		if _, err := w.Write(numbered(n)); err != nil {
			t.Fatal(err)
		}
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// waitFollowed waits until the file written by w is open in f. Rotations come
// hours apart; a file created and rotated away again within one scan cannot
// be seen by polling.
func waitFollowed(t *testing.T, f *Follower, w *os.File) {
	t.Helper()
	fi, err := w.Stat()
	if err != nil {
		t.Fatal(err)
	}
	id := idOf(fi)
	waitFor(t, "the new file followed", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		_, ok := f.byID[id]
		return ok
	})
}

// openUnder reports how many files are open under path.
func openUnder(f *Follower, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, t := range f.files {
		if t.path == path {
			n++
		}
	}
	return n
}

func TestOptions(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		o    Options
		h    input.Handler
		want string // error substring; empty: valid
	}{
		{name: "defaults", o: Options{Path: filepath.Join(dir, "a.log")}},
		{name: "glob", o: Options{Path: filepath.Join(dir, "*.log")}},
		{name: "empty path", o: Options{}, want: "empty path"},
		{name: "bad glob", o: Options{Path: filepath.Join(dir, "[a.log")}, want: "syntax error"},
		{name: "negative line cap", o: Options{Path: "a", MaxLineBytes: -1}, want: "max line bytes"},
		{name: "huge line cap", o: Options{Path: "a", MaxLineBytes: MaxMaxLineBytes + 1}, want: "max line bytes"},
		{name: "negative grace", o: Options{Path: "a", RotationGrace: -time.Second}, want: "rotation grace"},
		{name: "negative poll", o: Options{Path: "a", PollInterval: -time.Second}, want: "poll interval"},
		{name: "nil handler", o: Options{Path: "a"}, h: nil, want: "nil handler"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h
			if h == nil && tc.want != "nil handler" {
				h = func(string, []byte) {}
			}
			f, err := Start(tc.o, h)
			if f != nil {
				f.Stop()
			}
			_, rerr := ReadToEnd(tc.o, h)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				return
			}
			for _, e := range []error{err, rerr} {
				if e == nil || !strings.Contains(e.Error(), tc.want) {
					t.Errorf("got error %v, want one containing %q", e, tc.want)
				}
			}
		})
	}
}

func TestOptionDefaults(t *testing.T) {
	o, err := Options{Path: "a"}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxLineBytes != DefaultMaxLineBytes || o.RotationGrace != DefaultRotationGrace || o.PollInterval != DefaultPollInterval || o.Logger == nil {
		t.Fatalf("defaults not applied: %+v", o)
	}
}

// TestReadToEnd checks line splitting, the cap and the last line on the
// reader that the Follower shares.
func TestReadToEnd(t *testing.T) {
	long := strings.Repeat("z", 9)
	tests := []struct {
		name    string
		files   map[string]string
		path    string // relative, may be a glob
		want    []string
		tooLong uint64
		err     string
	}{
		{name: "lines", files: map[string]string{"a": "one\ntwo\n"}, path: "a", want: []string{"a:one", "a:two"}},
		{name: "crlf and empty lines", files: map[string]string{"a": "one\r\n\n\r\ntwo\n"}, path: "a", want: []string{"a:one", "a:", "a:", "a:two"}},
		{name: "last line without newline", files: map[string]string{"a": "one\ntw"}, path: "a", want: []string{"a:one", "a:tw"}},
		{name: "exactly the cap", files: map[string]string{"a": "12345678\n"}, path: "a", want: []string{"a:12345678"}},
		{name: "one over the cap", files: map[string]string{"a": "x\n123456789\ny\n"}, path: "a", want: []string{"a:x", "a:y"}, tooLong: 1},
		{name: "cap counts before the carriage return", files: map[string]string{"a": "12345678\r\n"}, path: "a", tooLong: 1},
		{name: "long last line", files: map[string]string{"a": "x\n" + long}, path: "a", want: []string{"a:x"}, tooLong: 1},
		{name: "long lines in a row", files: map[string]string{"a": long + "\n" + long + "\nok\n"}, path: "a", want: []string{"a:ok"}, tooLong: 2},
		{name: "empty file", files: map[string]string{"a": ""}, path: "a"},
		{name: "glob in name order", files: map[string]string{"b.log": "2\n", "a.log": "1\n", "c.txt": "3\n"}, path: "*.log", want: []string{"a.log:1", "b.log:2"}},
		{name: "missing file", path: "nope", err: "no such file"},
		{name: "glob without match", path: "*.log", err: "no file matches"},
		{name: "directory", files: map[string]string{"d/a": "1\n"}, path: "d", err: "not a regular file but a directory"},
		// An element after a wildcard that no listing gives matches nothing, a file there
		// or not: the error says why, as the rule file's check of an input's path does.
		{name: "dot-dot after a wildcard", files: map[string]string{"a.log": "1\n", "d/b.log": "2\n"}, path: "*/../a.log", err: `has ".." after a wildcard`},
		{name: "dot after a wildcard", files: map[string]string{"d/b.log": "2\n"}, path: "*/./b.log", err: `has "." after a wildcard`},
		{name: "empty element after a wildcard", files: map[string]string{"d/b.log": "2\n"}, path: "*//b.log", err: "has an empty element (//) after a wildcard"},
		{name: "trailing separator after a wildcard", files: map[string]string{"d/b.log": "2\n"}, path: "d/*.log/", err: "has a trailing / after a wildcard"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			// Not filepath.Join, which would clean the path the case gives.
			s, err := ReadToEnd(Options{Path: dir + string(filepath.Separator) + tc.path, MaxLineBytes: 8}, func(path string, line []byte) {
				rel, _ := filepath.Rel(dir, path)
				got = append(got, rel+":"+string(line))
			})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("lines %q, want %q", got, tc.want)
			}
			if s.TooLong != tc.tooLong || s.LinesRead != uint64(len(tc.want)) {
				t.Errorf("stats %+v, want %d lines, %d too long", s, len(tc.want), tc.tooLong)
			}
		})
	}
}

// TestReadToEndFIFO: a FIFO under a replayed glob, which whoever can write in its
// directory may put there, is an error that names it, after the other files are read;
// opening it for reading would wait for a writer, for ever. A FIFO where the glob lists
// directories is no directory, and no error: the follower passes over it too. Nor is a
// directory the glob matches where it reads files.
func TestReadToEndFIFO(t *testing.T) {
	tests := []struct {
		name    string
		fifo    string // under the test's directory
		pattern string
		want    string // the lines, as base:line
		err     string // what the error says of the FIFO, after its path; "" for none
	}{
		{name: "a file of the glob", fifo: "b.log", pattern: "*.log", want: "[a.log:one]", err: ": not a regular file but a named pipe (FIFO)"},
		{name: "a directory of the glob", fifo: "p.log", pattern: "*/*.log", want: "[c.log:two]"},
		{name: "a directory matched", fifo: "p.log", pattern: "*", want: "[a.log:one]", err: ": not a regular file but a named pipe (FIFO)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range map[string]string{"a.log": "one\n", "sub.log/c.log": "two\n"} {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fifo := filepath.Join(dir, tc.fifo)
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			type result struct {
				lines []string
				err   error
			}
			done := make(chan result, 1)
			go func() {
				var r result
				_, r.err = ReadToEnd(Options{Path: filepath.Join(dir, tc.pattern)}, func(path string, line []byte) {
					r.lines = append(r.lines, filepath.Base(path)+":"+string(line))
				})
				done <- r
			}()
			select {
			case r := <-done:
				if fmt.Sprint(r.lines) != tc.want {
					t.Errorf("lines %q, want %s", r.lines, tc.want)
				}
				if tc.err == "" && r.err != nil || tc.err != "" && (r.err == nil || !strings.Contains(r.err.Error(), fifo+tc.err)) ||
					r.err != nil && strings.Contains(r.err.Error(), "sub.log") {
					t.Errorf("error %v, want %q after the FIFO's path", r.err, tc.err)
				}
			case <-givenUp(t):
				// A writer lets the blocked open return, so the test ends.
				if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				t.Fatal("ReadToEnd still waits on the FIFO")
			}
		})
	}
}

// TestReadToEndBuffered crosses the reader's buffer boundary with lines of
// every length around it.
func TestReadToEndBuffered(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a")
	var content bytes.Buffer
	var want []string
	for n := 1; n <= 3*minBuffer/100; n++ {
		line := strings.Repeat(string(rune('a'+n%26)), n%300)
		want = append(want, line)
		content.WriteString(line + "\n")
	}
	if err := os.WriteFile(p, content.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	if _, err := ReadToEnd(Options{Path: p, MaxLineBytes: 300}, func(_ string, line []byte) { got = append(got, string(line)) }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %d lines, want %d, or they differ", len(got), len(want))
	}
}

func TestStartAt(t *testing.T) {
	for _, fromBeginning := range []bool{false, true} {
		t.Run(fmt.Sprintf("from beginning %v", fromBeginning), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			w := create(t, p)
			writeLines(t, w, 1, 100)
			c := newCollector()
			o := modes[0].options(p)
			o.FromBeginning = fromBeginning
			f := start(t, o, c.handle)
			if !f.Ready() {
				t.Fatal("not ready after Start with the file present")
			}
			writeLines(t, w, 101, 200)
			waitFor(t, "appended lines", func() bool { return c.has(101, 200) })
			first := 101
			if fromBeginning {
				first = 1
			}
			c.expectExactly(t, span{first, 200})
		})
	}
}

// TestStartAtMidLine: a file that ends within a line at start (its writer in the middle
// of it) is read from the line after it with start_at: end, and from the positions of a
// follower stopped before that line ended: the rest of that line is no line, neither
// handed on nor counted, whether the lines are handed on one by one or taken as a block.
// From the beginning, the line is read whole.
func TestStartAtMidLine(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		fromBeginning, block bool
		resume               bool // from the positions of a follower stopped mid-line
		first                int
	}{
		{name: "end", first: 102},
		{name: "end, blocks", block: true, first: 102},
		{name: "resumed", resume: true, first: 102},
		{name: "beginning", fromBeginning: true, first: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			w := create(t, p)
			writeLines(t, w, 1, 100)
			line := numbered(101)
			if _, err := w.Write(line[:20]); err != nil {
				t.Fatal(err)
			}
			c := newCollector()
			o := modes[1].options(p)
			o.FromBeginning = tc.fromBeginning
			if tc.block {
				o.Block = func(_ string, b []byte) bool {
					for l := range bytes.Lines(b) {
						c.handle(p, TrimCR(l[:len(l)-1]))
					}
					return true
				}
			}
			if tc.resume {
				f := start(t, o, c.handle)
				waitFor(t, "ready", f.Ready)
				f.Stop()
				o.Resume = f.Positions()
			}
			f := start(t, o, c.handle)
			if _, err := w.Write(line[20:]); err != nil {
				t.Fatal(err)
			}
			writeLines(t, w, 102, 200)
			waitFor(t, "appended lines", func() bool { return c.has(102, 200) })
			c.expectExactly(t, span{tc.first, 200})
			if st := f.Stats(); st.TooLong != 0 || !tc.block && st.LinesRead != uint64(200-tc.first+1) {
				t.Errorf("%d lines read, %d too long; want %d and none", st.LinesRead, st.TooLong, 200-tc.first+1)
			}
		})
	}
}

// TestGlob follows files that appear later from their first line, drains a
// file renamed out of the pattern, and keeps a file renamed within it.
func TestGlob(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			a := create(t, filepath.Join(dir, "a.log"))
			writeLines(t, a, 1, 10)
			c := newCollector()
			o := m.options(filepath.Join(dir, "*.log"))
			clock := clocked(&o)
			f := start(t, o, c.handle)
			b := create(t, filepath.Join(dir, "b.log"))
			writeLines(t, b, 11, 20)
			writeLines(t, a, 21, 30)
			waitFor(t, "lines of both files", func() bool { return c.has(11, 30) })
			rename(t, filepath.Join(dir, "a.log"), filepath.Join(dir, "a.log.1"))
			rename(t, filepath.Join(dir, "b.log"), filepath.Join(dir, "c.log"))
			writeLines(t, a, 31, 40)
			writeLines(t, b, 41, 50)
			waitRetired(t, f, clock, "a.log drained and closed, b.log followed as c.log", func() bool {
				s := f.Stats()
				return c.has(31, 50) && len(s.Files) == 1 && s.Files[0].Path == filepath.Join(dir, "c.log")
			})
			c.expectExactly(t, span{11, 50})
			if s := f.Stats(); s.Rotations != 1 {
				t.Errorf("rotations %d, want 1 (a.log left the glob; b.log only changed name)", s.Rotations)
			}
		})
	}
}

// Two followers share a glob by directory (Select) and claim its files from one set: a
// file renamed from one's directory into the other's is read on by the first, as a file
// renamed within the glob is, not read again from its start by the second, and keeps its
// claim while it is read; a file that appears in the second's directory is the second's.
func TestGlobSharedRenamedAcross(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			sh := startShared(t, m, func(*Options) {})
			dirA, dirB, x, claims, c, followers := sh.dirA, sh.dirB, sh.x, sh.claims, sh.c, sh.followers
			waitFor(t, "x.log read", func() bool { return c.has(1, 10) })
			rename(t, filepath.Join(dirA, "x.log"), filepath.Join(dirB, "x.log"))
			writeLines(t, x, 11, 20)
			y := create(t, filepath.Join(dirB, "y.log"))
			writeLines(t, y, 21, 30)
			waitFor(t, "x.log read on under b, y.log read", func() bool {
				s := followers[dirA].Stats()
				return c.has(11, 30) && len(s.Files) == 1 && s.Files[0].Path == filepath.Join(dirB, "x.log")
			})
			writeLines(t, x, 31, 40)
			waitFor(t, "x.log read on again", func() bool { return c.has(31, 40) })
			c.expectExactly(t, span{1, 40})
			if s := followers[dirB].Stats(); len(s.Files) != 1 || s.Files[0].Path != filepath.Join(dirB, "y.log") {
				t.Errorf("b's follower reads %+v, want y.log alone", s.Files)
			}
			if n := claims.count(); n != 2 {
				t.Errorf("%d claims, want x.log's by a and y.log's by b", n)
			}
		})
	}
}

// A file renamed within a glob between the listing and the look at its old
// name is not taken for a rotation.
func TestGlobListingStale(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			b := create(t, filepath.Join(dir, "b.log"))
			writeLines(t, b, 1, 10)
			var (
				mu      sync.Mutex
				armed   bool
				renamed error
			)
			o := m.options(filepath.Join(dir, "*.log"))
			o.FromBeginning = true
			o.listed = func() {
				mu.Lock()
				defer mu.Unlock()
				if armed {
					armed = false
					renamed = os.Rename(filepath.Join(dir, "b.log"), filepath.Join(dir, "c.log"))
				}
			}
			c := newCollector()
			f := start(t, o, c.handle)
			waitFor(t, "b.log", func() bool { return c.has(1, 10) })
			mu.Lock()
			armed = true
			mu.Unlock()
			waitFor(t, "b.log followed as c.log", func() bool {
				s := f.Stats()
				return len(s.Files) == 1 && s.Files[0].Path == filepath.Join(dir, "c.log")
			})
			mu.Lock()
			err := renamed
			mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			writeLines(t, b, 11, 20)
			waitFor(t, "the lines written after", func() bool { return c.has(11, 20) })
			c.expectExactly(t, span{1, 20})
			if s := f.Stats(); s.Rotations != 0 {
				t.Errorf("rotations %d, want 0: b.log only changed name within the glob", s.Rotations)
			}
		})
	}
}

// TestBrokenPathInGlob: a glob entry that cannot be stat'ed (a symlink loop)
// is an error, and does not keep the other files of the glob from being
// rotated and closed.
func TestBrokenPathInGlob(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop.log")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "a.log")
	w := create(t, p)
	c := newCollector()
	o := modes[1].options(filepath.Join(dir, "*.log"))
	clock := clocked(&o)
	f := start(t, o, c.handle)
	writeLines(t, w, 1, 10)
	rename(t, p, p+".1")
	writeLines(t, w, 11, 20)
	waitRetired(t, f, clock, "the rotated file read and closed", func() bool { return c.has(1, 20) && len(f.Stats().Files) == 0 })
	c.expectExactly(t, span{1, 20})
	if s := f.Stats(); s.Errors != 1 || s.Rotations != 1 {
		t.Errorf("stats %+v: want the loop counted once as an error, one rotation", s)
	}
}

// TestNotRegular: a FIFO where a log is expected is an error, counted under
// its reason, and blocks neither discovery, nor readiness (waiting would not
// make it a file), nor Stop.
func TestNotRegular(t *testing.T) {
	p := filepath.Join(t.TempDir(), "access.log")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	f := start(t, modes[1].options(p), func(string, []byte) {})
	waitFor(t, "an error", func() bool { return f.Stats().Errors == 1 })
	if s := f.Stats(); s.ErrorsByReason["not_regular"] != 1 {
		t.Errorf("errors by reason %v, want not_regular 1", s.ErrorsByReason)
	}
	if !f.Ready() {
		t.Error("not ready: a file that cannot be opened must not hold readiness")
	}
}

// A file the input names is opened on the event that it was created, not at the next
// due scan: rotated away within a poll interval, it would otherwise never be read (nginx
// rotated every 100 ms lost four lines in five). The poll here is an hour apart, so only
// the events can open each file. The event names the file as the directory watched does,
// cleaned: a path written otherwise (relative, with "//" or "./") must name it all the same.
func TestOpenedOnCreate(t *testing.T) {
	for _, tc := range []struct{ name, path string }{
		{"absolute", ""},
		{"relative", "access.log"},
		{"dot", "./access.log"},
		{"double slash", "logs//access.log"},
		{"dot dir", "./logs/access.log"},
		{"glob", "./logs//*.log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, read := filepath.Join(dir, "access.log"), tc.path
			if read == "" {
				read = path
			} else {
				t.Chdir(dir)
				path = filepath.Clean(strings.ReplaceAll(read, "*", "access"))
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			c := newCollector()
			f := start(t, Options{Path: read, PollInterval: time.Hour, RotationGrace: time.Hour}, c.handle)
			const rounds, perRound = 20, 60
			for r := range rounds {
				w := create(t, path)
				waitFollowed(t, f, w)
				writeLines(t, w, r*perRound+1, (r+1)*perRound)
				rename(t, path, path+".1") // replaces the file before: still open, still read
			}
			waitFor(t, "every line", func() bool { return c.has(1, rounds*perRound) })
			c.expectExactly(t, span{1, rounds * perRound})
		})
	}
}
