package follow

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"
	"github.com/logwindow/logwindow_exporter/config"
)

// Position is where a follower read a file up to, for a restart to read on from there
// (Options.Resume): the file is known by its device and inode, and by a hash of its first
// bytes, so that an inode reused by another file is not taken for it.
type Position struct {
	// Path is the path the file was read under.
	Path string
	// Dev and Ino identify the file.
	Dev, Ino uint64
	// Offset is that of the first byte not handed on: a line's first byte, or a byte
	// within a line whose rest is being skipped (too long, or begun before the follower
	// started), which a follower resumed there skips to its end too.
	Offset int64
	// Head is the xxhash of the file's first min(HeadBytes, Offset) bytes.
	Head uint64
}

// Truncation is what a file found truncated lately held before (Follower.Truncated): its
// Position, as far as it was read, and, while what it held unread is not settled yet
// (no copy of it read, the rotation grace not passed), Seen, the size the reader last
// saw it at, and Lost, what of that is lost unless a copy of the file is read. A follower
// resumed from it (Options.Truncated) settles it in its own count of lost bytes. Lost is
// 0 when it was settled, or there is nothing to count.
type Truncation struct {
	Position
	Seen, Lost int64
}

// Line is where a line handed on starts (Options.At): the path the file is read under,
// the file, and the offset of the line's first byte.
type Line struct {
	Path     string
	Dev, Ino uint64
	Offset   int64
	f        *os.File
}

// Position is where a follower resumed (Options.Resume) reads the line again from. It
// reads the file's first bytes (Position.Head), for the handler to call during the line,
// of the few lines it keeps; ok is false when they cannot be read.
func (l *Line) Position() (pos Position, ok bool) {
	var buf [headLen]byte
	head, err := headHash(l.f, l.Offset, &buf)
	if err != nil {
		return Position{}, false
	}
	return Position{Path: l.Path, Dev: l.Dev, Ino: l.Ino, Offset: l.Offset, Head: head}, true
}

// HeadBytes is how many of a file's first bytes Position.Head covers.
const HeadBytes = headLen

// Positions returns where the follower read each of its files up to: lines before the
// offset were handed on, none after. So that they are one cut with what the handler made
// of those lines, the caller calls it while no line is being handed on (Options.Hold).
// After Stop it returns where the follower stopped, which no line is handed on after: a
// follower that replaces it (Options.Resume) reads on from there.
func (f *Follower) Positions() []Position {
	<-f.scanned // Options.Later
	return f.positionsNow()
}

// positionsNow is Positions without the wait for the first scan, which calls it.
func (f *Follower) positionsNow() []Position {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byID == nil {
		return slices.Clone(f.final)
	}
	return f.positions()
}

// positions is Positions of the open files; f.mu must be held.
func (f *Follower) positions() []Position {
	out := make([]Position, 0, len(f.files))
	var buf [headLen]byte
	for _, t := range f.files {
		// judging before done: the reader sets done, then clears judging.
		judging := t.judging.Load()
		off := t.done.Load()
		if judging && off == 0 {
			continue // a copy's lines before where it is read from would be read again
		}
		if u := t.judgeOf.Load(); judging && u != nil && f.byID[u.id] == u && !u.rotated && off >= u.done.Load() {
			// A copy of u that holds all u was read up to: found without a position after a
			// restart, it is read from u's position, or from its end when u is intact.
			continue
		}
		head, err := headHash(t.f, off, &buf)
		if err != nil {
			continue // a file that cannot be read now is read again from its start after a restart
		}
		out = append(out, Position{Path: t.path, Dev: t.id.dev, Ino: t.id.ino, Offset: off, Head: head})
	}
	return out
}

// Drained returns those of Positions' files, with their positions, that had left their
// path and were read to their end: lines to come under their path do not follow any of
// theirs but one written by a writer that did not reopen the log, so what a caller keeps
// of the path's lines (a CRI message in parts) does not wait for them. A restart that no
// longer finds one (the kubelet compresses and removes a container log's rotated file at
// its next rotation) loses none of its lines. So are the archives read to their end under
// a path of their own, a rotated name of a log the follower reads (access.log.1 of a glob
// `access.log*`): logrotate removes the oldest at each rotation. So that it is one cut
// with Positions, the caller calls it while no line is being handed on (Options.Hold),
// or after Stop.
func (f *Follower) Drained() []Position {
	<-f.scanned // Options.Later
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byID == nil {
		return slices.Clone(f.finalDrained)
	}
	return f.drained()
}

// drained is Drained of the open files; f.mu must be held.
func (f *Follower) drained() []Position {
	var out []Position
	var buf [headLen]byte
	var read map[string]bool // the paths read, once a file not rotated away asks
	for _, t := range f.files {
		if t.judging.Load() {
			continue
		}
		if !t.rotated {
			if read == nil {
				read = make(map[string]bool, len(f.files))
				for _, u := range f.files {
					read[u.path] = true
				}
			}
			if !archived(t.path, read) {
				continue
			}
		}
		off := t.done.Load()
		if fi, err := f.o.stat(t.f); err != nil || fi.Size() != off {
			continue
		}
		if head, err := headHash(t.f, off, &buf); err == nil {
			out = append(out, Position{Path: t.path, Dev: t.id.dev, Ino: t.id.ino, Offset: off, Head: head})
		}
	}
	return out
}

// archived reports whether path is the rotated name of a path of read in its directory:
// an archive of that log (RotatedFrom), read under a path of its own.
func archived[V any](path string, read map[string]V) bool {
	dir, name := filepath.Split(path)
	return slices.ContainsFunc(RotatedFrom(name), func(base string) bool {
		_, ok := read[filepath.Join(dir, base)]
		return ok
	})
}

// headHash is the hash of the first min(headLen, off) bytes of file.
func headHash(file io.ReaderAt, off int64, buf *[headLen]byte) (uint64, error) {
	n := int(min(headLen, off))
	if got, err := file.ReadAt(buf[:n], 0); got < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // truncated since: the position is of a file no longer there
		}
		return 0, err
	}
	return xxhash.Sum64(buf[:n]), nil
}

// resume holds the positions of Options.Resume not applied yet, by file.
type resume struct {
	byID map[fileID]Position
	// order is the files in the order of Options.Resume: the rotated ones are finished
	// in it.
	order []fileID
	// all are the positions of Options.Resume, each file's first; byIno, byPath and
	// byName hold them by inode, by path and by directory and name, as a restart looks
	// for them: a glob resumes thousands of positions, often of one directory, which a
	// search of all for each file would make a start of seconds.
	all    []Position
	byIno  map[uint64][]Position
	byPath map[string][]Position
	byName map[string]map[string][]Position
	// truncated holds Options.Truncated as byName does the positions, and drained the
	// positions of Options.Drained.
	truncated map[string]map[string][]Position
	drained   map[Position]bool
	// intact holds the paths of positions whose files the first scan found with the
	// first bytes they had: at a path of the input still, they are read on. rewritten
	// holds those of positions whose file's device and inode the first scan found with
	// other first bytes: truncated, or another file that took the inode of one deleted
	// (a file compressed, then its successor made); or with a longer hole (holeGrown).
	intact, rewritten map[string]bool
	// scanRewritten holds the positions whose files the first scan found rewritten: their
	// lines after the position are lost unless a copy is read from it (resumeRotated).
	scanRewritten []Position
	// unread holds, by path, the files the first scan found at a position of offset 0,
	// changed since the positions were taken: nothing of them was read, so their first
	// bytes, none, are intact whatever was done to them since, a copytruncate too, whose
	// copy holds none of the lines read. One unchanged since is intact.
	unread map[string]fileID
	// resumed holds the files read on from their positions, and copies the paths of the
	// positions the files the first scan found without one were taken for copies of.
	resumed map[fileID]bool
	copies  map[fileID]string
	// copied holds the paths of positions that a file the first scan found was taken for
	// a copy of, from a position of offset past 0 (copyOf) or of a truncated file's.
	copied map[string]bool
}

func newResume(ps, truncated, drained []Position) *resume {
	if ps == nil {
		return nil
	}
	r := &resume{byID: make(map[fileID]Position, len(ps)), intact: map[string]bool{}, rewritten: map[string]bool{}, unread: map[string]fileID{}, resumed: map[fileID]bool{}, copies: map[fileID]string{}, copied: map[string]bool{},
		byIno: map[uint64][]Position{}, byPath: map[string][]Position{}, byName: map[string]map[string][]Position{}, truncated: map[string]map[string][]Position{}, drained: make(map[Position]bool, len(drained))}
	for _, p := range drained {
		r.drained[p] = true
	}
	for _, p := range ps {
		id := fileID{dev: p.Dev, ino: p.Ino}
		if _, dup := r.byID[id]; !dup {
			r.byID[id] = p
			r.order = append(r.order, id)
			r.all = append(r.all, p)
			r.byPath[p.Path] = append(r.byPath[p.Path], p)
			r.byIno[p.Ino] = append(r.byIno[p.Ino], p)
			byName(r.byName, p)
		}
	}
	for _, p := range truncated {
		byName(r.truncated, p)
	}
	return r
}

// has reports whether the file id has a position not applied yet; r may be nil.
func (r *resume) has(id fileID) bool {
	if r == nil {
		return false
	}
	_, ok := r.byID[id]
	return ok
}

// byName adds p to m, by the directory and the name of its path.
func byName(m map[string]map[string][]Position, p Position) {
	dir, name := filepath.Dir(p.Path), filepath.Base(p.Path)
	if m[dir] == nil {
		m[dir] = map[string][]Position{}
	}
	m[dir][name] = append(m[dir][name], p)
}

// resumeAt says where a file found by the first scan is read from when Options.Resume
// is set: from its saved position when it has one and its first bytes are those it had,
// else from its start, as it appeared after the positions were taken (the file that
// replaced a rotated one, or a new one, one given the inode of a position's file deleted
// since or that file rewritten too), unless it is the copy of a position's file
// (copyOf), or of a file found truncated before they were taken (Options.Truncated: its
// copy found after the truncation was read), or a file closed after it left its path
// (Options.Left). ok is false without Options.Resume.
func (f *Follower) resumeAt(id fileID, file *os.File) (off int64, ok bool) {
	r := f.resume
	if r == nil {
		return 0, false
	}
	p, found := r.byID[id]
	if !found || p.Path != file.Name() {
		// A position of its path renumbered before one of its identity at another path:
		// a reboot may give one disk the number another had, whose files have inode
		// numbers of their own (two disks swap theirs).
		if q, ok := r.renumbered(id, file); ok {
			p, found = q, true
		}
	}
	if found {
		delete(r.byID, fileID{dev: p.Dev, ino: p.Ino})
		var buf [headLen]byte
		if h, err := headHash(file, p.Offset, &buf); err == nil && h == p.Head && !holeGrown(file, p.Offset, &buf) {
			if p.Offset == 0 && changedAfter(file, f.o.Taken) {
				r.unread[p.Path] = id
			} else {
				r.intact[p.Path] = true
			}
			r.resumed[fileID{dev: p.Dev, ino: p.Ino}] = true
			return p.Offset, true
		}
		// Not the position's file as it was: truncated or rewritten since, or another
		// that the file system gave its inode once it was deleted (the copy copytruncate
		// made after logrotate removed the oldest archive). It is judged as a new file.
		r.rewritten[p.Path] = true
		r.scanRewritten = append(r.scanRewritten, p)
	}
	if off, back := f.cameBack(id, file); back {
		return off, true // closed by the follower of the positions after it left its path
	}
	dir := filepath.Dir(file.Name())
	off, of := copyOf(file, id, r.byName[dir])
	if cut, cutOf := copyOf(file, id, r.truncated[dir]); cut >= off && cut > 0 {
		r.copied[cutOf] = true
		// What the file held that an earlier follower found truncated and had not settled
		// (Options.Truncated) is lost as far as the copy lacks it.
		if fi, err := file.Stat(); err == nil {
			f.settleCopied(func(c *truncation) bool { return c.path == cutOf && c.off == cut }, fi.Size())
		}
		return cut, true // of a file truncated since the position: not of one as it was
	}
	if off > 0 {
		r.copies[id], r.copied[of] = of, true
	}
	return off, true
}

// holeGrown reports whether file, found with the first bytes a position at off had
// (buf holds them: headHash), was left a longer hole since: those bytes are NULs, a hole
// (skipHole), and so is the byte before off, where a line read past the hole ended. A
// head of NULs does not tell the file as it was from the file truncated again under a
// writer at its own offset, which wrote on past off: the lines from off on are in the
// copy (resumeRotated reads it from off, or the first scan: copyOf). Read from its
// start, a file whose hole had ended at off (nothing read past it) is read from there
// again, the hole skipped.
func holeGrown(file io.ReaderAt, off int64, buf *[headLen]byte) bool {
	if off == 0 || slices.ContainsFunc(buf[:min(headLen, off)], func(b byte) bool { return b != 0 }) {
		return false
	}
	var last [1]byte
	_, err := file.ReadAt(last[:], off-1)
	return err == nil && last[0] == 0
}

// renumbered returns the position not applied yet of file, of identity id, at its path,
// when the file's device number is not the position's: a node's reboot may number its
// disks otherwise (LVM, NVMe), and a file system without a device of its own (btrfs,
// overlayfs, NFS) is given another number at each mount. It is the file of a position of
// its path with its inode, beginning with the bytes that file had: read again from its
// start instead, every line of it would count twice.
func (r *resume) renumbered(id fileID, file *os.File) (Position, bool) {
	var buf [headLen]byte
	for _, p := range r.byPath[file.Name()] {
		if _, pending := r.byID[fileID{dev: p.Dev, ino: p.Ino}]; !pending || p.Ino != id.ino || p.Dev == id.dev {
			continue
		}
		if h, err := headHash(file, p.Offset, &buf); err == nil && h == p.Head {
			return p, true
		}
	}
	return Position{}, false
}

// changedAfter reports whether file was written or truncated after taken. A log at offset
// 0 that was not had no copytruncate since: a rotated file of its path written after then
// is another's, such as the archive a writer that did not reopen the log after a rename
// writes to still, whose lines, read before the snapshot, are not to be read again.
func changedAfter(file *os.File, taken time.Time) bool {
	fi, err := file.Stat()
	return err == nil && fi.ModTime().After(taken)
}

// resumeLog is what resumeRotated logs of the files of positions that left their path,
// in the terms of where the positions came from: a snapshot's were saved before the
// process started, so the file went while the exporter was down; a hand-over's are those
// of followers stopped at a reload a moment ago, which may have been finishing a rotated
// file still.
type resumeLog struct {
	rotated, after, gone, drained, archive, rewritten string
	// unknownGone and unknownRewritten are gone and rewritten said of a snapshot that does
	// not tell whether the file was drained (Options.DrainedUnknown).
	unknownGone, unknownRewritten string
}

var (
	snapshotLog = resumeLog{
		rotated:   "file rotated away while the exporter was down, reading it to its end from the saved position",
		after:     "file rotated away while the exporter was down after the file of a saved position, reading it from its start",
		gone:      "the file of a saved position is gone: the lines written to it after the position are lost",
		drained:   "the file of a saved position is gone, read to its end after it left its path before the snapshot (compressed or removed since)",
		archive:   "the file of a saved position is gone, an archive read to its end before the snapshot (removed or compressed since)",
		rewritten: "the file of a saved position was rewritten: the lines written to it after the position are lost",

		unknownGone:      "the file of a saved position is gone; the snapshot, of an earlier version, does not say whether it was read to its end: lines written to it after the position may be lost",
		unknownRewritten: "the file of a saved position was rewritten; the snapshot, of an earlier version, does not say whether it was read to its end: lines written to it after the position may be lost",
	}
	handOverLog = resumeLog{
		rotated:   "file rotated away, handed over at a reload: reading it to its end from where the stopped follower left off",
		after:     "file rotated away at a reload after the file of a position handed over, reading it from its start",
		gone:      "the file of a position handed over at a reload is gone: the lines written to it after the position are lost",
		drained:   "the file of a position handed over at a reload is gone, read to its end after it left its path before the reload (compressed or removed since)",
		archive:   "the file of a position handed over at a reload is gone, an archive read to its end before the reload (removed or compressed since)",
		rewritten: "the file of a position handed over at a reload was rewritten: the lines written to it after the position are lost",
	}
)

// resumeRotated finishes the files of the positions to resume from that the first scan
// did not find at any path: rotated away since the positions were taken, they are looked
// for by device and inode in the directory of their path, and read from their position to
// their end before they are retired as any rotated file is. When none of a path's files
// was found at a path as it was, the one read under it then was rotated away too (or
// gone, or truncated), and the files rotated away after it (rotatedAfter: last written
// after it, or after Options.Taken when it is not there, and after Options.Taken always,
// as no file came to the path after it but after the positions were taken; not the file
// of a position, read on by the follower of its path) are read next, from their start or,
// a copy of it, from its position (copiedAt): a path rotated more than once while the
// exporter was down had each of them between that file and the one at the path now.
// So are those of a path whose file is there still at a position of offset 0 (unread):
// written after Options.Taken, they hold lines of none read then (the copy that
// copytruncate made of it while the exporter was down), except a copy the file still
// holds the lines of (held).
func (f *Follower) resumeRotated() {
	r := f.resume
	f.resume = nil
	if r == nil {
		return
	}
	say := snapshotLog
	if f.o.HandOver {
		say = handOverLog
	}
	f.readCopiesAtEnd(r)
	var found []*tracked
	// said is, by found file, what the log says of it once the follower kept it: another
	// follower of the glob may have claimed it first.
	said := map[*tracked]saying{}
	// lastWrite is, by path, the last write to the files of its positions found rotated;
	// lost holds the paths of positions whose file is gone or was rewritten.
	lastWrite := map[string]time.Time{}
	// oldDirs holds, by path, the directories within its rotation directories where the
	// files of its positions were found (logrotate's olddir): the files rotated away
	// after them went there too.
	oldDirs := map[string][]string{}
	// fromCopy holds the paths of which a copy of a position's file is read from the
	// position: no line of it was lost.
	fromCopy := map[string]bool{}
	lost := r.rewritten // the first scan's, to which those gone since are added
	dirs := newListings(f.o.readDir)
	var buf [headLen]byte
	for _, id := range r.order {
		p, ok := r.byID[id]
		if !ok || f.o.Select != nil && !f.o.Select(p.Path) {
			continue
		}
		var file *os.File
		inOld := false
		for _, at := range f.rotationPaths(p.Path) {
			// By its inode alone when its device was renumbered since (renumbered): its
			// first bytes are checked below.
			if file = dirs.openByID(filepath.Dir(at), id); file != nil {
				break
			}
			if file = dirs.openByIno(filepath.Dir(at), id.ino); file != nil {
				break
			}
		}
		if file == nil {
			file = f.inOldDir(dirs, p.Path, id)
			inOld = file != nil
		}
		if file == nil {
			f.logLost(r, p, say, say.gone)
			lost[p.Path] = true
			continue
		}
		fi, err := file.Stat()
		if h, herr := headHash(file, p.Offset, &buf); err != nil || herr != nil || h != p.Head {
			// Another file given its inode (an archive compressed beside it since) is told
			// of as the first scan tells of one at the path: a drained file is gone.
			_ = file.Close()
			f.logLost(r, p, say, say.rewritten)
			lost[p.Path] = true
			continue
		}
		// Its directory is the log's olddir once the file is known to be the position's:
		// another file given its inode since (a log's new file, made anew in another
		// log's directory within) says nothing of where the log's rotated files went.
		if inOld && !slices.Contains(oldDirs[p.Path], filepath.Dir(file.Name())) {
			oldDirs[p.Path] = append(oldDirs[p.Path], filepath.Dir(file.Name()))
		}
		t := f.rotatedFile(idOf(fi), file, p.Path, p.Offset)
		found = append(found, t)
		r.resumed[id] = true
		said[t] = saying{say.rotated, []any{"path", p.Path, "file", file.Name(), "offset", p.Offset}}
		if fi.ModTime().After(lastWrite[p.Path]) {
			lastWrite[p.Path] = fi.ModTime()
		}
	}
	// The files read on are not read again; nor are those the first scan found at the
	// input's paths, read from their start at most.
	known := make(map[fileID]bool, len(found))
	for _, t := range found {
		known[t.id] = true
	}
	f.mu.Lock()
	for id := range f.byID {
		known[id] = true
	}
	f.mu.Unlock()
	// done is a set, not a list: node mode resumes thousands of paths at once.
	done := make(map[string]bool, len(r.all))
	for _, p := range r.all {
		path := p.Path
		// A path of which a file read then is there still had nothing rotated after it.
		if done[path] || r.intact[path] || f.o.Select != nil && !f.o.Select(path) {
			continue
		}
		done[path] = true
		since, seen := lastWrite[path]
		unread, empty := r.unread[path]
		switch {
		case !seen && (!lost[path] && !empty || f.o.Taken.IsZero()):
			continue
		case !seen:
			since = f.o.Taken
		}
		// The files of the path then were positions' files: one rotated away after them
		// came to the path after the positions were taken, and was written since. An
		// archive written to by a writer that had not reopened the log, after the last
		// write to those files, left before.
		if since.Before(f.o.Taken) {
			since = f.o.Taken
		}
		var away []rotatedAway
		for _, at := range f.rotationPaths(path) {
			away = append(away, rotatedAfter(at, since, known, dirs.list)...)
		}
		// A copy beside the log (or found by the first scan, of a glob of its rotated
		// names) is copytruncate's without an olddir: one within (a backup of the log
		// copied there) would have its lines counted twice.
		if len(oldDirs[path]) == 0 && lost[path] && !r.copied[path] && !slices.ContainsFunc(away, func(a rotatedAway) bool {
			return copiedAt(a.file, r.byPath[path], r.resumed) > 0
		}) {
			if old := f.copyDir(dirs, path, since, known, r); old != "" {
				oldDirs[path] = []string{old}
			}
		}
		// Nothing rotated after it beside the log, the file of the position gone: compressed
		// in an olddir, whose archive of it tells that directory.
		if len(oldDirs[path]) == 0 && lost[path] && len(away) == 0 {
			if old := f.archiveDir(dirs, path, r); old != "" {
				oldDirs[path] = []string{old}
			}
		}
		for _, old := range oldDirs[path] {
			for _, at := range f.rotationPaths(path) {
				away = append(away, rotatedAfter(filepath.Join(old, filepath.Base(at)), since, known, dirs.list)...)
			}
		}
		slices.SortStableFunc(away, func(a, b rotatedAway) int { return a.mtime.Compare(b.mtime) })
		for _, a := range away {
			if r.ofPosition(a.file, a.id) {
				// Another follower of the glob reads it on from its position: the archive
				// of a position that was written to after it (a writer that had not
				// reopened the log yet), at a path this one does not select.
				_ = a.file.Close()
				continue
			}
			if empty && f.held(unread, a.file) {
				_ = a.file.Close()
				continue
			}
			off := copiedAt(a.file, r.byPath[path], r.resumed)
			fromCopy[path] = fromCopy[path] || off > 0
			t := f.rotatedFile(a.id, a.file, path, off)
			found = append(found, t)
			said[t] = saying{say.after, []any{"path", path, "file", a.file.Name(), "offset", off}}
		}
	}
	// A file the first scan found rewritten at its path, truncated or another given its
	// inode (the new log, made once the file was deleted: a file system gives a freed
	// inode at once), which the restart cannot tell apart, lost its lines after the
	// position unless its copy is read from there.
	for _, p := range r.scanRewritten {
		if !r.copied[p.Path] && !fromCopy[p.Path] && (f.o.Select == nil || f.o.Select(p.Path)) {
			f.logLost(r, p, say, say.rewritten)
		}
	}
	f.mu.Lock()
	for _, t := range found {
		if _, dup := f.byID[t.id]; dup || !f.claim(t.id) {
			_ = t.f.Close()
			continue
		}
		f.byID[t.id] = t
		f.o.Files.take(true) // its lines are lost unless it is read: past the bound
		f.pathsChanged++
	}
	found = slices.DeleteFunc(found, func(t *tracked) bool { return f.byID[t.id] != t })
	// Older files are read first: the rotated ones before what replaced them.
	f.files = append(found, f.files...)
	f.mu.Unlock()
	for _, t := range found {
		f.c.rotations.Add(1)
		f.o.Logger.Info(said[t].msg, said[t].attrs...)
	}
}

// logLost logs msg (say.gone or say.rewritten) of p, whose file was not read on from it:
// at debug, instead, that p's file was read to its end after it left its path, or as an
// archive under its own (Options.Drained), which lost a line only if a writer that had
// not reopened the log wrote to it after the position: nothing to act on; and that it may
// have been, when that is not known (Options.DrainedUnknown).
func (f *Follower) logLost(r *resume, p Position, say resumeLog, msg string) {
	level := slog.LevelInfo
	switch {
	case r.drained[p]:
		level, msg = slog.LevelDebug, say.drained
		if archived(p.Path, r.byPath) {
			msg = say.archive
		}
	case f.o.DrainedUnknown && msg == say.gone:
		level, msg = slog.LevelDebug, say.unknownGone
	case f.o.DrainedUnknown:
		level, msg = slog.LevelDebug, say.unknownRewritten
	}
	f.o.Logger.Log(context.Background(), level, msg, "path", p.Path, "offset", p.Offset)
}

// rotationPaths is where the files rotated away from path are looked for after a restart:
// path's directory and name, and when path is a symbolic link, those of the file it leads
// to (a link to a log of another directory, which its rotator renames there), unless it
// leads out of a glob's root, which is not followed.
func (f *Follower) rotationPaths(path string) []string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil || real == path || config.IsGlob(f.o.Path) && f.tree.realInRoot(path, real) != nil {
		return []string{path}
	}
	return []string{path, real}
}

// inOldDir opens the file id in a directory within one of path's rotation directories
// (rotationPaths), where logrotate's olddir, given relative to the log's directory, moves
// its rotated files, or returns nil. By its device and inode alone: any directory within
// may hold another log's archives of the name (the log's directory /var/log, whose
// programs' directories log as they do). Once the file is found in one, that one is the
// log's olddir: the files rotated away after it are looked for there too (rotatedAfter),
// where another log's archives of the name would be overwritten by its.
func (f *Follower) inOldDir(dirs *listings, path string, id fileID) *os.File {
	for _, at := range f.rotationPaths(path) {
		dir := filepath.Dir(at)
		entries, _ := dirs.list(dir)
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if file := dirs.openByID(filepath.Join(dir, e.Name()), id); file != nil {
				return file
			}
		}
	}
	return nil
}

// copyDir returns the directory within one of path's rotation directories (rotationPaths)
// that holds a file rotated away from path after since which is the copy of the file of
// one of its positions (copiedAt), or "": logrotate's copytruncate with an olddir given
// relative to the log's directory puts its copy there. By the copy's first bytes alone,
// as inOldDir goes by identity alone: any directory within may hold another log's
// archives of the name. Of several such directories, the one whose copy is the largest:
// a backup of the log copied into another before the copytruncate holds less of it, and
// read instead lost the lines written after it (two, the lines they share counted twice).
// Not one that holds a file of the log's name: another log's directory (a vhost's below
// the default one's), whose archives the log's would overwrite, and which may begin as
// the log did (replicas of one program).
func (f *Follower) copyDir(dirs *listings, path string, since time.Time, known map[fileID]bool, r *resume) string {
	best, most := "", int64(-1)
	for _, at := range f.rotationPaths(path) {
		dir, base := filepath.Split(at)
		entries, _ := dirs.list(filepath.Clean(dir))
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			within, _ := dirs.list(filepath.Join(dir, e.Name()))
			if _, another := slices.BinarySearchFunc(within, base, func(e os.DirEntry, s string) int { return strings.Compare(e.Name(), s) }); another {
				continue
			}
			for _, a := range rotatedAfter(filepath.Join(dir, e.Name(), base), since, known, dirs.list) {
				if copiedAt(a.file, r.byPath[path], r.resumed) > 0 {
					if fi, err := a.file.Stat(); err == nil && fi.Size() > most {
						best, most = filepath.Join(dir, e.Name()), fi.Size()
					}
				}
				_ = a.file.Close()
			}
		}
	}
	return best
}

// archiveDir returns the directory within one of path's rotation directories
// (rotationPaths) that holds the gzip archive of the file of one of its positions not
// read on, or "": logrotate's olddir, given relative to the log's directory, with
// compress, where the file went and was compressed while the exporter was down (at its
// second rotation, with delaycompress), and where the files rotated after it went too. The
// archive is named as rotated from path (rotatedName, then ".gz") and its first bytes,
// decompressed, are those the file had at the position. Not a directory that holds a
// file of the log's name (another log's, whose archive may begin as the log did: see
// copyDir), nor any when two tell, or the archive is beside the log (a backup of the
// archive), which one is the log's not being known.
func (f *Follower) archiveDir(dirs *listings, path string, r *resume) string {
	var ps []Position
	for _, p := range r.byPath[path] {
		if p.Offset > 0 && !r.resumed[fileID{dev: p.Dev, ino: p.Ino}] {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return ""
	}
	// The file of a position was rotated after the others of the log (it was the log, or
	// was read on as rotated away, at the snapshot): its archive is among the newest,
	// whose names and times are read first, and those are opened first, the newest first,
	// rather than a log's every archive in the order of their names (a restart did so with
	// ten or more of each log).
	type archive struct {
		name  string
		id    fileID
		mtime time.Time
	}
	// unread: the archives named as rotated from the log, in a directory within, that
	// cannot be read (xz; a zstd frame asking for a window past archiveWindow, an archive
	// cut off, unreadable or not compressed at all), with why: one may be the
	// position's file's, which nothing else tells.
	type unreadable struct {
		path string
		err  error
	}
	var unread []unreadable
	holds := func(dir, base string, names []os.DirEntry, within bool) bool {
		var archives []archive
		for _, a := range withStem(names, base) {
			c, name, ok := archiveExt(a.Name())
			if !ok || !a.Type().IsRegular() || !rotatedName(base, name) {
				continue
			}
			if !readable(c) {
				if within {
					unread = append(unread, unreadable{filepath.Join(dir, a.Name()), errUnreadable})
				}
				continue
			}
			if fi, err := a.Info(); err == nil {
				archives = append(archives, archive{a.Name(), idOf(fi), fi.ModTime()})
			}
		}
		slices.SortStableFunc(archives, func(a, b archive) int { return b.mtime.Compare(a.mtime) })
		return slices.ContainsFunc(archives, func(a archive) bool {
			file, err := openListed(dir, a.name, a.id)
			if err == nil && file != nil {
				var of bool
				if of, err = archiveOf(file, ps); of {
					return true
				}
			}
			if err != nil && within {
				unread = append(unread, unreadable{filepath.Join(dir, a.name), err})
			}
			return false
		})
	}
	found := ""
	defer func() {
		if found == "" && len(unread) > 0 {
			c, _, _ := archiveExt(unread[0].path)
			f.o.Logger.Warn("an archive named as rotated from the log, in a directory within its own (logrotate's olddir), cannot be read to tell whether it holds the file of a saved position: the files rotated after it there are not read",
				"path", path, "archive", unread[0].path, "archives", len(unread), "compressor", compressors[c].name, "err", unread[0].err)
		}
	}()
	for _, at := range f.rotationPaths(path) {
		dir, base := filepath.Split(at)
		entries, _ := dirs.list(filepath.Clean(dir))
		if holds(dir, base, entries, false) {
			return "" // compressed beside the log: no olddir
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			within := filepath.Join(dir, e.Name())
			names, _ := dirs.list(within)
			if _, another := slices.BinarySearchFunc(names, base, func(e os.DirEntry, s string) int { return strings.Compare(e.Name(), s) }); another {
				continue
			}
			if within == found || !holds(within, base, names, true) {
				continue
			}
			if found != "" {
				found, unread = "", nil // which one is the olddir is not known
				return ""
			}
			found = within
		}
	}
	return found
}

// archiveHeadIn is the most of an archive's compressed bytes that archiveOf reads: a
// gzip header with its longest extra field, name and comment, then a KiB however it was
// compressed, take far less. Empty gzip members or deflate blocks before those bytes (a
// broken or hostile writer's) would otherwise have a restart read the whole file, of
// each such archive of each log whose file is gone.
const archiveHeadIn = 1 << 20

// archiveOf reports whether file, a gzip, bzip2 or zstd archive, begins, decompressed,
// with the bytes that the file of one of ps had at its position (Position.Head), and
// closes it. Only those are decompressed, from at most archiveHeadIn bytes of it. err
// says why it could not tell, the archive read short of those bytes otherwise than by
// its end: not compressed at all, cut off, a zstd frame asking for a window past
// archiveWindow, more than archiveHeadIn bytes before them, a read failing.
func archiveOf(file *os.File, ps []Position) (bool, error) {
	defer file.Close()
	in := &io.LimitedReader{R: file, N: archiveHeadIn}
	z, done, err := decompressed(bufio.NewReader(in))
	if err != nil {
		return false, err
	}
	defer done()
	var head [headLen]byte
	n, err := io.ReadFull(z, head[:])
	switch {
	case n == headLen:
		err = nil
	case errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded):
		// Its decoder's words for a frame in one segment, whose window is its whole
		// content, tell of a size decompressed: nothing so large was.
		err = fmt.Errorf("a zstd window past %d MiB: %w", archiveWindow>>20, err)
	case in.N == 0:
		// Its decompressor may end cleanly where the bound cut it, between two members.
		err = fmt.Errorf("fewer than %d bytes decompressed from its first %d", headLen, archiveHeadIn)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		// The whole archive holds fewer bytes than a head, or it was cut off, which its
		// decompressor tells by a read past them.
		if _, err = z.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
			err = nil
		} else if err == nil {
			err = io.ErrUnexpectedEOF
		}
	}
	return slices.ContainsFunc(ps, func(p Position) bool {
		k := min(headLen, p.Offset)
		return int64(n) >= k && xxhash.Sum64(head[:k]) == p.Head
	}), err
}

// readCopiesAtEnd has the files the first scan took for copies of a position's file
// (copyOf) read from their end when that file was found at its path as it was, not
// truncated: the copy of logrotate's copy, or a backup made with cp, whose lines past the
// position that file holds too, read there (as judged has one found while running).
// After a copytruncate, the copy is read from the position. One that holds other bytes
// than that file past the position (refutes) is another file that begins as it does (a
// daily file's header line), read from its start.
func (f *Follower) readCopiesAtEnd(r *resume) {
	for id, of := range r.copies {
		if !r.intact[of] {
			continue
		}
		f.mu.Lock()
		t := f.byID[id]
		var u *tracked
		if i := slices.IndexFunc(f.files, func(u *tracked) bool { return u.path == of && !u.rotated }); i >= 0 {
			u = f.files[i]
		}
		f.mu.Unlock()
		if t == nil {
			continue
		}
		fi, err := f.o.stat(t.f)
		if err != nil {
			continue
		}
		// The reader has not started: t and u are still the scan's.
		if u != nil && f.refutes(u, u.head[:min(int64(u.headN), t.off)], t.f, fi.Size(), t.off) {
			t.positionAt(0)
			f.o.Logger.Info("file begins as a file read on at its path but holds other lines, reading it from its start", "path", t.path, "of", of)
			continue
		}
		t.positionAt(fi.Size())
		f.o.Logger.Info("file is a copy of a file read on at its path, reading it from its end", "path", t.path, "of", of, "offset", fi.Size())
	}
}

// held reports whether the file of identity id, followed from its start, begins with all
// of file's first bytes (up to HeadBytes): the copy that logrotate's copy (not
// copytruncate) made of it, whose lines it holds still and which are read there.
func (f *Follower) held(id fileID, file *os.File) bool {
	f.mu.Lock()
	t := f.byID[id]
	f.mu.Unlock()
	fi, err := file.Stat()
	if t == nil || err != nil {
		return false
	}
	var a, b [headLen]byte
	n := int(min(headLen, fi.Size()))
	if got, _ := file.ReadAt(a[:n], 0); got < n {
		return false
	}
	got, _ := t.f.ReadAt(b[:n], 0)
	return got == n && bytes.Equal(a[:n], b[:n])
}

// saying is a message of the log with its attributes.
type saying struct {
	msg   string
	attrs []any
}

// rotatedFile is file, of identity id, rotated away from path, to be read from off.
func (f *Follower) rotatedFile(id fileID, file *os.File, path string, off int64) *tracked {
	now := f.o.now()
	t := &tracked{id: id, f: file, path: path, lastData: now, rotated: true, rotatedAt: now}
	t.positionAt(off)
	return t
}

// copiedAt is where file is read from when it begins with the bytes a position of its
// path (ps, those of the path) had, of a file not read on from it (resumed holds those):
// the copy that logrotate's copytruncate makes of the log before it truncates it, which
// holds what it had been read up to at the position, and what was written to it after,
// until the copy. Another file is read from its start.
func copiedAt(file *os.File, ps []Position, resumed map[fileID]bool) int64 {
	var buf [headLen]byte
	for _, p := range ps {
		if p.Offset == 0 || resumed[fileID{dev: p.Dev, ino: p.Ino}] {
			continue
		}
		if h, err := headHash(file, p.Offset, &buf); err == nil && h == p.Head {
			return p.Offset
		}
	}
	return 0
}

// copyOf is where file, of identity id, found at a path of the input and without a
// position of its own, is read from: the offset of a position of a file of its directory
// (the furthest, should several fit) whose first bytes it begins with, as far as that
// file was read, and which it holds all of. That is the copy logrotate's copytruncate made
// of the log while the exporter was down, beside it, found by a glob that matches rotated
// names too (access.log*); read from its start, the lines before the position would count
// twice. As the follower judges such a copy (copied), it is named as one of the
// position's file's rotated ones: another log may begin with the bytes its neighbour had
// when the snapshot was taken (a line or two, or the first KiB of replicas of one
// program). Any other file is read from its start. named holds the positions of file's
// directory by the name of their path; of is the path of the position it is a copy of.
func copyOf(file *os.File, id fileID, named map[string][]Position) (off int64, of string) {
	if len(named) == 0 {
		return 0, ""
	}
	fi, err := file.Stat()
	if err != nil {
		return 0, ""
	}
	name := filepath.Base(file.Name())
	var buf [headLen]byte
	for _, base := range rotatedBases(name) {
		for _, p := range named[base] {
			if p.Offset <= off || p.Offset > fi.Size() || (fileID{dev: p.Dev, ino: p.Ino}) == id || !rotatedName(base, name) {
				continue
			}
			if h, err := headHash(file, p.Offset, &buf); err == nil && h == p.Head {
				off, of = p.Offset, p.Path
			}
		}
	}
	return off, of
}

// rotatedBases returns the names name may be a rotated name of (rotatedName), and some it
// is not: a rotator's suffix begins with ".", "-" or "_", after the base, or after its
// stem with its extension after the suffix.
func rotatedBases(name string) []string {
	var out []string
	ext := filepath.Ext(name)
	for k := range len(name) {
		if strings.IndexByte(".-_", name[k]) < 0 {
			continue
		}
		out = append(out, name[:k])
		if ext != "" && k < len(name)-len(ext) {
			out = append(out, name[:k]+ext)
		}
	}
	return out
}

// ofPosition reports whether file, of identity id, is the file of a position: of its
// identity, or of its inode on a device renumbered since (renumbered), and beginning with
// the bytes it had then. Another file given its inode since (the file of a position
// deleted, then another made) is not.
func (r *resume) ofPosition(file *os.File, id fileID) bool {
	ps := r.byIno[id.ino]
	if i := slices.IndexFunc(ps, func(p Position) bool { return p.Dev == id.dev }); i >= 0 {
		ps = ps[i : i+1] // of its identity: no other is
	}
	var buf [headLen]byte
	for _, p := range ps {
		if h, err := headHash(file, p.Offset, &buf); err == nil && h == p.Head {
			return true
		}
	}
	return false
}

// rotatedAway is a file rotatedAfter found.
type rotatedAway struct {
	id    fileID
	file  *os.File
	mtime time.Time
}

// rotatedAfter opens the files of path's directory that were rotated away from path after
// a file last written at since: named as path with a rotation's suffix (rotatedName), last
// written after since, and none of known. They are returned oldest first, by their last
// write. A log's rotated files are last written when they leave its path, one rotation
// after the other; the archives rotated before since were written before it, and a
// compressed one is named with a suffix of letters. readDir lists the directory
// (os.ReadDir), sorted by name: only the names that begin as path's does without its
// extension are looked at, not every file of a directory of thousands of logs for each.
func rotatedAfter(path string, since time.Time, known map[fileID]bool, readDir func(string) ([]os.DirEntry, error)) []rotatedAway {
	dir, base := filepath.Split(path)
	entries, err := readDir(filepath.Clean(dir))
	if err != nil {
		return nil
	}
	var out []rotatedAway
	for _, e := range withStem(entries, base) {
		if !e.Type().IsRegular() || !rotatedName(base, e.Name()) {
			continue
		}
		fi, err := e.Info()
		if err != nil || known[idOf(fi)] || !fi.ModTime().After(since) {
			continue
		}
		file, _ := openListed(dir, e.Name(), idOf(fi))
		if file == nil {
			continue
		}
		out = append(out, rotatedAway{id: idOf(fi), file: file, mtime: fi.ModTime()})
	}
	slices.SortStableFunc(out, func(a, b rotatedAway) int { return a.mtime.Compare(b.mtime) })
	return out
}

// withStem is those of entries, sorted by name, whose names begin with base's stem (base
// without its extension): every rotated name of base (rotatedName) and its archive, which
// a directory of thousands of other logs' archives is not searched through for.
func withStem(entries []os.DirEntry, base string) []os.DirEntry {
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	from, _ := slices.BinarySearchFunc(entries, stem, func(e os.DirEntry, s string) int { return strings.Compare(e.Name(), s) })
	to := from + sort.Search(len(entries)-from, func(i int) bool { return !strings.HasPrefix(entries[from+i].Name(), stem) })
	return entries[from:to]
}

// rotatedName reports whether name is base with a suffix a rotator gives it: logrotate's
// number (access.log.1); a date, as logrotate's dateext makes with its default and hourly
// formats and those dateformat makes of a date and a time (access.log-20240301,
// access.log-2024030113, access.log.2024-03-01, access.log-20240301_13:05), of a month
// or an ISO week (access.log-202403, access.log-2024-09, access.log-2024-W09), the
// kubelet's time (0.log.20240301-120000), and any of those numbered again
// (access.log-20240301.1); or logrotate's seconds since 1970 (access.log-1709294400).
// With logrotate's extension, the suffix comes before base's extension (access.1.log,
// access-20240301.log). Not a compressed archive (.gz), nor another log
// (access.log.json), nor one named as the path with a dash and a number (worker-1-2
// beside worker-1), which no rotator makes.
func rotatedName(base, name string) bool {
	if suffixed(base, name) {
		return true
	}
	ext := filepath.Ext(base)
	stem, inner := strings.TrimSuffix(base, ext), strings.TrimSuffix(name, ext)
	return len(ext) > 1 && !digits(ext[1:]) && stem != "" && inner != name && suffixed(stem, inner)
}

// suffixed reports whether name is base with a rotator's suffix after it (rotatedName).
func suffixed(base, name string) bool {
	suffix, ok := strings.CutPrefix(name, base)
	if !ok || len(suffix) < 2 {
		return false
	}
	sep, rest := suffix[0], suffix[1:]
	switch {
	case sep == '.' && digits(rest), sep == '-' && len(rest) == 10 && digits(rest):
		return true
	case strings.IndexByte("-._", sep) < 0:
		return false
	}
	if rest, ok := cutMonth(rest); ok && (rest == "" || rest[0] == '.' && digits(rest[1:])) {
		return true
	}
	rest, ok = cutDate(rest)
	return ok && timeTail(rest, 0)
}

// cutMonth cuts a month or an ISO week off the start of s: a year of four digits, then,
// optionally after a separator ("-", ".", "_"), a month of two, or a week of two, which
// may follow a "W".
func cutMonth(s string) (string, bool) {
	if len(s) < 4 || !digits(s[:4]) {
		return s, false
	}
	s = s[4:]
	if s != "" && strings.IndexByte("-._", s[0]) >= 0 {
		s = s[1:]
	}
	s = strings.TrimPrefix(s, "W")
	// Without its W, a week's number (%V) cannot be told from a month's: either is read.
	if n := twoDigits(s); n < 1 || n > 53 {
		return s, false
	}
	return s[2:], true
}

// digits reports whether s is one or more decimal digits.
func digits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// twoDigits returns the number s opens with, of two digits, or -1.
func twoDigits(s string) int {
	if len(s) < 2 || !digits(s[:2]) {
		return -1
	}
	return int(s[0]-'0')*10 + int(s[1]-'0')
}

// cutDate cuts a date off the start of s: a year of four digits, a month and a day of
// two, each optionally after a separator ("-", ".", "_").
func cutDate(s string) (string, bool) {
	if len(s) < 4 || !digits(s[:4]) {
		return s, false
	}
	s = s[4:]
	for _, most := range []int{12, 31} {
		if s != "" && strings.IndexByte("-._", s[0]) >= 0 {
			s = s[1:]
		}
		if n := twoDigits(s); n < 1 || n > most {
			return s, false
		}
		s = s[2:]
	}
	return s, true
}

// timeTail reports whether s, what follows a date, is nothing, a number (".1"), or the
// hour, minute and second of a time from field on (0: the hour), each two digits
// optionally after a separator ("-", ".", "_", ":"), the fields after the hour optional,
// then either of the first two. Each way of reading s is tried: ".12" is an hour, or a
// number.
func timeTail(s string, field int) bool {
	if s == "" || s[0] == '.' && digits(s[1:]) {
		return true
	}
	if field == 3 {
		return false
	}
	if strings.IndexByte("-._:", s[0]) >= 0 {
		s = s[1:]
	}
	if n := twoDigits(s); n < 0 || n > []int{23, 59, 59}[field] {
		return false
	}
	return timeTail(s[2:], field+1)
}

// listings lists each directory a restart looks in once, and looks at each of its files
// once for their identities: a glob's logs, by the thousand, share theirs.
type listings struct {
	readDir func(string) ([]os.DirEntry, error)
	listed  map[string]listing
	// names holds, by directory, its regular files' names by device and inode, and inos
	// their identities by inode.
	names map[string]map[fileID]string
	inos  map[string]map[uint64]fileID
}

// listing is what a directory's listing gave.
type listing struct {
	entries []os.DirEntry
	err     error
}

// newListings lists directories with readDir (os.ReadDir).
func newListings(readDir func(string) ([]os.DirEntry, error)) *listings {
	return &listings{readDir: readDir, listed: map[string]listing{}, names: map[string]map[fileID]string{}, inos: map[string]map[uint64]fileID{}}
}

// list is dir's listing, sorted by name (as os.ReadDir sorts it).
func (l *listings) list(dir string) ([]os.DirEntry, error) {
	d, ok := l.listed[dir]
	if !ok {
		d.entries, d.err = l.readDir(dir)
		byName := func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) }
		if !slices.IsSortedFunc(d.entries, byName) {
			slices.SortFunc(d.entries, byName)
		}
		l.listed[dir] = d
	}
	return d.entries, d.err
}

// openByID opens the regular file of dir whose device and inode are id, or returns nil.
func (l *listings) openByID(dir string, id fileID) *os.File {
	name, ok := l.identities(dir)[id]
	if !ok {
		return nil
	}
	file, _ := openListed(dir, name, id)
	return file
}

// openByIno opens the regular file of dir whose inode is ino, on whichever device, or
// returns nil.
func (l *listings) openByIno(dir string, ino uint64) *os.File {
	l.identities(dir)
	id, ok := l.inos[dir][ino]
	if !ok {
		return nil
	}
	return l.openByID(dir, id)
}

// identities are the names of dir's regular files by device and inode; l.inos[dir] has
// their identities by inode.
func (l *listings) identities(dir string) map[fileID]string {
	if names, ok := l.names[dir]; ok {
		return names
	}
	names, inos := map[fileID]string{}, map[uint64]fileID{}
	entries, _ := l.list(dir)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil {
			if _, dup := names[idOf(fi)]; !dup { // hard links: the first name listed
				names[idOf(fi)] = e.Name()
				inos[idOf(fi).ino] = idOf(fi)
			}
		}
	}
	l.names[dir], l.inos[dir] = names, inos
	return names
}

// openListed opens name in dir, which a listing found to be the regular file id, or
// returns nil when it is not that file any more (gone since: a rotator removing its
// oldest archive), or it could not be opened (err, which a caller that must tell an
// archive it could not read says). O_NONBLOCK: a FIFO renamed over it since the listing
// would wait for a writer, for ever.
func openListed(dir, name string, id fileID) (file *os.File, err error) {
	file, err = os.OpenFile(filepath.Join(dir, name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if fi, err := file.Stat(); err != nil || !fi.Mode().IsRegular() || idOf(fi) != id {
		_ = file.Close()
		return nil, nil
	}
	return file, nil
}
