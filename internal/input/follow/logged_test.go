package follow

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each file is logged at info as it is picked up, under the input its caller names: those
// present at start with the offset they are read from, and those that appear later (a
// path missing at start, a glob's new file) when a scan finds them. The test makes the
// scans itself, so no clock or file event is waited for.
func TestPickedUpFilesLogged(t *testing.T) {
	cases := []struct {
		name, path string // path is relative to the test's directory
	}{
		{"file", "access.log"},
		{"glob", "*.log"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var log bytes.Buffer
			f, err := newFollower(Options{Path: filepath.Join(dir, c.path), Logger: timelessLogger(&log), noNotify: true}, func(string, []byte) {})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(f.Stop)
			if c.name == "glob" {
				if err := os.WriteFile(filepath.Join(dir, "old.log"), []byte("a line\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f.discover(true)
			if err := os.WriteFile(filepath.Join(dir, "access.log"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			f.discover(false)
			f.discover(false) // a file already followed is not logged again

			var want []string
			if c.name == "glob" {
				want = append(want, fmt.Sprintf(`level=INFO msg="following file" input=web path=%s offset=7`, filepath.Join(dir, "old.log")))
			}
			want = append(want, fmt.Sprintf(`level=INFO msg="following new file" input=web path=%s offset=0`, filepath.Join(dir, "access.log")))
			if got := strings.TrimSuffix(log.String(), "\n"); got != strings.Join(want, "\n") {
				t.Errorf("log:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}

// timelessLogger logs at info to w as the program does, under the input "web", without
// the time, so that a line is the same at every run.
func timelessLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: timeless})).With("input", "web")
}

// timeless leaves the time out of a log line.
func timeless(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// A file of a position to resume from that left its path is looked for in its directory,
// and the log says what happened to it in the terms of where the position came from: a
// snapshot saved before the exporter was down, or a follower stopped at a reload that
// handed its positions over. One that had left its path and was read to its end when
// the position was taken (Options.Drained: the kubelet compresses such a file at its next
// rotation) is said gone at debug, without a loss no line of it is known to have had.
// One whose inode the new file at its path took (a file system gives a freed inode at
// once), found by the first scan with other first bytes, is said rewritten, its lines
// after the position lost as when it is truncated and no copy of it is found: the two
// are not told apart; unless its copy is read from the position (copytruncate's), which
// lost nothing. So is one whose inode a file beside it took (the archive of a later
// rotated file), found by the restart's search by inode: gone at debug too, when drained.
// The test makes the first scan itself.
func TestResumeRotatedLogged(t *testing.T) {
	cases := []struct {
		name     string
		handOver bool
		gone     bool // the rotated file was deleted too
		drained  bool // the position was of a file read to its end after it left its path
		reused   bool // the new file at the path took the position's file's inode
		copied   bool // the file truncated, its copy beside it (copytruncate)
		archived bool // the rotated file's inode taken by an archive compressed beside it
		want     string
	}{
		{"snapshot, rotated", false, false, false, false, false, false, "file rotated away while the exporter was down, reading it to its end from the saved position"},
		{"snapshot, gone", false, true, false, false, false, false, "the file of a saved position is gone: the lines written to it after the position are lost"},
		{"snapshot, drained and gone", false, true, true, false, false, false, "the file of a saved position is gone, read to its end after it left its path before the snapshot (compressed or removed since)"},
		{"hand-over, rotated", true, false, false, false, false, false, "file rotated away, handed over at a reload: reading it to its end from where the stopped follower left off"},
		{"hand-over, gone", true, true, false, false, false, false, "the file of a position handed over at a reload is gone: the lines written to it after the position are lost"},
		{"snapshot, its inode reused", false, true, false, true, false, false, "the file of a saved position was rewritten: the lines written to it after the position are lost"},
		{"snapshot, drained, its inode reused", false, true, true, true, false, false, "the file of a saved position is gone, read to its end after it left its path before the snapshot (compressed or removed since)"},
		{"hand-over, its inode reused", true, true, false, true, false, false, "the file of a position handed over at a reload was rewritten: the lines written to it after the position are lost"},
		{"snapshot, truncated, its copy beside", false, false, false, true, true, false, "file rotated away while the exporter was down after the file of a saved position, reading it from its start"},
		{"snapshot, its inode taken by an archive", false, true, false, false, false, true, "the file of a saved position was rewritten: the lines written to it after the position are lost"},
		{"snapshot, drained, its inode taken by an archive", false, true, true, false, false, true, "the file of a saved position is gone, read to its end after it left its path before the snapshot (compressed or removed since)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, rotated := filepath.Join(dir, "access.log"), filepath.Join(dir, "access.log.1")
			writeLines(t, create(t, path), 1, 10)
			p := positionAtEnd(t, path)
			taken := time.Now().Add(-time.Second) // see TestResume
			attrs := fmt.Sprintf("path=%s offset=%d", path, p.Offset)
			// The new file at the path, read from its start, is logged first.
			var picked string
			switch {
			case c.copied:
				copyFile(t, path, rotated)
				if err := os.WriteFile(path, numbered(11), 0o644); err != nil {
					t.Fatal(err)
				}
				picked = fmt.Sprintf("level=INFO msg=\"following file\" input=web path=%s offset=0\n", path)
				attrs = fmt.Sprintf("path=%s file=%s offset=%d", path, rotated, p.Offset)
			case c.reused:
				// Rewritten in place, the first scan finds at the path what it finds when
				// the new log took the inode of the position's file, removed.
				if err := os.WriteFile(path, numbered(11), 0o644); err != nil {
					t.Fatal(err)
				}
				picked = fmt.Sprintf("level=INFO msg=\"following file\" input=web path=%s offset=0\n", path)
			case c.archived:
				// Renamed, then compressed and removed, its inode taken by the archive of
				// a later rotated file (the kubelet compresses one at each rotation),
				// which a restart finds by the inode in the log's directory: written in
				// place, the file is what the file system makes of that.
				rename(t, path, rotated)
				writeArchive(t, rotated, numbered(12), "gzip")
				rename(t, rotated, filepath.Join(dir, "access.log.2.gz"))
			case c.gone:
				rename(t, path, rotated)
				if err := os.Remove(rotated); err != nil {
					t.Fatal(err)
				}
			default:
				rename(t, path, rotated)
				attrs = fmt.Sprintf("path=%s file=%s offset=%d", path, rotated, p.Offset)
			}
			var log bytes.Buffer
			o := Options{Path: path, Logger: timelessLogger(&log), noNotify: true, Resume: []Position{p}, HandOver: c.handOver, Taken: taken}
			level := "INFO"
			if c.drained {
				o.Drained, level = []Position{p}, "DEBUG"
				o.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: timeless})).With("input", "web")
			}
			f, err := newFollower(o, func(string, []byte) {})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(f.Stop)
			f.discover(true)
			f.resumeRotated()
			want := picked + fmt.Sprintf("level=%s msg=%q input=web %s", level, c.want, attrs)
			if got := strings.TrimSuffix(log.String(), "\n"); got != want {
				t.Errorf("log:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// positionAtEnd is where a follower started at path's end (start_at: end) stands.
func positionAtEnd(t *testing.T, path string) Position {
	t.Helper()
	f, err := newFollower(Options{Path: path, Logger: testLogger(t), noNotify: true}, func(string, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	f.discover(true)
	ps := f.Positions()
	if len(ps) != 1 {
		t.Fatalf("positions %+v, want one of %s", ps, path)
	}
	return ps[0]
}

// A file found truncated whose copy a glob of the rotated names finds at the first scan,
// read from the position (copyOf), lost no line: the restart says nothing is lost.
func TestResumeCopyFoundByGlobNotLost(t *testing.T) {
	dir := t.TempDir()
	path, rotated := filepath.Join(dir, "access.log"), filepath.Join(dir, "access.log.1")
	writeLines(t, create(t, path), 1, 10)
	p := positionAtEnd(t, path)
	taken := time.Now().Add(-time.Second) // see TestResume
	copyFile(t, path, rotated)
	if err := os.WriteFile(path, numbered(11), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	f, err := newFollower(Options{Path: filepath.Join(dir, "access.log*"), Logger: timelessLogger(&log), noNotify: true, Resume: []Position{p}, Taken: taken}, func(string, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	f.discover(true)
	f.resumeRotated()
	want := fmt.Sprintf("level=INFO msg=\"following file\" input=web path=%s offset=0\nlevel=INFO msg=\"following file\" input=web path=%s offset=%d", path, rotated, p.Offset)
	if got := strings.TrimSuffix(log.String(), "\n"); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
}

// The archives a glob matches as files of their own (access.log.1 of `access.log*`), read
// to their end and removed while the exporter was down (logrotate's rotate count), lost no
// line: the restart says so at debug, not that lines are lost. One written to after it
// was read (a writer that had not reopened the log yet) may have lost lines: said at info.
func TestRemovedArchiveOfGlobLogged(t *testing.T) {
	for _, c := range []struct {
		name      string
		lateWrite bool
		want      string
	}{
		{"read to its end", false, `level=DEBUG msg="the file of a saved position is gone, an archive read to its end before the snapshot (removed or compressed since)"`},
		{"written after it was read", true, `level=INFO msg="the file of a saved position is gone: the lines written to it after the position are lost"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			log, archive := filepath.Join(dir, "access.log"), filepath.Join(dir, "access.log.1")
			writeLines(t, create(t, archive), 1, 10)
			writeLines(t, create(t, log), 11, 20)
			col := newCollector()
			f, _, o := handDriven(t, filepath.Join(dir, "access.log*"), col.handle)
			col.expectExactly(t, span{1, 20})
			if c.lateWrite {
				writeLines(t, create(t, archive), 21, 21)
			}
			f.Stop()
			taken := time.Now().Add(-time.Second) // see TestResume
			if err := os.Remove(archive); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			o.Logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: timeless})).With("input", "web")
			o.FromBeginning, o.Resume, o.Drained, o.Taken = false, f.Positions(), f.Drained(), taken
			g := discovered(t, o, col.handle)
			g.resumeRotated()
			var said []string
			for l := range strings.Lines(out.String()) {
				if strings.Contains(l, "gone") {
					said = append(said, l)
				}
			}
			want := fmt.Sprintf("%s input=web path=%s offset=%d\n", c.want, archive, 10*lineLen)
			if len(said) != 1 || said[0] != want {
				t.Errorf("log of the archive gone:\n%s\nwant:\n%s", strings.Join(said, ""), want)
			}
		})
	}
}
