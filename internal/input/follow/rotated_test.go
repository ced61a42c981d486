package follow

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"

	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// TestResumeRotatedShared: followers sharing a glob that matches the log's rotated names
// (access.log*) resume from one snapshot, each the paths it selects. The log's file of
// the position is gone (compressed) and an archive the snapshot read to its end was
// written to since (the writer had not reopened the log yet): it is read on from its
// position by the follower that selects its path, not from its start by the one of the
// log, which found it among the files rotated away after the snapshot and claimed it
// first.
func TestResumeRotatedShared(t *testing.T) {
	dir := t.TempDir()
	log, archive := filepath.Join(dir, "access.log"), filepath.Join(dir, "access.log.1")
	old := create(t, archive)
	writeLines(t, old, 1, 10)
	touch(t, archive, -time.Hour)
	writeLines(t, create(t, log), 11, 100)

	positions, o := readFirst(t, modes[1].options(filepath.Join(dir, "access.log*")))
	if len(positions) != 2 {
		t.Fatalf("positions %+v, want the log's and the archive's", positions)
	}

	taken := time.Now().Add(-time.Second) // see TestResume
	writeLines(t, old, 101, 101)
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	writeLines(t, create(t, log), 102, 150)

	next, claims := newCollector(), newClaims()
	for _, owner := range []string{"access.log", "access.log.1"} {
		o := o
		o.Resume, o.Taken = positions, taken
		o.Select = func(path string) bool { return (filepath.Base(path) == "access.log") == (owner == "access.log") }
		claims.share(&o, owner)
		start(t, o, next.handle)
	}
	waitFor(t, "the lines written while down", func() bool { return next.has(101, 150) })
	next.expectExactly(t, span{101, 150})
}

// TestResumeSlowArchive: an archive rotated away before the snapshot and written to by a
// writer that had not reopened the log, after the last write to the log's file of the
// position but before the snapshot, is not among the files rotated away after that one
// while the exporter was down: no file left the log's path since the snapshot before its
// file of the position did.
func TestResumeSlowArchive(t *testing.T) {
	dir := t.TempDir()
	log, archive := filepath.Join(dir, "access.log"), filepath.Join(dir, "access.log.1")
	writeLines(t, create(t, archive), 1, 10)
	w := create(t, log)
	writeLines(t, w, 1, 100)

	positions, o := readFirst(t, modes[1].options(log))
	touch(t, log, -2*time.Hour)
	touch(t, archive, -time.Hour) // a late line of the slow writer

	taken := time.Now().Add(-time.Second) // see TestResume
	rename(t, archive, log+".2")
	rename(t, log, archive)
	writeLines(t, create(t, log), 101, 150)

	expectResumed(t, o, positions, taken)
}

// TestResumeSymlinkRotated: an input's path that is a symbolic link to a log of another
// directory, rotated there while the exporter was down, has the file of its position
// found where its rotator renamed it, beside the file the link leads to, and read on from
// the position; so are the files rotated away after it, named as that file is. Looked
// for beside the link alone, it was lost with what was written to it after the snapshot.
func TestResumeSymlinkRotated(t *testing.T) {
	rotatedOnce := func(t *testing.T, real string, w *os.File) span {
		writeLines(t, w, 101, 120)
		rename(t, real, real+".1")
		writeLines(t, create(t, real), 121, 150)
		return span{101, 150}
	}
	for _, tc := range []struct {
		name string
		glob bool
		// down rotates the log the link leads to, whose writer is w, and returns the
		// lines to be read: those written after the positions.
		down func(t *testing.T, real string, w *os.File) span
	}{{
		name: "rotated once",
		down: rotatedOnce,
	}, {
		name: "rotated once, the link in a glob",
		glob: true,
		down: rotatedOnce,
	}, {
		// The file of the position compressed after a second rotation: the one rotated
		// after it is read whole.
		name: "rotated twice",
		down: func(t *testing.T, real string, w *os.File) span {
			rename(t, real, real+".1")
			writeLines(t, create(t, real), 101, 130)
			if err := os.Remove(real + ".1"); err != nil {
				t.Fatal(err)
			}
			rename(t, real, real+".1")
			writeLines(t, create(t, real), 131, 150)
			return span{101, 150}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			links, target := filepath.Join(dir, "links"), filepath.Join(dir, "links", "releases")
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			real, link := filepath.Join(target, "app.log"), filepath.Join(links, "current.log")
			w := create(t, real)
			writeLines(t, w, 1, 100)
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			path := link
			if tc.glob {
				path = filepath.Join(links, "*.log")
			}
			positions, o := readFirst(t, modes[1].options(path))
			taken := time.Now().Add(-time.Second) // see TestResume
			want := tc.down(t, real, w)
			o.Resume, o.Taken = positions, taken
			next := newCollector()
			start(t, o, next.handle)
			waitFor(t, "the lines written while down", func() bool { return next.has(want.from, want.to) })
			next.expectExactly(t, want)
		})
	}
}

// TestResumeRenumberedDevice: positions whose files' device was numbered otherwise since
// they were taken (a node's reboot renumbers an LVM or NVMe disk; btrfs, overlayfs and NFS
// get a new number at each mount) still find their files by inode and first bytes, at
// their path and in its directory: appended, the log is read on from its position, not
// again from its start; rotated, the file of the position is read on from there, and
// the new log from its start.
func TestResumeRenumberedDevice(t *testing.T) {
	for _, tc := range []struct {
		name string
		glob bool
		down func(t *testing.T, log string, w *os.File)
	}{{
		name: "appended",
		down: func(t *testing.T, log string, w *os.File) { writeLines(t, w, 101, 150) },
	}, {
		name: "appended, a glob",
		glob: true,
		down: func(t *testing.T, log string, w *os.File) { writeLines(t, w, 101, 150) },
	}, {
		name: "rotated",
		down: func(t *testing.T, log string, w *os.File) {
			writeLines(t, w, 101, 120)
			rename(t, log, log+".1")
			writeLines(t, create(t, log), 121, 150)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, log, w := accessLog(t)
			path := log
			if tc.glob {
				path = filepath.Join(dir, "*.log")
			}
			positions, o := readFirst(t, modes[1].options(path))
			for i := range positions {
				positions[i].Dev++
			}
			taken := time.Now().Add(-time.Second) // see TestResume
			tc.down(t, log, w)
			expectResumed(t, o, positions, taken)
		})
	}
}

// TestResumeRenumberedSharedInode: a glob over two disks (/data1/app.log, /data2/app.log)
// whose files have one inode number, each on its disk; a reboot numbered the disks
// otherwise, the first with the number the second had (NVMe disks found in the other
// order swap theirs). The first disk's log now has the identity the second's position
// has: it is the file of its own path's position, renumbered, and read on from there,
// not taken for the second's file, found rewritten and read again from its start, its
// lines counted twice. (The second's file, which one disk cannot give the same inode
// number, is a new file here.)
func TestResumeRenumberedSharedInode(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "data1", "app.log"), filepath.Join(dir, "data2", "app.log")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(filepath.Dir(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w := create(t, a)
	writeLines(t, w, 1, 100)
	positions, o := readFirst(t, modes[1].options(filepath.Join(dir, "*", "app.log")))
	if len(positions) != 1 {
		t.Fatalf("positions %v, want the log's alone", positions)
	}
	taken := time.Now().Add(-time.Second) // see TestResume
	writeLines(t, create(t, b), 1001, 1050)
	other, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	first := positions[0]
	positions[0].Dev++ // the number the first disk had
	positions = append(positions, Position{Path: b, Dev: first.Dev, Ino: first.Ino, Offset: int64(len(other)), Head: xxhash.Sum64(other[:headLen])})
	writeLines(t, w, 101, 150)
	o.Resume, o.Taken = positions, taken
	next := newCollector()
	start(t, o, next.handle)
	waitFor(t, "the lines written while down", func() bool { return next.has(101, 150) && next.has(1001, 1050) })
	next.expectExactly(t, span{101, 150}, span{1001, 1050})
}

// TestResumeGlobCopyNotTruncated: a glob that matches the log's rotated names finds at a
// restart a copy of the log made while the exporter was down, the log not truncated
// (logrotate's copy, a backup made with cp): the copy's lines past the position are the
// log's, read on from there, and the copy is read from its end, not from the position.
func TestResumeGlobCopyNotTruncated(t *testing.T) {
	_, log, w := accessLog(t)
	positions, o := readFirst(t, modes[1].options(log+"*"))
	taken := time.Now().Add(-time.Second) // see TestResume
	writeLines(t, w, 101, 120)
	copyFile(t, log, log+".1")
	writeLines(t, w, 121, 150)
	expectResumed(t, o, positions, taken)
}

// TestResumeTakesNoOtherLog: a log of the directory named as the path with a dash and a
// number (worker-1-2 beside worker-1) is another log, not one rotated from the path: a
// restart that finds the path's file of the position gone does not read it as one.
func TestResumeTakesNoOtherLog(t *testing.T) {
	dir := t.TempDir()
	log, other := filepath.Join(dir, "worker-1"), filepath.Join(dir, "worker-1-2")
	w := create(t, log)
	writeLines(t, w, 1, 100)

	positions, o := readFirst(t, modes[1].options(log))

	taken := time.Now().Add(-time.Second) // see TestResume
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	writeLines(t, create(t, other), 1001, 1050)
	writeLines(t, create(t, log), 101, 150)

	expectResumed(t, o, positions, taken)
}

// TestResumeRotatedSharedLog: the file of a position rotated while down to a path of the
// glob that another follower selects, which read it on from its position first, is not
// said read, nor counted as a rotation, by the follower of the path it was rotated from:
// the log tells a user which files a restart read.
func TestResumeRotatedSharedLog(t *testing.T) {
	dir, log, w := accessLog(t)
	positions, o := readFirst(t, modes[1].options(filepath.Join(dir, "access.log*")))

	taken := time.Now().Add(-time.Second) // see TestResume
	writeLines(t, w, 101, 120)
	rename(t, log, log+".1")
	writeLines(t, create(t, log), 121, 150)

	next, claims := newCollector(), newClaims()
	var said bytes.Buffer
	var followers []*Follower
	for _, owner := range []string{"access.log.1", "access.log"} { // the archive's first
		o := o
		o.Resume, o.Taken = positions, taken
		o.Select = func(path string) bool { return (filepath.Base(path) == "access.log") == (owner == "access.log") }
		if owner == "access.log" {
			o.Logger = slog.New(slog.NewTextHandler(&said, nil))
		}
		claims.share(&o, owner)
		followers = append(followers, start(t, o, next.handle))
	}
	waitFor(t, "the lines written while down", func() bool { return next.has(101, 150) })
	next.expectExactly(t, span{101, 150})
	if strings.Contains(said.String(), "access.log.1") {
		t.Errorf("the follower of access.log says it reads the file the other one reads:\n%s", said.String())
	}
	if n := followers[1].c.rotations.Load(); n != 0 {
		t.Errorf("the follower of access.log counted %d rotations, want none of a file it does not read", n)
	}
}

// readFirst follows o's path from its beginning until lines 1 to 100 are read, and stops:
// it returns the positions a snapshot took then, under the hold as the pipeline's cut takes
// them, and o as a restart gives it, neither from the beginning nor held.
func readFirst(t *testing.T, o Options) ([]Position, Options) {
	t.Helper()
	var hold sync.RWMutex
	o.FromBeginning, o.Hold = true, hold.RLocker()
	first := newCollector()
	f := start(t, o, first.handle)
	waitFor(t, "the first lines", func() bool { return first.has(1, 100) })
	hold.Lock()
	positions := f.Positions()
	hold.Unlock()
	f.Stop()
	first.expectExactly(t, span{1, 100})
	o.FromBeginning, o.Hold = false, nil
	return positions, o
}

// expectResumed resumes o from positions, of a snapshot taken at taken, and expects
// exactly lines 101 to 150: those written while it was down.
func expectResumed(t *testing.T, o Options, positions []Position, taken time.Time) {
	t.Helper()
	expectResumedLines(t, o, positions, taken, "the lines written while down", span{101, 150})
}

// expectResumedLines is expectResumed expecting exactly the lines of want, what they are.
func expectResumedLines(t *testing.T, o Options, positions []Position, taken time.Time, what string, want span) {
	t.Helper()
	o.Resume, o.Taken = positions, taken
	next := newCollector()
	start(t, o, next.handle)
	waitFor(t, what, func() bool { return next.has(want.from, want.to) })
	next.expectExactly(t, want)
}

// subdir makes a directory, name, within dir, and returns its path.
func subdir(t *testing.T, dir, name string) string {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestResumeGlobCopy: a glob that matches the log's rotated names (access.log*) finds the
// copy that logrotate's copytruncate made of the log while the exporter was down among
// its files without a position: the copy begins with the bytes the log had at its
// position, and is read on from there, not from its start, whose lines were counted
// before the snapshot. A file of the directory that begins otherwise is read whole.
func TestResumeGlobCopy(t *testing.T) {
	for _, tc := range []struct {
		name string
		down func(t *testing.T, log string, w *os.File)
	}{{
		name: "copied and truncated",
		down: func(t *testing.T, log string, w *os.File) {
			writeLines(t, w, 101, 120)
			copyFile(t, log, log+".1")
			if err := os.Truncate(log, 0); err != nil {
				t.Fatal(err)
			}
			writeLines(t, w, 121, 150)
		},
	}, {
		name: "another file of the glob created",
		down: func(t *testing.T, log string, w *os.File) {
			writeLines(t, w, 101, 120)
			writeLines(t, create(t, log+".json"), 121, 150)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, log, w := accessLog(t)
			positions, o := readFirst(t, modes[1].options(filepath.Join(dir, "access.log*")))
			taken := time.Now().Add(-time.Second) // see TestResume
			tc.down(t, log, w)
			expectResumed(t, o, positions, taken)
		})
	}
}

// TestResumeNoShortCopy: a log that had a line at the snapshot, and another log of the
// glob created while down that begins with the same line: that one is not taken for the
// log's copy, and is read from its start.
func TestResumeNoShortCopy(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "a.log")
	w := create(t, log)
	writeLines(t, w, 1, 1)
	var hold sync.RWMutex
	o := modes[1].options(filepath.Join(dir, "*.log"))
	o.FromBeginning, o.Hold = true, hold.RLocker()
	first := newCollector()
	f := start(t, o, first.handle)
	waitFor(t, "the first line", func() bool { return first.has(1, 1) })
	hold.Lock()
	positions := f.Positions()
	hold.Unlock()
	f.Stop()

	writeLines(t, create(t, filepath.Join(dir, "b.log")), 1, 1)
	writeLines(t, w, 2, 150)
	o.FromBeginning, o.Hold = false, nil
	o.Resume, o.Taken = positions, time.Now().Add(-time.Second)
	next := newCollector()
	start(t, o, next.handle)
	waitFor(t, "the lines written while down", func() bool { return next.has(1, 150) })
	next.expectExactly(t, span{1, 150})
}

// TestSnapshotWhileCopyJudged: a snapshot taken while a glob's new file is held back, the
// copy that logrotate's copytruncate made of the log before the log was read further,
// its truncation read already: the restart reads the copy on from where the first run
// would have, not again from its start, whose lines were counted before the snapshot.
// The grace is on an injected clock, so that the copy is still held at the snapshot.
func TestSnapshotWhileCopyJudged(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	w := create(t, log)
	clock := testclock.New(time.Unix(1_700_000_000, 0))
	var hold sync.RWMutex
	o := modes[1].options(filepath.Join(dir, "access.log*"))
	o.FromBeginning, o.Hold, o.RotationGrace, o.now = true, hold.RLocker(), time.Minute, clock.Now
	first := newCollector()
	f := start(t, o, first.handle)
	writeLines(t, w, 1, 100)
	waitFor(t, "the first lines", func() bool { return first.has(1, 100) })
	copyTruncatedBehind(t, w, log)
	writeLines(t, w, 101, 110)
	waitFor(t, "the log read after its truncation", func() bool { return first.has(101, 110) })
	waitFor(t, "the copy found", func() bool { return openUnder(f, log+".1") == 1 })
	waitTurns(t, f, 3, "two turns of the reader")
	hold.Lock()
	positions := f.Positions()
	hold.Unlock()
	f.Stop()
	first.expectExactly(t, span{1, 110})

	writeLines(t, w, 111, 150)
	o.FromBeginning, o.Hold, o.now = false, nil, nil
	o.Resume, o.Taken = positions, time.Now().Add(-time.Second)
	next := newCollector()
	g := start(t, o, next.handle)
	waitFor(t, "the lines written while down", func() bool { return next.has(111, 150) })
	waitTurns(t, g, 3, "two more turns of the reader")
	next.expectExactly(t, span{111, 150})
}

// TestStopBeforeCopyJudged: a follower stopped once a glob's new file, the copy that
// logrotate's copytruncate made of the log before the log was read further, was found but
// before the reader looked at it, the log's truncation read: the positions it stopped at
// have the copy where it is read from, and the restart does not read it again from its
// start. The scans and turns are driven by the test.
func TestStopBeforeCopyJudged(t *testing.T) {
	dir, log, w := accessLog(t)
	first := newCollector()
	f, _, o := handDriven(t, filepath.Join(dir, "access.log*"), first.handle)
	copyTruncatedBehind(t, w, log)
	writeLines(t, w, 101, 110)
	f.readAll()
	f.discover(false)
	if openUnder(f, log+".1") != 1 {
		t.Fatal("the copy not found")
	}
	f.Stop()
	first.expectExactly(t, span{1, 110})

	writeLines(t, w, 111, 150)
	o.FromBeginning, o.noNotify, o.now, o.PollInterval = false, false, nil, 10*time.Millisecond
	o.Resume, o.Taken = f.Positions(), time.Now().Add(-time.Second)
	next := newCollector()
	g := start(t, o, next.handle)
	waitFor(t, "the lines written while down", func() bool { return next.has(111, 150) })
	waitTurns(t, g, 3, "two more turns of the reader")
	next.expectExactly(t, span{111, 150})
}

// TestResumeEmptyCopied: the log was empty at the snapshot (just truncated, or just made
// by a rotation), so its position is at offset 0 and intact after any copytruncate. The
// copies logrotate made of it while the exporter was down, written after the snapshot,
// hold lines of none read then: a copytruncate's are read whole, oldest first, before the
// log. A copy the log still holds the lines of (logrotate's copy, without the truncation)
// is not read.
func TestResumeEmptyCopied(t *testing.T) {
	// copy copies the log to its first rotated name, the older copies shifted by one, as
	// logrotate does, and truncates it if asked.
	copy := func(t *testing.T, log string, truncate bool) {
		t.Helper()
		if _, err := os.Stat(log + ".1"); err == nil {
			rename(t, log+".1", log+".2")
		}
		copyFile(t, log, log+".1")
		if truncate {
			if err := os.Truncate(log, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		down func(t *testing.T, log string, w *os.File)
	}{{
		name: "copytruncate",
		down: func(t *testing.T, log string, w *os.File) {
			writeLines(t, w, 101, 120)
			copy(t, log, true)
			writeLines(t, w, 121, 150)
		},
	}, {
		name: "copytruncate twice",
		down: func(t *testing.T, log string, w *os.File) {
			writeLines(t, w, 101, 110)
			copy(t, log, true)
			touch(t, log+".1", -time.Second/2) // written before the second copy, by mtime
			writeLines(t, w, 111, 120)
			copy(t, log, true)
			writeLines(t, w, 121, 150)
		},
	}, {
		name: "copy",
		down: func(t *testing.T, log string, w *os.File) {
			writeLines(t, w, 101, 120)
			copy(t, log, false)
			writeLines(t, w, 121, 150)
		},
	}} {
		for _, mode := range modes {
			t.Run(tc.name+", "+mode.name, func(t *testing.T) {
				dir := t.TempDir()
				log := filepath.Join(dir, "access.log")
				w := create(t, log)
				o := mode.options(log)
				o.FromBeginning = true
				f := start(t, o, newCollector().handle)
				waitFollowed(t, f, w)
				f.Stop()
				positions := f.Positions()
				if len(positions) != 1 || positions[0].Offset != 0 {
					t.Fatalf("positions %+v, want the empty log's at offset 0", positions)
				}
				o.FromBeginning = false

				taken := time.Now().Add(-time.Second) // see TestResume
				tc.down(t, log, w)
				expectResumed(t, o, positions, taken)
			})
		}
	}
}

// TestResumeUnreadNotReopened: a log renamed away by a rotation whose writer did not
// reopen it leaves the new, empty log at offset 0 in the snapshot, and its archive,
// retired after the grace period, is written to while the exporter is down. The log
// was neither truncated nor written after the snapshot: the archive is no copy of it,
// and none of its lines, counted before the snapshot, is read again.
func TestResumeUnreadNotReopened(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "access.log")
			w := create(t, log)
			o := mode.options(log)
			o.FromBeginning = true
			clock := clocked(&o)
			first := newCollector()
			f := start(t, o, first.handle)
			writeLines(t, w, 1, 100)
			waitFor(t, "the lines written", func() bool { return first.has(1, 100) })
			rename(t, log, log+".1")
			next := create(t, log)
			waitFollowed(t, f, next)
			waitRetired(t, f, clock, "the archive retired", func() bool { return openUnder(f, log) == 1 })
			f.Stop()
			positions := f.Positions()
			if len(positions) != 1 || positions[0].Offset != 0 {
				t.Fatalf("positions %+v, want the new log's at offset 0", positions)
			}
			touch(t, log, -2*time.Second)
			touch(t, log+".1", -2*time.Second)
			taken := time.Now().Add(-time.Second) // see TestResume

			writeLines(t, w, 101, 150) // to the archive, while down: lost, as ever
			o.FromBeginning, o.Resume, o.Taken = false, positions, taken
			again := newCollector()
			start(t, o, again.handle)
			// The log's lines are read after those of any file rotated away from it.
			writeLines(t, next, 151, 151)
			waitFor(t, "the line written to the log", func() bool { return again.has(151, 151) })
			again.expectExactly(t, span{151, 151})
		})
	}
}

// TestResumeListsOnce: a restart lists a directory once, and looks at each of its files
// at most twice (for the identities of the positions' files, and as a file rotated away
// from its log), however many logs of it it resumes: a glob of thousands of logs in one
// directory would otherwise list it, and look at its files, thousands of times.
func TestResumeListsOnce(t *testing.T) {
	const logs = 20
	for _, tc := range []struct {
		name string
		down func(t *testing.T, log string, w *os.File) *os.File
	}{{
		// Each is looked at for files rotated away from it: a copytruncate while down.
		name: "changed at offset 0",
		down: func(t *testing.T, log string, w *os.File) *os.File {
			return w
		},
	}, {
		// Each position's file is looked for by its identity.
		name: "renamed",
		down: func(t *testing.T, log string, w *os.File) *os.File {
			rename(t, log, log+".1")
			return create(t, log)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var ws []*os.File
			for i := range logs {
				ws = append(ws, create(t, filepath.Join(dir, fmt.Sprintf("%d.log", i))))
			}
			o := modes[1].options(filepath.Join(dir, "*.log"))
			f := start(t, o, newCollector().handle)
			for _, w := range ws {
				waitFollowed(t, f, w)
			}
			f.Stop()
			positions := f.Positions()
			if len(positions) != logs {
				t.Fatalf("%d positions, want %d", len(positions), logs)
			}
			taken := time.Now().Add(-time.Second) // see TestResume
			for i, w := range ws {
				w = tc.down(t, filepath.Join(dir, fmt.Sprintf("%d.log", i)), w)
				writeLines(t, w, i+1, i+1)
			}
			var mu sync.Mutex
			listed, looked := map[string]int{}, map[string]int{}
			o.readDir = func(d string) ([]os.DirEntry, error) {
				entries, err := os.ReadDir(d)
				mu.Lock()
				defer mu.Unlock()
				listed[d]++
				for i, e := range entries {
					entries[i] = countedEntry{e, func() { mu.Lock(); looked[e.Name()]++; mu.Unlock() }}
				}
				return entries, err
			}
			o.Resume, o.Taken = positions, taken
			next := newCollector()
			start(t, o, next.handle)
			waitFor(t, "the lines written while down", func() bool { return next.has(1, logs) })
			next.expectExactly(t, span{1, logs})
			mu.Lock()
			defer mu.Unlock()
			if listed[dir] != 1 {
				t.Errorf("the directory listed %d times, want once", listed[dir])
			}
			for name, n := range looked {
				if n > 2 {
					t.Errorf("%s looked at %d times, want twice at most", name, n)
				}
			}
		})
	}
}

// TestResumeLooksByName: a restart of a glob of many logs in one directory (the kubelet's
// /var/log/containers), each rotated while the exporter was down, reads the names of the
// directory's files a few times each, not once per log: every log's rotated files are
// found among the names that begin as its own does, where a look at every file of the
// directory for each log made a restart of 4,000 logs take seconds.
func TestResumeLooksByName(t *testing.T) {
	const logs = 300
	dir := t.TempDir()
	var ws []*os.File
	for i := range logs {
		w := create(t, filepath.Join(dir, fmt.Sprintf("pod-%03d.log", i)))
		writeLines(t, w, i+1, i+1)
		ws = append(ws, w)
	}
	o := modes[1].options(filepath.Join(dir, "*.log"))
	o.FromBeginning = true
	first := newCollector()
	f := start(t, o, first.handle)
	waitFor(t, "the lines before the snapshot", func() bool { return first.has(1, logs) })
	f.Stop()
	positions := f.Positions()
	taken := time.Now().Add(-time.Second) // see TestResume
	for i, w := range ws {
		writeLines(t, w, logs+i+1, logs+i+1)
		path := filepath.Join(dir, fmt.Sprintf("pod-%03d.log", i))
		rename(t, path, path+".1")
		writeLines(t, create(t, path), 2*logs+i+1, 2*logs+i+1)
	}
	var names atomic.Int64
	o.readDir = func(d string) ([]os.DirEntry, error) {
		entries, err := os.ReadDir(d)
		for i, e := range entries {
			entries[i] = namedEntry{e, &names}
		}
		return entries, err
	}
	o.Resume, o.Taken = positions, taken
	next := newCollector()
	start(t, o, next.handle)
	waitFor(t, "the lines written while down", func() bool { return next.has(logs+1, 3*logs) })
	next.expectExactly(t, span{logs + 1, 3 * logs})
	if n, most := names.Load(), int64(20*2*logs); n > most {
		t.Errorf("the names of the directory's %d files read %d times, want %d at most", 2*logs, n, most)
	}
}

// namedEntry is a directory entry that counts the reads of its name.
type namedEntry struct {
	os.DirEntry
	reads *atomic.Int64
}

func (e namedEntry) Name() string {
	e.reads.Add(1)
	return e.DirEntry.Name()
}

// countedEntry is a directory entry that tells when it is looked at (Info).
type countedEntry struct {
	os.DirEntry
	looked func()
}

func (e countedEntry) Info() (os.FileInfo, error) {
	e.looked()
	return e.DirEntry.Info()
}

// copyTruncatedBehind makes the copy logrotate's copytruncate makes of log, log.1, before
// the log was read to its end: it lacks the log's last ten lines, which were written
// after the copy; then it truncates the log w writes.
func copyTruncatedBehind(t *testing.T, w *os.File, log string) {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log+".1", data[:len(data)-int(lineLen)*10], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Truncate(0); err != nil {
		t.Fatal(err)
	}
}

// TestResumeRotatedIntoOldDir: logrotate's olddir (relative, as `olddir old`) moves the
// rotated log into a directory within the log's: the file of the position, rotated there
// while the exporter was down, is found there by its device and inode and read on from
// its position, the new log from its start. Rotated twice while down, the file that came
// to the log's path between the two is in that directory too, read whole between them.
// Not a file of another directory within the log's, named as one of its rotated files and
// written after the snapshot: another log's archive, which only its identity could make
// the log's.
func TestResumeRotatedIntoOldDir(t *testing.T) {
	for _, twice := range []bool{false, true} {
		for _, glob := range []bool{false, true} {
			t.Run(fmt.Sprintf("twice %v glob %v", twice, glob), func(t *testing.T) {
				dir, log, w := accessLog(t)
				old, other := subdir(t, dir, "old"), subdir(t, dir, "other")
				path := log
				if glob {
					path = filepath.Join(dir, "*.log")
				}
				positions, o := readFirst(t, modes[1].options(path))
				taken := time.Now().Add(-time.Second) // see TestResume
				writeLines(t, w, 101, 120)
				rename(t, log, filepath.Join(old, "access.log.1"))
				touch(t, filepath.Join(old, "access.log.1"), -time.Second/2)
				writeLines(t, create(t, filepath.Join(other, "access.log.1")), 5001, 5010)
				if twice {
					next := create(t, log)
					writeLines(t, next, 121, 130)
					rename(t, filepath.Join(old, "access.log.1"), filepath.Join(old, "access.log.2"))
					rename(t, log, filepath.Join(old, "access.log.1"))
					writeLines(t, create(t, log), 131, 150)
				} else {
					writeLines(t, create(t, log), 121, 150)
				}
				expectResumed(t, o, positions, taken)
			})
		}
	}
}

// TestResumeRotatedIntoOldDirPastArchive: rotated twice into logrotate's relative olddir
// while the exporter was down, with compress and delaycompress, the file of the position
// is gone, compressed at the second rotation: the file that came to the log's path
// between the two is read whole from the olddir, which the archive tells by the bytes
// the position's file began with (its lines written after the position are lost with
// it). Not from a directory within the log's whose archive of the log's name begins
// otherwise (another log's), nor from one that holds a log of its name, whatever its
// archive begins with (a vhost's, replicas of one program); nor when nothing tells: the
// archive named otherwise than as rotated from the log, or its first bytes not a gzip's;
// nor when two directories tell (a copy of the archive in another), or the archive is
// beside the log and a copy of it within, which one is the olddir not being known.
func TestResumeRotatedIntoOldDirPastArchive(t *testing.T) {
	for _, tc := range []struct {
		name    string
		glob    bool
		archive string // the name of the position's file's archive in old
		how     string // its compressor (writeArchive), else its bytes kept as they were
		backup  bool   // the archive copied to another directory within the log's
		beside  bool   // the archive beside the log, and it and the file after copied within
		// older: ten older archives of the log in old, beginning otherwise, dated skew
		// after the position's file's archive (restored from a backup, a clock set
		// back): looked at first, they do not hide it.
		older bool
		skew  time.Duration
		// unread: the archive is named in a warning, as one that cannot be read, with
		// this why; "" when none is (one read that is not the file's tells nothing).
		unread string
	}{
		{name: "gzip", archive: "access.log.2.gz", how: "gzip"},
		{name: "gzip, a glob", glob: true, archive: "access.log.2.gz", how: "gzip"},
		{name: "gzip, dateext", archive: "access.log-20261130.gz", how: "gzip"},
		{name: "zstd", archive: "access.log.2.zst", how: "zstd"},
		{name: "bzip2", archive: "access.log.2.bz2", how: "bzip2"},
		{name: "xz, which is not read", archive: "access.log.2.xz", how: "xz", unread: errUnreadable.Error()},
		{name: "zstd of a window past the bound", archive: "access.log.2.zst", how: "zstd, wide", unread: "a zstd window past 32 MiB"},
		{name: "named otherwise", archive: "backup.gz", how: "gzip"},
		{name: "not a gzip", archive: "access.log.2.gz", unread: "not a compressed archive"},
		{name: "gzip, a copy in another directory", archive: "access.log.2.gz", how: "gzip", backup: true},
		{name: "gzip beside the log, a copy within", archive: "access.log.2.gz", how: "gzip", beside: true},
		{name: "gzip, older archives dated as it", archive: "access.log.2.gz", how: "gzip", older: true},
		{name: "gzip, older archives dated after it", archive: "access.log.2.gz", how: "gzip", older: true, skew: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, log, w := accessLog(t)
			old, other, vhost := subdir(t, dir, "old"), subdir(t, dir, "other"), subdir(t, dir, "vhost")
			path := log
			if tc.glob {
				path = filepath.Join(dir, "*.log")
			}
			positions, o := readFirst(t, modes[1].options(path))
			var logs syncbuf.Buffer
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			taken := time.Now().Add(-time.Second) // see TestResume
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			// Another log's archive, and a vhost's log with an archive that begins as this
			// log did, each beside files named as rotated from the log, written since.
			writeArchive(t, filepath.Join(other, "access.log.2.gz"), numbered(7001), "gzip")
			writeLines(t, create(t, filepath.Join(other, "access.log.1")), 5001, 5010)
			writeArchive(t, filepath.Join(vhost, "access.log.2.gz"), data, "gzip")
			writeLines(t, create(t, filepath.Join(vhost, "access.log.1")), 6001, 6010)
			writeLines(t, create(t, filepath.Join(vhost, "access.log")), 6011, 6020)

			writeLines(t, w, 101, 110) // lost with the file, compressed
			rename(t, log, filepath.Join(old, "access.log.1"))
			writeLines(t, create(t, log), 121, 130)
			data, err = os.ReadFile(filepath.Join(old, "access.log.1"))
			if err != nil {
				t.Fatal(err)
			}
			writeArchive(t, filepath.Join(old, tc.archive), data, tc.how)
			if tc.older {
				at := time.Now().Add(-time.Hour)
				for k := 3; k <= 12; k++ {
					name := filepath.Join(old, fmt.Sprintf("access.log.%d.gz", k))
					writeArchive(t, name, numbered(8000+k), "gzip")
					if err := os.Chtimes(name, at.Add(tc.skew), at.Add(tc.skew)); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Chtimes(filepath.Join(old, tc.archive), at, at); err != nil {
					t.Fatal(err)
				}
			}
			if tc.backup || tc.beside {
				writeArchive(t, filepath.Join(subdir(t, dir, "backup"), tc.archive), data, tc.how)
			}
			if tc.beside {
				rename(t, filepath.Join(old, tc.archive), filepath.Join(dir, tc.archive))
			}
			if err := os.Remove(filepath.Join(old, "access.log.1")); err != nil {
				t.Fatal(err)
			}
			rename(t, log, filepath.Join(old, "access.log.1"))
			if tc.beside {
				copyFile(t, filepath.Join(old, "access.log.1"), filepath.Join(dir, "backup", "access.log.1"))
			}
			writeLines(t, create(t, log), 131, 150)
			if tc.unread == "" && tc.archive != "backup.gz" && !tc.backup && !tc.beside {
				expectResumedLines(t, o, positions, taken, "the lines written while down", span{121, 150})
				return
			}
			expectResumedLines(t, o, positions, taken, "the lines of the log's path", span{131, 150})
			warning := ""
			for line := range strings.Lines(logs.String()) {
				if strings.Contains(line, "archive="+filepath.Join(old, tc.archive)+" ") {
					warning = line
				}
			}
			if (warning != "") != (tc.unread != "") || !strings.Contains(warning, tc.unread) {
				t.Errorf("the warning naming the archive: %q, want one saying %q; the log:\n%s", warning, tc.unread, logs.String())
			}
		})
	}
}

// TestArchiveOf: the archive of a position's file is told by its first bytes
// decompressed, as many as the position hashed: of a file shorter than a head's KiB too.
// Not an archive that begins otherwise, cut off before those bytes (a compression
// interrupted), or not a gzip; nor one whose first bytes come past more compressed bytes
// than a gzip header and a KiB take (empty gzip members before them, a broken or hostile
// writer's), which a restart would otherwise read whole for each such archive of each
// log whose file is gone: the bytes read, and the time, are bounded; nor a zstd archive
// that asks for a window past archiveWindow, which its decoder would allocate.
func TestArchiveOf(t *testing.T) {
	data := bytes.Repeat(numbered(1), 3)
	short := numbered(2)[:100]
	// empty is a gzip member of nothing, 32 bytes long with its name: so many of them
	// end where archiveOf stops reading (archiveHeadIn), where the gzip reader ends as
	// cleanly as at an archive's end.
	var empty bytes.Buffer
	z := gzip.NewWriter(&empty)
	z.Name = "access.1"
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if archiveHeadIn%empty.Len() != 0 {
		t.Fatalf("an empty member of %d bytes: %d of them do not end at %d", empty.Len(), archiveHeadIn/empty.Len(), archiveHeadIn)
	}
	gz := func(pad int, data []byte) []byte {
		var b bytes.Buffer
		b.Write(bytes.Repeat(empty.Bytes(), pad/empty.Len()))
		z := gzip.NewWriter(&b)
		if _, err := z.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	zst := func(data []byte) []byte {
		var b bytes.Buffer
		z, err := zstd.NewWriter(&b, zstd.WithSingleSegment(false))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := z.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	wide := widen(t, zst(data))
	// A frame in one segment, as zstd --long or --ultra -21 writes one of a log of 40
	// MiB: its window is its content's size, past archiveWindow. Its header is all the
	// decoder reads of it.
	oneSegment := binary.LittleEndian.AppendUint32([]byte("\x28\xb5\x2f\xfd\xa0"), 40<<20)
	at := func(data []byte, off int64) Position {
		return Position{Offset: off, Head: xxhash.Sum64(data[:min(headLen, off)])}
	}
	whole := gz(0, data)
	for _, tc := range []struct {
		name    string
		archive []byte
		p       Position
		want    bool
		// unread: it could not tell, which archiveDir warns of, saying why (its error,
		// which holds this); "" when it could.
		unread string
	}{
		{"its file's", whole, at(data, int64(len(data))), true, ""},
		{"read up to a line of the first KiB", whole, at(data, 200), true, ""},
		{"of a file shorter than a KiB", gz(0, short), at(short, int64(len(short))), true, ""},
		{"another file's", gz(0, numbered(3)), at(data, int64(len(data))), false, ""},
		{"shorter than the bytes read", gz(0, short[:99]), at(short, int64(len(short))), false, ""},
		{"cut off", whole[:len(whole)/4], at(data, int64(len(data))), false, "unexpected EOF"},
		{"not a gzip", data, at(data, int64(len(data))), false, "not a compressed archive"},
		{"after a few empty members", gz(64<<10, data), at(data, int64(len(data))), true, ""},
		{"after megabytes of empty members", gz(4<<20, data), at(data, int64(len(data))), false, "fewer than 1024 bytes decompressed"},
		{"after empty members up to the bound", gz(archiveHeadIn, data), at(data, int64(len(data))), false, "fewer than 1024 bytes decompressed"},
		{"zstd", zst(data), at(data, int64(len(data))), true, ""},
		{"zstd of a window past the bound", wide, at(data, int64(len(data))), false, "a zstd window past 32 MiB"},
		{"zstd in one segment past the bound", oneSegment, at(data, int64(len(data))), false, "a zstd window past 32 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "access.log.2.gz")
			if err := os.WriteFile(path, tc.archive, 0o644); err != nil {
				t.Fatal(err)
			}
			file, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := archiveOf(file, []Position{tc.p})
			if got != tc.want || (err != nil) != (tc.unread != "") || err != nil && !strings.Contains(err.Error(), tc.unread) {
				t.Errorf("archiveOf = %v, %v; want %v, an error saying %q", got, err, tc.want, tc.unread)
			}
		})
	}
}

// writeArchive writes data to path compressed by how: "gzip" or "zstd"; "bzip2" or "xz",
// which Go does not write, from testdata/archive, whose archives hold lines 1-110 (the
// bzip2 one is checked to hold data); else data as it is.
func writeArchive(t *testing.T, path string, data []byte, how string) {
	t.Helper()
	var b bytes.Buffer
	var z io.WriteCloser
	switch how {
	case "gzip":
		z = gzip.NewWriter(&b)
	case "zstd", "zstd, wide":
		var err error
		if z, err = zstd.NewWriter(&b, zstd.WithSingleSegment(false)); err != nil {
			t.Fatal(err)
		}
	case "bzip2", "xz":
		archive, err := os.ReadFile(filepath.Join("testdata", "archive", "lines-1-110."+map[string]string{"bzip2": "bz2", "xz": "xz"}[how]))
		if err != nil {
			t.Fatal(err)
		}
		if how == "bzip2" {
			if got, err := io.ReadAll(bzip2.NewReader(bytes.NewReader(archive))); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("the bzip2 archive of testdata holds other bytes than %.40q... (%v): lines 1-110 are written", data, err)
			}
		}
		b.Write(archive)
	default:
		b.Write(data)
	}
	if z != nil {
		if _, err := z.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
	}
	archive := b.Bytes()
	if how == "zstd, wide" {
		archive = widen(t, archive)
	}
	if err := os.WriteFile(path, archive, 0o644); err != nil {
		t.Fatal(err)
	}
}

// widen has the zstd frame of archive, not single-segment, ask for a window of 64 MiB,
// past archiveWindow, as a hostile writer's (or zstd --long=26's) does: the encoder asks
// for one as small as the data. Its window descriptor follows the magic and the frame
// header descriptor: 2^(10+16).
func widen(t *testing.T, archive []byte) []byte {
	t.Helper()
	if archive[4]&0x20 != 0 {
		t.Fatalf("a single-segment frame, without a window descriptor: % x", archive[:6])
	}
	archive[5] = 16 << 3
	return archive
}

// TestResumeCopyTruncatedIntoOldDir: logrotate's copytruncate with a relative olddir
// puts the copy of the log in a directory within the log's. A restart that finds the log
// truncated while the exporter was down finds the copy there by the bytes the log had at
// its position, and reads it from there, then the log from its start; the files rotated
// into that directory after the copy too (copytruncate twice while down). Not a file of
// another directory within the log's, named as one of its rotated files and written
// after the snapshot, that does not begin with those bytes: another log's archive; nor,
// the copy beside the log, one that does: a backup of the log copied there, whose lines
// the copy has.
func TestResumeCopyTruncatedIntoOldDir(t *testing.T) {
	for _, tc := range []struct {
		name   string
		olddir bool
		twice  bool
		glob   string // the input's path, relative to the log's directory, when a glob
	}{
		{"into old", true, false, ""},
		{"into old twice", true, true, ""},
		{"beside the log, a backup within", false, false, ""},
		// The copy is the glob's, read by the first scan from the log's position.
		{"beside the log, a backup within, a glob of the rotated names", false, false, "access.log*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, log, w := accessLog(t)
			old, other := subdir(t, dir, "old"), subdir(t, dir, "other")
			path := log
			if tc.glob != "" {
				path = filepath.Join(dir, tc.glob)
			}
			positions, o := readFirst(t, modes[1].options(path))
			taken := time.Now().Add(-time.Second) // see TestResume
			writeLines(t, w, 101, 120)
			copied := filepath.Join(old, "access.log.1")
			if !tc.olddir {
				copied = log + ".1"
				copyFile(t, log, filepath.Join(other, "access.log.1"))
			} else {
				writeLines(t, create(t, filepath.Join(other, "access.log.1")), 5001, 5010)
			}
			copyFile(t, log, copied)
			touch(t, copied, -time.Second/2)
			if err := os.Truncate(log, 0); err != nil {
				t.Fatal(err)
			}
			if tc.twice {
				writeLines(t, w, 121, 130)
				rename(t, copied, filepath.Join(old, "access.log.2"))
				copyFile(t, log, copied)
				if err := os.Truncate(log, 0); err != nil {
					t.Fatal(err)
				}
				writeLines(t, w, 131, 150)
			} else {
				writeLines(t, w, 121, 150)
			}
			expectResumed(t, o, positions, taken)
		})
	}
}

// TestResumeCopyTruncatedIntoOldDirBesideBackups: copytruncate's copy in a relative
// olddir is told from backups of the log that a directory within the log's holds (named
// as rotated from it and written after the snapshot, as `cp access.log
// backup/access.log-$(date +%F)` makes them), made before the copy: they begin with the
// bytes the log had at its position too, but hold less of it than the copy does, which
// was made last. Read instead of the copy, a backup lost the lines written after it, and
// two of them counted the lines they share twice.
func TestResumeCopyTruncatedIntoOldDirBesideBackups(t *testing.T) {
	for _, backups := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d backups", backups), func(t *testing.T) {
			dir, log, w := accessLog(t)
			old, backup := subdir(t, dir, "old"), subdir(t, dir, "backup")
			positions, o := readFirst(t, modes[1].options(log))
			taken := time.Now().Add(-time.Second) // see TestResume
			next := 101
			for i := range backups {
				writeLines(t, w, next, next+4)
				next += 5
				copyFile(t, log, filepath.Join(backup, fmt.Sprintf("access.log-2026-11-%02d", 20+i)))
			}
			writeLines(t, w, next, 120)
			copied := filepath.Join(old, "access.log.1")
			copyFile(t, log, copied)
			if err := os.Truncate(log, 0); err != nil {
				t.Fatal(err)
			}
			writeLines(t, w, 121, 150)
			expectResumed(t, o, positions, taken)
		})
	}
}

// TestResumeTruncatedBesideAnotherLogOfItsName: a directory within the log's that holds
// a log of the same name (a vhost's access.log below the default one's), rotated beside
// it, is not the log's olddir, even when that log's archive begins with the bytes the log
// had at its position (replicas of one program, which write the same first KiB): the
// log's rotated files would overwrite that log's there. Truncated while the exporter was
// down, the log's copy is looked for in its olddir only (old), or, with none made, its
// lines written before the truncation are lost, not taken from the other log's archive.
func TestResumeTruncatedBesideAnotherLogOfItsName(t *testing.T) {
	for _, copied := range []bool{true, false} {
		t.Run(fmt.Sprintf("copied %v", copied), func(t *testing.T) {
			dir, log, w := accessLog(t)
			old, vhost := subdir(t, dir, "old"), subdir(t, dir, "vhost")
			positions, o := readFirst(t, modes[1].options(log))
			taken := time.Now().Add(-time.Second) // see TestResume
			// The other log began as this one did, was rotated beside itself, and was
			// written to more than this one was before its truncation.
			copyFile(t, log, filepath.Join(vhost, "access.log.1"))
			writeLines(t, openToWrite(t, filepath.Join(vhost, "access.log.1"), os.O_APPEND), 5001, 5030)
			writeLines(t, create(t, filepath.Join(vhost, "access.log")), 6001, 6010)
			writeLines(t, w, 101, 120)
			if copied {
				copyFile(t, log, filepath.Join(old, "access.log.1"))
			}
			if err := os.Truncate(log, 0); err != nil {
				t.Fatal(err)
			}
			writeLines(t, w, 121, 150)
			if copied {
				expectResumed(t, o, positions, taken)
				return
			}
			expectResumedLines(t, o, positions, taken, "the lines written after the truncation", span{121, 150})
		})
	}
}

// TestResumeInodeReusedWithin: the file of a position deleted while the exporter was down
// (rotated and compressed) gave its inode to a file that a directory within the log's got
// since (another log's, as logrotate made it anew there). Found there by its identity but
// without the position's first bytes, it is not the position's file, and that directory
// is not the log's olddir: the other log's archives in it, named as the log's rotated
// files and written after the snapshot, are not read as the log's.
func TestResumeInodeReusedWithin(t *testing.T) {
	dir, log, _ := accessLog(t)
	vhost := subdir(t, dir, "vhost")
	positions, o := readFirst(t, modes[1].options(log))
	taken := time.Now().Add(-time.Second) // see TestResume
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	writeLines(t, create(t, filepath.Join(vhost, "access.log.1")), 5001, 5010)
	other := filepath.Join(vhost, "access.log")
	writeLines(t, create(t, other), 6001, 6010)
	writeLines(t, create(t, log), 121, 150)
	// The file system gave the position's inode to the other log's new file: its
	// identity stands in the position for the one freed, which a test cannot have reused.
	fi, err := os.Stat(other)
	if err != nil {
		t.Fatal(err)
	}
	id := idOf(fi)
	for i := range positions {
		positions[i].Dev, positions[i].Ino = id.dev, id.ino
	}
	expectResumedLines(t, o, positions, taken, "the lines of the new log", span{121, 150})
}

// TestResumeCopyOnReusedInode: the copy that copytruncate made of the log while the
// exporter was down, found by a glob that matches rotated names, was given the inode of
// a file of a position deleted since (logrotate removed its oldest archive, or, with
// `rotate 1`, the copy before it, then made the copy: a file system reuses a freed inode
// at once). It is not that file, whose first bytes it lacks, but a new one, judged as
// any: the log's copy, read from the log's position, not from its start (the lines
// before the position counted twice).
func TestResumeCopyOnReusedInode(t *testing.T) {
	for _, at := range []string{"access.log.6", "access.log.1"} {
		t.Run(at, func(t *testing.T) {
			dir, log, w := accessLog(t)
			positions, o := readFirst(t, modes[1].options(filepath.Join(dir, "access.log*")))
			taken := time.Now().Add(-time.Second) // see TestResume
			writeLines(t, w, 101, 120)
			copyFile(t, log, log+".1")
			if err := os.Truncate(log, 0); err != nil {
				t.Fatal(err)
			}
			writeLines(t, w, 121, 150)
			fi, err := os.Stat(log + ".1")
			if err != nil {
				t.Fatal(err)
			}
			id := idOf(fi)
			old := numbered(9999)
			positions = append(positions, Position{Path: filepath.Join(dir, at), Dev: id.dev, Ino: id.ino, Offset: int64(len(old)), Head: xxhash.Sum64(old)})
			expectResumed(t, o, positions, taken)
		})
	}
}
