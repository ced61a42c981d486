package follow

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/logwindow/logwindow_exporter/config"
)

// glob is filepath.Glob that says which directories it could not list.
// filepath.Glob takes a directory it cannot list (EACCES, EMFILE, ENFILE, EIO)
// for one without matches, so a directory unreadable for a moment would look
// like every file in it leaving its path. A directory that does not exist, or
// is not a directory, has no matches and is no failure: nothing is there.
//
// unlisted maps each directory that could not be listed, cleaned, to why; the
// names a failed listing returned before its error are matched all the same.
// pattern must be valid (Options.normalize checks it).
func glob(pattern string, list func(dir string) ([]string, error)) (matches []string, unlisted map[string]error) {
	unlisted = make(map[string]error)
	return globInto(pattern, list, nil, unlisted), unlisted
}

func globInto(pattern string, list func(string) ([]string, error), matches []string, unlisted map[string]error) []string {
	dir, file := splitGlob(pattern)
	if !config.IsGlob(dir) {
		return matchDir(dir, file, list, matches, unlisted)
	}
	if dir == pattern {
		return matches // a pattern that splits into itself names nothing
	}
	for _, d := range globInto(dir, list, nil, unlisted) {
		matches = matchDir(d, file, list, matches, unlisted)
	}
	return matches
}

// matchDir appends the names in dir that match pattern, in name order.
func matchDir(dir, pattern string, list func(string) ([]string, error), matches []string, unlisted map[string]error) []string {
	names, err := list(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		unlisted[filepath.Clean(dir)] = err
	}
	slices.Sort(names)
	for _, n := range names {
		if ok, _ := filepath.Match(pattern, n); ok {
			matches = append(matches, filepath.Join(dir, n))
		}
	}
	return matches
}

// listDir returns the names in dir, or those it read before an error. A glob's
// wildcard lists every name it matches as a directory: O_DIRECTORY refuses one that
// is not (ENOTDIR, no match) before the open of a FIFO could wait for a writer, for
// ever; O_NONBLOCK also covers one swapped in after a look.
func listDir(dir string) ([]string, error) {
	d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// within reports whether path is named by an entry of one of dirs, directly
// or below: the listing of that directory is what said whether path exists.
func within(path string, dirs map[string]error) bool {
	if len(dirs) == 0 {
		return false
	}
	for {
		parent := filepath.Dir(path)
		if _, ok := dirs[parent]; ok {
			return true
		}
		if parent == path {
			return false
		}
		path = parent
	}
}

// Names reports whether path is one a follower of pattern (Options.Path) reads files
// under: pattern itself when it is no glob, else a match of it as the glob lists them
// (cleaned). A saved Position of a path its input does not name is not that input's. A
// listing never gives "." or "..", which a wildcard matches: a path that holds them (not
// clean) leads elsewhere, and is no match.
func Names(pattern, path string) bool {
	if !config.IsGlob(pattern) {
		return path == pattern
	}
	return path == filepath.Clean(path) && listed(pattern, path)
}

// listed reports whether glob lists path, a clean one, for pattern, given a tree that
// holds it: globInto's steps, taken on the one path. Matching the cleaned pattern is not
// the same: cleaning drops a "." or a "dir/.." after a wildcard, and a slash too many,
// where the glob matches an element against names no listing gives (".", "..", "").
func listed(pattern, path string) bool {
	dir, file := splitGlob(pattern)
	name, parent := filepath.Base(path), filepath.Dir(path)
	if name == "." || name == ".." || name == "/" {
		return false
	}
	if ok, _ := filepath.Match(file, name); !ok {
		return false
	}
	if !config.IsGlob(dir) {
		return filepath.Clean(dir) == parent
	}
	return dir != pattern && listed(dir, parent)
}

// splitGlob splits pattern into its directory and its last element as filepath.Glob
// does: the directory without its trailing separator, "." for none.
func splitGlob(pattern string) (dir, file string) {
	dir, file = filepath.Split(pattern)
	switch dir {
	case "":
		dir = "."
	case "/":
	default:
		dir = dir[:len(dir)-1]
	}
	return dir, file
}
