//go:build unix

package server

import (
	"bytes"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// tlsFileKinds are files no certificate, key or client CA file may be, each made at a
// path, with what refusing it says. exporter-toolkit read them by their paths, whole: it
// waited for a FIFO's writer (the start, or every handshake from its change on, held),
// read /dev/zero until the memory ran out, and a large file at each handshake after it
// changed.
var tlsFileKinds = []struct {
	name string
	make func(path string) error
	want string
}{
	{"a FIFO", func(path string) error { return syscall.Mkfifo(path, 0o600) }, "is not a regular file"},
	{"a link to /dev/zero", func(path string) error { return os.Symlink("/dev/zero", path) }, "is not a regular file"},
	{"of 2 MiB", func(path string) error {
		return os.WriteFile(path, bytes.Repeat([]byte("# a comment\n"), 2<<20/12), 0o600)
	}, "past the 1048576 a certificate, key or client CA file may hold"},
}

// TestTLSFilesRefused: a certificate, key or client CA file that is no regular file, or
// over 1 MiB, is refused with an error naming it: by the start (CheckWebConfig, before
// exporter-toolkit's check reads it), and by a handshake once it was put in place while
// the exporter serves, unread, the handshake refused rather than held.
func TestTLSFilesRefused(t *testing.T) {
	for _, key := range []string{"cert_file", "key_file", "client_ca_file"} {
		for _, kind := range tlsFileKinds {
			t.Run(key+" "+kind.name, func(t *testing.T) {
				f := newTLSFiles(t, "  client_ca_file: ca.pem\n", "  client_auth_type: VerifyClientCertIfGiven\n")
				cert, _ := newCert(t, "ca", 0)
				f.write(t, "ca.pem", cert)
				name := map[string]string{"cert_file": "cert.pem", "key_file": "key.pem", "client_ca_file": "ca.pem"}[key]
				path := filepath.Join(f.dir, name)
				put := func() {
					next := path + ".new"
					if err := kind.make(next); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(next, path); err != nil {
						t.Fatal(err)
					}
				}
				var logged syncbuf.Buffer
				logger := slog.New(slog.NewTextHandler(&logged, nil))
				configErrors := newWebConfigErrors(f.webConfig, logger, time.Now)
				addr := serveTLSLogged(t, f.webConfig, configErrors, logger)
				if got := servedName(t, addr); got != "first" {
					t.Fatalf("served %q, want first", got)
				}
				put()
				if _, err := handshake(addr); err == nil {
					t.Errorf("a handshake with %s %s: served, want it refused", key, kind.name)
				}
				if got := testutil.ToFloat64(configErrors); got != 1 {
					t.Errorf("logwindow_web_config_errors_total %v; want 1", got)
				}
				if !strings.Contains(logged.String(), path) || !strings.Contains(logged.String(), kind.want) {
					t.Errorf("logged %q; want the file %s named, %q", logged.String(), path, kind.want)
				}
				err := CheckWebConfig(f.webConfig, slog.New(slog.DiscardHandler))
				if err == nil || !strings.Contains(err.Error(), key+": ") || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), kind.want) {
					t.Errorf("the start's check with %s %s: %v; want an error naming the key and the file, %q", key, kind.name, err, kind.want)
				}
			})
		}
	}
}

// TestWebConfigReplacedAfterItsLook: the web config, or a file it names, replaced between
// the look at it and its read (a kubelet's ConfigMap or Secret update swaps the ..data
// link to a new directory) is refused as it is read, as it would have been looked at:
// the file opened is looked at, a FIFO opened without waiting for its writer. The
// handshake's loads read the web config and its files as they were looked at, once,
// where exporter-toolkit read them again by their paths, whole, whatever they were then.
func TestWebConfigReplacedAfterItsLook(t *testing.T) {
	t.Run("by a handshake", func(t *testing.T) {
		for _, kind := range append([]struct {
			name string
			make func(path string) error
			want string
		}{{"web config of 2 MiB", func(path string) error {
			// A YAML the toolkit would load: the files and a comment of 2 MiB.
			return os.WriteFile(path, append([]byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"),
				bytes.Repeat([]byte("# a comment\n"), 2<<20/12)...), 0o600)
		}, "past the 1048576 a web config may hold"}}, tlsFileKinds...) {
			t.Run(kind.name, func(t *testing.T) {
				// The kubelet's layout: web.yml and cert.pem links to ..data/<name>,
				// ..data a link to the directory of the files.
				dir := t.TempDir()
				f := newTLSFiles(t, "", "")
				old := filepath.Join(dir, "old")
				if err := os.Rename(f.dir, old); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("old", filepath.Join(dir, kubeletData)); err != nil {
					t.Fatal(err)
				}
				for _, name := range []string{"web.yml", "cert.pem", "key.pem"} {
					if err := os.Symlink(filepath.Join(kubeletData, name), filepath.Join(dir, name)); err != nil {
						t.Fatal(err)
					}
				}
				webConfig := filepath.Join(dir, "web.yml")
				// The new directory: the web config replaced, or the certificate.
				fresh := filepath.Join(dir, "new")
				if err := os.CopyFS(fresh, os.DirFS(old)); err != nil {
					t.Fatal(err)
				}
				replaced := "web.yml"
				if kind.name != "web config of 2 MiB" {
					replaced = "cert.pem"
				}
				if err := os.Remove(filepath.Join(fresh, replaced)); err != nil {
					t.Fatal(err)
				}
				if err := kind.make(filepath.Join(fresh, replaced)); err != nil {
					t.Fatal(err)
				}
				clock := testclock.New(time.Now().Add(time.Minute)) // every file written has settled
				logger := slog.New(slog.DiscardHandler)
				tk, err := setUpToolkit(&net.TCPAddr{}, http.NotFoundHandler(), &web.FlagConfig{WebConfigFile: &webConfig}, newWebConfigErrors(webConfig, logger, clock.Now), logger)
				if err != nil {
					t.Fatal(err)
				}
				defer tk.close()
				configs := tk.configs
				read := configs.readFile
				swapped := false
				configs.readFile = func(path string) ([]byte, error) {
					if !swapped {
						// Looked at (checkWebConfigFile), not read yet: the update
						// swaps ..data.
						swapped = true
						link := filepath.Join(dir, kubeletData+".new")
						if err := os.Symlink("new", link); err != nil {
							t.Fatal(err)
						}
						if err := os.Rename(link, filepath.Join(dir, kubeletData)); err != nil {
							t.Fatal(err)
						}
					}
					return read(path)
				}
				_, err = configs.get(&tls.ClientHelloInfo{})
				if err == nil || !strings.Contains(err.Error(), kind.want) || !strings.Contains(err.Error(), filepath.Join(dir, replaced)) {
					t.Errorf("a handshake with %s swapped in after the look: %v; want it refused naming %s, %q", kind.name, err, replaced, kind.want)
				}
			})
		}
	})
	t.Run("between the look and the open", func(t *testing.T) {
		for _, kind := range tlsFileKinds {
			t.Run(kind.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "cert.pem")
				if err := os.WriteFile(path, []byte("a certificate\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				looks := 0
				_, err := readLimited(path, maxTLSFileBytes, func(info os.FileInfo) error {
					if looks++; looks == 1 {
						if err := os.Remove(path); err != nil {
							t.Fatal(err)
						}
						if err := kind.make(path); err != nil {
							t.Fatal(err)
						}
					}
					return tlsFileError(path, info)
				}, nil)
				if err == nil || !strings.Contains(err.Error(), kind.want) {
					t.Errorf("%s put in place between the look and the open: read with %v; want %q", kind.name, err, kind.want)
				}
			})
		}
	})
	// A file written to after the look at it as opened is read up to one byte past the
	// limit, not cut at it: what was read is no certificate of the file's.
	t.Run("grown after the look at it as opened", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cert.pem")
		if err := os.WriteFile(path, []byte("a certificate\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		grew := errors.New("grew")
		looks := 0
		text, err := readLimited(path, maxTLSFileBytes, func(info os.FileInfo) error {
			if looks++; looks == 2 {
				if err := os.WriteFile(path, bytes.Repeat([]byte("# a comment\n"), 2<<20/12), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			return tlsFileError(path, info)
		}, grew)
		if err != grew {
			t.Errorf("a file grown past the limit after its look as opened: read %d bytes with %v; want the error grew", len(text), err)
		}
	})
}

// TestTLSFileEmptied: a certificate, key or client CA file emptied while the exporter
// serves (truncated by a save, or a renewal that failed) refuses the handshakes with an
// error naming its key and the file. Given to exporter-toolkit inline, empty, it would be
// taken as no such key: a client CA file so would leave the clients verified against the
// system's CAs.
func TestTLSFileEmptied(t *testing.T) {
	for _, tc := range []struct{ key, name string }{
		{"cert_file", "cert.pem"},
		{"key_file", "key.pem"},
		{"client_ca_file", "ca.pem"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			f := newTLSFiles(t, "  client_ca_file: ca.pem\n", "  client_auth_type: VerifyClientCertIfGiven\n")
			cert, _ := newCert(t, "ca", 0)
			f.write(t, "ca.pem", cert)
			addr := serveTLS(t, f.webConfig, nil)
			if got := servedName(t, addr); got != "first" {
				t.Fatalf("served %q, want first", got)
			}
			f.write(t, tc.name, nil)
			path := filepath.Join(f.dir, tc.name)
			_, err := loadTLSConfig(f.webConfig, readWebFiles(f.webConfig), nil)
			if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), path) {
				t.Errorf("the config loaded with %s emptied: %v; want an error naming %s and %s", tc.key, err, tc.key, path)
			}
			if _, err := handshake(addr); err == nil {
				t.Errorf("a handshake with %s emptied: served, want it refused", tc.key)
			}
		})
	}
}
