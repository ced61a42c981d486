package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// required is set in CI, which installs every program the test runs: a missing one fails
// the test there instead of skipping it.
var required = os.Getenv("LOGWINDOW_E2E") == "1"

// lookTools returns the path of each named program. It skips the test, naming every
// missing program, when one is not installed, and fails it instead under LOGWINDOW_E2E=1.
// Debian installs nginx in /usr/sbin, which is not on a non-root user's PATH.
func lookTools(t *testing.T, names ...string) map[string]string {
	t.Helper()
	paths := map[string]string{}
	var missing []string
	for _, name := range names {
		p, err := exec.LookPath(name)
		if err != nil {
			p, err = exec.LookPath(filepath.Join("/usr/sbin", name))
		}
		if err != nil {
			missing = append(missing, name)
			continue
		}
		paths[name] = p
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("%s not on PATH nor in /usr/sbin: install Debian's nginx and prometheus packages to run the end-to-end test", strings.Join(missing, ", "))
		if required {
			t.Fatal(msg + " (LOGWINDOW_E2E=1 requires it)")
		}
		t.Skip(msg)
	}
	return paths
}
