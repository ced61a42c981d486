package follow

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/logwindow/logwindow_exporter/config"
)

// truncation is what a file held before it was found truncated: the copy that
// logrotate's copytruncate made of it first may be found after.
type truncation struct {
	path string // the path it was read under
	id   fileID
	head []byte // its first min(headLen, off) bytes
	// hash is the xxhash of those when head is nil: one an earlier follower found
	// (Options.Truncated), whose snapshot keeps no more of them.
	hash uint64
	off  int64 // how far it was read
	at   time.Time
	// seen is its size at the reader's last look before the truncation, and lost what it
	// held past where it was read then, lost unless a copy of it is read (copyRead).
	// settled says that it was counted (lose), a copy read, or that there is nothing to
	// count (no glob, whose new files alone are read as copies; an earlier follower's
	// that it settled, or whose loss it did not know).
	seen, lost int64
	settled    bool
}

// copied is a file that a new file of its directory may be a copy of, with its first
// bytes as far as it was read: one found truncated lately (at when it was), or one at a
// path of the input that the new file is named as a rotated file of (live: read there
// still). Other files are not: other logs of a directory may well begin with the same
// bytes (a line "starting", or the same first KiB from replicas of one program).
type copied struct {
	head []byte
	hash uint64 // of the first bytes when head is nil (truncation)
	off  int64
	at   time.Time
	live *tracked // the file, when live
}

// keepTruncated remembers what t held before it was found truncated, for a glob whose
// new files may be its copy (judged), as far as it was read, or to the start of the line
// read in part when whole (its copy holds the rest), and hands it to the new files that
// wait to be judged; the reader calls it, before t starts again. What the reader saw t
// hold past there (NULs held back are no text) is lost with the truncation: counted now
// when no copy of t can be read (a glob's new file alone may be one, and only of what was
// read), else once none was within the rotation grace (settleTruncations).
func (f *Follower) keepTruncated(t *tracked, path string, whole bool) {
	off := t.off
	if whole {
		off = t.done.Load()
	}
	lost := max(0, t.seen-max(off, t.zeros))
	copiable, glob := off > 0 && t.headN > 0, config.IsGlob(f.o.Path)
	if !copiable || !glob {
		f.lose(path, lost, "file truncated before all it held was read")
	}
	if !copiable {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := truncation{path: path, id: t.id, head: slices.Clone(t.head[:min(int64(t.headN), off)]), off: off, at: f.o.now(),
		seen: t.seen, lost: lost, settled: !glob}
	f.truncated = append(f.truncated, c)
	// The new files of its directory found already keep it however long the reader takes
	// to judge them: one stalled past the grace would read such a copy from its start.
	for _, u := range f.files {
		if u.judging.Load() && filepath.Dir(u.path) == filepath.Dir(path) {
			u.judgeKept = append(u.judgeKept, copied{head: c.head, off: c.off, at: c.at})
		}
	}
}

// lose counts n bytes of the file at path as lost to its truncation, and warns of them
// with msg. It is called once per truncation, never per line: bytes, not lines, as what
// was not read cannot be told into lines.
func (f *Follower) lose(path string, n int64, msg string) {
	if n <= 0 {
		return
	}
	f.c.truncatedBytes.Add(uint64(n))
	f.o.Logger.Warn(msg+": bytes lost", "path", path, "bytes", n)
}

// settleTruncations forgets the truncations of a glob's files found past the rotation
// grace, counting as lost what such a file held unread when no copy of it was read
// (copyRead) and none may be any more: no new file being judged keeps it (judged). The
// reader calls it at each turn.
func (f *Follower) settleTruncations() {
	if len(f.truncated) == 0 {
		return
	}
	now := f.o.now()
	var lost []truncation
	f.mu.Lock()
	kept := f.truncated[:0]
	for _, c := range f.truncated {
		due := now.Sub(c.at) > f.o.RotationGrace && (c.settled || !f.judgeKeeps(c))
		if due && !c.settled && f.counts(c) {
			lost = append(lost, c)
		}
		if !due {
			kept = append(kept, c)
		}
	}
	clear(f.truncated[len(kept):])
	f.truncated = kept
	f.mu.Unlock()
	for _, c := range lost {
		f.lose(c.path, c.lost, "file truncated before all it held was read, and no copy of it found")
	}
}

// counts reports whether the follower counts what c held unread: the one a glob's
// followers that share it deal the file's directory to (Options.Select), which reads its
// copy, when an earlier follower handed c on to them all (Options.Truncated). f.mu is
// held: the dealer takes no lock of a follower.
func (f *Follower) counts(c truncation) bool {
	return f.o.Select == nil || f.o.Select(c.path)
}

// pendingAtStop logs, at stop, the truncations whose loss is not settled yet: this
// follower reads no copy any more, but a follower resumed from its positions and
// Truncated (a reload that replaces it, a restart from a snapshot) may still find one and
// read it from there, and counts what is lost of them in its own count (Options.Truncated).
// They are kept for Truncated. Stop calls it once the reader is done.
func (f *Follower) pendingAtStop() {
	f.mu.Lock()
	var pending []truncation
	for _, c := range f.truncated {
		if !c.settled && c.lost > 0 && f.counts(c) {
			pending = append(pending, c)
		}
	}
	f.mu.Unlock()
	for _, c := range pending {
		f.o.Logger.Warn("file truncated before all it held was read, and no copy of it found before the input stopped: the input resumed from its positions counts the bytes as lost unless it finds one", "path", c.path, "bytes", c.lost)
	}
}

// judgeKeeps reports whether a file judged (a glob's new file, not read yet) keeps c, a
// truncation it may be a copy of, past the rotation grace (copyCandidates); f.mu must be
// held.
func (f *Follower) judgeKeeps(c truncation) bool {
	return slices.ContainsFunc(f.files, func(u *tracked) bool {
		return u.judging.Load() && slices.ContainsFunc(u.judgeKept, c.keptAs)
	})
}

// keptAs reports whether k, a file judged keeps, is c (copyCandidates).
func (c truncation) keptAs(k copied) bool { return k.at.Equal(c.at) && k.off == c.off }

// copyRead settles the truncations that candidates held whose copy, size bytes long, is
// read from off (judged).
func (f *Follower) copyRead(candidates []copied, off, size int64) {
	f.settleCopied(func(c *truncation) bool {
		return c.off == off && slices.ContainsFunc(candidates, func(k copied) bool { return k.live == nil && c.keptAs(k) })
	}, size)
}

// settleCopied settles the truncations not settled yet that of says a copy, size bytes
// long, is read of: what such a file held past the copy's end when the reader last saw
// it (written after the copy was made) is lost.
func (f *Follower) settleCopied(of func(*truncation) bool, size int64) {
	var lost []truncation
	f.mu.Lock()
	for i := range f.truncated {
		c := &f.truncated[i]
		if !c.settled && of(c) {
			c.settled = true
			if c.lost = max(0, c.seen-size); c.lost > 0 {
				lost = append(lost, *c)
			}
		}
	}
	f.mu.Unlock()
	for _, c := range lost {
		f.lose(c.path, c.lost, "file truncated before all it held was read, and its copy holds less")
	}
}

// copyWaits reports whether a new file of the glob waits, judged a copy of t, for t's
// truncation (judged). The reader calls it.
func (f *Follower) copyWaits(t *tracked) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.ContainsFunc(f.files, func(u *tracked) bool { return u.judging.Load() && u.judgeOf.Load() == t })
}

// Truncated returns what the files the follower found truncated within the rotation grace
// held before (the path each was read under, its identity, how far it was read and the
// hash of its first bytes up to there), and those whose loss it has not settled: a
// follower resumed from Positions taken with them (Options.Truncated) reads a copy of one
// that it finds without a position (copytruncate's, found after its truncation was read)
// from there, not from its start, whose lines were counted, and counts what of them is
// lost. So that they are one cut with Positions, the caller calls it while no line is
// being handed on (Options.Hold), or after Stop.
func (f *Follower) Truncated() []Truncation {
	<-f.scanned // Options.Later
	now := f.o.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Truncation
	for _, c := range f.truncated {
		// Of those of Options.Truncated, the unsettled alone: a restart after each would
		// keep the others for good.
		pending := !c.settled && c.lost > 0 && f.counts(c)
		if !pending && (c.head == nil || now.Sub(c.at) > f.o.RotationGrace) {
			continue
		}
		head := c.hash
		if c.head != nil {
			head = xxhash.Sum64(c.head)
		}
		tr := Truncation{Position: Position{Path: c.path, Dev: c.id.dev, Ino: c.id.ino, Offset: c.off, Head: head}}
		if pending {
			tr.Seen, tr.Lost = c.seen, c.lost
		}
		out = append(out, tr)
	}
	return out
}

// truncatedPositions are the positions of ts.
func truncatedPositions(ts []Truncation) []Position {
	if ts == nil {
		return nil
	}
	ps := make([]Position, len(ts))
	for i, t := range ts {
		ps[i] = t.Position
	}
	return ps
}

// judged tells, before t, a file a glob found after the start, is first read, whether it
// is the copy that logrotate's copytruncate makes of the log beside it, with a glob that
// matches rotated names too (access.log*): one that begins with the first bytes of a file
// it may be a copy of (copied), as far as that was read, and holds all it read. Such a
// copy of a file found truncated is read on from where that file was read up to then:
// from its start, what was read of the log would count twice. A copy of a file still read
// at its path (live) holds past there lines that file holds too, read there, unless it is
// found truncated (copytruncate, whose copy comes first): it waits for that, and is read
// from its end should the file not be truncated within the rotation grace (logrotate's
// copy, a backup made with cp), or should the file leave its path without (renamed, or
// deleted and made again), read to its end there. It reports false while that cannot be
// told yet: t, of size bytes, begins with what such a file was read up to but holds less
// (a copy being written, or a file created empty), and nothing else (a file read at its
// path shows which), unless t has stayed at that size for
// the rotation grace: it is then read from its end when it holds that file's first bytes,
// as far as headLen, a copy of what was read already (made before the log was read
// further); from its start when it holds fewer, as another log that begins with the same
// line would (the line a program writes first each run, then nothing for a while). Any
// other file is read from its start.
func (f *Follower) judged(t *tracked, path string, size int64) bool {
	now := f.o.now()
	if size != t.judgeSize {
		t.judgeSize, t.judgeAt = size, now
	}
	candidates := f.copyCandidates(t, path, now)
	var buf [headLen]byte
	n, err := t.f.ReadAt(buf[:min(headLen, size)], 0)
	if len(candidates) == 0 && !t.judgeLive || err != nil && !errors.Is(err, io.EOF) {
		// No copy, or read as any file: its read fails, and is counted so.
		t.judgedFrom(0)
		return true
	}
	got := buf[:n]
	// off is where a copy whole is read from; held, where one that may be still written
	// (or whose original is not truncated yet) is read from should it stay as it is, and
	// cut where positions have it meanwhile.
	var off, held, cut int64
	wait := false
	// live: t was found a copy of a file read at its path before; refuted: a file read at
	// its path shows it is none of it now.
	live, refuted := t.judgeLive, false
	t.judgeLive = false
	var of *tracked
	var hashed [headLen]byte
	for _, c := range candidates {
		if c.head == nil {
			// Known by the hash of its first bytes alone: a copy holds them all.
			if h, err := headHash(t.f, c.off, &hashed); size >= c.off && err == nil && h == c.hash {
				off = max(off, c.off)
			}
			continue
		}
		switch k := min(len(got), len(c.head)); {
		case !bytes.Equal(got[:k], c.head[:k]):
		case k == len(c.head) && size >= c.off && c.live != nil && f.refutes(c.live, c.head, t.f, size, c.off):
			refuted = true
		case k == len(c.head) && size >= c.off && c.live != nil:
			// Read from where its original was read should that be found truncated.
			// Positions pass over it while it holds all its original was read up to:
			// after a restart it is found as a copy of the original's position, read from
			// there or, the original as it was, from its end (copyOf).
			wait, held, cut, t.judgeLive = true, max(held, size), max(cut, size), true
			if of == nil || c.off > of.done.Load() {
				of = c.live
			}
		case k == len(c.head) && size >= c.off:
			off = max(off, c.off)
		case k == len(c.head) && c.live != nil && f.refutes(c.live, c.head, t.f, size, max(int64(len(c.head)), size-headLen)):
			// Less than its original was read up to, and other bytes than it holds there:
			// a copy of part of it, or one being written, holds what it holds so far.
			refuted = true
		case k == len(c.head):
			// A copy of part of what was read (of what the file held before it was read
			// further), or one still being written.
			wait, held, cut, t.judgeLive = true, max(held, size), max(cut, size), t.judgeLive || c.live != nil
		default:
			// Fewer bytes than that file's first: a copy still being written, or another
			// log that begins as it does (a line each run of a program writes first),
			// read from its start should it stay so.
			wait = true
		}
	}
	if live && !refuted && !t.judgeLive {
		// Its original, read at its path when it was found a copy of it, may have left
		// the path since without a truncation: its lines are that file's still.
		wait, held, cut, t.judgeLive = true, max(held, size), max(cut, size), true
	}
	if off == 0 && wait {
		if now.Sub(t.judgeAt) < f.o.RotationGrace {
			// A snapshot taken meanwhile has such a copy as read where it would be read
			// from should it stay so: after a restart, the copy, found without a position
			// and the log's position past its truncation, would be read from its start.
			t.done.Store(cut)
			t.judgeOf.Store(of)
			return false
		}
		off = held
	}
	t.judgedFrom(off)
	if off > 0 {
		f.o.Logger.Info("new file is a copy of a file of its directory (copytruncate), reading it from where that file was read up to", "path", path, "offset", off)
		f.copyRead(candidates, off, size)
	}
	return true
}

// refutes reports whether orig, a file read at its path up to where it begins with head
// (how far it was read when that is under headLen), shows that cp, of size bytes, which
// begins with head too, is no copy of it: orig is there as it was read, neither truncated
// nor written again from its start, and holds other bytes than cp at from, or fewer, as
// far as headLen. From is where orig was read up to, when cp holds all of that; or within
// that, when cp holds less: a copy of part of orig, or one being written, holds what orig
// holds as far as it goes. A copy holds what its
// original held when it was copied, and the original holds it still unless truncated;
// another log that begins as orig does (the header line a program writes first in each
// of its files, a daily file's) holds lines of its own there. Unknown (false) while cp
// holds nothing past from.
func (f *Follower) refutes(orig *tracked, head []byte, cp *os.File, size, from int64) bool {
	n := min(headLen, size-from)
	if n <= 0 {
		return false
	}
	fi, err := f.o.stat(orig.f)
	if err != nil || fi.Size() < orig.off {
		return false // truncated: the reader has not found it yet
	}
	var a, b [headLen]byte
	if got, err := orig.f.ReadAt(a[:len(head)], 0); got < len(head) || err != nil && !errors.Is(err, io.EOF) || !bytes.Equal(a[:len(head)], head) {
		return false // written again from its start
	}
	if got, err := cp.ReadAt(b[:n], from); int64(got) < n || err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	got, err := orig.f.ReadAt(a[:n], from)
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return !bytes.Equal(a[:got], b[:n])
}

// judgedFrom ends the judgment of t: it is read from off. The reader calls it.
func (t *tracked) judgedFrom(off int64) {
	t.positionAt(off) // before positions see it, and the offset held meanwhile gone
	t.judging.Store(false)
	t.judgeKept, t.judgeLive = nil, false
	t.judgeOf.Store(nil)
}

// liveOriginal reports whether a file at path may be a copy of u, read at its path up to
// done (copied, live): u is of its directory, read up to a line's end, not judged itself,
// and path is named as one of its rotated files. The reader calls it, f.mu held.
func (u *tracked) liveOriginal(path string, done int64) bool {
	// The name first: it tells most files apart at their first bytes, without a copy.
	return rotatedName(filepath.Base(u.path), filepath.Base(path)) && !u.rotated && done > 0 && u.headN > 0 &&
		!u.judging.Load() && filepath.Dir(u.path) == filepath.Dir(path)
}

// copyCandidates are the files t, at path, may be a copy of (copied): the files of its
// directory at a path of the input that path is a rotated name of, as far as they were
// read, and those found truncated lately or while t was judged (kept in t, as a copy
// still written may take longer than they are kept). The reader calls it.
func (f *Follower) copyCandidates(t *tracked, path string, now time.Time) []copied {
	var out []copied
	dir := filepath.Dir(path)
	f.mu.Lock()
	for _, u := range f.files {
		// Up to its last line handed on: the rest of a line read in part is the copy's.
		if done := u.done.Load(); u != t && u.liveOriginal(path, done) {
			out = append(out, copied{head: u.head[:min(int64(u.headN), done)], off: done, live: u})
		}
	}
	f.mu.Unlock()
	for _, c := range f.truncated {
		if filepath.Dir(c.path) == dir && now.Sub(c.at) <= f.o.RotationGrace && !slices.ContainsFunc(t.judgeKept, c.keptAs) {
			t.judgeKept = append(t.judgeKept, copied{head: c.head, hash: c.hash, off: c.off, at: c.at})
		}
	}
	return append(out, t.judgeKept...)
}
