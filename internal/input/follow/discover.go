package follow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchLoop is the discovery goroutine: it never calls the Handler, so files
// are found and opened while the reader is stalled by a slow consumer.
func (f *Follower) watchLoop() {
	defer f.wg.Done()
	tick := time.NewTicker(f.o.PollInterval)
	defer tick.Stop()
	var events <-chan fsnotify.Event
	var errs <-chan error
	if f.w != nil {
		events, errs = f.w.Events, f.w.Errors
	}
	for {
		select {
		case <-f.stop:
			return
		case ev, ok := <-events:
			// A write needs only a read; anything else (create, rename,
			// remove, chmod) may change which files the input names.
			if !ok {
				events = nil // the watcher died; the poll goes on
			} else if ev.Op != fsnotify.Write {
				f.discover(false)
			}
		case err, ok := <-errs:
			// An overflow lost events, not data: the scan catches up.
			if !ok {
				errs = nil
			} else if !errors.Is(err, fsnotify.ErrEventOverflow) {
				f.c.errors.Add(1)
				f.o.Logger.Warn("inotify error, rescanning", "path", f.o.Path, "err", err)
			}
			f.discover(false)
		case <-tick.C:
			f.discover(false)
		}
		f.poke()
	}
}

// staleListings bounds how often discover lists a glob again because a path it
// listed was gone when looked at.
const staleListings = 3

// discover opens the files the input names that are not open yet and marks
// the open ones that left every path as rotated.
func (f *Follower) discover(initial bool) {
	for range staleListings - 1 {
		if f.scan(initial, false) {
			return
		}
	}
	f.scan(initial, true)
}

// scan is one pass of discover. A glob's listing goes stale when a file is
// renamed between the listing and the look at its path (b.log to c.log): the
// file is then at no listed path, though it never left the glob. Unless last,
// a scan that finds a listed path gone marks nothing as rotated and reports
// false, so that discover lists again.
//
// An open file left its path only when the listing lacks it and a look at its
// path confirms it: a directory that could not be listed, or a path that could
// not be looked at, says nothing about the files there, so that a directory
// unreadable for a while (EACCES, EMFILE) does not close them and, once
// readable, have them read again from their first line.
func (f *Follower) scan(initial, last bool) bool {
	paths, unlisted := expand(f.o)
	if f.o.listed != nil {
		f.o.listed()
	}
	f.listFailed(unlisted)
	f.watchDirs()
	found := make(map[fileID]string, len(paths)) // first path of each open file
	atPath := make(map[string]fileID, len(paths))
	present := make(map[fileID]bool, len(paths))
	scanned := make(map[string]bool, len(paths))
	unknown := make(map[string]bool) // paths that could not be stat'ed
	opened := true
	stale := false
	for _, p := range paths {
		id, exists, isOpen, err := f.track(p, initial)
		scanned[p] = true
		stale = stale || (!exists && err == nil && isGlob(f.o.Path) && vanished(p))
		if err != nil {
			opened = false
			if !exists {
				unknown[p] = true
			}
			f.fail(p, err)
		} else {
			delete(f.failed, p)
		}
		if exists {
			present[id] = true
		}
		if !isOpen {
			continue
		}
		atPath[p] = id
		if _, dup := found[id]; !dup {
			found[id] = p
		}
	}
	for p := range f.failed {
		if !scanned[p] {
			delete(f.failed, p) // left the glob
		}
	}
	if stale && !last {
		return false
	}
	if opened {
		f.ready.Store(true)
	}
	for id := range f.atStart {
		if !present[id] && len(unknown) == 0 && len(unlisted) == 0 {
			delete(f.atStart, id) // gone before it could be opened
		}
	}
	var missing []*tracked
	f.mu.Lock()
	for _, t := range f.files {
		p, ok := found[t.id]
		switch {
		case ok:
			if atPath[t.path] != t.id {
				t.path = p // renamed to another path of the glob
				f.pathsChanged++
			}
			t.rotated = false
		case !t.rotated && !unknown[t.path] && !within(t.path, unlisted):
			missing = append(missing, t)
		}
	}
	f.mu.Unlock()
	// t.path is written by this goroutine only: it may be read without the lock.
	var left []*tracked
	for _, t := range missing {
		if t.left() {
			left = append(left, t)
		}
	}
	now := f.o.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range left {
		t.rotated, t.rotatedAt = true, now
		f.c.rotations.Add(1)
		f.o.Logger.Info("file left its path, reading it to its end", "path", t.path, "grace", f.o.RotationGrace)
	}
	return true
}

// left reports whether the file last seen at t's path is no longer there.
func (t *tracked) left() bool {
	fi, err := os.Stat(t.path)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
	}
	return idOf(fi) != t.id
}

// vanished reports whether no file of that name is there any more (a dangling
// symlink is still there).
func vanished(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// track makes sure the file at path is open. exists says whether a file is
// there (id is then its identity), isOpen whether it is being read; err is a
// stat error (exists false) or an open error (exists true).
func (f *Follower) track(path string, initial bool) (id fileID, exists, isOpen bool, err error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return id, false, false, nil
	case err != nil:
		return id, false, false, err
	case fi.IsDir() && isGlob(f.o.Path):
		return id, false, false, nil
	}
	id = idOf(fi)
	if !fi.Mode().IsRegular() {
		return id, true, false, notRegular(path, fi)
	}
	if initial {
		f.atStart[id] = fi.Size()
	}
	f.mu.Lock()
	_, isOpen = f.byID[id]
	f.mu.Unlock()
	if isOpen {
		return id, true, true, nil
	}
	// O_NONBLOCK: a FIFO swapped in after the stat must not block discovery.
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return id, true, false, err
	}
	if fi, err = file.Stat(); err == nil && !fi.Mode().IsRegular() {
		err = notRegular(path, fi)
	}
	if err != nil {
		_ = file.Close()
		return id, true, false, err
	}
	// What we opened may already be the next file: its identity is the one
	// that counts.
	id = idOf(fi)
	t := &tracked{id: id, f: file, path: path, lastData: f.o.now()}
	if size, ok := f.atStart[id]; ok {
		if !f.o.FromBeginning {
			t.positionAt(min(size, fi.Size()))
			t.backfill = f.o.Backfill != nil
		}
		delete(f.atStart, id)
	}
	if off, ok := f.resumeAt(id, file); ok {
		t.positionAt(off)
		t.backfill = false
	}
	off := t.off // once t is the reader's, its offset moves
	f.mu.Lock()
	_, dup := f.byID[id]
	if !dup {
		f.byID[id] = t // from here on, t belongs to the reader
		f.files = append(f.files, t)
		f.pathsChanged++
		if t.backfill {
			f.backfills.Add(1)
		}
	}
	f.mu.Unlock()
	if dup {
		_ = file.Close()
		return id, true, true, nil
	}
	// At info, as promtail and Alloy log every file they start tailing: a path that
	// appears after start (a mistyped directory fixed, a pod's first log) shows that it
	// is read, where otherwise only a warning that it was missing would have been said.
	if initial {
		f.o.Logger.Info("following file", "path", path, "offset", off)
	} else {
		f.o.Logger.Info("following new file", "path", path, "offset", off)
	}
	f.watchTarget(path)
	return id, true, true, nil
}

func notRegular(path string, fi os.FileInfo) error {
	return fmt.Errorf("%s: not a regular file (%s)", path, fi.Mode().Type())
}

// watchDirs watches the directories where the input's files are named: a
// directory watch reports creations, renames and writes of its files, which
// a watch on a file cannot. Without a watch the poll still sees everything.
func (f *Follower) watchDirs() {
	if f.w == nil {
		return
	}
	dirs := []string{filepath.Dir(f.o.Path)}
	if isGlob(dirs[0]) {
		dirs, _ = glob(dirs[0], f.o.list)
	}
	watched := make(map[string]bool)
	for _, d := range f.w.WatchList() {
		watched[d] = true
	}
	for _, d := range dirs {
		if !watched[d] {
			f.watch(d)
		}
	}
}

// watchTarget watches the directory of a symlink's target, where its writes
// are reported. A retargeted link names a new file, which comes here again.
func (f *Follower) watchTarget(path string) {
	if f.w == nil {
		return
	}
	if target, err := filepath.EvalSymlinks(path); err == nil && filepath.Dir(target) != filepath.Dir(path) {
		f.watch(filepath.Dir(target))
	}
}

func (f *Follower) watch(dir string) {
	switch err := f.w.Add(dir); {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		delete(f.watchFailed, dir)
	case f.news(f.watchFailed, dir, err):
		f.o.Logger.Warn("cannot watch directory, polling covers it", "dir", dir, "err", err)
	}
}

// fail counts and logs an error of discovery once until it changes or clears.
func (f *Follower) fail(path string, err error) {
	if f.news(f.failed, path, err) {
		f.o.Logger.Warn("cannot follow, retrying", "path", path, "err", err)
	}
}

// listFailed counts and logs each directory of the glob that could not be
// listed, once until it is listed again or the error changes.
func (f *Follower) listFailed(unlisted map[string]error) {
	for dir, err := range unlisted {
		if f.news(f.unlisted, dir, err) {
			f.o.Logger.Warn("cannot list directory, keeping its files as they are until it can be listed", "dir", dir, "err", err)
		}
	}
	for dir := range f.unlisted {
		if _, ok := unlisted[dir]; !ok {
			delete(f.unlisted, dir)
		}
	}
}

// news reports whether err is a new episode for key in episodes (key → error
// last counted), and counts it if so: an error is counted and logged once
// until it changes or clears, however many scans see it.
func (f *Follower) news(episodes map[string]string, key string, err error) bool {
	if episodes[key] == err.Error() {
		return false
	}
	episodes[key] = err.Error()
	f.c.errors.Add(1)
	return true
}
