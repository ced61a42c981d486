//go:build unix

package e2e

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/logwindow/logwindow_exporter/internal/testutil/hardening"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// readerOf waits until the process of done exits, or until something opens the FIFO at
// path to read it (a writer may then open it without waiting), and reports whether
// something did: a process reading a FIFO waits for a writer. The writer it opens is
// closed at once, so that the reader reads the end of the file.
func readerOf(t *testing.T, path string, done <-chan struct{}) bool {
	t.Helper()
	for {
		select {
		case <-done:
			return false
		default:
		}
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			f.Close()
			return true
		}
		if !errors.Is(err, syscall.ENXIO) { // no reader yet
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWebConfigNotAFile: exporter-toolkit reads the web config at the start and again
// for every request and TLS handshake, whole and unbounded. A web config that is a FIFO
// had the start wait for a writer, without a word, and, put in place while the exporter
// ran, every request; one of megabytes was read and parsed whole for each request. The
// start refuses both, naming the file, and a request finding one in place is answered
// 500 without reading it, the log naming the file.
func TestWebConfigNotAFile(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfgPath, []byte(hardening.Config(t, "uris.yaml")(filepath.Join(dir, "access.log"))), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.yml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	large := filepath.Join(dir, "large.yml")
	if err := os.WriteFile(large, append([]byte("basic_auth_users: {}\n"), bytes.Repeat([]byte("# a comment line of the web config, long as some are\n"), 40000)...), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("at the start", func(t *testing.T) {
		for _, tc := range []struct{ name, path, want string }{
			{"a FIFO", fifo, "is not a regular file"},
			{"of 2 MiB", large, "bytes, past the 1048576 a web config may hold"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var out bytes.Buffer
				cmd := exec.Command(bin, "--config.file="+cfgPath, "--web.listen-address=127.0.0.1:0", "--web.config.file="+tc.path)
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				var err error
				go func() { err = cmd.Wait(); close(done) }()
				if tc.path == fifo && readerOf(t, fifo, done) {
					t.Error("the start read the web config, a FIFO (it waited for a writer)")
					_ = cmd.Process.Kill()
				}
				if tc.path != fifo {
					select {
					case <-done:
					case <-time.After(testexec.DefaultTimeout):
						_ = cmd.Process.Kill()
						<-done
						t.Fatalf("the start with a web config of 2 MiB did not exit:\n%s", out.String())
					}
				}
				<-done
				if err == nil || !strings.Contains(out.String(), tc.want) || !strings.Contains(out.String(), tc.path) {
					t.Errorf("the start with a web config %s: %v, output:\n%s\nwant it refused, naming the file and %q", tc.name, err, out.String(), tc.want)
				}
			})
		}
	})

	t.Run("while running", func(t *testing.T) {
		const user, password = "prometheus", "correct horse battery staple"
		hash, err := bcrypt.GenerateFromPassword([]byte(password), 4)
		if err != nil {
			t.Fatal(err)
		}
		webConfig := filepath.Join(dir, "web.yml")
		good := []byte("basic_auth_users:\n  " + user + ": " + string(hash) + "\n")
		if err := os.WriteFile(webConfig, good, 0o600); err != nil {
			t.Fatal(err)
		}
		p := testexec.StartExporterWith(t, testexec.ServeOptions{User: user, Password: password}, bin, "--config.file="+cfgPath, "--web.config.file="+webConfig)
		get := func() int {
			req, err := http.NewRequest(http.MethodGet, p.URL()+"/-/healthy", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.SetBasicAuth(user, password)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		for _, tc := range []struct{ name, path, want string }{
			{"a FIFO", fifo, "is not a regular file"},
			{"of 2 MiB", large, "past the 1048576 a web config may hold"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := os.Rename(tc.path, webConfig+".new"); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(webConfig+".new", webConfig); err != nil {
					t.Fatal(err)
				}
				code := make(chan int, 1)
				go func() { code <- get() }()
				done := make(chan struct{})
				go func() { <-code; close(done) }()
				if tc.path == fifo && readerOf(t, webConfig, done) {
					t.Fatal("a request read the web config, a FIFO (it waited for a writer)")
				}
				<-done
				if got := get(); got != http.StatusInternalServerError {
					t.Errorf("a request with the web config %s: HTTP %d, want 500", tc.name, got)
				}
				p.WaitLogged(t, tc.want)
				if !strings.Contains(p.Log(), webConfig) {
					t.Errorf("the log does not name the web config %s", webConfig)
				}
				if err := os.WriteFile(webConfig+".new", good, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(webConfig+".new", webConfig); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}
