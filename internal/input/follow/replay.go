package follow

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input"
)

// ReadToEnd reads every file opts.Path names, in name order, from its first
// byte to its end as found, and hands each line to h in the calling
// goroutine; a last line without a newline is handed on too. It is the
// replay mode's reader and the tests' reference: the same line splitting and
// cap as a Follower, without following. FromBeginning, RotationGrace and
// PollInterval are ignored. Files that cannot be read, directories of a
// glob that cannot be listed, and a glob's files and directories that a
// symlink takes out of its root (refused as a Follower refuses them) are
// skipped, counted in Errors and reported in the error, which also says when
// nothing matched.
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
	var tr *tree // nil for a path without a glob: it is the operator's, wherever it leads
	list := o.list
	if config.IsGlob(o.Path) {
		t := newTree(o.Path)
		tr = &t
		list = func(dir string) ([]string, error) {
			if filepath.Clean(dir) != tr.root {
				if err := tr.inRoot(dir); errors.Is(err, errOutside) {
					return nil, err
				}
			}
			return o.list(dir)
		}
	}
	paths, _, unlisted := expand(o, list)
	var errs []error
	for _, dir := range slices.Sorted(maps.Keys(unlisted)) {
		c.fail(reasonOf(unlisted[dir], reasonList))
		errs = append(errs, unlisted[dir])
	}
	if config.IsGlob(o.Path) && len(paths) == 0 && len(errs) == 0 {
		return c.snapshot(), fmt.Errorf("follow: no file matches %q", o.Path)
	}
	for _, p := range paths {
		if err := readFile(r, tr, p); err != nil {
			c.fail(reasonOf(err, reasonOpen))
			errs = append(errs, err)
		}
		if o.Closed != nil {
			o.Closed(p)
		}
	}
	return c.snapshot(), errors.Join(errs...)
}

// Refused reports whether err, as ReadToEnd returns it, tells only of a glob's files and
// directories refused as symlinks out of its root: every other file was read, as a
// Follower reads on past them, so a one-shot can show what they held before failing.
func Refused(err error) bool {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return errors.Is(err, errOutside)
	}
	for _, e := range j.Unwrap() {
		if !errors.Is(e, errOutside) {
			return false
		}
	}
	return true
}

// readFile reads path to its end; tr, when not nil, is its glob's tree, out of whose root
// no symlink is followed: looked at before the open, as a FIFO or a device out there
// must not even be opened, and after it, as a symlink swapped in between could lead
// anywhere.
func readFile(r *lineReader, tr *tree, path string) error {
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
	if fi, err := file.Stat(); err != nil {
		return err
	} else if !fi.Mode().IsRegular() {
		return notRegular(path, fi)
	}
	if tr != nil {
		if err := tr.openedInRoot(path, file); err != nil {
			return err
		}
	}
	t := &tracked{f: file, path: path}
	if _, _, err := r.pass(t, path, math.MaxInt64); err != nil {
		return &failure{reasonRead, fmt.Errorf("%s: %w", path, err)}
	}
	r.finish(t, path)
	return nil
}
