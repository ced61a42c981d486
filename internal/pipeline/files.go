package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
)

// fileInput is what a file given to --replay or --explain is read as.
type fileInput struct {
	// file is the path as given (a relative glob its input's reads, made absolute), or
	// one of the matches of glob.
	file string
	// input is the first configured input that reads the file; zero when none does.
	input config.Input
	// path is the file's path as its input names it, which its path captures read: the
	// input's own path, or the match of its glob, that is this file.
	path  string
	found bool
	// glob is the glob given whose match file is, read as a file given by itself
	// (matchesOf); "" for a file or glob given as it is. unlisted are the errors of that
	// glob's directories that could not be listed, with its first match.
	glob     string
	unlisted []error
}

// inputOf gives a replayed or explained file the first configured input that reads it,
// comparing files rather than strings: the path as given when the input's path (or glob)
// names it as written, else any file the input names now that is the same file (device
// and inode), so that a relative path, a symlink on either side, or another spelling of a
// directory all find their input. A relative glob, which names no one file, is compared
// as written, then made absolute, and read so, as its input's absolute glob reads its
// files: by paths its path captures can read.
func (r *resolver) inputOf(file string) fileInput {
	cfg := r.cfg
	given, statErr := os.Stat(file)
	abs := file
	if config.IsGlob(file) && !filepath.IsAbs(file) {
		if a, err := filepath.Abs(file); err == nil {
			abs = a
		}
	}
	for _, in := range cfg.Inputs {
		if in.File == nil {
			continue // no file is its
		}
		if ok, _ := filepath.Match(in.File.Path, file); ok || in.File.Path == file {
			return fileInput{file: file, input: in, path: file, found: true}
		}
		if ok, _ := filepath.Match(in.File.Path, abs); ok && abs != file {
			return fileInput{file: abs, input: in, path: abs, found: true}
		}
		if statErr != nil {
			continue
		}
		// A path without a glob's metacharacters gives itself when it exists.
		if m, ok := r.matchOf(in, given); ok {
			return fileInput{file: file, input: in, path: m, found: true}
		}
	}
	if in, log, ok := r.rotatedOf(file); ok {
		return fileInput{file: file, input: in, path: log, found: true}
	}
	if in, ok := soleSocket(cfg); ok {
		return fileInput{file: file, input: in, path: file, found: true}
	}
	return fileInput{file: file, path: file}
}

// soleSocket is the one input of cfg when it is a syslog input (the chart's syslog and
// sidecar modes): a file given to a one-shot is then read as its datagrams, a line each
// (readMessages), so that a sample of the access log tests the rules as the input's
// format reads it. Of several inputs, none is the file's.
func soleSocket(cfg *config.Config) (config.Input, bool) {
	if len(cfg.Inputs) != 1 || cfg.Inputs[0].Syslog == nil {
		return config.Input{}, false
	}
	return cfg.Inputs[0], true
}

// resolver finds the inputs of the files given to one one-shot (inputsOf). It lists what
// each input's path names once, when a file first needs it: listed again for every file,
// a glob of thousands given through another spelling of the input's directory (a symlink)
// cost a glob and thousands of stats for each of its matches.
type resolver struct {
	cfg *config.Config
	// named holds, by an input's path, the first of its matches that is each file.
	named map[string]map[fileID]string
}

// fileID is a file whatever its name: device and inode.
type fileID struct{ dev, ino uint64 }

// statMatch stats a match of an input's path; a variable so that a test counts the stats.
var statMatch = os.Stat

// idOf is the file fi is of; false where the system does not say.
func idOf(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}

// matchOf is the path of in's that names the file fi is of, if any: the first of its
// matches, in the glob's order, that is it.
func (r *resolver) matchOf(in config.Input, fi os.FileInfo) (string, bool) {
	id, ok := idOf(fi)
	if !ok {
		return "", false
	}
	named, ok := r.named[in.File.Path]
	if !ok {
		named = map[fileID]string{}
		matches, _ := filepath.Glob(in.File.Path)
		for _, m := range matches {
			if mi, err := statMatch(m); err == nil {
				if id, ok := idOf(mi); ok {
					if _, seen := named[id]; !seen {
						named[id] = m
					}
				}
			}
		}
		r.named[in.File.Path] = named
	}
	m, ok := named[id]
	return m, ok
}

// rotatedOf finds the input that reads the log file was rotated away from, named as a
// rotator names it (0.log.20240301-120000 beside 0.log, access.log.1 beside access.log;
// follow.RotatedFrom), and that log's path: a Follower reads a rotated file on under its
// log's path, a CRI message split across the rotation joined whole, and so does a
// one-shot given the two files. The log is compared as inputOf compares a file: its path
// when the input's names it, else a file of the input's that is it, when it is there.
func (r *resolver) rotatedOf(file string) (config.Input, string, bool) {
	if config.IsGlob(file) {
		return config.Input{}, "", false
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return config.Input{}, "", false
	}
	dir, name := filepath.Split(abs)
	for _, in := range r.cfg.Inputs {
		if in.File == nil {
			continue
		}
		for _, base := range follow.RotatedFrom(name) {
			log := filepath.Join(dir, base)
			if ok, _ := filepath.Match(in.File.Path, log); ok || in.File.Path == log {
				return in, log, true
			}
			if fi, err := os.Stat(log); err == nil {
				if m, ok := r.matchOf(in, fi); ok {
					return in, m, true
				}
			}
		}
	}
	return config.Input{}, "", false
}

// pathOf is the path the input names a line's file by, given the path it was read under
// (a glob given to --replay reads several files).
func (f fileInput) pathOf(read string) string {
	if read == f.file {
		return f.path
	}
	return read
}

// inputsOf resolves each file's input and warns of every file that no input reads: its
// lines are read by the rules that read every input only, with no input's wrapper or path
// captures, which a user who meant an input's file would otherwise not learn. A file that
// is not there (a glob that matches none) is not warned of: the one-shot fails naming it
// as missing, and a relative path could not be compared with an input's files anyway.
// The files of one log are put in the order it wrote them (inWrittenOrder).
func inputsOf(cfg *config.Config, files []string, log *slog.Logger) []fileInput {
	var out []fileInput
	r := &resolver{cfg: cfg, named: map[string]map[fileID]string{}}
	for _, file := range files {
		out = append(out, r.matchesOf(r.inputOf(file))...)
	}
	for _, f := range out {
		warnNoInput(cfg, f, log)
	}
	inWrittenOrder(out)
	return out
}

// warnNoInput warns of f when no input reads it (inputsOf).
func warnNoInput(cfg *config.Config, f fileInput, log *slog.Logger) {
	if !f.found && there(f.file) {
		log.Warn("no input reads this file: only the rules that read every input read its lines, with no input's wrapper or path captures",
			"file", f.file, "inputs", inputPaths(cfg))
	}
}

// matchesOf is f, or, for a glob that no input reads as written but some of whose
// matches an input reads (a log's rotated files beside it, 0.log*, which a shell would
// have named one by one), its matches, each read as if given by itself: by the input
// that reads it, a rotated file under its log's path, the files of a log in the order it
// wrote them, still as the glob reads them (follow.Matches: no symlink out of its root
// followed).
func (r *resolver) matchesOf(f fileInput) []fileInput {
	if f.found || !config.IsGlob(f.file) {
		return []fileInput{f}
	}
	matches, err := follow.Matches(f.file)
	u, unlisted := errors.AsType[*follow.Unread](err)
	if err != nil && !unlisted {
		return []fileInput{f} // its read says why
	}
	var out []fileInput
	read := false
	for _, m := range matches {
		if _, err := os.Stat(m); errors.Is(err, fs.ErrNotExist) {
			continue // a link to nothing is no file, as the glob's read finds none there
		}
		out = append(out, r.inputOf(m))
		out[len(out)-1].glob = f.file
		read = read || out[len(out)-1].found
	}
	if !read {
		return []fileInput{f}
	}
	if unlisted {
		out[0].unlisted = u.Errs
	}
	return out
}

// inWrittenOrder puts the files given one by one of one log (fileInput.path) in the order
// the log wrote them, in the places they were given at: its rotated files by their last
// write, then the log itself, so that a CRI message split across a rotation is joined
// (replayFiles) whatever the order they were given in: ls, and a shell's 0.log*, name the
// log first.
func inWrittenOrder(files []fileInput) {
	type written struct {
		f     fileInput
		log   bool
		mtime time.Time
	}
	byLog := map[string][]int{}
	for i, f := range files {
		if f.found && !config.IsGlob(f.file) {
			byLog[f.path] = append(byLog[f.path], i)
		}
	}
	for path, at := range byLog {
		if len(at) < 2 {
			continue
		}
		logInfo, logErr := os.Stat(path)
		group := make([]written, len(at))
		for k, i := range at {
			group[k].f = files[i]
			if fi, err := os.Stat(files[i].file); err == nil {
				group[k].log = logErr == nil && os.SameFile(fi, logInfo)
				group[k].mtime = fi.ModTime()
			}
		}
		slices.SortStableFunc(group, func(a, b written) int {
			switch {
			case a.log == b.log:
				return a.mtime.Compare(b.mtime)
			case a.log:
				return 1
			}
			return -1
		})
		for k, i := range at {
			files[i] = group[k].f
		}
	}
}

// there reports whether file exists, or a glob matches a file.
func there(file string) bool {
	if config.IsGlob(file) {
		matches, _ := filepath.Glob(file)
		return len(matches) > 0
	}
	_, err := os.Lstat(file)
	return err == nil
}

// inputPaths lists the inputs as name: path (or socket address), for messages.
func inputPaths(cfg *config.Config) string { return inputPathsOf(cfg.Inputs) }

// inputPathsOf lists ins as name: path (or socket address), for messages.
func inputPathsOf(ins []config.Input) string {
	var paths []string
	for _, in := range ins {
		if in.Name == "" {
			paths = append(paths, in.Source())
		} else {
			paths = append(paths, in.Name+": "+in.Source())
		}
	}
	if len(paths) == 0 {
		return "none"
	}
	return strings.Join(paths, ", ")
}

// noInputErr fails a one-shot (mode is replay, explain or sample) over a file that no
// input reads and of whose lines no rule matched any: the output is all zeros, most
// likely because the file was meant as an input's and is not, and a zero exit would let
// that pass unseen. So it does when the file gave the rules no line at all (empty, or
// each line too long): a path that names neither an input's file nor a line is a mistake
// as well, the more so as an input's empty file fails the one-shot (Fit.readNothing).
// (What could not be read at all is unreadErr's.) It is a fileError, one line whatever
// the file's name, as unreadErr's are.
func (f fileInput) noInputErr(cfg *config.Config, mode string, c fileCount) error {
	if f.found || c.received > 0 || c.lines == 0 && len(c.unread) > 0 {
		return nil
	}
	sockets := ""
	if slices.ContainsFunc(cfg.Inputs, func(in config.Input) bool { return in.Syslog != nil }) {
		// soleSocket: the datagrams of which of several sockets a file holds, nothing says.
		sockets = "; a file is read as a syslog input's datagrams only when that input is the configuration's one input"
	}
	what := fmt.Sprintf("no rule matched any of its %d lines", c.lines)
	switch {
	case c.lines > 0:
	case c.tooLong > 0:
		what = fmt.Sprintf("no rule read a line of it, its %d %s longer than --input.max-line-bytes", c.tooLong, plural(c.tooLong, "line is", "lines are"))
	case config.IsGlob(f.file):
		what = "the files it matches are empty"
	default:
		what = "it is empty"
	}
	return &fileError{mode, f.file, fmt.Errorf("%s, and no input reads this file (inputs: %s); rules restricted to an input, and an input's wrapper and path captures, apply to that input's files only: give the path of a file an input reads, or add an input whose path names it%s",
		what, inputPaths(cfg), sockets)}
}

// noInputErrs are the noInputErr of each file a one-shot (mode) read, by its counts.
func noInputErrs(cfg *config.Config, mode string, files []fileInput, counts []fileCount) error {
	var errs []error
	for i, f := range files {
		errs = append(errs, f.noInputErr(cfg, mode, counts[i]))
	}
	return errors.Join(errs...)
}
