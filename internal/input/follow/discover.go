package follow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/filestat"
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
	scanIfDue := func() {
		if f.due() {
			f.rescan()
			tick.Reset(f.o.PollInterval)
			f.poke()
		}
	}
	for {
		select {
		case <-f.stop:
			return
		case ev, ok := <-events:
			// A write needs only a read; anything else (create, rename,
			// remove, chmod) may change which files the input names, and
			// the reader is woken by the scan that sees it: a turn of the
			// reader looks at every open file, too much to take per event.
			switch {
			case !ok:
				events = nil // the watcher died; the poll goes on
			case ev.Op == fsnotify.Write:
				f.nudge(ev.Name)
			case ev.Has(fsnotify.Create) && f.names(ev.Name):
				// A file the input names appeared: it is opened now, not up to a poll
				// interval later, as a rotation may rename it away and replace it
				// before then (a file rotated every 100 ms lost four lines in five).
				// The scan is of the directories events named, as a due one's.
				f.tree.changed(ev.Name)
				f.rescan()
				tick.Reset(f.o.PollInterval)
				f.poke()
			default:
				f.tree.changed(ev.Name)
				scanIfDue()
			}
		case err, ok := <-errs:
			// An overflow lost events, not data: the scan catches up.
			if !ok {
				errs = nil
			} else if !errors.Is(err, fsnotify.ErrEventOverflow) {
				f.c.fail(reasonWatch)
				f.o.Logger.Warn("inotify error, rescanning", "path", f.o.Path, "err", err)
			}
			f.tree.all = true
			f.quiet = quietPolls // the writes events lost are found by a whole poll
			scanIfDue()
		case <-tick.C:
			f.poll(events != nil)
		}
	}
}

// poll is the tick of the poll interval, watching when inotify's events still come.
// While inotify covers the input, only every quietPolls-th poll is whole (a scan, and a
// turn of the reader over every file); the others scan what events named that waited
// for a tick (due), and wake the reader for the files it looks at every turn
// (tracked.lookAlways).
func (f *Follower) poll(watching bool) {
	if f.covered && watching && f.quiet < quietPolls-1 {
		f.quiet++
		if len(f.tree.dirty) > 0 {
			f.rescan()
			f.poke()
		} else {
			f.signal()
		}
		return
	}
	f.quiet = 0
	f.discover(false)
	f.poke()
}

// quietPolls is how many poll intervals apart the whole poll comes while inotify covers
// the input (Follower.covers): a safety net for what it may miss on a local file system
// (a write through a shared mapping, events lost without an overflow), which needs no
// quarter second. An idle glob of 600 files cost 6% of a core at every interval.
const quietPolls = 8

// covers reports whether inotify reports every change of the input that the poll would
// find, so that the poll may be skipped (quietPolls): every directory it lists is watched
// on a local file system (localFS: a network one reports nothing of the writes of other
// hosts), every match is reached through no symlink (whose target's directory is watched
// apart, if at all), and no path waits to be retried: a failed stat, open or listing, a
// file waiting for a place (Options.Files), whose causes send no event.
func (f *Follower) covers() bool {
	if f.w == nil || len(f.failed) > 0 || len(f.unlisted) > 0 || len(f.waiting) > 0 {
		return false
	}
	if !config.IsGlob(f.o.Path) {
		dir := filepath.Dir(f.o.Path)
		fi, err := os.Lstat(f.o.Path)
		return err == nil && fi.Mode().IsRegular() && slices.Contains(f.w.WatchList(), dir) && f.o.local(dir)
	}
	if f.tree.nodes[f.tree.root] == nil {
		return false // its parent is not watched: the root's creation sends no event
	}
	for _, n := range f.tree.nodes {
		if n.refused == "" && !n.local {
			return false
		}
	}
	for _, m := range f.tree.matches {
		if !m.direct {
			return false
		}
	}
	return true
}

// names reports whether path, named by an event, is one the input's path or glob names.
// An event names a file under its directory as watched, which is cleaned (filepath.Dir of
// the path, a glob's listed directories): both are compared cleaned, so that a path
// written relative or with "//" or "./" has a created file opened at once too.
func (f *Follower) names(path string) bool {
	ok, err := filepath.Match(filepath.Clean(f.o.Path), filepath.Clean(path))
	return ok && err == nil
}

// due reports whether what events reported may be scanned now: at most once
// per poll interval, so that a burst of events (a thousand pods created and
// deleted) costs one scan per interval, of the directories the events named.
// What waits is scanned by the next tick, which comes a poll interval after
// the last scan.
func (f *Follower) due() bool { return f.o.now().Sub(f.lastScan) >= f.o.PollInterval }

// rescan is discover for what events reported: the directories they named
// are looked at and listed again, the others that are watched taken as they
// were listed. The poll looks at every directory.
func (f *Follower) rescan() {
	f.tree.events = true
	defer func() { f.tree.events = false }()
	f.discover(false)
}

// staleListings bounds how often discover lists a glob again because a path it
// listed was gone when looked at.
const staleListings = 3

// discover opens the files the input names that are not open yet and marks
// the open ones that left every path as rotated.
func (f *Follower) discover(initial bool) {
	f.lastScan = f.o.now()
	defer func() {
		clear(f.tree.dirty)
		f.tree.all = false
		f.covered = f.covers()
		if initial {
			f.readyAt = f.o.now()
			f.ready.Store(true)
		}
	}()
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
	f.tree.scan++
	paths, refused, unlisted := expand(f.o, f.list)
	if config.IsGlob(f.o.Path) {
		f.sweep()
	}
	if f.o.listed != nil {
		f.o.listed()
	}
	f.listFailed(unlisted)
	f.watchDir()
	found := make(map[fileID]string, len(paths)) // the path that names each open file
	present := make(map[fileID]bool, len(paths))
	scanned := make(map[string]bool, len(paths))
	matches := make(map[string]match, len(paths))
	unknown := make(map[string]bool) // paths that could not be stat'ed
	stale := false
	var waits []string // files Options.Files keeps from being opened
	for _, p := range paths {
		m, exists, isOpen, err := f.lookAt(p, initial)
		if errors.Is(err, errNoPlace) {
			waits, err = append(waits, p), nil
		}
		scanned[p] = true
		if !exists && err == nil && config.IsGlob(f.o.Path) && vanished(p) {
			stale = true
			f.tree.dirty[filepath.Dir(p)] = true // listed again by the next pass
		}
		if err != nil {
			if !exists {
				unknown[p] = true
			}
			f.fail(p, err)
		} else {
			delete(f.failed, p)
		}
		if exists {
			present[m.id] = true
		}
		if !isOpen {
			continue
		}
		matches[p] = m
		if q, dup := found[m.id]; !dup || preferred(p, m.direct, q, matches[q].direct) {
			found[m.id] = p
		}
	}
	f.tree.matches = matches
	f.renamedAway(refused, found, present)
	for p := range f.failed {
		if !scanned[p] {
			delete(f.failed, p) // left the glob
		}
	}
	if stale && !last {
		return false
	}
	f.wait(waits)
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
			if t.path != p {
				t.path = p // renamed to another path of the glob, or a better one appeared
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

// renamedAway finds the files the follower reads that are not at a path it selected
// (found) among the paths Select refused: a file renamed into another follower's
// directory, which it reads on there. Only the refused paths of directories listed
// again by this scan (a rename changes its directory) and those its files were last
// seen at are looked at, and only when a file is missing.
func (f *Follower) renamedAway(refused []string, found map[fileID]string, present map[fileID]bool) {
	if len(refused) == 0 {
		return
	}
	f.mu.Lock()
	at := map[string]bool{}
	for _, t := range f.files {
		if _, ok := found[t.id]; !ok {
			at[t.path] = true
		}
	}
	f.mu.Unlock()
	if len(at) == 0 {
		return
	}
	for _, p := range refused {
		if n := f.tree.nodes[filepath.Dir(p)]; !at[p] && (n == nil || n.relist != f.tree.scan) {
			continue
		}
		fi, err := os.Stat(p) // a symlink's file, whose identity the follower knows it by
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		id := idOf(fi)
		f.mu.Lock()
		_, ours := f.byID[id]
		f.mu.Unlock()
		if _, dup := found[id]; ours && !dup {
			found[id], present[id] = p, true
		}
	}
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

// preferred reports whether path p names a file better than q, which names
// it too: the path reached through no symlink (the kubelet's own, not a link
// someone made to it) first, then the one that sorts first.
func preferred(p string, pDirect bool, q string, qDirect bool) bool {
	if pDirect != qDirect {
		return pDirect
	}
	return p < q
}

// lookAt is track, without a look at a file that cannot have changed: one
// being read, found at path by the last scan, in a directory whose listing is
// unchanged (a file renamed or deleted there changes it). A symlink is looked
// at every time, as its target may change elsewhere.
func (f *Follower) lookAt(path string, initial bool) (m match, exists, isOpen bool, err error) {
	if m, ok := f.tree.matches[path]; ok && m.direct && f.tree.unchanged(path) {
		f.mu.Lock()
		_, isOpen = f.byID[m.id]
		f.mu.Unlock()
		if isOpen {
			return m, true, true, nil
		}
	}
	return f.track(path, initial)
}

// track makes sure the file at path is open. exists says whether a file is
// there (m.id is then its identity), isOpen whether it is being read; err is a
// stat error (exists false) or an open error (exists true). A glob's match
// that is a symlink out of the glob's root is refused, as an open error.
func (f *Follower) track(path string, initial bool) (m match, exists, isOpen bool, err error) {
	glob := config.IsGlob(f.o.Path)
	fi, err := f.o.look(path, !glob)
	link := err == nil && fi.Mode()&fs.ModeSymlink != 0
	if link {
		if err = f.tree.inRoot(path); err == nil {
			fi, err = f.o.look(path, true)
		} else if _, refused := errors.AsType[*failure](err); refused {
			return m, true, false, err
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return m, false, false, nil
	case err != nil:
		return m, false, false, &failure{reasonStat, err}
	case fi.IsDir() && glob:
		return m, false, false, nil
	}
	m = match{id: idOf(fi), direct: !glob || f.tree.direct(path, link)}
	if !fi.Mode().IsRegular() {
		return m, true, false, notRegular(path, fi)
	}
	if glob {
		if err := compressedMatch(path); err != nil {
			return m, true, false, err
		}
	}
	if initial {
		f.atStart[m.id] = fi.Size()
	}
	f.mu.Lock()
	_, isOpen = f.byID[m.id]
	f.mu.Unlock()
	if isOpen {
		return m, true, true, nil
	}
	if !f.claim(m.id) {
		return m, true, false, nil // another follower of the glob reads it
	}
	// A file of a position is opened past the bound, as resumeRotated would open it (its
	// lines after the position are lost unless it is read): here it is read on at its
	// path, not taken for a file rotated away. So is a follower's first file, as its
	// inotify instance is: under a limit so low that the instances take every place, the
	// input would read nothing.
	f.mu.Lock()
	first := len(f.files) == 0
	f.mu.Unlock()
	if !f.o.Files.take(first || f.resume.has(m.id)) {
		f.release(m.id)
		return m, true, false, errNoPlace
	}
	// O_NONBLOCK: a FIFO swapped in after the stat must not block discovery.
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		f.o.Files.give()
		f.release(m.id)
		return m, true, false, err
	}
	if fi, err = file.Stat(); err == nil && !fi.Mode().IsRegular() {
		err = notRegular(path, fi)
	}
	if err == nil && glob {
		err = f.tree.openedInRoot(path, file)
	}
	if err != nil {
		f.close(file)
		f.release(m.id)
		return m, true, false, err
	}
	// What we opened may already be the next file: its identity is the one
	// that counts.
	if id := idOf(fi); id != m.id {
		f.release(m.id)
		if m.id = id; !f.claim(id) {
			f.close(file)
			return m, true, false, nil
		}
	}
	t := &tracked{id: m.id, f: file, path: path, lastData: f.o.now()}
	size, atStart := f.atStart[m.id]
	if atStart {
		if !f.o.FromBeginning {
			t.positionAt(textEnd(file, min(size, fi.Size())))
			t.backfill = f.o.Backfill != nil
			t.holdsReady = t.backfill && initial
		}
		delete(f.atStart, m.id)
	}
	if off, ok := f.resumeAt(m.id, file); ok {
		t.positionAt(off)
		t.backfill, t.holdsReady = false, false // a restored file's windows are the snapshot's
	} else if initial {
		// Without positions (a new input): a file another follower read is read on from
		// where it stopped (Options.Left, of an input of another path the new one
		// replaces), not by start_at: its lines are counted.
		if off, back := f.cameBack(m.id, file); back {
			t.positionAt(off)
			t.backfill, t.holdsReady = false, false
		}
	}
	// A file there at a start without Options.Resume that waited for a place
	// (Options.Files) is read from where the first scan would have read it: judged as one
	// found after the start, it would be read from its beginning past start_at: end. With
	// Options.Resume, that scan reads a file without a position from its beginning too.
	if !initial && !(atStart && f.o.Resume == nil) {
		if off, back := f.cameBack(m.id, file); back {
			t.positionAt(off)
		} else if glob {
			t.judging.Store(true)
			t.judgeAt = t.lastData
		}
	}
	off := t.off // once t is the reader's, its offset moves
	f.mu.Lock()
	_, dup := f.byID[m.id]
	// A file at a path none is read under is new to the follower (Options.Found), not the
	// next file of a log whose last it reads on.
	newPath := f.o.Found != nil && !initial && !dup && !slices.ContainsFunc(f.files, func(u *tracked) bool { return u.path == path })
	if !dup {
		f.byID[m.id] = t // from here on, t belongs to the reader
		f.files = append(f.files, t)
		f.pathsChanged++
		if t.holdsReady {
			f.backfills.Add(1)
		}
	}
	f.mu.Unlock()
	if dup {
		// The follower reads it already, claimed: it stays so.
		f.close(file)
		return m, true, true, nil
	}
	// At info, as promtail and Alloy log every file they start tailing: a path that
	// appears after start (a mistyped directory fixed, a pod's first log) shows that it
	// is read, where otherwise only a warning that it was missing would have been said.
	if initial {
		f.o.Logger.Info("following file", "path", path, "offset", off)
	} else {
		f.o.Logger.Info("following new file", "path", path, "offset", off)
	}
	if newPath {
		f.o.Found(path, m.id.dev, m.id.ino)
	}
	f.watchTarget(path)
	return m, true, true, nil
}

// notRegular is the error of a path that is not a regular file, which says what it is
// in words: its type bits alone, as FileMode shows them ("d---------"), read as a file
// of no permissions.
func notRegular(path string, fi os.FileInfo) error {
	return &failure{reasonNotRegular, fmt.Errorf("%s: not a regular file but %s", path, filestat.TypeName(fi.Mode()))}
}

// watchDir watches the directory of a path without a glob (a glob's tree
// watches its directories as it lists them): a directory watch reports
// creations, renames and writes of its files, which a watch on a file cannot.
// Without a watch the poll still sees everything. The watch goes with its
// directory: one created again is watched again.
func (f *Follower) watchDir() {
	if f.w == nil || config.IsGlob(f.o.Path) {
		return
	}
	dir := filepath.Dir(f.o.Path)
	if !slices.Contains(f.w.WatchList(), dir) {
		f.watch(dir)
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

// watch watches dir, and reports whether it does (polling covers it if not).
func (f *Follower) watch(dir string) bool {
	if f.w == nil {
		return false
	}
	switch err := f.w.Add(dir); {
	case err == nil:
		delete(f.watchFailed, dir)
		return true
	case errors.Is(err, fs.ErrNotExist):
		delete(f.watchFailed, dir)
	case f.news(f.watchFailed, dir, err, reasonWatch):
		f.o.Logger.Warn("cannot watch directory, polling covers it", "dir", dir, "err", err)
	}
	return false
}

// fail counts and logs an error of discovery once until it changes or clears.
func (f *Follower) fail(path string, err error) {
	if f.news(f.failed, path, err, reasonOf(err, reasonOpen)) {
		f.o.Logger.Warn("cannot follow, retrying", "path", path, "err", err)
	}
}

// listFailed counts and logs each directory of the glob that could not be
// listed, once until it is listed again or the error changes.
func (f *Follower) listFailed(unlisted map[string]error) {
	for dir, err := range unlisted {
		if f.news(f.unlisted, dir, err, reasonList) {
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
func (f *Follower) news(episodes map[string]string, key string, err error, r reason) bool {
	if episodes[key] == err.Error() {
		return false
	}
	episodes[key] = err.Error()
	f.c.fail(r)
	return true
}
