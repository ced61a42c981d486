package follow

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// glob finds what filepath.Glob finds where every directory can be listed,
// and names the directories it could not list where filepath.Glob is silent.
func TestGlobMatchesFilepathGlob(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.log", "b.log", "c.txt", "[x].log", "p1/0.log", "p1/1.log.gz", "p2/0.log", "p2/sub/0.log", "q/0.log"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.log", filepath.Join(dir, "link.log")); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{
		"*.log", "?.log", "[ab].log", `\[x\].log`, "*", "p*/*.log", "p*/*", "*/0.log", "*/*/0.log",
		"p1/*", "none/*.log", "a.log/*", "*.log/*", "p[12]/*.log",
	} {
		t.Run(pattern, func(t *testing.T) {
			full := filepath.Join(dir, pattern)
			want, err := filepath.Glob(full)
			if err != nil {
				t.Fatal(err)
			}
			got, unlisted := glob(full, listDir)
			if !slices.Equal(got, want) || len(unlisted) != 0 {
				t.Errorf("glob: %q, unlisted %v\nfilepath.Glob: %q", got, unlisted, want)
			}
		})
	}
	t.Run("relative", func(t *testing.T) {
		t.Chdir(dir)
		got, unlisted := glob("p*/*.log", listDir)
		if want := []string{"p1/0.log", "p2/0.log"}; !slices.Equal(got, want) || len(unlisted) != 0 {
			t.Errorf("got %q, unlisted %v, want %q", got, unlisted, want)
		}
	})
	t.Run("unlisted", func(t *testing.T) {
		l := &lister{dir: filepath.Join(dir, "p1"), broken: true, err: syscall.EACCES}
		got, unlisted := glob(filepath.Join(dir, "*", "*.log"), l.list)
		if want := []string{filepath.Join(dir, "p2", "0.log"), filepath.Join(dir, "q", "0.log")}; !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
		if keys := slices.Collect(maps.Keys(unlisted)); !slices.Equal(keys, []string{l.dir}) || !errors.Is(unlisted[l.dir], syscall.EACCES) {
			t.Errorf("unlisted %v, want %s: EACCES", unlisted, l.dir)
		}
	})
}

func TestWithin(t *testing.T) {
	dirs := map[string]error{"/var/log/pods": nil, ".": nil}
	for path, want := range map[string]bool{
		"/var/log/pods/a/0.log": true,
		"/var/log/pods/0.log":   true,
		"/var/log/pods":         false, // the directory itself is named by its parent's listing
		"/var/log/podsx/0.log":  false,
		"/var/log/0.log":        false,
		"a.log":                 true, // relative paths are under "."
		"/a.log":                false,
	} {
		if got := within(path, dirs); got != want {
			t.Errorf("within(%q) = %v, want %v", path, got, want)
		}
	}
	if within("/var/log/pods/0.log", nil) {
		t.Error("within no directory")
	}
}
