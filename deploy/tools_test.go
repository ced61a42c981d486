package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// e2e is set in CI, which installs every tool the tests use: a missing one fails there
// instead of skipping.
var e2e = os.Getenv("LOGWINDOW_E2E") == "1"

// needTool returns the path of an external program, skipping the test when it is not
// installed (failing under LOGWINDOW_E2E=1). Debian installs nginx in /usr/sbin, which is
// not on a non-root user's PATH, so that directory is tried too.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		p, err = exec.LookPath(filepath.Join("/usr/sbin", name))
	}
	if err != nil {
		if e2e {
			t.Fatalf("%s not on PATH nor in /usr/sbin with LOGWINDOW_E2E=1 (install Debian's %s package)", name, pkg)
		}
		t.Skipf("%s not on PATH nor in /usr/sbin: install Debian's %s package to run this test", name, pkg)
	}
	return p
}

// runTool runs a program and fails the test with its output when it exits non-zero.
func runTool(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}
