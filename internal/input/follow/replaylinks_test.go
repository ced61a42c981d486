package follow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadToEndSymlinks: a replay of a glob follows a symlink as the live follower does.
// One that stays in the glob's root is read; one out of it, to a file or to a directory,
// is refused with the follower's own error naming it and counted as a symlink, and the
// other files are read all the same: whoever can write under a log directory must not
// have an operator's replay read a file they cannot.
func TestReadToEndSymlinks(t *testing.T) {
	tests := []struct {
		name    string
		links   map[string]string // link under logs/ → its target, relative to the link's directory
		pattern string            // under logs/
		want    []string
		refused string // the link named in the error, under logs/; "" for none
		noFile  bool   // the error is that no file matches
	}{
		{name: "file link inside the root", links: map[string]string{"in.log": "sub/b.txt"}, pattern: "*.log",
			want: []string{"a.log:a", "in.log:b"}},
		{name: "file link out of the root", links: map[string]string{"out.log": "../secret/s.log"}, pattern: "*.log",
			want: []string{"a.log:a"}, refused: "out.log"},
		// Read once, as the follower reads it: under the path without a link on the way.
		{name: "directory link inside the root", links: map[string]string{"pod": "sub"}, pattern: "*/*.txt",
			want: []string{"sub/b.txt:b"}},
		{name: "directory link inside the root, sorting after", links: map[string]string{"xpod": "sub"}, pattern: "*/*.txt",
			want: []string{"sub/b.txt:b"}},
		{name: "file link inside the root to a match", links: map[string]string{"real/b.txt": "../sub/b.txt"}, pattern: "*/*.txt",
			want: []string{"sub/b.txt:b"}},
		{name: "directory link out of the root", links: map[string]string{"pod": "../secret"}, pattern: "*/*.log",
			want: []string{"real/r.log:r"}, refused: "pod"},
		// Matched itself, as the follower refuses it before it would pass over a directory.
		{name: "directory link out of the root matched", links: map[string]string{"pod": "../secret"}, pattern: "*",
			want: []string{"a.log:a"}, refused: "pod"},
		// A link that leads nowhere (its file deleted, rotated away) is no file, as the
		// follower finds none there: nothing was left unread.
		{name: "dangling file link", links: map[string]string{"gone.log": "sub/none.txt"}, pattern: "*.log",
			want: []string{"a.log:a"}},
		{name: "dangling file link out of the root", links: map[string]string{"gone.log": "../secret/none.log"}, pattern: "*.log",
			want: []string{"a.log:a"}},
		{name: "dangling directory link", links: map[string]string{"pod": "none"}, pattern: "*/*.log",
			want: []string{"real/r.log:r"}},
		// But a glob that matches links to nothing alone matches no file: a replay's zeros
		// would say the file had no lines.
		{name: "dangling links alone", links: map[string]string{"gone.txt": "none.txt"}, pattern: "*.txt",
			noFile: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range map[string]string{
				"logs/a.log": "a\n", "logs/sub/b.txt": "b\n", "logs/real/r.log": "r\n", "secret/s.log": "secret\n",
			} {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			logs := filepath.Join(dir, "logs")
			for link, target := range tc.links {
				if err := os.Symlink(target, filepath.Join(logs, link)); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			s, err := ReadToEnd(Options{Path: filepath.Join(logs, tc.pattern)}, func(path string, line []byte) {
				rel, _ := filepath.Rel(logs, path)
				got = append(got, rel+":"+string(line))
			})
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("lines %q, want %q", got, tc.want)
			}
			if tc.noFile {
				if err == nil || !strings.Contains(err.Error(), "no file matches") {
					t.Errorf("error %v, want no file matches", err)
				}
				return
			}
			if tc.refused == "" {
				if err != nil || s.Errors != 0 {
					t.Errorf("error %v, %d counted; want none", err, s.Errors)
				}
				return
			}
			if u, ok := errors.AsType[*Unread](err); !ok || len(u.Errs) != 1 || !errors.Is(err, errOutside) || !strings.Contains(err.Error(), filepath.Join(logs, tc.refused)+" resolves to ") {
				t.Errorf("error %v; want the live follower's refusal naming %s", err, tc.refused)
			}
			if s.Errors != 1 || s.ErrorsByReason["symlink"] != 1 {
				t.Errorf("errors %d %v, want 1 symlink", s.Errors, s.ErrorsByReason)
			}
		})
	}
}
