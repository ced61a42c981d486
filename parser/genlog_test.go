package parser

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// generatorEnv names the generator script when it is not found next to the repository.
const generatorEnv = "LOGWINDOW_NGINX_LOG_GEN"

// nginxLog returns the lines of `gen-nginx-log.py lines seed`, generated into a temporary
// directory (the log is never part of the repository). The script is $LOGWINDOW_NGINX_LOG_GEN
// or tools/ in the working directory or one of its parents (the module root has it).
func nginxLog(tb testing.TB, lines, seed int) [][]byte {
	tb.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		tb.Skip("python3 is not installed: it runs gen-nginx-log.py, which makes the test log")
	}
	gen := os.Getenv(generatorEnv)
	for dir, _ := os.Getwd(); gen == "" && dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if p := filepath.Join(dir, "tools", "gen-nginx-log.py"); fileExists(p) {
			gen = p
		}
	}
	if gen == "" {
		tb.Skipf("gen-nginx-log.py not found; set %s to its path", generatorEnv)
	}
	out := filepath.Join(tb.TempDir(), "access.log")
	if msg, err := exec.Command(python, gen, strconv.Itoa(lines), strconv.Itoa(seed), out).CombinedOutput(); err != nil {
		tb.Fatalf("%s: %v\n%s", gen, err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
