package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/deploy/internal/release"
)

// TestPlainBuildVersion: a go build from a clone, with no -ldflags, says which commit it
// is (the toolchain's VCS stamp: revision and commit time); a build the toolchain cannot
// name (go run, -buildvcs=false, a tree without .git) says VERSION-devel, never (devel).
func TestPlainBuildVersion(t *testing.T) {
	// The toolchain stamps a build only where .git is a directory: not in a source
	// tarball, nor in a git worktree (whose .git is a file).
	if fi, err := os.Stat("../.git"); err != nil || !fi.IsDir() {
		t.Skip("not a git clone: go build records no VCS information here")
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", ".."}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %q: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	head := git("rev-parse", "HEAD")
	sec, err := time.ParseDuration(git("log", "-1", "--format=%ct") + "s")
	if err != nil {
		t.Fatal(err)
	}
	commitDate := time.Unix(int64(sec.Seconds()), 0).UTC().Format(release.DateLayout)
	version := strings.TrimSpace(string(mustRead(t, "../VERSION")))

	cases := []struct {
		buildvcs string
		want     []string // each a regexp that --version must match
	}{
		{"true", []string{
			`version \d+\.\d+\.\d+-\S+ `, // a pseudo-version or a tag, from the toolchain
			"revision: " + head + `(-modified)?\)`,
			`build date:\s+` + regexp.QuoteMeta(commitDate) + "\n",
		}},
		{"false", []string{
			`version ` + regexp.QuoteMeta(version) + `-devel `,
			`revision: unknown\)`,
		}},
	}
	for _, c := range cases {
		t.Run("buildvcs="+c.buildvcs, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "logwindow_exporter")
			cmd := exec.Command("go", "build", "-buildvcs="+c.buildvcs, "-o", bin, ".")
			cmd.Dir = ".."
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			out := runTool(t, ".", bin, "--version")
			if strings.Contains(out, "(devel)") {
				t.Errorf("--version shows (devel):\n%s", out)
			}
			for _, re := range c.want {
				if !regexp.MustCompile(re).MatchString(out) {
					t.Errorf("--version does not match %q:\n%s", re, out)
				}
			}
		})
	}
}
