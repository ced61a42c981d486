package follow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/filestat"
)

// settleAfter is how long after a directory's mtime its listing is trusted to
// stay current while the mtime does not change. A change within the same tick
// of the file system's timestamps as the listing leaves the mtime as it was:
// ticks are milliseconds on Linux's local file systems, but a second or two on
// some others, so a listing made that soon after the last change is made
// again at the next scan.
const settleAfter = 2 * time.Second

// dirKey is what changes when a directory's entries change: any entry
// created, removed or renamed sets its mtime and ctime; another directory at
// the same path has another identity.
type dirKey struct {
	id           fileID
	mtime, ctime int64
}

func keyOf(fi os.FileInfo) dirKey {
	k := dirKey{id: idOf(fi), mtime: fi.ModTime().UnixNano()}
	k.ctime, _ = filestat.ChangeTime(fi)
	return k
}

// dirNode is a directory of a glob's tree as last listed.
type dirNode struct {
	key    dirKey
	names  []string
	listed time.Time // when it was listed, on Options' clock; zero when that failed
	// direct is true when the directory is reached from the glob's root
	// through no symbolic link.
	direct bool
	// refused holds why the directory is not entered (a symlink out of the
	// glob's root), already counted and logged.
	refused string
	watched bool
	local   bool   // watched, on a file system whose changes inotify reports (localFS)
	seen    uint64 // the last scan that walked it
	relist  uint64 // the last scan that listed it
}

// trusted reports whether the listing may stand for the directory that now
// has key k. The poll that checks it is the safety net of inotify (a file
// system that sends no events, a watch that could not be set up, events
// lost): it trusts a directory's key only, even when the directory is watched.
func (n *dirNode) trusted(k dirKey) bool {
	return n.key == k && time.Duration(n.listed.UnixNano()-k.mtime) >= settleAfter
}

// match is what the last look at a glob's match found.
type match struct {
	id     fileID
	direct bool
}

// tree is a glob's directories as last listed, so that a scan lists only the
// directories that changed: the others cost one stat each. It belongs to the
// discovery goroutine.
type tree struct {
	root  string // the glob's root: the longest directory prefix without metacharacters
	nodes map[string]*dirNode
	dirty map[string]bool // directories an event named since the last scan
	all   bool            // events were lost: every directory is listed again
	// events is set for a scan of what events reported: a watched
	// directory no event named is taken as listed, without a look.
	events  bool
	scan    uint64
	matches map[string]match // the last scan's matches
}

func newTree(pattern string) tree {
	return tree{
		root:    filepath.Clean(globRoot(pattern)),
		nodes:   make(map[string]*dirNode),
		dirty:   make(map[string]bool),
		matches: make(map[string]match),
	}
}

// globRoot is the directory a glob's walk starts in: the longest directory
// prefix of the pattern without metacharacters.
func globRoot(pattern string) string {
	for {
		dir, _ := filepath.Split(pattern)
		switch dir {
		case "":
			return "."
		case "/":
			return "/"
		}
		dir = dir[:len(dir)-1]
		if !config.IsGlob(dir) || dir == pattern {
			return dir
		}
		pattern = dir
	}
}

// changed notes an event about name: its directory, and name itself when it
// is a directory of the tree, are listed again at the next scan. A watched
// directory deleted (and perhaps made again) sends an event naming itself.
func (t *tree) changed(name string) {
	name = filepath.Clean(name)
	t.dirty[filepath.Dir(name)] = true
	if _, ok := t.nodes[name]; ok {
		t.dirty[name] = true
	}
}

// unchanged reports whether the directory of path was not listed again by
// this scan: what was found at path is still there.
func (t *tree) unchanged(path string) bool {
	n := t.nodes[filepath.Dir(path)]
	return n != nil && n.seen == t.scan && n.relist != t.scan
}

// direct reports whether path is reached from the glob's root through no
// symbolic link, given whether its last element is one.
func (t *tree) direct(path string, link bool) bool {
	if link {
		return false
	}
	n := t.nodes[filepath.Dir(path)]
	return n != nil && n.direct
}

// list is the lister of a Follower's glob: a directory whose stat is as it
// was at its last listing, and that no event named, is not listed again.
func (f *Follower) list(dir string) ([]string, error) {
	t := &f.tree
	dir = filepath.Clean(dir)
	// A scan of events skips the watched directories they did not name, unless
	// their last listing failed (listed is zero then): a failure lasts until
	// a listing succeeds.
	if n := t.nodes[dir]; n != nil && n.watched && !n.listed.IsZero() && t.events && !t.all && !t.dirty[dir] {
		n.seen = t.scan
		return n.names, nil
	}
	fi, err := f.o.look(dir, true)
	if err == nil && !fi.IsDir() {
		err = syscall.ENOTDIR
	}
	if err != nil {
		delete(t.nodes, dir)
		return nil, err
	}
	k := keyOf(fi)
	n := t.nodes[dir]
	if n != nil && (n.refused != "" || !t.all && !t.dirty[dir]) && n.trusted(k) {
		n.seen = t.scan
		return n.names, nil
	}
	if n == nil || n.key.id != k.id {
		n = f.enter(dir, n)
	}
	n.seen = t.scan
	if n.refused != "" {
		n.key, n.listed = k, f.o.now()
		return nil, nil
	}
	if !n.watched {
		n.watched = f.watch(dir)
		n.local = n.watched && f.o.local(dir)
	}
	names, err := f.o.list(dir)
	if err != nil {
		n.key, n.listed = k, time.Time{} // not trusted: listed again at the next scan
		return names, err
	}
	n.key, n.names, n.listed, n.relist = k, names, f.o.now(), t.scan
	t.nodes[dir] = n
	return names, nil
}

// enter makes the node of a directory seen with a new identity (was is the
// node of the one before at its path, if any), refusing it when a symlink
// takes it out of the glob's root.
func (f *Follower) enter(dir string, was *dirNode) *dirNode {
	t := &f.tree
	n := &dirNode{}
	t.nodes[dir] = n
	if dir == t.root {
		n.direct = true
		return n
	}
	lfi, err := f.o.look(dir, false)
	if err == nil && lfi.Mode()&fs.ModeSymlink == 0 {
		if parent := t.nodes[filepath.Dir(dir)]; parent != nil && parent.direct {
			n.direct = true
			return n
		}
	}
	if err = t.inRoot(dir); err != nil {
		n.refused = err.Error()
		if was == nil || was.refused != n.refused {
			f.c.fail(reasonSymlink)
			f.o.Logger.Warn("not entering a directory outside the glob's root", "dir", dir, "err", err)
		}
	}
	return n
}

// sweep forgets the directories this scan did not walk, and their watches.
func (f *Follower) sweep() {
	t := &f.tree
	for dir, n := range t.nodes {
		if n.seen != t.scan {
			delete(t.nodes, dir)
			delete(f.watchFailed, dir)
			if n.watched && f.w != nil {
				_ = f.w.Remove(dir) // gone with its directory, most often
			}
		}
	}
}

// errOutside is why a path is not followed: it leads out of the glob's root.
var errOutside = errors.New("a symbolic link out of the glob's root is not followed")

// inRoot checks that path, once its symbolic links are resolved, is in the
// glob's root, itself resolved.
func (t *tree) inRoot(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	return t.realInRoot(path, real)
}

// OutOfRoot is why a follower of the glob pattern refuses path, one of its matches: a
// symbolic link on its way leads out of the glob's root; nil when none does (or path
// cannot be resolved, which the follower says itself). --config.check warns of a glob
// whose every file is refused so.
func OutOfRoot(pattern, path string) error {
	t := tree{root: filepath.Clean(globRoot(pattern))}
	if err := t.inRoot(path); errors.Is(err, errOutside) {
		return err
	}
	return nil
}

// realInRoot checks real, what path resolves to, against the glob's root. Both
// are made absolute: a relative glob resolves to relative paths, the kernel
// says where a file is opened by its absolute path.
func (t *tree) realInRoot(path, real string) error {
	root, err := filepath.EvalSymlinks(t.root)
	if err == nil {
		root, err = filepath.Abs(root)
	}
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return err
	}
	if real == root || root == "/" || strings.HasPrefix(real, root+"/") {
		return nil
	}
	return &failure{reasonSymlink, fmt.Errorf("%s resolves to %s, outside %s: %w", path, real, t.root, errOutside)}
}

// openedInRoot checks the file the kernel opened for path, which a symlink
// swapped in after the looks could have taken elsewhere. Without /proc the
// looks are all there is.
func (t *tree) openedInRoot(path string, file *os.File) error {
	conn, err := file.SyscallConn()
	if err != nil {
		return nil
	}
	var real string
	// Control, not Fd: Fd would put the descriptor in blocking mode.
	_ = conn.Control(func(fd uintptr) { real, err = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd))) })
	if err != nil {
		return nil
	}
	return t.realInRoot(path, strings.TrimSuffix(real, " (deleted)"))
}
