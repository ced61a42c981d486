package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// A one-shot whose standard output cannot be written (a full disk: /dev/full as the
// process's own stdout, as a shell's redirection gives it) exits non-zero and says so on
// stderr: its output is its result, and exit 0 would pass a truncated or empty file for
// a whole one.
func TestOneShotsFailWhenOutputIsLost(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full:", err)
	}
	bin := testexec.BuildExporter(t, false)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	rules := "--config.file=" + filepath.Join(root, "example-rules.yaml")
	log := filepath.Join(root, "examples", "access.log")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"config check", []string{rules, "--config.check"}},
		{"config check with a sample", []string{rules, "--config.check", "--sample=" + log}},
		{"explain", []string{rules, "--explain=" + log}},
		{"explain as json", []string{rules, "--explain=" + log, "--explain.format=json"}},
		{"replay", []string{rules, "--replay=" + log}},
		{"dashboard", []string{rules, "--dashboard"}},
		{"version", []string{"--version"}},
		{"help", []string{"--help"}},
		{"long help", []string{"--help-long"}},
		{"man page", []string{"--help-man"}},
		{"bash completion script", []string{"--completion-script-bash"}},
		{"zsh completion script", []string{"--completion-script-zsh"}},
		{"completions", []string{"--completion-bash", "--log.level"}},
		{"version, then the long help", []string{"--version", "--help-long"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer full.Close()
			var stderr bytes.Buffer
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir = t.TempDir()
			cmd.Stdout, cmd.Stderr = full, &stderr
			err = cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("%v: %v, want exit 1\n%s", tc.args, err, stderr.String())
			}
			if !strings.Contains(stderr.String(), "no space left on device") {
				t.Errorf("%v: stderr does not say the output was lost:\n%s", tc.args, stderr.String())
			}
		})
	}
}
