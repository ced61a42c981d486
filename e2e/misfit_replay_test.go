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

// TestReplayMisfitThroughBinary: a replay whose input's log format fits none of its
// lines (the access log is JSON, the input says combined) exits 1, with a line on stderr
// saying how many lines fit and where the first stopped fitting, and why it fails; one
// whose lines fit exits 0 with the same line. The exposition is written either way.
func TestReplayMisfitThroughBinary(t *testing.T) {
	bin := testexec.BuildExporter(t, testexec.Race)
	dir := t.TempDir()
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"` + "\n"
	for name, data := range map[string]string{
		"access.log": `{"status":200,"uri":"/"}` + "\n" + `{"status":404,"uri":"/x"}` + "\n",
		"good.log":   combined + combined,
		"rules.yaml": fmt.Sprintf(`
inputs:
  - {name: web, path: '%s/*.log', log_format: combined}
rules:
  - {name: http_requests, labels: {status: '${status}'}}
`, dir),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		file   string
		code   int
		stderr []string
		out    string
	}{
		{"access.log", 1, []string{
			`input web: 0 of 2 lines fit (first misfit at line 1: at byte 24, in $remote_addr or the text after it, the log format expects [^ ] or ' ', but the line has the end of the line)`,
			`replay: input web read 2 lines and none is of its format (first: at byte 24, in $remote_addr`,
		}, "logwindow_rule_matched_lines_total{rule=\"http_requests\"} 0\n"},
		{"good.log", 0, []string{`input web: 2 of 2 lines fit`}, "http_requests_total{status=\"200\"} 2\n"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "rules.yaml"), "--replay="+filepath.Join(dir, tc.file))
			var out, errOut strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errOut
			code := 0
			var exit *exec.ExitError
			switch err := cmd.Run(); {
			case errors.As(err, &exit):
				code = exit.ExitCode()
			case err != nil:
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
			if code != tc.code || len(lines) != len(tc.stderr) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d and %d lines", code, errOut.String(), tc.code, len(tc.stderr))
			}
			for i, want := range tc.stderr {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("stderr line %d: %q, want it to start %q", i+1, lines[i], want)
				}
			}
			if !strings.Contains(out.String(), tc.out) {
				t.Errorf("stdout lacks %q:\n%s", tc.out, out.String())
			}
		})
	}
}
