package release

import (
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestLDFlags(t *testing.T) {
	good := Stamp{Version: "0.1.0", Revision: "abc", Branch: "main", BuildUser: "me@host", Date: time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))}
	got, err := good.LDFlags()
	if err != nil {
		t.Fatal(err)
	}
	want := "-s -w -X github.com/prometheus/common/version.Version=0.1.0 -X github.com/prometheus/common/version.Revision=abc" +
		" -X github.com/prometheus/common/version.Branch=main -X github.com/prometheus/common/version.BuildUser=me@host" +
		" -X github.com/prometheus/common/version.BuildDate=20260301-11:00:00"
	if got != want {
		t.Errorf("LDFlags() =\n%s\nwant\n%s", got, want)
	}
	for _, c := range []struct {
		name   string
		change func(*Stamp)
	}{
		{"empty", func(s *Stamp) { s.Branch = "" }},
		{"space", func(s *Stamp) { s.BuildUser = "John Doe@host" }},
		{"quote", func(s *Stamp) { s.Version = `0.1.0"` }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := good
			c.change(&s)
			if flags, err := s.LDFlags(); err == nil {
				t.Errorf("LDFlags() = %q, want an error", flags)
			}
		})
	}
}

func TestFromRepo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	if err := exec.Command("git", "-C", "../../..", "rev-parse", "HEAD").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1772368496")
	s, err := FromRepo("../../..", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	version, err := os.ReadFile("../../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != strings.TrimSpace(string(version)) {
		t.Errorf("version %q, want VERSION's %q", s.Version, version)
	}
	if !regexp.MustCompile(`^[0-9a-f]{40}(-modified)?$`).MatchString(s.Revision) {
		t.Errorf("revision %q, want a commit", s.Revision)
	}
	if s.Branch == "" || !strings.Contains(s.BuildUser, "@") {
		t.Errorf("branch %q, user %q", s.Branch, s.BuildUser)
	}
	if want := time.Unix(1772368496, 0).UTC(); !s.Date.Equal(want) {
		t.Errorf("date %v, want SOURCE_DATE_EPOCH's %v", s.Date, want)
	}
	if _, err := s.LDFlags(); err != nil {
		t.Error(err)
	}

	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if _, err := FromRepo("../../..", time.Now()); err == nil {
		t.Error("a SOURCE_DATE_EPOCH that is no number was taken")
	}
}

// gitRepo makes a git repository holding VERSION with version and a Go file, committed.
func gitRepo(t *testing.T, version string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for name, body := range map[string]string{"VERSION": version, "main.go": "package main\n\nfunc main() {}\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "x"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	return dir
}

// TestFromRepoModified: the revision says -modified whenever the build may hold what the
// commit does not, as Go's own vcs.modified does: a tracked file changed, or a file git
// does not ignore added (a Go file beside main.go is built in).
func TestFromRepoModified(t *testing.T) {
	for _, c := range []struct {
		name     string
		change   func(dir string) error
		modified bool
	}{
		{"clean", func(string) error { return nil }, false},
		{"tracked file changed", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { println() }\n"), 0o644)
		}, true},
		{"untracked Go file", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "extra.go"), []byte("package main\n"), 0o644)
		}, true},
		{"ignored file", func(dir string) error {
			if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("/dist/\n"), 0o644); err != nil {
				return err
			}
			return os.MkdirAll(filepath.Join(dir, "dist", "oci"), 0o755)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := gitRepo(t, "1.2.3\n")
			if err := c.change(dir); err != nil {
				t.Fatal(err)
			}
			s, err := FromRepo(dir, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.HasSuffix(s.Revision, "-modified"); got != c.modified {
				t.Errorf("revision %s: modified %v, want %v", s.Revision, got, c.modified)
			}
		})
	}
}

// TestFromRepoVersion: VERSION is a SemVer version without a "v" (the chart's version, the
// image's tag, the release's tag without its "v"); anything else is an error naming it.
func TestFromRepoVersion(t *testing.T) {
	for _, c := range []struct {
		version string
		ok      bool
	}{
		{"1.2.3\n", true},
		{"0.1.0-rc.1\n", true},
		{"v1.2.3\n", false},
		{"1.2\n", false},
		{"\n", false},
		{"1.2.3\n1.2.4\n", false},
		{"1.2.3 beta\n", false},
	} {
		t.Run(strings.TrimSpace(c.version), func(t *testing.T) {
			s, err := FromRepo(gitRepo(t, c.version), time.Now())
			if c.ok && (err != nil || s.Version != strings.TrimSpace(c.version)) {
				t.Errorf("VERSION %q: %q, %v", c.version, s.Version, err)
			}
			if !c.ok && (err == nil || !strings.Contains(err.Error(), "VERSION")) {
				t.Errorf("VERSION %q: %q, %v; want an error naming VERSION", c.version, s.Version, err)
			}
		})
	}
}

// TestFromRepoReproducible: with SOURCE_DATE_EPOCH the stamp holds nothing of the machine
// that builds (its user and host name), so that the release workflow run again, on another
// runner, or anyone rebuilding the tag, makes the same binaries and image digest; without,
// the build user is user@host, as promu stamps it.
func TestFromRepoReproducible(t *testing.T) {
	dir := gitRepo(t, "1.2.3\n")
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1772368496")
	s, err := FromRepo(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if s.BuildUser == u.Username+"@"+host || s.BuildUser != ReproducibleUser {
		t.Errorf("build user %q with SOURCE_DATE_EPOCH: a rebuild by another user or on another host (%s@%s) would stamp another binary", s.BuildUser, u.Username, host)
	}
	if _, err := s.LDFlags(); err != nil {
		t.Error(err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "")
	if s, err = FromRepo(dir, time.Now()); err != nil || s.BuildUser != u.Username+"@"+host {
		t.Errorf("build user %q (%v) without SOURCE_DATE_EPOCH, want %s@%s", s.BuildUser, err, u.Username, host)
	}
}

// TestFromRepoReproducibleCheckouts: with SOURCE_DATE_EPOCH, the stamp of a commit is the
// same whatever checkout of it builds: the release workflow's (the tag, a detached HEAD)
// and a user's rebuild from the branch the commit is on, or another, make the same
// binaries and image digest.
func TestFromRepoReproducibleCheckouts(t *testing.T) {
	dir := gitRepo(t, "1.2.3\n")
	t.Setenv("SOURCE_DATE_EPOCH", "1772368496")
	git := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	git("tag", "v1.2.3")
	var first string
	for _, c := range []struct{ name, checkout string }{
		{"branch main", "main"},
		{"tag, detached", "v1.2.3"},
		{"another branch", "-b"},
	} {
		args := []string{"checkout", "-q", c.checkout}
		if c.checkout == "-b" {
			args = append(args, "feature")
		}
		git(args...)
		s, err := FromRepo(dir, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		flags, err := s.LDFlags()
		if err != nil {
			t.Fatal(err)
		}
		if first == "" {
			first = flags
		} else if flags != first {
			t.Errorf("%s: -ldflags %s; the first checkout of the same commit: %s", c.name, flags, first)
		}
	}
}

// TestBuildReproducibleCheckouts: the release binary of a commit is the same whatever kind
// of checkout builds it, a clone or a git worktree of one: nothing of the checkout beside
// the stamp is built in. Go records a clone's VCS state in the binary but none of a
// worktree's, whose .git is a file; GOFLAGS as most machines leave it, recording it.
func TestBuildReproducibleCheckouts(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go")
	}
	t.Setenv("GOFLAGS", "-buildvcs=auto")
	repo := gitRepo(t, "1.2.3\n")
	pgo, err := os.ReadFile(filepath.Join("../../..", PGO))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"go.mod": []byte("module example.com/release\n\ngo 1.26\n"), PGO: pgo} {
		if err := os.WriteFile(filepath.Join(repo, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	worktree := filepath.Join(t.TempDir(), "worktree")
	for _, args := range [][]string{{"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "module"}, {"worktree", "add", "-q", "--detach", worktree}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	s := Stamp{Version: "1.2.3", Revision: "abc", Branch: ReproducibleBranch, BuildUser: ReproducibleUser, Date: time.Unix(1772368496, 0)}
	var first []byte
	for _, dir := range []string{repo, worktree} {
		bin := filepath.Join(t.TempDir(), "logwindow_exporter")
		if err := Build(dir, s, "linux", "amd64", bin); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Errorf("the binary built from a worktree differs from the clone's, of the same commit and stamp")
		}
	}
}
