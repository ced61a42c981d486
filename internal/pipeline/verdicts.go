package pipeline

import (
	"maps"
	"slices"
	"sync"

	"github.com/logwindow/logwindow_exporter/parser"
)

// verdicts judges each file of a glob of one log format by its first lines, as an input
// of candidate formats judges each file by its last (parser.Files): a file none of whose
// first parser.MaxHeld lines fits the format (a pod of another image, under a glob over
// all of them) is of no format, counted under parser.NoFormat and logged by its path
// (warnUnreadable), until a line of it fits. The input's counts alone say nothing of it
// while its other files fit. Once a line of a file fits, the file is not looked at
// again: its lines cost one comparison of their path with the last line's. Used by the
// reading goroutine, but for the files of no format, which the snapshots read under mu.
type verdicts struct {
	// format is the ID of the format the files are judged by; a reload that changes it
	// has them judged anew.
	format string
	files  map[string]*verdict
	// last is the path of the last line judged and cur its file's verdict (nil when it
	// fits: it is not judged any more).
	last string
	cur  *verdict
	mu   sync.Mutex
	none map[string]struct{}
}

// verdict is what verdicts knows of one file: how many of its first lines did not fit,
// whether one did, whether it is of no format.
type verdict struct {
	misfits   int
	fits, off bool
}

func newVerdicts() *verdicts {
	return &verdicts{files: map[string]*verdict{}, none: map[string]struct{}{}}
}

// line judges by a line of path, which fit the format or not: most lines are of the file
// of the last line, which fit.
func (v *verdicts) line(path string, fit bool) {
	if path == v.last && v.cur == nil {
		return
	}
	v.judge(path, fit)
}

// judge is line for a line of another file than the last, or of one still judged.
func (v *verdicts) judge(path string, fit bool) {
	f := v.cur
	if path != v.last {
		if f = v.files[path]; f == nil {
			f = &verdict{}
			v.files[path] = f
		}
		v.last = path
	}
	switch {
	case f == nil, f.fits:
	case fit:
		f.fits = true
		if f.off {
			f.off = false
			v.setNone(path, false)
		}
	case f.misfits < parser.MaxHeld:
		if f.misfits++; f.misfits == parser.MaxHeld {
			f.off = true
			v.setNone(path, true)
		}
	}
	v.cur = nil
	if f != nil && !f.fits {
		v.cur = f
	}
}

// judgeBy has the files judged by the format of ID format ("" for none: an input no rule
// reads, or of no log format, whose files are not judged): anew, when it changed.
func (v *verdicts) judgeBy(format string) {
	if format == v.format {
		return
	}
	v.format, v.last, v.cur = format, "", nil
	clear(v.files)
	v.mu.Lock()
	defer v.mu.Unlock()
	clear(v.none)
}

// closed forgets the file of path: it is read no more.
func (v *verdicts) closed(path string) {
	if f := v.files[path]; f != nil && f.off {
		v.setNone(path, false)
	}
	delete(v.files, path)
	if v.last == path {
		v.last, v.cur = "", nil
	}
}

// setNone records whether the file of path is of no format.
func (v *verdicts) setNone(path string, none bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if none {
		v.none[path] = struct{}{}
	} else {
		delete(v.none, path)
	}
}

// formats counts the files of no format under parser.NoFormat (nil for none), as
// parser.Files.Formats counts them; a snapshot.
func (v *verdicts) formats() map[string]int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.none) == 0 {
		return nil
	}
	return map[string]int{parser.NoFormat: len(v.none)}
}

// noFormatFiles are the paths of the files of no format, sorted; a snapshot.
func (v *verdicts) noFormatFiles() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Sorted(maps.Keys(v.none))
}
