//go:build unix

package server

import (
	"bytes"
	"crypto/tls"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// TestTLSHandshakeRefusesWebConfigFile: a web config put in place while the exporter
// runs that is no regular file, or over 1 MiB, fails each handshake unread, neither by
// the stamps of tlsConfigs nor by the toolkit's load: exporter-toolkit would wait in the
// handshake for a FIFO's writer, and read and parse a large file whole for each.
func TestTLSHandshakeRefusesWebConfigFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"a FIFO", func(path string) error { return syscall.Mkfifo(path, 0o600) }, "is not a regular file"},
		{"of 2 MiB", func(path string) error {
			return os.WriteFile(path, bytes.Repeat([]byte("# a comment\n"), 2<<20/12), 0o600)
		}, "past the 1048576 a web config may hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTLSFiles(t, "", "")
			clock := testclock.New(time.Now().Add(time.Minute)) // every file written has settled
			var loads, reads int
			configs := newTLSConfigs(f.webConfig, func(*tls.ClientHelloInfo) (*tls.Config, error) {
				loads++
				return &tls.Config{}, nil
			}, clock.Now, newWebConfigErrors(f.webConfig, slog.New(slog.DiscardHandler), clock.Now))
			configs.readFile = func(path string) ([]byte, error) {
				reads++
				if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
					return nil, errors.New("the test does not open what is no regular file")
				}
				return os.ReadFile(path)
			}
			if _, err := configs.get(&tls.ClientHelloInfo{}); err != nil {
				t.Fatal(err)
			}
			next := filepath.Join(f.dir, "web.yml.new")
			if err := tc.make(next); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(next, f.webConfig); err != nil {
				t.Fatal(err)
			}
			clock.Add(time.Minute)
			loads, reads = 0, 0
			for range 2 {
				_, err := configs.get(&tls.ClientHelloInfo{})
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), f.webConfig) {
					t.Errorf("a handshake with the web config %s: %v, want an error naming it, %q", tc.name, err, tc.want)
				}
			}
			if loads != 0 || reads != 0 {
				t.Errorf("two handshakes with the web config %s: loaded %d times, read it %d; want neither", tc.name, loads, reads)
			}
		})
	}
}
