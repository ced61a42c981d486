package follow

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/cespare/xxhash/v2"
)

// maxLeft bounds how many closed files a follower remembers (Follower.left): a glob's
// pods come and go by the thousand.
const maxLeft = 4096

// leftPruneMin is how many closed files a follower remembers before it first looks for
// the ones gone since (pruneLeft); it looks again each time they are twice as many as
// after its last look.
const leftPruneMin = 64

// leftAt is where a file closed after it left its path was read up to, and the hash of
// its first bytes up to there, as a Position has, with the path it was read under and
// where it was when closed (its name then, "" when that is not known).
type leftAt struct {
	path  string
	where string
	off   int64
	head  uint64
}

// Left returns where the files the follower closed after they left their path were read
// up to, the newest maxLeft, oldest first, with the paths they were read under: a
// follower given them (Options.Left) reads such a file on from there should it come back
// to a path, after a restart too. So that they are one cut with Positions, the caller
// calls it while no line is being handed on (Options.Hold), or after Stop.
func (f *Follower) Left() []Position {
	<-f.scanned // Options.Later
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Position, 0, len(f.leftOrder))
	for _, id := range f.leftOrder {
		at := f.left[id]
		out = append(out, Position{Path: at.path, Dev: id.dev, Ino: id.ino, Offset: at.off, Head: at.head})
	}
	return out
}

// placeLeft finds where the files of Options.Left are, which they were given without
// (a Position's path is the one a file was read under), and forgets the ones gone
// (pruneLeft): it looks for each in the directory of the path it was read under and, for
// a symbolic link, of the file that leads to, where its rotator renames it (a container
// log's rotated file) or it stays (a link's former target). One found there by its
// inode on another device is taken as renumbered since (a reboot, as for a position:
// resume.renumbered), whose coming back cameBack judges by its first bytes as any
// other's. newFollower calls it, before the follower is started.
func (f *Follower) placeLeft() {
	dirs := newListings(os.ReadDir)
	looks := map[string][]string{} // by path: a log's archives were read under one
	renumbered := map[fileID]fileID{}
	for id, at := range f.left {
		look, ok := looks[at.path]
		if !ok {
			look = []string{filepath.Dir(at.path)}
			if real, err := filepath.EvalSymlinks(at.path); err == nil && filepath.Dir(real) != look[0] {
				look = append(look, filepath.Dir(real))
			}
			looks[at.path] = look
		}
		for _, dir := range look {
			if name, ok := dirs.identities(dir)[id]; ok {
				at.where = filepath.Join(dir, name)
				break
			}
		}
		for _, dir := range look {
			names := dirs.identities(dir) // before its inos
			if now, ok := dirs.inos[dir][id.ino]; ok && at.where == "" && now.dev != id.dev {
				at.where, renumbered[id] = filepath.Join(dir, names[now]), now
			}
		}
		if at.where == "" {
			delete(f.left, id)
		} else {
			f.left[id] = at
		}
	}
	f.leftOrder = slices.DeleteFunc(f.leftOrder, func(id fileID) bool { _, ok := f.left[id]; return !ok })
	for id, now := range renumbered {
		if _, known := f.left[now]; !known {
			f.left[now] = f.left[id]
			f.leftOrder[slices.Index(f.leftOrder, id)] = now
		}
		delete(f.left, id)
	}
	f.leftOrder = slices.DeleteFunc(f.leftOrder, func(id fileID) bool { _, ok := f.left[id]; return !ok })
	f.leftLooked = len(f.leftOrder)
}

// pruneLeft forgets the files remembered closed after they left their path that are
// gone: neither where they were when closed nor at the path they were read under. Those
// were deleted (the kubelet deletes a container log's rotated file once it compressed
// it, logrotate the oldest of its archives) or renamed again, and would otherwise fill
// the list, and each snapshot, up to maxLeft. A file renamed again that comes back to a
// path is read from its start then, as one the follower never closed. It looks only
// when they are twice as many as after its last look (or leftPruneMin): a look is a stat
// of each, which a rotation's close then costs one of in the mean. The stats are made
// without f.mu held.
func (f *Follower) pruneLeft() {
	f.mu.Lock()
	if len(f.leftOrder) <= max(2*f.leftLooked, leftPruneMin) {
		f.mu.Unlock()
		return
	}
	look := make(map[fileID]leftAt, len(f.left))
	for id, at := range f.left {
		look[id] = at
	}
	f.mu.Unlock()
	var gone []fileID
	for id, at := range look {
		if !leftThere(id, at) {
			gone = append(gone, id)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range gone {
		if f.left[id] == look[id] { // not closed again meanwhile
			delete(f.left, id)
		}
	}
	f.leftOrder = slices.DeleteFunc(f.leftOrder, func(id fileID) bool { _, ok := f.left[id]; return !ok })
	f.leftLooked = len(f.leftOrder)
}

// leftThere reports whether the file id, closed after it left its path, may be there
// still: where it was when closed or at the path it was read under, or either cannot be
// looked at (a directory not readable now).
func leftThere(id fileID, at leftAt) bool {
	for _, name := range []string{at.where, at.path} {
		if name == "" {
			continue
		}
		fi, err := os.Stat(name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) || err == nil && idOf(fi) == id {
			return true
		}
	}
	return false
}

// nameOf is where file is now, a name the kernel tells (Linux's /proc/self/fd), or "".
func nameOf(file *os.File) string {
	rc, err := file.SyscallConn()
	if err != nil {
		return ""
	}
	var name string
	_ = rc.Control(func(fd uintptr) {
		name, _ = os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	})
	if !filepath.IsAbs(name) {
		return ""
	}
	return name
}

// remember adds where id was read up to to the files closed after they left their path,
// letting the oldest go past maxLeft; f.mu must be held.
func (f *Follower) remember(id fileID, at leftAt) {
	if f.left == nil {
		f.left = map[fileID]leftAt{}
	}
	if _, ok := f.left[id]; !ok {
		f.leftOrder = append(f.leftOrder, id)
	}
	f.left[id] = at
	if len(f.leftOrder) > maxLeft {
		delete(f.left, f.leftOrder[0])
		f.leftOrder = slices.Delete(f.leftOrder, 0, 1)
	}
}

// keepLeft remembers where t, closed after it left its path, was read up to: a symlink
// retargeted back to it (blue and green releases behind one link), or a file renamed
// back, is read on from there, not again from its start. The reader calls it.
func (f *Follower) keepLeft(t *tracked, path string) {
	if fi, err := t.f.Stat(); err != nil {
		return
	} else if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Nlink == 0 {
		return // deleted: it cannot come back, only its inode, to another file
	}
	at := leftAt{path: path, where: nameOf(t.f), off: t.off, head: xxhash.Sum64(t.head[:min(int64(t.headN), t.off)])}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.remember(t.id, at)
}

// cameBack says where file, of identity id, found at a path after the start, is read
// from when it is a file closed after it left its path (keepLeft): beginning with the
// bytes it had then, and as long. Another file given its inode since is not.
func (f *Follower) cameBack(id fileID, file *os.File) (off int64, ok bool) {
	f.mu.Lock()
	at, ok := f.left[id]
	if ok {
		delete(f.left, id)
		f.leftOrder = slices.DeleteFunc(f.leftOrder, func(l fileID) bool { return l == id })
	}
	f.mu.Unlock()
	if !ok {
		return 0, false
	}
	var buf [headLen]byte
	fi, err := file.Stat()
	if h, herr := headHash(file, at.off, &buf); err != nil || herr != nil || h != at.head || fi.Size() < at.off {
		return 0, false
	}
	return at.off, true
}
