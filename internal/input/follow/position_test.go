package follow

import (
	"cmp"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// touch sets the modification time of path to now plus age, as if it was last written
// then: rotations come hours apart.
func touch(t *testing.T, path string, age time.Duration) {
	t.Helper()
	at := time.Now().Add(age)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// TestResume: a follower started with the positions of one that stopped hands on every
// line written since exactly once, whatever happened to the files meanwhile, and from
// the position even with start_at: end, and those of a path in the order they were
// written, across the files it was rotated to. Before the first line it tells Started
// where it reads each file from: the file of the position from there, wherever it is now,
// and the others from their start.
func TestResume(t *testing.T) {
	cases := []struct {
		name string
		glob bool
		// rotatedAtCut: lines 91..100 are written to a new file, the first renamed away
		// before the positions are taken, which it is still read at then.
		// log is the log's name in its directory; "" is access.log.
		log          string
		rotatedAtCut bool
		// unresumed is how many positions are not read on from: their file was
		// truncated (read from its start) or is gone.
		unresumed int
		// taken is how long before the restart the positions were taken, earlier than
		// the last writes down backdates; 0: a second.
		taken time.Duration
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
		// Older archives, a compressed one and another log of the name's prefix, written
		// while down too, are not read; nor the file the snapshot's was rotated from.
		name: "rotated twice by rename, numbered: the file between is read from its start",
		down: func(t *testing.T, dir string, w *os.File) {
			log := filepath.Join(dir, "access.log")
			decoys := map[string]time.Duration{"access.log.1": -3 * time.Hour, "access.log.4.gz": 0, "access.log.json": 0, "access.log.bak": 0}
			for name, age := range decoys {
				writeLines(t, create(t, filepath.Join(dir, name)), 1, 10)
				touch(t, filepath.Join(dir, name), age)
			}
			writeLines(t, w, 101, 120)
			touch(t, log, -2*time.Hour)
			rename(t, log+".1", log+".2")
			rename(t, log, log+".1")
			writeLines(t, create(t, log), 121, 130)
			touch(t, log, -time.Hour)
			rename(t, log+".2", log+".3")
			rename(t, log+".1", log+".2")
			rename(t, log, log+".1")
			writeLines(t, create(t, log), 131, 150)
		},
		files: 3,
		taken: 150 * time.Minute,
	}, {
		name: "rotated three times by rename, dated: the files between are read in their order",
		down: func(t *testing.T, dir string, w *os.File) {
			log := filepath.Join(dir, "access.log")
			writeLines(t, create(t, log+"-20240228"), 1, 10)
			touch(t, log+"-20240228", -4*time.Hour)
			writeLines(t, w, 101, 110)
			touch(t, log, -3*time.Hour)
			rename(t, log, log+"-20240301")
			writeLines(t, create(t, log), 111, 120)
			touch(t, log, -2*time.Hour)
			rename(t, log, log+"-20240302")
			writeLines(t, create(t, log), 121, 130)
			touch(t, log, -time.Hour)
			rename(t, log, log+"-20240303")
			writeLines(t, create(t, log), 131, 150)
		},
		files: 4,
		taken: 210 * time.Minute,
	}, {
		// Monthly, with logrotate's extension (access-202403.log), compressed but the
		// newest archive (delaycompress): the file between is read.
		name: "rotated twice by rename, monthly before the extension, the position's file compressed",
		down: func(t *testing.T, dir string, w *os.File) {
			log := filepath.Join(dir, "access.log")
			touch(t, log, -2*time.Hour)
			rename(t, log, filepath.Join(dir, "access-202402.log"))
			writeLines(t, create(t, log), 101, 130)
			touch(t, log, -time.Hour)
			rename(t, log, filepath.Join(dir, "access-202403.log"))
			writeLines(t, create(t, log), 131, 150)
			data, err := os.ReadFile(filepath.Join(dir, "access-202402.log"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "access-202402.log.gz"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(dir, "access-202402.log")); err != nil {
				t.Fatal(err)
			}
		},
		files:     2,
		unresumed: 1,
		taken:     150 * time.Minute,
	}, {
		// The kubelet compresses the older of its rotated files: the position's file is
		// gone, and the file rotated after it is found by its last write after the
		// positions were taken; an archive written before is not read.
		name: "rotated twice by rename, the position's file compressed: the file between is read",
		down: func(t *testing.T, dir string, w *os.File) {
			log := filepath.Join(dir, "0.log")
			writeLines(t, create(t, log+".20240229-120000"), 1, 10)
			touch(t, log+".20240229-120000", -3*time.Hour)
			rename(t, log, log+".20240301-120000")
			writeLines(t, create(t, log), 101, 130)
			data, err := os.ReadFile(log + ".20240301-120000")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(log+".20240301-120000.gz", data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(log + ".20240301-120000"); err != nil {
				t.Fatal(err)
			}
			rename(t, log, log+".20240302-120000")
			writeLines(t, create(t, log), 131, 150)
		},
		log:       "0.log",
		files:     2,
		unresumed: 1,
	}, {
		// The log's copy is newer than the file rotated away before the positions: it is
		// read from the position of the file it copies, where nothing was written since.
		name:         "a file rotated away at the cut, the log copied and truncated while down",
		rotatedAtCut: true, unresumed: 1,
		down: func(t *testing.T, dir string, w *os.File) {
			log := filepath.Join(dir, "access.log")
			rename(t, log+".1", log+".2")
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(log+".1", data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(log, 0); err != nil {
				t.Fatal(err)
			}
			writeLines(t, w, 101, 150)
		},
		files: 3,
	}, {
		// logrotate's copytruncate: the copy holds the lines written after the position
		// until it was made, and the log those written after it was truncated.
		name: "copied and truncated while down: the copy is read from the position",
		down: func(t *testing.T, dir string, w *os.File) {
			log := filepath.Join(dir, "access.log")
			writeLines(t, create(t, log+".1"), 1, 10)
			touch(t, log+".1", -time.Hour)
			writeLines(t, w, 101, 120)
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			rename(t, log+".1", log+".2")
			if err := os.WriteFile(log+".1", data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(log, 0); err != nil {
				t.Fatal(err)
			}
			writeLines(t, w, 121, 150)
		},
		files:     2,
		unresumed: 1,
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
			log := filepath.Join(dir, cmp.Or(tc.log, "access.log"))
			w := create(t, log)
			o := modes[1].options(log)
			before := 100 // written before the first follower starts
			if tc.rotatedAtCut {
				before = 90 // the file rotated is still read at the cut: options' grace
			}
			writeLines(t, w, 1, before)
			if tc.glob {
				o.Path = filepath.Join(dir, "*.log")
			}
			var hold sync.RWMutex
			o.Hold = hold.RLocker()
			o.FromBeginning = true
			first := newCollector()
			f := start(t, o, first.handle)
			if tc.rotatedAtCut {
				waitFor(t, "the lines of the file rotated", func() bool { return first.has(1, before) })
				touch(t, log, -2*time.Hour)
				rename(t, log, log+".1")
				w = create(t, log)
				writeLines(t, w, 91, 100)
			}
			waitFor(t, "the first lines", func() bool { return first.has(1, 100) })
			hold.Lock()
			positions := f.Positions()
			hold.Unlock()
			f.Stop()
			first.expectExactly(t, span{1, 100})
			if tc.rotatedAtCut && len(positions) != 2 {
				t.Fatalf("positions %+v, want the rotated file's and the log's", positions)
			}

			// A file's times come from the kernel's coarse clock, behind time.Now by up to
			// a tick: a second before, the files written while down are written after.
			taken := time.Now().Add(-cmp.Or(tc.taken, time.Second))
			tc.down(t, dir, w)
			o.FromBeginning = false
			o.Resume, o.Taken = positions, taken
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
			var mu sync.Mutex
			last := map[string]int{} // by path, the number of the last line handed on
			start(t, o, func(path string, line []byte) {
				mu.Lock()
				if n, ok := parseNumbered(line); ok {
					if n < last[path] {
						t.Errorf("line %d of %s handed on after line %d: out of the order written", n, path, last[path])
					}
					last[path] = n
				}
				mu.Unlock()
				next.handle(path, line)
			})
			waitFor(t, "the lines written while down", func() bool { return next.has(101, 150) })
			next.expectExactly(t, span{101, 150})
			if len(from) != 1 || len(from[0]) != tc.files {
				t.Fatalf("Started with %+v, want once with %d files", from, tc.files)
			}
			for _, p := range from[0] {
				copied := slices.ContainsFunc(positions, func(q Position) bool {
					return q.Path == p.Path && q.Offset == p.Offset && q.Head == p.Head
				})
				if !copied && p.Offset != 0 {
					t.Errorf("Started with %+v: neither a position resumed, nor a copy of its file read from there, nor a file's start (positions %+v)", p, positions)
				}
			}
			unresumed := 0
			for _, p := range positions {
				if !slices.Contains(from[0], p) {
					unresumed++
				}
			}
			if unresumed != tc.unresumed {
				t.Errorf("Started with %+v: %d of the positions %+v not resumed, want %d", from[0], unresumed, positions, tc.unresumed)
			}
		})
	}
}

// TestRotatedName: the names a rotation gives a log are numbered (logrotate's .N), dated
// (logrotate's dateext in its default and hourly formats and those its dateformat makes
// of a date and a time, or the seconds since 1970) or timed (the kubelet's); a
// compressed archive, another log (worker-1-2 beside worker-1) or a copy is not one of
// them.
func TestRotatedName(t *testing.T) {
	for _, tc := range []struct {
		base, name string
		want       bool
	}{
		{"access.log", "access.log.1", true},
		{"access.log", "access.log.12", true},
		{"access.log", "access.log.0", true},
		{"access.log", "access.log-20240301", true},
		{"access.log", "access.log-2024-03-01", true},
		{"access.log", "access.log.2024.03.01", true},
		{"access.log", "access.log_20240301.1", true},
		{"access.log", "access.log-2024030113", true},
		{"access.log", "access.log-20240301-13", true},
		{"access.log", "access.log-20240301_13:05", true},
		{"access.log", "access.log-20240301135959", true},
		{"access.log", "access.log-1709294400", true},
		{"0.log", "0.log.20240301-120000", true},
		{"worker-1", "worker-1.2", true},
		{"worker-1", "worker-1-20240301", true},
		{"worker-1", "worker-1-2", false},
		{"worker-1", "worker-1-12", false},
		{"worker-1", "worker-1_2", false},
		{"worker-1", "worker-1-2.1", false},
		{"worker-1", "worker-1-2-3", false},
		{"app", "app-2024", false},
		{"access.log", "access.log-20241301", false},
		{"access.log", "access.log-20240332", false},
		{"access.log", "access.log-20240301-25", false},
		{"access.log", "access.log-20240301-1", false},
		{"access.log", "access.log-20240301..1", false},
		{"access.log", "access.log-170929440", false},
		{"access.log", "access.log", false},
		{"access.log", "access.log.", false},
		{"access.log", "access.log.-", false},
		{"access.log", "access.log.1.gz", false},
		{"access.log", "access.log-20240301.zst", false},
		{"access.log", "access.log.json", false},
		{"access.log", "access.log.bak", false},
		{"access.log", "access.logs.1", false},
		{"access.log", "other.access.log.1", false},
		{"0.log", "0.log.20240301-120000.gz", false},
		{"0.log", "0.log.20240301-120000.tmp", false},
		// Monthly (dateformat -%Y%m) and weekly (-%Y-%V) dates.
		{"access.log", "access.log-202403", true},
		{"access.log", "access.log-2024-03", true},
		{"access.log", "access.log-2024-03.1", true},
		{"access.log", "access.log-2024-53", true},
		{"access.log", "access.log-2024-W09", true},
		{"access.log", "access.log-2024-54", false},
		{"access.log", "access.log-2024-00", false},
		{"access.log", "access.log-2024-W13-01", false},
		{"access.log", "access.log-2024-3", false},
		{"access.log", "access.log-2024-03-1", false},
		// logrotate's extension: the suffix goes before it.
		{"access.log", "access.1.log", true},
		{"access.log", "access-20240301.log", true},
		{"access.log", "access-202403.log", true},
		{"app.out.log", "app.out.3.log", true},
		{"access.log", "access.1.log.gz", false},
		{"access.log", "access.log.log", false},
		{"access.log", "access-2.log", false},
		{"access.log", "error.1.log", false},
		{"worker-1.log", "worker-1-2.log", false},
		{"access.log.1", "access.log.2.1", false},
		{".log", ".1.log", false},
	} {
		if got := rotatedName(tc.base, tc.name); got != tc.want {
			t.Errorf("rotatedName(%q, %q) = %v, want %v", tc.base, tc.name, got, tc.want)
		}
		if tc.want && !slices.Contains(rotatedBases(tc.name), tc.base) {
			t.Errorf("rotatedBases(%q) = %q, which lacks %q", tc.name, rotatedBases(tc.name), tc.base)
		}
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
	clock := clocked(&o)
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
	waitRetired(t, f, clock, "the last line", func() bool { mu.Lock(); defer mu.Unlock(); return len(starts) == 4 })
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
	f = start(t, o, func(_ string, line []byte) { mu.Lock(); defer mu.Unlock(); again = append(again, string(line)) })
	waitRetired(t, f, clock, "the lines from two", func() bool { mu.Lock(); defer mu.Unlock(); return len(again) == 3 })
	if got := strings.Join(again, ","); got != "two,three,four" {
		t.Errorf("resumed at line two, read %s, want two,three,four", got)
	}
}

// TestOpenListedSwappedFIFO: a file found rotated away, by the device and inode of a
// position or as one rotated from its path while the exporter was down, is opened after
// the listing looked at it; a FIFO renamed over its name in between (whoever can write in
// the directory may) is no file to read, and its open must not wait for a writer, for
// ever, holding up the follower's start.
func TestOpenListedSwappedFIFO(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(dir string, fi os.FileInfo, readDir func(string) ([]os.DirEntry, error)) *os.File
	}{
		{"by its position", func(dir string, fi os.FileInfo, readDir func(string) ([]os.DirEntry, error)) *os.File {
			return newListings(readDir).openByID(dir, idOf(fi))
		}},
		{"rotated from its path", func(dir string, fi os.FileInfo, readDir func(string) ([]os.DirEntry, error)) *os.File {
			for _, a := range rotatedAfter(filepath.Join(dir, "a.log"), fi.ModTime().Add(-time.Hour), nil, readDir) {
				return a.file
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, fifo := filepath.Join(dir, "a.log.1"), filepath.Join(dir, "p")
			if err := os.WriteFile(path, []byte("one\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			// The listing as it was when the file was there, the FIFO put in its place since.
			listed := func(string) ([]os.DirEntry, error) {
				if err := os.Rename(fifo, path); err != nil {
					return nil, err
				}
				return []os.DirEntry{fs.FileInfoToDirEntry(fi)}, nil
			}
			done := make(chan *os.File, 1)
			go func() { done <- tc.open(dir, fi, listed) }()
			select {
			case f := <-done:
				if f != nil {
					f.Close()
					t.Errorf("opened %s, a FIFO, as the file", f.Name())
				}
			case <-givenUp(t):
				// A writer lets the blocked open return, so the test ends.
				if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				t.Fatal("still waits on the FIFO")
			}
		})
	}
}

// TestDrained: the files a follower lists as drained are those that left their path and
// were read to their end, at the same cut as its positions and after Stop: not the file
// at the path, nor a rotated one a late writer wrote to since it was read.
func TestDrained(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	old := create(t, log)
	writeLines(t, old, 1, 10)
	f, _, _ := handDriven(t, log, newCollector().handle)
	rename(t, log, log+".20240301-120000")
	w := create(t, log)
	writeLines(t, w, 11, 20)
	f.discover(false)
	f.readAll()
	f.readAll()
	drainedOf := func() []int64 {
		var out []int64
		for _, p := range f.Drained() {
			if !slices.Contains(f.Positions(), p) {
				t.Errorf("drained %+v, not among the positions %+v", p, f.Positions())
			}
			out = append(out, p.Offset)
		}
		return out
	}
	size := int64(10 * len(numbered(1)))
	if got := drainedOf(); !slices.Equal(got, []int64{size}) {
		t.Fatalf("drained at %v, want the rotated file's end %d", got, size)
	}
	writeLines(t, old, 21, 21) // a late writer, not read yet
	if got := drainedOf(); len(got) != 0 {
		t.Errorf("drained at %v with a line of the rotated file not read", got)
	}
	f.readAll()
	f.Stop()
	if got := drainedOf(); !slices.Equal(got, []int64{size + int64(len(numbered(21)))}) {
		t.Errorf("drained after Stop at %v, want the rotated file's end", got)
	}
}

// TestOpenListed: a file a listing found is opened only as that file; one gone since
// (a rotator removing its oldest archive) or replaced is none, without an error, which
// archiveDir would warn of as an archive that cannot be read.
func TestOpenListed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string)
		opened bool
	}{
		{name: "as listed", change: func(*testing.T, string) {}, opened: true},
		{name: "removed", change: func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "replaced", change: func(t *testing.T, path string) {
			writeLines(t, create(t, path+".new"), 1, 1)
			rename(t, path+".new", path)
		}},
		{name: "a directory in its place", change: func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "access.log.2.gz")
			writeLines(t, create(t, path), 1, 1)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(t, path)
			file, err := openListed(dir, "access.log.2.gz", idOf(fi))
			if file != nil {
				_ = file.Close()
			}
			if (file != nil) != tc.opened || err != nil {
				t.Errorf("openListed = %v, %v; want a file %v, no error", file, err, tc.opened)
			}
		})
	}
}
