package follow

import (
	"errors"
	"sync"
)

// Files bounds the files the followers that share it keep open (Options.Files), so that
// a glob of more files than the process may open leaves the HTTP side the descriptors
// its listener and connections need: past the bound a file waits, unopened, for one to
// close (a file retired after it left its path, a follower stopped). A process has one,
// shared by all its followers across reloads. Each follower's inotify instance takes a
// place too, whatever the bound: it is one descriptor per input, made before any file is
// opened, and without it the input would poll. So does its first file: were the bound
// so low that the instances took it all, the input would read nothing.
type Files struct {
	max int

	mu   sync.Mutex
	open int
}

// NewFiles returns a bound of n open files, at least one.
func NewFiles(n int) *Files { return &Files{max: max(n, 1)} }

// Max is the bound.
func (s *Files) Max() int {
	if s == nil {
		return 0
	}
	return s.max
}

// take takes a place, and reports whether it got one: force takes it past the bound.
// A nil Files bounds nothing.
func (s *Files) take(force bool) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !force && s.open >= s.max {
		return false
	}
	s.open++
	return true
}

// give gives back a place taken.
func (s *Files) give() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
}

// errNoPlace is track's when Options.Files keeps a file from being opened.
var errNoPlace = errors.New("no place among the files the inputs may keep open")

// wait counts each of paths that begins to wait for a place (Options.Files) as an open
// error, and warns when files begin to wait, how many and the bound, once until none
// waits: a glob of thousands of files past the bound would otherwise warn of each at
// every scan.
func (f *Follower) wait(paths []string) {
	was := len(f.waiting)
	if was == 0 && len(paths) == 0 {
		return // the usual scan: none waits, none waited
	}
	now := make(map[string]bool, len(paths))
	for _, p := range paths {
		if !f.waiting[p] {
			f.c.fail(reasonOpen)
		}
		now[p] = true
	}
	f.waiting = now
	switch {
	case was == 0 && len(now) > 0:
		f.o.Logger.Warn("files wait to be opened: the inputs keep open at most the files the open-file limit leaves them beside the HTTP side; each waits for one to close, or raise the limit (ulimit -n)",
			"waiting", len(now), "max_open_files", f.o.Files.Max(), "first", paths[0])
	case was > 0 && len(now) == 0:
		f.o.Logger.Info("no file waits to be opened any more", "max_open_files", f.o.Files.Max())
	}
}
