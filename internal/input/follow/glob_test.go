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
	// From the first wildcard on, each element is matched against a listing, which never
	// gives ".", ".." or "": such a glob matches nothing (the config refuses it), where
	// before the first wildcard the system resolves them.
	for pattern, want := range map[string][]string{
		"p*/../a.log": nil, "p*/./0.log": nil, "p*//0.log": nil, "p*/": nil, "p*/sub/..": nil,
		"p2/../p1/*.log": {"p1/0.log"}, "./p1/*.log": {"p1/0.log"}, "p2//sub/*.log": {"p2/sub/0.log"},
	} {
		t.Run(pattern, func(t *testing.T) {
			got, _ := glob(dir+string(filepath.Separator)+pattern, listDir)
			for i := range got {
				got[i] = filepath.Clean(got[i])
			}
			for i := range want {
				want[i] = filepath.Join(dir, want[i])
			}
			if !slices.Equal(got, want) {
				t.Errorf("glob: %q, want %q", got, want)
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

// Names says whether a path is one the follower of a pattern reads files under: the
// pattern itself when it is no glob, else a match as the glob lists it (cleaned).
func TestNames(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"/var/log/nginx/access.log", "/var/log/nginx/access.log", true},
		{"/var/log/nginx/access.log", "/var/log/nginx/access.log.1", false},
		{"/var/log/pods/*/*/*.log", "/var/log/pods/web/nginx/0.log", true},
		{"/var/log/pods/*/*/*.log", "/var/log/pods/web/0.log", false},
		{"/var/log/pods/*/*/*.log", "/etc/shadow", false},
		{"/var/log//pods/./*/*.log", "/var/log/pods/web/0.log", true},
		{"logs/*.log", "logs/a.log", true},
		{"./logs/*.log", "logs/a.log", true},
		{"*.log", "a.log", true},
		// A wildcard matches "..", which no listing gives: a snapshot's position of such a
		// path (an edited file) would have a file out of the glob looked for and read.
		{"/var/log/pods/*/*.log", "/var/log/pods/../secret.log", false},
		{"/var/log/pods/*/*/*.log", "/var/log/pods/../../x.log", false},
		{"/var/log/pods/*/*.log", "/var/log/pods/./x.log", false},
		// Nor does a listing give "." or ".." to match such an element of the pattern, or
		// an empty name to match what a slash too many leaves after a wildcard: the glob
		// lists nothing there, whatever cleaning the pattern would make of it.
		{"/var/log/pods/*/../*.log", "/var/log/pods/x.log", false},
		{"/var/log/pods/*/../../../etc/*", "/var/etc/shadow", false},
		{"/var/log/pods/*/./*.log", "/var/log/pods/web/0.log", false},
		{"/var/log/pods/*//*.log", "/var/log/pods/web/0.log", false},
		{"/var/log/pods/*/", "/var/log/pods/web", false},
		{`/var/log/pods/*\/*.log`, "/var/log/pods/web/0.log", false},
		{"/var/log/pods/../*.log", "/var/log/x.log", true},
		{"/var/log//pods/*.log", "/var/log/pods/x.log", true},
		{"../logs/*.log", "../logs/a.log", true},
		{"*", "..", false},
		{"/*", "/", false},
	} {
		if got := Names(tc.pattern, tc.path); got != tc.want {
			t.Errorf("Names(%q, %q) = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
}

// Every path a glob lists is one Names says it names.
func TestNamesWhatGlobLists(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"pods/web/nginx/0.log", "pods/api/app/1.log", "a.log"} {
		mkdirs(t, filepath.Dir(filepath.Join(root, f)))
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, pattern := range []string{root + "/pods/*/*/*.log", root + "//pods/./*/*/[0-9].log", root + "/*.log", root + "/pods/../*.log"} {
		matches, _ := glob(pattern, listDir)
		if len(matches) == 0 {
			t.Fatalf("%s lists nothing", pattern)
		}
		for _, m := range matches {
			if !Names(pattern, m) {
				t.Errorf("%s lists %s, which Names says it does not name", pattern, m)
			}
		}
	}
}
