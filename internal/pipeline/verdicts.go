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
// all of them), and that are not an nginx image's start-up lines alone (up to
// parser.MaxStartupLines of them), is of no format, counted under parser.NoFormat and
// logged by its path
// (warnUnreadable), until a line of it fits. So is a file of fewer such lines that went
// quiet (settle), as a Session settles a file of candidate formats: by the same quiet
// period (stream.settleQuiet). The input's counts alone say nothing of it while its
// other files fit. Once a line of a file fits, the file is not looked at
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
// whether one did, whether it is of no format; and whether those that did not are an
// nginx image's start-up lines alone, which are not settled (Session.Settle keeps them).
type verdict struct {
	misfits   int
	fits, off bool
	startup   parser.StartupLines
}

func newVerdicts() *verdicts {
	return &verdicts{files: map[string]*verdict{}, none: map[string]struct{}{}}
}

// line judges by line, of path, which fit the format or not: most lines are of the file
// of the last line, which fit. It reports whether it judged the line, and then whether
// the file waits to be settled if it goes quiet: its lines so far fit not, fewer than
// parser.MaxHeld of them.
func (v *verdicts) line(path string, line []byte, fit bool) (judged, waits bool) {
	if path == v.last && v.cur == nil {
		return false, false
	}
	return true, v.judge(path, line, fit)
}

// judge is line for a line of another file than the last, or of one still judged.
func (v *verdicts) judge(path string, line []byte, fit bool) (waits bool) {
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
	case f.misfits < parser.MaxHeld || f.startup.Only():
		// An nginx image's start-up lines alone, past MaxHeld (a line per template the
		// official image renders), wait for the pod's first request as when quiet; past
		// parser.MaxStartupLines, they are judged as any others.
		f.startup.Add(line)
		if f.misfits++; f.misfits >= parser.MaxHeld && !f.startup.Only() {
			f.off = true
			v.setNone(path, true)
		}
	}
	v.cur = nil
	if f != nil && !f.fits {
		v.cur = f
	}
	return v.cur != nil && !v.cur.off
}

// settle has the file of path, quiet since its last line, of no format when none of its
// lines fit (fewer than parser.MaxHeld, or it would be already), unless they are an nginx
// image's start-up lines alone: those wait for the pod's first request.
func (v *verdicts) settle(path string) {
	if f := v.files[path]; f != nil && !f.fits && !f.off && f.misfits > 0 && !f.startup.Only() {
		f.off = true
		v.setNone(path, true)
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
