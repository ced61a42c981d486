package follow

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// Followers that share a Files keep at most its bound of files open: the others wait,
// each counted once as an open error and warned of once per follower with how many, not
// at each scan, and one is opened when a file read is deleted and closed after the
// rotation grace. Stop gives every place back. The test makes the scans itself, with a
// test clock.
func TestFilesBound(t *testing.T) {
	cases := []struct {
		name  string
		dirs  []int // files per follower, each of one line, in a directory of its own
		bound int
	}{
		{"fewer than the bound", []int{3}, 4},
		{"as many as the bound", []int{4}, 4},
		{"more than the bound", []int{10}, 4},
		{"followers sharing it", []int{5, 5}, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := testclock.New(time.Unix(1_700_000_000, 0))
			s := NewFiles(c.bound)
			var logs []*bytes.Buffer
			var fs []*Follower
			read, total := 0, 0
			for d, n := range c.dirs {
				dir := t.TempDir()
				for i := range n {
					if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d.log", i)), fmt.Appendf(nil, "line %d %d\n", d, i), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				total += n
				var log bytes.Buffer
				f, err := newFollower(Options{Path: filepath.Join(dir, "*.log"), FromBeginning: true, Files: s, noNotify: true,
					now: clock.Now, RotationGrace: time.Minute, Logger: timelessLogger(&log)}, func(string, []byte) { read++ })
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(f.Stop)
				logs, fs = append(logs, &log), append(fs, f)
			}
			turn := func() {
				for _, f := range fs {
					f.discover(false)
				}
				for _, f := range fs {
					f.readAll()
				}
			}
			for _, f := range fs {
				f.discover(true)
			}
			turn() // a second scan warns and counts nothing again
			waits := func() (n uint64) {
				for _, f := range fs {
					n += f.c.errors[reasonOpen].Load()
				}
				return n
			}
			open := min(c.bound, total)
			if s.taken() != open || read != open || waits() != uint64(total-open) {
				t.Fatalf("%d places taken, %d files read, %d wait: want %d, %d, %d", s.taken(), read, waits(), open, open, total-open)
			}
			for i, log := range logs {
				warned, want := strings.Count(log.String(), `msg="files wait to be opened`), 0
				if fs[i].c.errors[reasonOpen].Load() > 0 {
					want = 1
				}
				if warned != want {
					t.Errorf("follower %d: %d warnings that files wait, want %d", i, warned, want)
				}
			}

			// A file read, deleted, gives its place to one that waits once it is closed.
			gone := fs[0].files[0].path
			if err := os.Remove(gone); err != nil {
				t.Fatal(err)
			}
			turn()
			clock.Add(2 * time.Minute)
			turn()
			turn()
			if want := open + min(total-open, 1); read != want || s.taken() != min(c.bound, total-1) {
				t.Errorf("after %s was deleted: %d files read, %d places taken; want %d, %d", filepath.Base(gone), read, s.taken(), want, min(c.bound, total-1))
			}
			if waits() != uint64(total-open) {
				t.Errorf("%d open errors, want the %d files that waited counted once", waits(), total-open)
			}
			if total-open == 1 && !strings.Contains(logs[0].String(), `msg="no file waits to be opened any more"`) {
				t.Errorf("the log does not say that no file waits any more:\n%s", logs[0])
			}
			for _, f := range fs {
				f.Stop()
			}
			if s.taken() != 0 {
				t.Errorf("%d places taken after Stop, want 0", s.taken())
			}
		})
	}
}

// TestFilesWaitedFromStart: a file there at the start that waited for a place is read
// from where the first scan would have read it, its end with start_at: end, not judged
// as a file found after the start, which a glob reads from its start.
func TestFilesWaitedFromStart(t *testing.T) {
	for _, c := range []struct {
		name          string
		fromBeginning bool
		want          []string
	}{
		{"start at end", false, []string{"b after the start"}},
		{"start at the beginning", true, []string{"a before the start", "b before the start", "b after the start"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, n := range []string{"a", "b"} {
				if err := os.WriteFile(filepath.Join(dir, n+".log"), []byte(n+" before the start\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			clock := testclock.New(time.Unix(1_700_000_000, 0))
			f := discovered(t, Options{Path: filepath.Join(dir, "*.log"), FromBeginning: c.fromBeginning, Files: NewFiles(1), noNotify: true,
				now: clock.Now, RotationGrace: time.Minute, Logger: testLogger(t)}, func(_ string, line []byte) { got = append(got, string(line)) })
			f.readAll()
			b, err := os.OpenFile(filepath.Join(dir, "b.log"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.WriteString("b after the start\n"); err != nil {
				t.Fatal(err)
			}
			_ = b.Close()
			if err := os.Remove(filepath.Join(dir, "a.log")); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				for range 2 {
					f.discover(false)
					f.readAll()
				}
				clock.Add(2 * time.Minute) // a.log closed, b.log judged were it found after the start
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("read %q, want %q", got, c.want)
			}
		})
	}
}

// TestFilesResumedPastBound: a restart finds at their paths files of positions the bound
// leaves no place for: each is opened by the first scan whatever the bound and read on
// from its position, as a file of a position rotated away is, not left to wait, counted,
// then found by the look for rotated files and logged as rotated away. A file without a
// position that waits is read from its start once a place frees, as the first scan reads
// such a file (a.log).
func TestFilesResumedPastBound(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		file, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := file.WriteString(text); err != nil {
			t.Fatal(err)
		}
		_ = file.Close()
	}
	write("b.log", "b 1\n")
	write("c.log", "c 1\n")
	var got []string
	h := func(_ string, line []byte) { got = append(got, string(line)) }
	s := NewFiles(2)
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	var log bytes.Buffer
	o := Options{Path: filepath.Join(dir, "*.log"), FromBeginning: true, Files: s, noNotify: true, now: clock.Now,
		RotationGrace: time.Minute, Logger: timelessLogger(&log)}
	f := discovered(t, o, h)
	f.readAll()
	// Both wait, without a position: b.log and c.log hold the places. a.log takes one at
	// the restart before c.log is looked at.
	write("a.log", "a 1\n")
	write("d.log", "d 1\n")
	write("b.log", "b 2\n")
	write("c.log", "c 2\n")
	f.discover(false)
	g := resumed(t, f, o, h)
	if s.taken() != 3 || len(g.waiting) != 1 || g.c.errors[reasonOpen].Load() != 1 {
		t.Errorf("after the restart: %d places taken, %d files wait, %d open errors; want 3, 1 (d.log), 1", s.taken(), len(g.waiting), g.c.errors[reasonOpen].Load())
	}
	if strings.Contains(log.String(), "rotated away") {
		t.Errorf("a file at its path is logged as rotated away:\n%s", log.String())
	}
	g.readAll()
	// Two places are taken once one of the three files closes: d.log waits for another.
	for _, gone := range []string{"b.log", "c.log"} {
		if err := os.Remove(filepath.Join(dir, gone)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		for range 2 {
			g.discover(false)
			g.readAll()
		}
		clock.Add(2 * time.Minute)
	}
	if want := []string{"b 1", "c 1", "a 1", "b 2", "c 2", "d 1"}; !slices.Equal(got, want) {
		t.Errorf("read %q, want %q", got, want)
	}
}

// TestFilesFirstPastBound: each follower opens its first file whatever the bound, as it
// makes its inotify instance: under a limit that leaves the inputs a place or two, taken
// by the instances, an input would read nothing. Its second file waits.
func TestFilesFirstPastBound(t *testing.T) {
	for _, c := range []struct {
		name      string
		followers int
		notify    bool
	}{
		{"the inotify instance takes the place", 1, true},
		{"another follower takes it", 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewFiles(1)
			read, held := 0, 0
			for range c.followers {
				dir := t.TempDir()
				for _, n := range []string{"a.log", "b.log"} {
					if err := os.WriteFile(filepath.Join(dir, n), []byte(n+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				f := discovered(t, Options{Path: filepath.Join(dir, "*.log"), FromBeginning: true, Files: s, noNotify: !c.notify,
					Logger: testLogger(t)}, func(string, []byte) { read++ })
				f.readAll()
				if f.w != nil {
					held++
				}
				held += len(f.files)
			}
			if read != c.followers || s.taken() != held {
				t.Errorf("%d files read, %d places taken; want one a follower, %d (its files and inotify instances)", read, s.taken(), held)
			}
		})
	}
}
