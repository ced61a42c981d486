package follow

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input"
)

// ReadToEnd reads every file opts.Path names, in name order, from its first
// byte to its end as found, and hands each line to h in the calling
// goroutine; a last line without a newline is handed on too. It is the
// replay mode's reader and the tests' reference: the same line splitting and
// cap as a Follower, without following. FromBeginning, RotationGrace and
// PollInterval are ignored.
//
// A glob's files are those a Follower reads: a directory it matches is passed
// over, as is a match that is a link to nothing or is gone by its open, and a
// file several matches reach (a symlink to a directory within the root) is read
// once, under the path a Follower reads it under (preferred). When opts.Claim
// is set, a file is read only if it grants it, so that several calls of a
// one-shot read each file once; Release is not called.
//
// Files that cannot be read (a path that is no glob missing, no permission, a
// FIFO, a compressed archive: a log's rotation gzipped), directories of a glob that cannot be listed, and a glob's files and
// directories that a symlink takes out of its root (refused as a Follower
// refuses them) are skipped, counted in Errors and reported, each by name, in
// an *Unread error: every other file was read. Any other error (bad options, a
// glob that matches no file) means that nothing was.
func ReadToEnd(opts Options, h input.Handler) (input.Stats, error) {
	o, err := opts.normalize()
	if err != nil {
		return input.Stats{}, err
	}
	if h == nil {
		return input.Stats{}, errors.New("follow: nil handler")
	}
	var c counters
	r := newLineReader(o, h, &c, nil)
	paths, tr, unlisted := o.toRead()
	var errs []error
	for _, dir := range slices.Sorted(maps.Keys(unlisted)) {
		c.fail(reasonOf(unlisted[dir], reasonList))
		errs = append(errs, unlisted[dir])
	}
	claim := o.Claim
	if claim == nil {
		read := map[fileID]bool{}
		claim = func(dev, ino uint64) bool {
			id := fileID{dev, ino}
			if read[id] {
				return false
			}
			read[id] = true
			return true
		}
	}
	found := 0
	for _, p := range paths {
		err := readFile(r, tr, p, claim)
		if tr != nil && errors.Is(err, fs.ErrNotExist) {
			// A match that is a link to nothing, or gone since the listing, is no file, as
			// the follower finds none there: nothing was left unread.
			err = nil
		} else {
			found++
		}
		if err != nil {
			c.fail(reasonOf(err, reasonOpen))
			errs = append(errs, err)
		}
		if o.Closed != nil {
			o.Closed(p)
		}
	}
	if len(errs) > 0 {
		return c.snapshot(), &Unread{Errs: errs}
	}
	if config.IsGlob(o.Path) && found == 0 {
		return c.snapshot(), fmt.Errorf("follow: no file matches %q", o.Path)
	}
	return c.snapshot(), nil
}

// toRead is what ReadToEnd reads of o.Path: its files, in name order, those a Follower
// reads of a glob (tree.once); the tree of its glob, or of o.Glob whose match it is, out
// of whose root no symlink is followed (nil for a path given by itself: it is the
// operator's, wherever it leads); and the directories of its glob that could not be
// listed.
func (o Options) toRead() (paths []string, tr *tree, unlisted map[string]error) {
	pattern := o.Path
	if !config.IsGlob(pattern) {
		pattern = o.Glob
	}
	if pattern == "" {
		return []string{o.Path}, nil, nil
	}
	t := newTree(pattern)
	list := func(dir string) ([]string, error) {
		if filepath.Clean(dir) != t.root {
			if err := t.inRoot(dir); errors.Is(err, errOutside) {
				return nil, err
			}
		}
		return o.list(dir)
	}
	paths, _, unlisted = expand(o, list)
	return t.once(paths), &t, unlisted
}

// Matches are the files of glob that ReadToEnd would read, in its order: a one-shot that
// reads each as a file of its own, each by Options.Path with Options.Glob set to glob,
// reads what ReadToEnd of the glob reads. err is an *Unread naming each directory that
// could not be listed, the matches of the others given all the same; or, with no
// matches, the glob's fault.
func Matches(glob string) ([]string, error) {
	o, err := Options{Path: glob}.normalize()
	if err != nil {
		return nil, err
	}
	if !config.IsGlob(glob) {
		return nil, fmt.Errorf("follow: %q is no glob", glob)
	}
	paths, _, unlisted := o.toRead()
	if len(unlisted) > 0 {
		var errs []error
		for _, dir := range slices.Sorted(maps.Keys(unlisted)) {
			errs = append(errs, unlisted[dir])
		}
		return paths, &Unread{Errs: errs}
	}
	return paths, nil
}

// Unread is ReadToEnd's error when some of its files or directories could not be
// read: Errs has one error for each, naming it; every other file was read, as a
// Follower reads on past them, so a one-shot can show what they held before
// failing.
type Unread struct{ Errs []error }

// Error is each file's or directory's error, a line each.
func (e *Unread) Error() string { return errors.Join(e.Errs...).Error() }

// Unwrap returns each file's or directory's error, for errors.Is and errors.As.
func (e *Unread) Unwrap() []error { return e.Errs }

// once keeps of a glob's matches those a Follower reads, in their order: not a
// directory, and of several paths that reach one file the preferred one. A path
// that cannot be looked at, or a link out of the root, is kept, for its read to
// say why.
func (t *tree) once(paths []string) []string {
	type seen struct {
		path   string
		direct bool
	}
	byID := map[fileID]seen{}
	ids := make([]fileID, len(paths))
	keep := make([]bool, len(paths))
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			keep[i] = true
			continue
		}
		if fi.IsDir() {
			// Passed over, as the follower passes over a directory; but a link to one
			// out of the root is refused first, as the follower refuses it: readFile
			// says so.
			if li, err := os.Lstat(p); err == nil && li.Mode()&fs.ModeSymlink != 0 && errors.Is(t.inRoot(p), errOutside) {
				keep[i] = true
			}
			continue
		}
		ids[i] = idOf(fi)
		direct := t.reachedDirectly(p)
		if s, dup := byID[ids[i]]; !dup || preferred(p, direct, s.path, s.direct) {
			byID[ids[i]] = seen{p, direct}
		}
	}
	var out []string
	for i, p := range paths {
		if keep[i] || byID[ids[i]].path == p {
			out = append(out, p)
		}
	}
	return out
}

// reachedDirectly reports whether path is reached from the glob's root through
// no symbolic link: it resolves to itself under the resolved root.
func (t *tree) reachedDirectly(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	root, err := filepath.EvalSymlinks(t.root)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(t.root, path)
	if err != nil {
		return false
	}
	return filepath.Join(root, rel) == real
}

// readFile reads path to its end; tr, when not nil, is its glob's tree, out of whose root
// no symlink is followed: looked at before the open, as a FIFO or a device out there
// must not even be opened, and after it, as a symlink swapped in between could lead
// anywhere.
func readFile(r *lineReader, tr *tree, path string, claim func(dev, ino uint64) bool) error {
	if tr != nil {
		if err := tr.inRoot(path); errors.Is(err, errOutside) {
			return err
		}
	}
	// O_NONBLOCK: a FIFO the glob matched would otherwise wait for a writer, and the
	// replay with it; a regular file reads the same.
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return notRegular(path, fi)
	}
	if tr != nil {
		if err := tr.openedInRoot(path, file); err != nil {
			return err
		}
	}
	if id := idOf(fi); !claim(id.dev, id.ino) {
		return nil // read already, under another path
	}
	if err := compressed(path, file); err != nil {
		return err
	}
	t := &tracked{f: file, path: path}
	t.skipHole(fi.Size(), new(atomic.Bool)) // read as a follower reads it
	if _, _, err := r.pass(t, path, math.MaxInt64); err != nil {
		return &failure{reasonRead, fmt.Errorf("%s: %w", path, err)}
	}
	r.finish(t, path)
	return nil
}

// RotatedFrom returns the names of the logs a file named name (a base name) may have been
// rotated away from, as a Follower that resumes looks for them (rotatedName): a one-shot
// given a log's rotated files reads them as the log's.
func RotatedFrom(name string) []string {
	var out []string
	for _, base := range rotatedBases(name) {
		if base != "" && rotatedName(base, name) && !slices.Contains(out, base) {
			out = append(out, base)
		}
	}
	return out
}
