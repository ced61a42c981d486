// Package release is how a release of logwindow_exporter is built: the stamp a release
// binary carries (prometheus/common/version's variables, set with -ldflags as promu sets
// them), the go build that makes it, and where the image puts it. cmd/image builds the
// image with it; the deploy tests hold the Dockerfile and the documented release build to
// the same flags, paths and user.
package release

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// What the image holds and how it runs, the same in the Dockerfile's image and in the one
// cmd/image writes.
const (
	// BinaryPath is the exporter in the image, its entrypoint.
	BinaryPath = "/bin/logwindow_exporter"
	// RulesPath is where example-rules.yaml is, the --config.file of the image's command.
	RulesPath = "/etc/logwindow_exporter/rules.yaml"
	// BinaryMode and RulesMode are the two files' modes, whatever the source tree's: both
	// owned by root, read by the image's user as any other user (a clone made under a umask
	// of 027 or 077 has its files unreadable to others).
	BinaryMode = 0o755
	RulesMode  = 0o644
	// User is distroless's "nonroot", numeric so that Kubernetes' runAsNonRoot can check it.
	User = "65532:65532"
	// Port is the exporter's default listen port.
	Port = "9907/tcp"
	// Source is the repository, the images' org.opencontainers.image.source.
	Source = "https://github.com/logwindow/logwindow_exporter"
	// ImageName is the image's title and the last part of its repository.
	ImageName = "logwindow_exporter"
	// Repository is where a release's image is published (.github/workflows/release.yml),
	// tagged with the version: the image the Helm chart and the kustomize base run by
	// default, and the name cmd/image writes its layout and tarball under (a user's overlay
	// renames it with images:).
	Repository = "ghcr.io/logwindow/" + ImageName
	// ChartRepository is where a release's Helm chart is published.
	ChartRepository = "oci://ghcr.io/logwindow/charts"
)

// DistName is the file name of the release binary of version for goos/goarch, as a
// release attaches it and Prometheus exporters name theirs.
func DistName(version, goos, goarch string) string {
	return ImageName + "-" + version + "." + goos + "-" + goarch
}

// versionPackage holds the variables a release build sets.
const versionPackage = "github.com/prometheus/common/version"

// DateLayout is promu's layout of the build date.
const DateLayout = "20060102-15:04:05"

// Stamp is what a release binary says of itself in --version, on the status page and in
// logwindow_build_info.
type Stamp struct {
	Version   string // the VERSION file, without a "v"
	Revision  string // the commit, with "-modified" when the tree had uncommitted changes
	Branch    string
	BuildUser string // user@host, as promu writes it
	Date      time.Time
	// Committed is the commit's time (git's committer date), the SOURCE_DATE_EPOCH a
	// release is built with: not stamped, but a release whose Date is another cannot be
	// built again by the documented command.
	Committed time.Time
}

// vars are the prometheus/common/version variables of a stamp, by name, as -ldflags -X
// sets them.
func (s Stamp) vars() map[string]string {
	return map[string]string{
		"Version":   s.Version,
		"Revision":  s.Revision,
		"Branch":    s.Branch,
		"BuildUser": s.BuildUser,
		"BuildDate": s.Date.UTC().Format(DateLayout),
	}
}

// VarNames are the variables every release build sets, in the order the flags name them.
var VarNames = []string{"Version", "Revision", "Branch", "BuildUser", "BuildDate"}

// LDFlags is the -ldflags value of a release build: no symbol table or DWARF (as the
// Dockerfile builds), and each variable of the stamp. The values are passed unquoted, so
// a value with a space or a quote is an error rather than a flag split in two.
func (s Stamp) LDFlags() (string, error) {
	flags := []string{"-s", "-w"}
	vars := s.vars()
	for _, name := range VarNames {
		v := vars[name]
		if v == "" || strings.ContainsAny(v, " \t\n'\"\\") {
			return "", fmt.Errorf("stamp %s %q: want a non-empty value without spaces or quotes", name, v)
		}
		flags = append(flags, "-X", versionPackage+"."+name+"="+v)
	}
	return strings.Join(flags, " "), nil
}

// semver is a SemVer 2 version without build metadata, whose "+" no image tag may hold.
var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*)?$`)

// FromRepo reads the stamp of a build of the checkout at root: the VERSION file, the
// commit and branch git reports, user@host, and the time; with SOURCE_DATE_EPOCH set, its
// time, ReproducibleBranch and ReproducibleUser, so that a rebuild of the same commit is
// the same image.
func FromRepo(root string, now time.Time) (Stamp, error) {
	v, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return Stamp{}, err
	}
	s := Stamp{Version: strings.TrimSpace(string(v)), Date: now.UTC()}
	if !semver.MatchString(s.Version) {
		return Stamp{}, fmt.Errorf("VERSION %q: want a SemVer version without a \"v\" or build metadata, like 0.1.0 or 0.2.0-rc.1: it is the chart's version, the image's tag and the release tag after its \"v\"", s.Version)
	}
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		sec, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return Stamp{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", epoch, err)
		}
		s.Date, s.Branch, s.BuildUser = time.Unix(sec, 0).UTC(), ReproducibleBranch, ReproducibleUser
	}
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				err = fmt.Errorf("%w: %s", err, ee.Stderr)
			}
			return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	if s.Revision, err = git("rev-parse", "HEAD"); err != nil {
		return Stamp{}, err
	}
	ct, err := git("log", "-1", "--format=%ct")
	if err != nil {
		return Stamp{}, err
	}
	sec, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return Stamp{}, fmt.Errorf("git log -1 --format=%%ct: %q: %w", ct, err)
	}
	s.Committed = time.Unix(sec, 0).UTC()
	if s.Branch == "" {
		if s.Branch, err = git("rev-parse", "--abbrev-ref", "HEAD"); err != nil {
			return Stamp{}, err
		}
	}
	// As Go's own vcs.modified: a file git does not ignore and does not track may be built
	// in (a .go file beside main.go), so it marks the revision too.
	status, err := git("status", "--porcelain")
	if err != nil {
		return Stamp{}, err
	}
	if status != "" {
		s.Revision += "-modified"
	}
	if s.BuildUser != "" {
		return s, nil
	}
	u, err := user.Current()
	if err != nil {
		return Stamp{}, err
	}
	host, err := os.Hostname()
	if err != nil {
		return Stamp{}, err
	}
	s.BuildUser = u.Username + "@" + host
	return s, nil
}

// ReproducibleBranch is the branch of a build with SOURCE_DATE_EPOCH: which branch, if
// any, a checkout of the commit is on is no part of the commit, and a rebuild from main
// would otherwise differ from the release's, built from its tag (a detached HEAD, which
// git names HEAD, as the release's binaries always said).
const ReproducibleBranch = "HEAD"

// ReproducibleUser is the build user of a build with SOURCE_DATE_EPOCH, in place of
// user@host: the same commit built by anyone, anywhere (the release workflow run again on
// another runner, a user checking a release) is then the same binary and image digest.
const ReproducibleUser = "reproducible@source-date-epoch"

// PGO is the CPU profile, at the module's root, that a release build is optimized by
// (profile-guided optimization). It is not default.pgo, which every build of the main
// package would take: the tests' builds of the exporter would then compile every package
// again with it (CI took 12m37s without, 16m53s with).
const PGO = "release.pgo"

// Build compiles the release binary of the module at root for goos and goarch, to out:
// static (CGO_ENABLED=0, so it runs on an image with no libc), without the build
// machine's paths (-trimpath), optimized by the profile PGO, stamped with s. Without the
// toolchain's record of the checkout (-buildvcs=false; s has the revision): Go records a
// clone's but not a git worktree's, nor on a machine whose GOFLAGS say -buildvcs=false,
// and the same commit would build another binary.
func Build(root string, s Stamp, goos, goarch, out string) error {
	ldflags, err := s.LDFlags()
	if err != nil {
		return err
	}
	argv := []string{"go", "build", "-trimpath", "-buildvcs=false", "-pgo=" + PGO, "-ldflags", ldflags, "-o", out, "."}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, msg)
	}
	return nil
}
