// Package nginxlog generates realistic nginx access logs for the tests and benchmarks with
// the repository's deterministic generator, tools/gen-nginx-log.py (nginx's `main` format
// with $request_time and $upstream_response_time; the same lines and seed give the same
// bytes). Generated logs are never part of the repository.
package nginxlog

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// Env names the generator when it is not tools/gen-nginx-log.py in the working directory
// or one of its parents.
const Env = "LOGWINDOW_NGINX_LOG_GEN"

// Generator returns the generator script's path, or an error saying how to give it.
func Generator() (string, error) {
	if gen := os.Getenv(Env); gen != "" {
		return gen, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "tools", "gen-nginx-log.py")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("tools/gen-nginx-log.py not found above the working directory; set %s to its path", Env)
}

// Write generates lines lines of seed into out.
func Write(lines, seed int, out string) error {
	python, err := exec.LookPath("python3")
	if err != nil {
		return fmt.Errorf("python3 runs the log generator: %w", err)
	}
	gen, err := Generator()
	if err != nil {
		return err
	}
	if msg, err := exec.Command(python, gen, strconv.Itoa(lines), strconv.Itoa(seed), out).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", gen, err, msg)
	}
	return nil
}

// Lines returns the lines of a generated log, skipping tb when python3 is missing.
func Lines(tb testing.TB, lines, seed int) [][]byte {
	tb.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		tb.Skip("python3 is not installed: it runs tools/gen-nginx-log.py, which makes the test log")
	}
	out := filepath.Join(tb.TempDir(), "access.log")
	if err := Write(lines, seed, out); err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}
