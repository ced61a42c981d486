package pipeline

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/logwindow/logwindow_exporter/config"
)

// fileInput is what a file given to --replay or --explain is read as.
type fileInput struct {
	// file is the path as given (a relative glob its input's reads, made absolute).
	file string
	// input is the first configured input that reads the file; zero when none does.
	input config.Input
	// path is the file's path as its input names it, which its path captures read: the
	// input's own path, or the match of its glob, that is this file.
	path  string
	found bool
}

// inputOf gives a replayed or explained file the first configured input that reads it,
// comparing files rather than strings: the path as given when the input's path (or glob)
// names it as written, else any file the input names now that is the same file (device
// and inode), so that a relative path, a symlink on either side, or another spelling of a
// directory all find their input. A relative glob, which names no one file, is compared
// as written, then made absolute, and read so, as its input's absolute glob reads its
// files: by paths its path captures can read.
func inputOf(cfg *config.Config, file string) fileInput {
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
		matches, _ := filepath.Glob(in.File.Path)
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && os.SameFile(given, fi) {
				return fileInput{file: file, input: in, path: m, found: true}
			}
		}
	}
	return fileInput{file: file, path: file}
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
func inputsOf(cfg *config.Config, files []string, log *slog.Logger) []fileInput {
	out := make([]fileInput, len(files))
	for i, file := range files {
		out[i] = inputOf(cfg, file)
		if !out[i].found && there(file) {
			log.Warn("no input reads this file: only the rules that read every input read its lines, with no input's wrapper or path captures",
				"file", file, "inputs", inputPaths(cfg))
		}
	}
	return out
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

// inputPaths lists the file inputs as name: path, for messages.
func inputPaths(cfg *config.Config) string {
	var paths []string
	for _, in := range cfg.Inputs {
		if in.File == nil {
			continue
		}
		if in.Name == "" {
			paths = append(paths, in.File.Path)
		} else {
			paths = append(paths, in.Name+": "+in.File.Path)
		}
	}
	if len(paths) == 0 {
		return "none reads a file"
	}
	return strings.Join(paths, ", ")
}

// noInputErr fails a one-shot (mode is replay or explain) over a file that no input reads
// and of whose lines no rule matched any: the output is all zeros, most likely because the
// file was meant as an input's and is not, and a zero exit would let that pass unseen.
// (What could not be read at all is unreadErr's.) It is a fileError, one line whatever
// the file's name, as unreadErr's are.
func (f fileInput) noInputErr(cfg *config.Config, mode string, lines int, matched bool) error {
	if f.found || lines == 0 || matched {
		return nil
	}
	return &fileError{mode, f.file, fmt.Errorf("no rule matched any of its %d lines, and no input reads this file (inputs: %s); rules restricted to an input, and an input's wrapper and path captures, apply to that input's files only: give the path of a file an input reads, or add an input whose path names it",
		lines, inputPaths(cfg))}
}
