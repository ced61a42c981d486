package follow

// The tailing test matrix: how files are written, rotated and truncated in the
// wild, one test each. Each logs its measured lost and duplicated lines; run
// with -v to read them.

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
	"go.uber.org/goleak"
)

// Lines appended by one writer, nothing else.
func TestAppendedLines(t *testing.T) {
	const n = 100_000
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			w := create(t, p)
			c := newCollector()
			f := start(t, m.options(p), c.handle)
			writeLines(t, w, 1, n)
			waitFor(t, "every line", func() bool { return f.Stats().LinesRead >= n })
			c.expectExactly(t, span{1, n})
			if s := f.Stats(); s.LinesRead != n || s.Files[0].BytesBehind != 0 {
				t.Errorf("stats %+v, want %d lines and nothing behind", s, n)
			}
		})
	}
}

// rename+create, the writer reopening at once or only after
// writing more lines to the renamed file (nginx until USR1), with or without
// logrotate creating the new file first.
func TestRenameCreate(t *testing.T) {
	tests := []struct {
		name      string
		late      int  // lines the writer still writes to the renamed file
		precreate bool // logrotate's "create": the new file exists before the writer reopens
	}{
		{name: "writer reopens at once"},
		{name: "writer late 3000 lines", late: 3000},
		{name: "logrotate creates, writer late 3000 lines", late: 3000, precreate: true},
	}
	const rotations, perFile = 3, 2000
	for _, tc := range tests {
		for _, m := range modes {
			t.Run(tc.name+"/"+m.name, func(t *testing.T) {
				p := filepath.Join(t.TempDir(), "access.log")
				w := create(t, p)
				c := newCollector()
				o := m.options(p)
				// The late lines are written in a loop that a loaded machine can stall for
				// longer than any grace in seconds, which would close the renamed file
				// before them: the grace passes once every line was read.
				clock := new(ahead)
				o.RotationGrace, o.now = time.Hour, clock.Now
				f := start(t, o, c.handle)
				n := 0
				for r := 1; r <= rotations; r++ {
					writeLines(t, w, n+1, n+perFile)
					n += perFile
					waitFollowed(t, f, w)
					rename(t, p, fmt.Sprintf("%s.%d", p, r))
					if tc.precreate {
						create(t, p)
					}
					writeLines(t, w, n+1, n+tc.late)
					n += tc.late
					w = create(t, p)
				}
				writeLines(t, w, n+1, n+perFile)
				n += perFile
				waitFor(t, "every line", func() bool { return c.has(1, n) })
				clock.Add(o.RotationGrace)
				waitFor(t, "the rotated files closed", func() bool { return openUnder(f, p) == 1 })
				c.expectExactly(t, span{1, n})
				if s := f.Stats(); s.Rotations != rotations || s.Truncations != 0 {
					t.Errorf("stats %+v, want %d rotations, no truncation", s, rotations)
				}
			})
		}
	}
}

// startBlocked follows a new file holding lines 1..lines with a handler that blocks on
// line blockAt, and returns once it is blocked there.
func startBlocked(t *testing.T, m mode, blockAt, lines int) (string, *collector, *Follower, *ahead) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "access.log")
	w := create(t, p)
	c := newCollector()
	c.gate = newGate(blockAt)
	o := m.options(p)
	clock := clocked(&o)
	f := start(t, o, c.handle)
	writeLines(t, w, 1, lines)
	c.gate.wait(t)
	return p, c, f, clock
}

// rotate renames the file at p to p.n, creates a new one holding lines from..to, and waits
// until the follower has it open beside the n rotated ones: rotations come hours apart,
// far beyond one discovery scan.
func rotate(t *testing.T, f *Follower, p string, n, from, to int) {
	t.Helper()
	rename(t, p, fmt.Sprintf("%s.%d", p, n))
	writeLines(t, create(t, p), from, to)
	waitFor(t, fmt.Sprintf("file %d opened", n+1), func() bool { return openUnder(f, p) == n+1 })
}

// the handler is blocked while the file is rotated twice; the middle
// file, which the reader never saw at the path, is read in full.
func TestRotationsWhileHandlerBlocked(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p, c, f, clock := startBlocked(t, m, 50, 100)
			rotate(t, f, p, 1, 101, 200)
			rotate(t, f, p, 2, 201, 300)
			if got := f.Stats().LinesRead; got != 50 {
				t.Fatalf("%d lines read while the handler was blocked on line 50", got)
			}
			close(c.gate.release)
			waitRetired(t, f, clock, "every line, rotated files closed", func() bool { return c.has(1, 300) && openUnder(f, p) == 1 })
			c.expectExactly(t, span{1, 300})
		})
	}
}

// logrotate's copytruncate while the writer keeps appending. Lines
// written between the copy and the truncation are lost by design; the test
// measures the loss and checks that nothing else is lost.
func TestCopyTruncate(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			w := create(t, p)
			c := newCollector()
			f := start(t, m.options(p), c.handle)

			var written atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 1; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := w.Write(numbered(n)); err != nil {
						t.Error(err)
						return
					}
					written.Store(int64(n))
				}
			}()
			waitFor(t, "2000 lines read", func() bool { return f.Stats().LinesRead >= 2000 })
			copied := copyFile(t, p, p+".1")
			// Let the writer append 200 lines between copy and truncate,
			// a slow logrotate.
			afterCopy := written.Load()
			waitFor(t, "writes after the copy", func() bool { return written.Load() >= afterCopy+200 })
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
			// The line being written may have gone either side of the
			// truncation; the ones after it were written after it.
			truncatedAt := int(written.Load()) + 1
			waitFor(t, "2000 lines after the truncation", func() bool { return written.Load() >= int64(truncatedAt)+2000 })
			close(stop)
			wg.Wait()
			last := int(written.Load())
			waitFor(t, "the last line", func() bool { return c.has(last, last) })

			lost, dup, malformed := c.tally(span{1, last})
			firstLost, lastLost := 0, 0
			c.mu.Lock()
			for n := 1; n <= last; n++ {
				if c.seen[n] == 0 {
					if firstLost == 0 {
						firstLost = n
					}
					lastLost = n
				}
			}
			c.mu.Unlock()
			t.Logf("copytruncate (%s): %d lines in the copy, %d written between copy and truncate; lost=%d (lines %d..%d) duplicated=%d malformed=%d",
				m.name, copied, truncatedAt-1-copied, lost, firstLost, lastLost, dup, malformed)
			if s := f.Stats(); s.Truncations != 1 {
				t.Errorf("truncations %d, want 1", s.Truncations)
			}
			// A line read only in part when the truncation came is handed on as
			// read: the rest of it went with the truncation.
			c.mu.Lock()
			cut := len(c.malformed) == 1 && isCut(c.malformed[0])
			c.mu.Unlock()
			if dup != 0 || malformed != 0 && !cut {
				t.Errorf("duplicated=%d malformed=%d, want none but one line cut by the truncation", dup, malformed)
			}
			if lost > 0 && lastLost > truncatedAt {
				t.Errorf("line %d, written after the truncation, was lost", lastLost)
			}
		})
	}
}

// isCut reports whether s is a numbered line cut short.
func isCut(s string) bool {
	whole := numbered(0)
	if len(s) >= len(whole)-1 {
		return false
	}
	for i := range len(s) {
		if i < 8 && (s[i] < '0' || s[i] > '9') || i >= 8 && s[i] != whole[i] {
			return false
		}
	}
	return true
}

// copyFile copies as logrotate does and returns the number of whole lines copied.
func copyFile(t *testing.T, from, to string) int {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	n, err := io.Copy(dst, src)
	if err != nil {
		t.Fatal(err)
	}
	return int(n / lineLen)
}

// accessLog makes access.log in a new directory, holding lines 1-100, and returns the
// directory, the log's path and its writer.
func accessLog(t *testing.T) (dir, log string, w *os.File) {
	t.Helper()
	dir = t.TempDir()
	log = filepath.Join(dir, "access.log")
	w = create(t, log)
	writeLines(t, w, 1, 100)
	return dir, log, w
}

// handDriven makes a follower of path that the test drives by hand, its scans and turns,
// on an injected clock with a minute's rotation grace, and lets it read all there is from
// the beginning. The options are returned for a restart (resumed).
func handDriven(t *testing.T, path string, h input.Handler) (*Follower, *testclock.Clock, Options) {
	t.Helper()
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	o := Options{Path: path, FromBeginning: true, noNotify: true, now: clock.Now, RotationGrace: time.Minute, Logger: testLogger(t)}
	f := discovered(t, o, h)
	f.readAll()
	return f, clock, o
}

// discovered makes a follower of o, stopped at the test's end, for the test to drive by
// hand: its first scan made, nothing read yet.
func discovered(t *testing.T, o Options, h input.Handler) *Follower {
	t.Helper()
	f, err := newFollower(o, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	f.discover(true)
	return f
}

// resumed stops f and makes another hand-driven follower of o from where f stopped: its
// positions and the files it found truncated, as a restart from a snapshot would. The new
// one has made its first scan and resumed the rotated files, and read nothing yet.
func resumed(t *testing.T, f *Follower, o Options, h input.Handler) *Follower {
	t.Helper()
	f.Stop()
	o.FromBeginning, o.Resume, o.Truncated = false, f.Positions(), f.Truncated()
	g := discovered(t, o, h)
	g.resumeRotated()
	return g
}

// settle lets a hand-driven follower read three turns, past the rotation grace too: the
// copies it holds back are judged, and what they are read from read.
func settle(f *Follower, clock *testclock.Clock) {
	for range 3 {
		f.readAll()
	}
	clock.Add(2 * time.Minute)
	for range 3 {
		f.readAll()
	}
}

// the file is truncated and refilled past its old size before the
// reader looks again (here the reader is held in the handler, which is the
// same as the change happening between two polls).
func TestTruncateRefill(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			w := create(t, p)
			c := newCollector()
			c.gate = newGate(10)
			f := start(t, m.options(p), c.handle)
			writeLines(t, w, 1, 10)
			c.gate.wait(t)
			if err := w.Truncate(0); err != nil {
				t.Fatal(err)
			}
			writeLines(t, w, 101, 130)
			close(c.gate.release)
			waitFor(t, "the refilled lines", func() bool { return c.has(101, 130) })
			c.expectExactly(t, span{1, 10}, span{101, 130})
			if s := f.Stats(); s.Truncations != 1 {
				t.Errorf("truncations %d, want 1", s.Truncations)
			}
		})
	}
}

// `echo $x > f` twenty times, a line of the same length each time
// (upstream #62): the size never changes, only the bytes do.
func TestEchoRewrite(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			create(t, p)
			got := make(chan string, 21)
			f := start(t, m.options(p), func(_ string, line []byte) { got <- string(line) })
			var want, read []string
			for i := range 20 {
				x := string(rune('a' + i))
				if err := os.WriteFile(p, []byte(x+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				want = append(want, x)
				waitFor(t, "echo "+x, func() bool { return len(got) > 0 })
				read = append(read, <-got)
			}
			// A last line appended, not rewritten: once it is read, any
			// spurious re-read of the file would have happened before it.
			w := create(t, p)
			if _, err := w.WriteString("end\n"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the last line", func() bool { return f.Stats().LinesRead == 21 })
			read = append(read, <-got)
			want = append(want, "end")
			t.Logf("echo $x > f: %d of 20 read", len(read)-1)
			if strings.Join(read, " ") != strings.Join(want, " ") || len(got) != 0 {
				t.Errorf("read %q, want %q", read, want)
			}
		})
	}
}

// A file whose mtime changes and whose bytes do not (touch, or a rewrite
// with the same bytes) is not read again: nothing tells it from a write in
// progress.
func TestTouchIsNoRewrite(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			w := create(t, p)
			writeLines(t, w, 1, 10)
			c := newCollector()
			f := start(t, Options{Path: p, FromBeginning: true, PollInterval: m.poll, noNotify: m.noNotify}, c.handle)
			waitFor(t, "the lines", func() bool { return c.has(1, 10) })
			for i := range 3 {
				later := time.Now().Add(time.Duration(i+1) * time.Hour)
				if err := os.Chtimes(p, later, later); err != nil {
					t.Fatal(err)
				}
				waitTurns(t, f, 2, "a turn after the touch")
			}
			writeLines(t, w, 11, 11)
			waitFor(t, "the line after", func() bool { return c.has(11, 11) })
			c.expectExactly(t, span{1, 11})
			if s := f.Stats(); s.Truncations != 0 {
				t.Errorf("%d truncations, want 0", s.Truncations)
			}
		})
	}
}

// every line written with two write() calls.
func TestSplitWrites(t *testing.T) {
	const n = 20_000
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			w := create(t, p)
			c := newCollector()
			start(t, m.options(p), c.handle)
			for i := 1; i <= n; i++ {
				line := numbered(i)
				cut := 1 + i%(len(line)-1)
				for _, part := range [][]byte{line[:cut], line[cut:]} {
					if _, err := w.Write(part); err != nil {
						t.Fatal(err)
					}
				}
			}
			waitFor(t, "every line", func() bool { return c.has(1, n) })
			c.expectExactly(t, span{1, n})
		})
	}
}

// the file is deleted and created again, three times.
func TestDeleteRecreate(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			w := create(t, p)
			c := newCollector()
			o := m.options(p)
			clock := clocked(&o)
			f := start(t, o, c.handle)
			n := 0
			for r := 0; r < 3; r++ {
				writeLines(t, w, n+1, n+1000)
				n += 1000
				waitFollowed(t, f, w)
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				w = create(t, p)
			}
			writeLines(t, w, n+1, n+1000)
			n += 1000
			waitRetired(t, f, clock, "every line, deleted files closed", func() bool { return c.has(1, n) && openUnder(f, p) == 1 })
			c.expectExactly(t, span{1, n})
		})
	}
}

// the path is a symlink into another directory, retargeted to a file
// that already holds lines; the old target's late lines are read too.
func TestSymlinkRetarget(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			targets := filepath.Join(dir, "pods")
			if err := os.Mkdir(targets, 0o755); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "access.log")
			a := create(t, filepath.Join(targets, "0.log"))
			b := create(t, filepath.Join(targets, "1.log"))
			if err := os.Symlink(filepath.Join(targets, "0.log"), p); err != nil {
				t.Fatal(err)
			}
			c := newCollector()
			o := m.options(p)
			clock := clocked(&o)
			f := start(t, o, c.handle)
			writeLines(t, a, 1, 1000)
			writeLines(t, b, 1001, 1100) // before the switch: read from its start
			waitFor(t, "lines of the first target", func() bool { return c.has(1, 1000) })
			if err := os.Symlink(filepath.Join(targets, "1.log"), p+".tmp"); err != nil {
				t.Fatal(err)
			}
			rename(t, p+".tmp", p) // atomic retarget, as ln -sfn does it
			writeLines(t, a, 1101, 1200)
			writeLines(t, b, 1201, 2000)
			waitRetired(t, f, clock, "every line, old target closed", func() bool { return c.has(1, 2000) && openUnder(f, p) == 1 })
			c.expectExactly(t, span{1, 2000})
		})
	}
}

// the file does not exist at Start; its first lines count even
// though the input starts at the end.
func TestLateFile(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			c := newCollector()
			f := start(t, m.options(p), c.handle)
			if !f.Ready() {
				t.Error("not ready: a file that does not exist is not waited for")
			}
			w := create(t, p)
			writeLines(t, w, 1, 500)
			waitFor(t, "every line", func() bool { return c.has(1, 500) })
			c.expectExactly(t, span{1, 500})
		})
	}
}

// 100 MiB without a newline. The heap must not grow with it, the
// line is counted as too long, and the lines after it are read.
func TestNoNewline100MiB(t *testing.T) {
	const total, chunk = 100 << 20, 1 << 20
	p := filepath.Join(t.TempDir(), "access.log")
	w := create(t, p)
	c := newCollector()
	f := start(t, modes[0].options(p), c.handle)
	junk := make([]byte, chunk)
	for i := range junk {
		junk[i] = 'a'
	}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	sampled := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	for written := 0; written < total; written += chunk {
		if _, err := w.Write(junk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.WriteString("\n"); err != nil {
		t.Fatal(err)
	}
	writeLines(t, w, 1, 100)
	waitFor(t, "the lines after the long one", func() bool { return c.has(1, 100) })
	close(done)
	<-sampled
	var after runtime.MemStats
	runtime.ReadMemStats(&after)

	growth := int64(peak.Load()) - int64(before.HeapInuse)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("100 MiB without newline: heap in use %.1f MiB before, peak %.1f MiB (growth %.1f MiB), %.1f MiB allocated while reading",
		mib(before.HeapInuse), mib(peak.Load()), float64(growth)/(1<<20), mib(allocated))
	c.expectExactly(t, span{1, 100})
	if s := f.Stats(); s.TooLong != 1 {
		t.Errorf("too long %d, want 1", s.TooLong)
	}
	const limit = 8 << 20
	if growth > limit || allocated > limit {
		t.Errorf("heap grew by %d bytes, %d allocated: want both under %d", growth, allocated, limit)
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// start, rotate, stop, 200 times: no deadlock, no goroutine left.
func TestStartRotateStop(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 200; i++ {
		m := modes[i%2]
		p := filepath.Join(dir, fmt.Sprintf("access%d.log", i))
		w := create(t, p)
		writeLines(t, w, 1, 10)
		f, err := Start(m.options(p), func(string, []byte) {})
		if err != nil {
			t.Fatal(err)
		}
		writeLines(t, w, 11, 20)
		rename(t, p, p+".1")
		w = create(t, p)
		writeLines(t, w, 21, 30)
		if i%3 == 0 {
			waitFor(t, "the rotation seen", func() bool { return f.Stats().Rotations == 1 })
		}
		f.Stop()
		f.Stop()
	}
	goleak.VerifyNone(t)
}

// a slow consumer during a rotation: nothing is lost and the lag is
// visible, exactly, as bytes behind.
func TestSlowConsumer(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p, c, f, clock := startBlocked(t, m, 1, 1000)
			rotate(t, f, p, 1, 1001, 1500)
			want := 1500 * lineLen // blocked in line 1: nothing handed on yet
			if s := f.Stats(); s.Files[0].BytesBehind != want {
				t.Errorf("bytes behind %d, want %d", s.Files[0].BytesBehind, want)
			}
			close(c.gate.release)
			waitRetired(t, f, clock, "every line, nothing behind", func() bool {
				s := f.Stats()
				return c.has(1, 1500) && s.Files[0].BytesBehind == 0 && openUnder(f, s.Files[0].Path) == 1
			})
			c.expectExactly(t, span{1, 1500})
		})
	}
}

// The grace period, on an injected clock: a rotated file stays open while a
// late writer keeps it busy, and closes once idle for the grace period.
func TestRotationGrace(t *testing.T) {
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	p := filepath.Join(t.TempDir(), "access.log")
	old := create(t, p)
	c := newCollector()
	o := modes[1].options(p)
	o.RotationGrace, o.now = time.Hour, clock.Now
	f := start(t, o, c.handle)
	writeLines(t, old, 1, 10)
	rename(t, p, p+".1")
	create(t, p)
	waitFor(t, "the new file opened", func() bool { return openUnder(f, p) == 2 })

	// sync moves the clock and waits for a turn of the reader that began
	// after the move, so that the rotated file was judged at the new time.
	sync := func(advance time.Duration) {
		clock.Add(advance)
		waitTurns(t, f, 2, "a full turn of the reader")
	}
	sync(59 * time.Minute)
	writeLines(t, old, 11, 20) // the late writer
	waitFor(t, "late lines", func() bool { return c.has(11, 20) })
	sync(2 * time.Minute) // an hour since the rotation, but not since the last line
	if got := openUnder(f, p); got != 2 {
		t.Fatalf("%d files open: the rotated file was closed while not idle for the grace period", got)
	}
	clock.Add(time.Hour)
	waitFor(t, "the rotated file closed", func() bool { return openUnder(f, p) == 1 })
	if !c.has(1, 20) {
		t.Error("lines of the rotated file lost")
	}
}

// A rotated file is read to its end before its successor at the same path is read: a
// caller that joins the lines of a path into messages (the parts of a CRI message, which
// may go on in the successor) must not have the successor's lines put between the rotated
// file's. The reader is held back by more than a pass's budget when the file is rotated.
func TestRotatedFileReadBeforeItsSuccessor(t *testing.T) {
	const old = 3 * passBudget / 100 // lines of some 120 bytes: three passes' budget
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			w := create(t, p)
			c := newCollector()
			g := newGate(50)
			var order []int // the reading goroutine's, read once it is done
			f := start(t, m.options(p), func(path string, line []byte) {
				n, _ := parseNumbered(line)
				order = append(order, n)
				c.handle(path, line)
				g.pass(n)
			})
			writeLines(t, w, 1, old)
			g.wait(t)
			rotate(t, f, p, 1, old+1, old+100)
			close(g.release)
			waitFor(t, "every line", func() bool { return c.has(1, old+100) })
			f.Stop()
			c.expectExactly(t, span{1, old + 100})
			first, after := 0, 0 // the successor's first line read, and the rotated file's lines after it
			for _, n := range order {
				switch {
				case n > old && first == 0:
					first = n
				case n <= old && first != 0:
					after++
				}
			}
			if after > 0 {
				t.Errorf("%d lines of the rotated file were read after line %d of its successor", after, first)
			}
		})
	}
}

// TestCopyTruncateGlob: a glob that matches the log's rotated names (access.log*) finds
// the copy that logrotate's copytruncate makes of the log beside it: the copy begins with
// what the log held, read already, and is read on from where the log was read up to, not
// from its start, whose lines would count twice. So whether the copy is found being
// written, whole, or after the truncation of the log was read.
func TestCopyTruncateGlob(t *testing.T) {
	for _, m := range modes {
		for _, tc := range []struct {
			name   string
			rotate func(t *testing.T, f *Follower, log string, w *os.File)
		}{{
			name: "copied then truncated",
			rotate: func(t *testing.T, f *Follower, log string, w *os.File) {
				copyFile(t, log, log+".1")
				if err := os.Truncate(log, 0); err != nil {
					t.Fatal(err)
				}
				writeLines(t, w, 101, 101)
			},
		}, {
			// The copy is written in parts, each read before the next: it stays at a
			// size for turns of the reader, within the rotation grace (options').
			name: "the copy found as it is written",
			rotate: func(t *testing.T, f *Follower, log string, w *os.File) {
				data, err := os.ReadFile(log)
				if err != nil {
					t.Fatal(err)
				}
				c := create(t, log+".1")
				waitFollowed(t, f, c)
				for _, part := range [][]byte{data[:10], data[10:2000], data[2000:]} {
					if _, err := c.Write(part); err != nil {
						t.Fatal(err)
					}
					waitTurns(t, f, 2, "a turn of the reader")
				}
				if err := os.Truncate(log, 0); err != nil {
					t.Fatal(err)
				}
				writeLines(t, w, 101, 101)
			},
		}, {
			name: "the copy found after the truncation was read",
			rotate: func(t *testing.T, f *Follower, log string, w *os.File) {
				tmp := filepath.Join(t.TempDir(), "copy")
				copyFile(t, log, tmp)
				if err := os.Truncate(log, 0); err != nil {
					t.Fatal(err)
				}
				writeLines(t, w, 101, 101)
				waitFor(t, "the truncation read", func() bool { return f.Stats().Truncations == 1 })
				rename(t, tmp, log+".1")
			},
		}, {
			// The log read further after the copy and before its truncation: the copy
			// holds nothing that was not read.
			name: "the copy of less than was read",
			rotate: func(t *testing.T, f *Follower, log string, w *os.File) {
				tmp := filepath.Join(t.TempDir(), "copy")
				data, err := os.ReadFile(log)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(tmp, data[:len(data)-int(lineLen)*10], 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(log, 0); err != nil {
					t.Fatal(err)
				}
				writeLines(t, w, 101, 101)
				waitFor(t, "the truncation read", func() bool { return f.Stats().Truncations == 1 })
				rename(t, tmp, log+".1")
			},
		}, {
			name: "another file of the directory is read from its start",
			rotate: func(t *testing.T, f *Follower, log string, w *os.File) {
				writeLines(t, create(t, log+".2"), 101, 101)
			},
		}} {
			t.Run(m.name+", "+tc.name, func(t *testing.T) {
				dir := t.TempDir()
				log := filepath.Join(dir, "access.log")
				w := create(t, log)
				o := m.options(filepath.Join(dir, "access.log*"))
				o.FromBeginning = true
				c := newCollector()
				f := start(t, o, c.handle)
				writeLines(t, w, 1, 100)
				waitFor(t, "the first lines", func() bool { return c.has(1, 100) })
				tc.rotate(t, f, log, w)
				writeLines(t, w, 102, 150)
				waitFor(t, "the lines after the rotation", func() bool { return c.has(102, 150) })
				waitTurns(t, f, 3, "two more turns of the reader")
				c.expectExactly(t, span{1, 150})
			})
		}
	}
}

// blueGreen is two logs, blue.log and green.log, behind one symbolic link, current.log:
// blue/green releases.
type blueGreen struct {
	link        string
	blue, green *os.File
}

// newBlueGreen makes them in a new directory, the link to blue.log.
func newBlueGreen(t *testing.T) *blueGreen {
	t.Helper()
	dir := t.TempDir()
	l := &blueGreen{link: filepath.Join(dir, "current.log"), blue: create(t, filepath.Join(dir, "blue.log")), green: create(t, filepath.Join(dir, "green.log"))}
	l.retarget(t, l.blue)
	return l
}

// retarget points the link to the file to: a new link renamed over it, as release tools
// do, so that the path is never without one.
func (l *blueGreen) retarget(t *testing.T, to *os.File) {
	t.Helper()
	if err := os.Symlink(to.Name(), l.link+".tmp"); err != nil {
		t.Fatal(err)
	}
	rename(t, l.link+".tmp", l.link)
}

// away writes lines 1-100 to blue and, the link retargeted to green, lines 101-200 to
// green, and waits for each in c, the second until closed tells that blue was closed
// after the grace too, which f's clock passes.
func (l *blueGreen) away(t *testing.T, c *collector, f *Follower, clock *ahead, closed func() bool) {
	t.Helper()
	writeLines(t, l.blue, 1, 100)
	waitFor(t, "the lines of the first target", func() bool { return c.has(1, 100) })
	l.retarget(t, l.green)
	writeLines(t, l.green, 101, 200)
	waitRetired(t, f, clock, "the second target's lines, the first closed", func() bool { return c.has(101, 200) && closed() })
}

// back writes lines 201-300 to blue, the link's target again, and waits for them in c
// and for two more turns of f's reader, in which a line read again would have been.
func (l *blueGreen) back(t *testing.T, f *Follower, c *collector) {
	t.Helper()
	writeLines(t, l.blue, 201, 300)
	waitFor(t, "the lines written to the first target again", func() bool { return c.has(201, 300) })
	waitTurns(t, f, 3, "two more turns of the reader")
}

// TestSymlinkRetargetedBack: a symlink retargeted to another file, and back once the
// first one was closed after the grace (blue/green releases behind one link): the first
// file is read on from where it was left, not again from its start.
func TestSymlinkRetargetedBack(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			l := newBlueGreen(t)
			o := m.options(l.link)
			o.FromBeginning = true
			clock := clocked(&o)
			c := newCollector()
			f := start(t, o, c.handle)
			l.away(t, c, f, clock, func() bool {
				f.mu.Lock()
				defer f.mu.Unlock()
				return len(f.files) == 1
			})
			l.retarget(t, l.blue)
			l.back(t, f, c)
			c.expectExactly(t, span{1, 300})
		})
	}
}

// TestSymlinkRetargetedBackAfterRestart: a symlink retargeted to another file, the first
// closed after the grace, then back to it after the follower was stopped and another
// started from its positions and the files it closed (Left): the first file is read on
// from where it was left, not again from its start, whether the link came back while
// the follower was down (the first scan finds the file without a position) or after,
// and whether the disk's device was numbered otherwise meanwhile (a reboot: see
// TestResumeRenumberedDevice) or not.
func TestSymlinkRetargetedBackAfterRestart(t *testing.T) {
	for _, tc := range []struct{ whileDown, renumbered bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
		whileDown := tc.whileDown
		t.Run(fmt.Sprintf("while down %v, renumbered %v", whileDown, tc.renumbered), func(t *testing.T) {
			l := newBlueGreen(t)
			o := modes[1].options(l.link)
			o.FromBeginning = true
			clock := clocked(&o)
			first := newCollector()
			f := start(t, o, first.handle)
			l.away(t, first, f, clock, func() bool { return len(f.Left()) == 1 })
			f.Stop()
			first.expectExactly(t, span{1, 200})

			o.FromBeginning, o.Resume, o.Left = false, f.Positions(), f.Left()
			if tc.renumbered {
				for _, ps := range [][]Position{o.Resume, o.Left} {
					for i := range ps {
						ps[i].Dev++
					}
				}
			}
			if whileDown {
				l.retarget(t, l.blue)
			}
			next := newCollector()
			f = start(t, o, next.handle)
			if !whileDown {
				l.retarget(t, l.blue)
			}
			l.back(t, f, next)
			next.expectExactly(t, span{201, 300})
		})
	}
}

// TestCopyOfFileBehind: a glob that matches rotated names finds the copy logrotate made of
// the log while the follower is behind on the log (more than a turn's read). The copy's
// lines past where the log was read are the log's too: they are read from the copy only
// when the log is found truncated (copytruncate), from where it had been read up to then
// (its end, the reader caught up first; or within a line, the rest of which the copy
// holds: from the line's start, the part read of it not handed on), and not at all when
// the log is not (logrotate's copy, a backup made with cp), which is read on. Judged at
// once against where the log was read up to, the copy was read from there while the log
// was read on past it: the lines between counted twice. Driven by hand, on an injected
// clock.
func TestCopyOfFileBehind(t *testing.T) {
	for _, tc := range []struct {
		truncate, behind bool
	}{{true, false}, {true, true}, {false, false}} {
		truncate := tc.truncate
		t.Run(fmt.Sprintf("truncated %v, behind %v", truncate, tc.behind), func(t *testing.T) {
			_, log, w := accessLog(t)
			c := newCollector()
			f, clock, _ := handDriven(t, log+"*", c.handle)
			// More than a turn reads of one file (passBudget) behind.
			const copied = 30_000
			writeLines(t, w, 101, copied)
			copyFile(t, log, log+".1")
			f.discover(false)
			for more := f.readAll(); more && !tc.behind; more = f.readAll() {
			}
			if truncate {
				if err := w.Truncate(0); err != nil {
					t.Fatal(err)
				}
			}
			writeLines(t, w, copied+1, copied+100)
			for range 20 {
				f.readAll()
			}
			clock.Add(2 * time.Minute)
			for range 3 {
				f.readAll()
			}
			c.expectExactly(t, span{1, copied + 100})
		})
	}
}

// TestCopyOfFileBehindAtStop: a copy of the log found while the follower was behind on
// the log, waiting for the log's truncation when the follower stopped, is no position:
// the follower resumed from the positions finds it again as a copy of the log's, and
// reads it from there when the log was truncated meanwhile (copytruncate), from its end
// when the log is as it was (logrotate's copy), whose lines past there the log holds.
// Held at where the log was read up to when it was found, it was read from there after
// a restart whatever became of the log: the lines the log holds past there counted twice.
// Driven by hand, on an injected clock.
func TestCopyOfFileBehindAtStop(t *testing.T) {
	for _, truncate := range []bool{true, false} {
		t.Run(fmt.Sprintf("truncated while down %v", truncate), func(t *testing.T) {
			_, log, w := accessLog(t)
			c := newCollector()
			f, _, o := handDriven(t, log+"*", c.handle)
			const copied = 30_000 // more than a turn reads of one file (passBudget)
			writeLines(t, w, 101, copied)
			copyFile(t, log, log+".1")
			f.discover(false)
			f.readAll()
			f.Stop()
			if truncate {
				if err := w.Truncate(0); err != nil {
					t.Fatal(err)
				}
			}
			writeLines(t, w, copied+1, copied+100)

			f = resumed(t, f, o, c.handle)
			for f.readAll() {
			}
			c.expectExactly(t, span{1, copied + 100})
		})
	}
}

// TestCopyOfFileThatLeft: a glob that matches rotated names finds a copy of the log, and
// the log then leaves its path without a truncation (deleted and made again, or renamed
// away): the copy's lines are the log's, read to its end, and the copy is read from its
// end, not from its start once the log it was found a copy of is no longer at a path.
// Driven by hand, on an injected clock.
func TestCopyOfFileThatLeft(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave func(t *testing.T, log string)
	}{
		{"deleted", func(t *testing.T, log string) {
			if err := os.Remove(log); err != nil {
				t.Fatal(err)
			}
		}},
		{"renamed", func(t *testing.T, log string) { rename(t, log, log+".old") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, log, _ := accessLog(t)
			c := newCollector()
			f, clock, _ := handDriven(t, log+"*", c.handle)
			copyFile(t, log, log+".1")
			f.discover(false)
			f.readAll()
			tc.leave(t, log)
			writeLines(t, create(t, log), 101, 110)
			f.discover(false)
			settle(f, clock)
			c.expectExactly(t, span{1, 110})
		})
	}
}

// TestResumeCopyAfterTruncation: a glob that matches rotated names, whose follower read
// the log's truncation (copytruncate) and stopped before it found the copy: the follower
// resumed from its positions and what it found truncated (Truncated) reads the copy from
// where the log was read up to before its truncation, not from its start, whose lines
// were counted. Driven by hand, on an injected clock.
func TestResumeCopyAfterTruncation(t *testing.T) {
	_, log, w := accessLog(t)
	first := newCollector()
	f, _, o := handDriven(t, log+"*", first.handle)
	copytruncate(t, w, log, log+".1")
	f.readAll() // the truncation, not the copy: no scan since
	f.Stop()
	first.expectExactly(t, span{1, 100}, span{121, 130})
	if len(f.Truncated()) != 1 {
		t.Fatalf("truncated %+v, want the log's", f.Truncated())
	}

	next := newCollector()
	f = resumed(t, f, o, next.handle)
	for f.readAll() {
	}
	next.expectExactly(t, span{101, 120})
}

// TestSameStartNoCopy: a glob's new file that begins with the first KiB of another file of
// its directory, neither truncated nor named as its rotated file (replicas of one program
// that log the same first lines), is another log: read from its start.
func TestSameStartNoCopy(t *testing.T) {
	dir := t.TempDir()
	o := modes[1].options(filepath.Join(dir, "*.log"))
	o.FromBeginning = true
	c := newCollector()
	start(t, o, c.handle)
	writeLines(t, create(t, filepath.Join(dir, "a.log")), 1, 100)
	waitFor(t, "the first file's lines", func() bool { return c.has(1, 100) })
	writeLines(t, create(t, filepath.Join(dir, "b.log")), 1, 100)
	waitFor(t, "the second file's lines", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.seen[1] == 2 && c.seen[100] == 2
	})
}

// TestNewFileBeginningAsAnother: a glob's new file that holds, for the rotation grace,
// only the first bytes of a file it may be a copy of (a line each run of a program
// writes first, then nothing for a while) is another log, not a copy: its lines are read
// from its start, not passed over, whether the other file was found truncated lately or
// the new one is named as its rotated file. The grace is on an injected clock.
func TestNewFileBeginningAsAnother(t *testing.T) {
	for _, m := range modes {
		for _, tc := range []struct {
			name, glob, other string
			truncate          bool
		}{
			{name: "beside a file found truncated", glob: "*.log", other: "b.log", truncate: true},
			{name: "named as a file's rotated one", glob: "a.log*", other: "a.log.1"},
		} {
			t.Run(m.name+", "+tc.name, func(t *testing.T) {
				dir := t.TempDir()
				clock := testclock.New(time.Unix(1_700_000_000, 0))
				o := m.options(filepath.Join(dir, tc.glob))
				o.FromBeginning, o.RotationGrace, o.now = true, time.Minute, clock.Now
				c := newCollector()
				f := start(t, o, c.handle)
				w := create(t, filepath.Join(dir, "a.log"))
				writeLines(t, w, 1, 100)
				waitFor(t, "the first file's lines", func() bool { return c.has(1, 100) })
				if tc.truncate {
					if err := w.Truncate(0); err != nil {
						t.Fatal(err)
					}
				}
				writeLines(t, w, 101, 101)
				waitFor(t, "the first file read on", func() bool { return c.has(101, 101) })
				if got, want := f.Stats().Truncations, map[bool]uint64{true: 1}[tc.truncate]; got != want {
					t.Fatalf("%d truncations, want %d", got, want)
				}
				other := create(t, filepath.Join(dir, tc.other))
				writeLines(t, other, 1, 1) // as the first file began
				waitFollowed(t, f, other)
				waitTurns(t, f, 3, "two turns of the reader")
				clock.Add(2 * time.Minute)
				writeLines(t, w, 102, 110)
				waitFor(t, "the first file's later lines", func() bool { return c.has(102, 110) })
				waitTurns(t, f, 3, "two turns of the reader")
				writeLines(t, other, 111, 120)
				waitFor(t, "the other file's later lines", func() bool { return c.has(111, 120) })
				c.mu.Lock()
				first := c.seen[1]
				c.seen[1]-- // once per file; every other line once
				c.mu.Unlock()
				if first != 2 {
					t.Fatalf("the line both files begin with read %d times, want 2: the other file's first line was passed over", first)
				}
				c.expectExactly(t, span{1, 120})
			})
		}
	}
}

// TestNewFileBeginsAsLog: a glob that matches rotated names finds a new file named as one
// of the log's rotated files that is no copy of it but begins with all the log was read up
// to: the log holds only its header line so far (a program's first line of each file) and
// the new file, a daily file of the same program, begins with that line too. The log is
// read on at its path, not truncated, and holds other bytes than the new file past there:
// the new file is read from its start, whether it held more than the header when first
// found or only that at first. Taken for a copy of the log waiting for its truncation, it
// was read from its end once it stopped growing for the rotation grace: its lines lost.
// Driven by hand, on an injected clock.
func TestNewFileBeginsAsLog(t *testing.T) {
	for _, headerFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("header alone first %v", headerFirst), func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "access.log")
			w := create(t, log)
			writeLines(t, w, 0, 0) // the header
			c := newCollector()
			f, clock, _ := handDriven(t, log+"*", c.handle)
			daily := log + ".2026-11-30"
			if !rotatedName(filepath.Base(log), filepath.Base(daily)) {
				t.Fatalf("%s is not named as a rotated file of %s", daily, log)
			}
			d := create(t, daily)
			writeLines(t, d, 0, 0)
			if headerFirst {
				f.discover(false)
				f.readAll()
			}
			writeLines(t, d, 1000, 1100)
			f.discover(false)
			f.readAll()
			writeLines(t, w, 1, 10)
			writeLines(t, d, 1101, 1200)
			settle(f, clock)
			expectHeaderTwice(t, c, span{1000, 1200})
		})
	}
}

// TestResumeNewFileBeginsAsLog: TestNewFileBeginsAsLog across a restart. The daily file,
// made while the exporter was down, begins with all the log's position held (its header
// line) and has no position: it is no copy of the log, found at its path as it was, which
// holds other bytes past there, and is read from its start. Taken for logrotate's copy of
// the log, it was read from its end: its lines lost. Driven by hand, on an injected clock.
func TestResumeNewFileBeginsAsLog(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	w := create(t, log)
	writeLines(t, w, 0, 0) // the header
	c := newCollector()
	f, _, o := handDriven(t, log+"*", c.handle)
	f.Stop()
	d := create(t, log+".2026-11-30")
	writeLines(t, d, 0, 0)
	writeLines(t, d, 1000, 1100)
	writeLines(t, w, 1, 10)

	f = resumed(t, f, o, c.handle)
	for f.readAll() {
	}
	expectHeaderTwice(t, c, span{1000, 1100})
}

// expectHeaderTwice checks that c holds the log's lines 0-10 and the daily file's lines
// of daily, each once but the header, line 0, which both files begin with: twice, once of
// each file.
func expectHeaderTwice(t *testing.T, c *collector, daily span) {
	t.Helper()
	lost, dup, malformed := c.tally(span{0, 10}, daily)
	if lost != 0 || dup != 1 || malformed != 0 {
		t.Fatalf("lost %d, duplicated %d (want 1: the daily file's header), malformed %d", lost, dup, malformed)
	}
}

// TestLeftPruned: the files a follower closed after they left their path (Left) are
// forgotten once they are gone, deleted since (the kubelet compresses a container log's
// rotated file, then deletes it), while one still where it was when closed (a symlink's
// former target) or back at the path it was read under is kept: the list, in each
// snapshot, is not filled up to maxLeft with archives that cannot come back. A follower
// given such a list (Options.Left, from a snapshot) forgets the gone ones at its start.
// Driven by hand, on an injected clock.
func TestLeftPruned(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	c := newCollector()
	w := create(t, log)
	f, clock, o := handDriven(t, log, c.handle)
	const rotations = 3 * leftPruneMin
	kept := map[fileID]string{} // the archives still there
	n := 0
	for i := range rotations {
		writeLines(t, w, n+1, n+10)
		n += 10
		f.readAll()
		archive := fmt.Sprintf("%s.%d", log, i)
		rename(t, log, archive)
		w = create(t, log)
		f.discover(false)
		f.readAll()
		clock.Add(2 * time.Minute)
		f.discover(false)
		f.readAll()
		if i%leftPruneMin == 0 {
			fi, err := os.Stat(archive)
			if err != nil {
				t.Fatal(err)
			}
			kept[idOf(fi)] = archive
		} else if err := os.Remove(archive); err != nil {
			t.Fatal(err)
		}
	}
	c.expectExactly(t, span{1, n})
	remembered := func(f *Follower) map[fileID]string {
		out := map[fileID]string{}
		for _, p := range f.Left() {
			out[fileID{dev: p.Dev, ino: p.Ino}] = kept[fileID{dev: p.Dev, ino: p.Ino}]
		}
		return out
	}
	if left := remembered(f); len(left) > 2*leftPruneMin {
		t.Errorf("%d files remembered closed after %d rotations, %d of them still there: the gone ones are not forgotten", len(left), rotations, len(kept))
	} else {
		for id, archive := range kept {
			if _, ok := left[id]; !ok {
				t.Errorf("%s, still there, forgotten", archive)
			}
		}
	}

	f.Stop()
	o.FromBeginning, o.Resume, o.Left = false, f.Positions(), f.Left()
	next, err := newFollower(o, c.handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(next.Stop)
	if got := remembered(next); !maps.Equal(got, kept) {
		t.Errorf("restored with %d files closed before, %d of them still there (%v); remembers %d, of them %v", len(o.Left), len(kept), slices.Sorted(maps.Values(kept)), len(got), slices.Sorted(maps.Values(got)))
	}
}

// copytruncate does as logrotate's copytruncate to the log at log, whose writer is w,
// once lines 101-120 were written to it: a copy of it made at to, then the log
// truncated, and lines 121-130 written to it since.
func copytruncate(t *testing.T, w *os.File, log, to string) {
	t.Helper()
	writeLines(t, w, 101, 120)
	copyFile(t, log, to)
	if err := w.Truncate(0); err != nil {
		t.Fatal(err)
	}
	writeLines(t, w, 121, 130)
}

// TestResumeCopyFoundAfterStart: TestResumeCopyAfterTruncation with the copy found after
// the restart, within the rotation grace (the follower stopped between its read of the
// log's truncation and its find of the copy; here the copy is moved into the glob after
// the start): the copy is judged against what the log held before its truncation
// (Options.Truncated) as a copy found while running is, and read from where the log was
// read up to, not from its start, whose lines were counted. Driven by hand, on an
// injected clock.
func TestResumeCopyFoundAfterStart(t *testing.T) {
	dir, log, w := accessLog(t)
	c := newCollector()
	f, clock, o := handDriven(t, log+"*", c.handle)
	copytruncate(t, w, log, filepath.Join(dir, "tmp"))
	f.readAll()
	f = resumed(t, f, o, c.handle)
	f.readAll()
	rename(t, filepath.Join(dir, "tmp"), log+".1") // found after the restart, within the grace
	clock.Add(time.Second)
	f.discover(false)
	settle(f, clock)
	c.expectExactly(t, span{1, 130})
}

// TestNewFileShorterBeginsAsLog: a glob that matches rotated names finds a new file named
// as one of the log's rotated files that begins with all the log's first KiB (a header of
// ten lines that every file of the program begins with) but holds less than the log was
// read up to, and other lines past its header: no copy of the log, read on at its path as
// it was, even in part (a copy being written holds what the log holds as far as it goes).
// It is read from its start, whether the follower runs on past the rotation grace or a
// restart takes its positions within it. Taken for a copy of part of what was read, it
// was held at its end: read from there, its lines lost. Driven by hand, on an injected
// clock.
func TestNewFileShorterBeginsAsLog(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart %v", restart), func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "access.log")
			w := create(t, log)
			writeLines(t, w, 0, 100) // lines 0-9, past the first KiB, the header
			c := newCollector()
			f, clock, o := handDriven(t, log+"*", c.handle)
			d := create(t, log+".2026-11-30")
			writeLines(t, d, 0, 9)
			writeLines(t, d, 1000, 1010)
			f.discover(false)
			f.readAll()
			if restart {
				f = resumed(t, f, o, c.handle)
			}
			settle(f, clock)
			lost, dup, malformed := c.tally(span{0, 100}, span{1000, 1010})
			if lost != 0 || dup != 10 || malformed != 0 {
				t.Fatalf("lost %d, duplicated %d (want 10: the new file's header), malformed %d", lost, dup, malformed)
			}
		})
	}
}
