package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// TestRelativeReplayThroughBinary: run in the log's directory, as a user tries a rule file
// on the log at hand, --replay=access.log and --explain=access.log read the file as the
// input whose absolute path names it; a file no input reads and no rule matches exits 1
// with a message naming it and the inputs' paths.
func TestRelativeReplayThroughBinary(t *testing.T) {
	bin := testexec.BuildExporter(t, testexec.Race)
	dir := t.TempDir()
	for name, data := range map[string]string{
		"access.log": "GET / 200\nGET / 200\nGET / 503\n",
		"other.log":  "GET / 200\n",
		"rules.yaml": fmt.Sprintf(`
inputs:
  - {name: web, path: '%s'}
rules:
  - {name: web, match: ' (?P<status>\d{3})$', labels: {status: '${status}'}, inputs: [web]}
`, filepath.Join(dir, "access.log")),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--config.file=rules.yaml"}, args...)...)
		cmd.Dir = dir
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
		return out.String(), errOut.String(), code
	}

	t.Run("replay", func(t *testing.T) {
		out, errOut, code := run("--replay=access.log")
		if code != 0 || !strings.Contains(out, `web_total{status="200"} 2`+"\n") || !strings.Contains(out, `web_total{status="503"} 1`+"\n") {
			t.Errorf("exit %d, stderr %q; want the input's rule to count every line:\n%s", code, errOut, out)
		}
	})
	t.Run("explain", func(t *testing.T) {
		out, errOut, code := run("--explain=access.log")
		if code != 0 || strings.Count(out, "+ web{") != 3 {
			t.Errorf("exit %d, stderr %q; want the three lines counted:\n%s", code, errOut, out)
		}
	})
	for _, mode := range []string{"replay", "explain"} {
		t.Run(mode+" of no input's file", func(t *testing.T) {
			_, errOut, code := run("--" + mode + "=other.log")
			if code != 1 || !strings.Contains(errOut, mode+" other.log: no rule matched") || !strings.Contains(errOut, "web: "+filepath.Join(dir, "access.log")) {
				t.Errorf("exit %d, stderr %q; want exit 1 naming the file and the input's path", code, errOut)
			}
		})
	}
}
