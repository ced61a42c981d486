package testexec

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// PrometheusEnv lists Prometheus servers the end-to-end tests run beside Debian's, as PATH
// separates directories: CI sets it to a current 3.x built from Prometheus' Go module
// (.ci/run), so that each test that queries Prometheus does so on the oldest release the
// docs support and on a current one.
const PrometheusEnv = "LOGWINDOW_PROMETHEUS"

// PrometheusInstall is how to get a current Prometheus for PrometheusEnv, as .ci/run
// builds it: from its Go module, without the service discovery plugins the tests do not
// use, stamped with its release (a build from the module says none otherwise).
const PrometheusInstall = `GOBIN=DIR go install -tags remove_all_sd -ldflags "-X github.com/prometheus/common/version.Version=3.16.0" github.com/prometheus/prometheus/cmd/prometheus@v0.316.0, then ` + PrometheusEnv + "=DIR/prometheus"

// Prometheus is one Prometheus server binary and the release it says it is.
type Prometheus struct {
	Path         string
	Major, Minor int
}

// Name is the release, "3.16", to name a subtest by.
func (p Prometheus) Name() string { return fmt.Sprintf("%d.%d", p.Major, p.Minor) }

// AtLeast reports whether p is release major.minor or later.
func (p Prometheus) AtLeast(major, minor int) bool {
	return p.Major > major || p.Major == major && p.Minor >= minor
}

var prometheusVersionLine = regexp.MustCompile(`version (\d+)\.(\d+)\.`)

// PrometheusVersion is the release a Prometheus binary says it is (--version); one built
// without a version stamp (see PrometheusInstall) is an error.
func PrometheusVersion(bin string) (Prometheus, error) {
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return Prometheus{}, fmt.Errorf("%s --version: %v\n%s", bin, err, out)
	}
	major, minor, ok := parsePrometheusVersion(out)
	if !ok {
		return Prometheus{}, fmt.Errorf("%s --version names no release:\n%s", bin, bytes.SplitN(out, []byte("\n"), 2)[0])
	}
	return Prometheus{Path: bin, Major: major, Minor: minor}, nil
}

// parsePrometheusVersion reads the release from what prometheus --version prints.
func parsePrometheusVersion(out []byte) (major, minor int, ok bool) {
	m := prometheusVersionLine.FindSubmatch(out)
	if m == nil {
		return 0, 0, false
	}
	major, _ = strconv.Atoi(string(m[1]))
	minor, _ = strconv.Atoi(string(m[2]))
	return major, minor, true
}

// Prometheuses returns the Prometheus servers to test against, oldest first: the one on
// PATH (Debian's, 2.42 on bookworm: the oldest the docs support) and those PrometheusEnv
// lists. With none it skips tb; when Required it fails tb unless one of them is 3.x or
// later, as CI builds one.
func Prometheuses(tb testing.TB) []Prometheus {
	tb.Helper()
	var paths []string
	if p, err := exec.LookPath("prometheus"); err == nil {
		paths = append(paths, p)
	}
	for _, p := range filepath.SplitList(os.Getenv(PrometheusEnv)) {
		if p != "" {
			paths = append(paths, p)
		}
	}
	var found []Prometheus
	for _, p := range paths {
		v, err := PrometheusVersion(p)
		if err != nil {
			tb.Fatal(err)
		}
		if !slices.ContainsFunc(found, func(f Prometheus) bool { return f.Major == v.Major && f.Minor == v.Minor }) {
			found = append(found, v)
		}
	}
	slices.SortFunc(found, func(a, b Prometheus) int {
		if a.Major != b.Major {
			return a.Major - b.Major
		}
		return a.Minor - b.Minor
	})
	current := slices.ContainsFunc(found, func(p Prometheus) bool { return p.Major >= 3 })
	switch {
	case Required && !current:
		tb.Fatalf("no Prometheus 3.x among %v with LOGWINDOW_E2E=1 (Debian: apt-get install prometheus; a current one: %s)", found, PrometheusInstall)
	case len(found) == 0:
		tb.Skipf("no prometheus on PATH nor in %s (Debian: apt-get install prometheus; a current one: %s)", PrometheusEnv, PrometheusInstall)
	}
	return found
}
