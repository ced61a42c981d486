package follow

import (
	"os"
	"slices"
	"syscall"

	"github.com/cespare/xxhash/v2"
)

// maxLeft bounds how many closed files a follower remembers (Follower.left): a glob's
// pods come and go by the thousand.
const maxLeft = 4096

// leftAt is where a file closed after it left its path was read up to, and the hash of
// its first bytes up to there, as a Position has, with the path it was read under.
type leftAt struct {
	path string
	off  int64
	head uint64
}

// Left returns where the files the follower closed after they left their path were read
// up to, the newest maxLeft, oldest first, with the paths they were read under: a
// follower given them (Options.Left) reads such a file on from there should it come back
// to a path, after a restart too. So that they are one cut with Positions, the caller
// calls it while no line is being handed on (Options.Hold), or after Stop.
func (f *Follower) Left() []Position {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Position, 0, len(f.leftOrder))
	for _, id := range f.leftOrder {
		at := f.left[id]
		out = append(out, Position{Path: at.path, Dev: id.dev, Ino: id.ino, Offset: at.off, Head: at.head})
	}
	return out
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
	at := leftAt{path: path, off: t.off, head: xxhash.Sum64(t.head[:min(int64(t.headN), t.off)])}
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
