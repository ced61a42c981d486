package follow

import (
	"bytes"
	"compress/gzip"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

// TestGlobPassesOverCompressedFiles: a glob that matches a log's rotations (access.log*)
// matches the archives a rotator compresses them into as well: logrotate's
// access.log.1.gz, made beside the rotated file, which is then deleted; the kubelet's
// 0.log.<time>.gz, written as 0.log.<time>.tmp and renamed when complete, which the glob
// matches while it is written. Such a file is never lines of text: it is not followed,
// but counted as not_regular and logged once, naming it, so that the glob can be fixed;
// the log and its uncompressed rotation are read exactly once.
func TestGlobPassesOverCompressedFiles(t *testing.T) {
	for _, rc := range []struct {
		rotator, log, rotated string
		// made are the names the archive is written under, the last its own.
		made []string
	}{
		{"logrotate", "access.log", "access.log.1", []string{"access.log.1.gz"}},
		{"kubelet", "0.log", "0.log.20240301-120000", []string{"0.log.20240301-120000.tmp", "0.log.20240301-120000.gz"}},
	} {
		for _, m := range modes {
			t.Run(rc.rotator+"/"+m.name, func(t *testing.T) {
				dir := t.TempDir()
				p := filepath.Join(dir, rc.log)
				w := create(t, p)
				var logs syncbuf.Buffer
				o := m.options(p + "*")
				o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
				c := newCollector()
				f := start(t, o, c.handle)
				writeLines(t, w, 1, 10)
				rotated := filepath.Join(dir, rc.rotated)
				rename(t, p, rotated)
				w2 := create(t, p)
				writeLines(t, w2, 11, 20)
				waitFor(t, "the log and its rotation read", func() bool { return c.has(1, 20) })

				text, err := os.ReadFile(rotated)
				if err != nil {
					t.Fatal(err)
				}
				var gz bytes.Buffer
				zw := gzip.NewWriter(&gz)
				if _, err := zw.Write(text); err != nil {
					t.Fatal(err)
				}
				if err := zw.Close(); err != nil {
					t.Fatal(err)
				}
				// Lines end in the archive's bytes, as they do in one of a real log.
				archive := append(gz.Bytes(), "\n\x00\xff\n"...)
				for i, name := range rc.made {
					at := filepath.Join(dir, name)
					if i == 0 {
						if err := os.WriteFile(at, archive, 0o644); err != nil {
							t.Fatal(err)
						}
					} else {
						rename(t, filepath.Join(dir, rc.made[i-1]), at)
					}
					// Refused, or read as lines that are not the log's.
					waitFor(t, name+" looked at", func() bool {
						c.mu.Lock()
						defer c.mu.Unlock()
						return f.Stats().ErrorsByReason["not_regular"] == uint64(i+1) || len(c.malformed) > 0
					})
				}
				if err := os.Remove(rotated); err != nil {
					t.Fatal(err)
				}
				writeLines(t, w2, 21, 30)
				waitFor(t, "the lines written after", func() bool { return c.has(21, 30) })
				c.expectExactly(t, span{1, 30})
				s := f.Stats()
				followed := slices.ContainsFunc(s.Files, func(fs input.FileStats) bool { return strings.HasPrefix(fs.Path, rotated+".") })
				if s.ErrorsByReason["not_regular"] != uint64(len(rc.made)) || followed {
					t.Errorf("stats %+v: want each name of the archive counted once as not_regular, and none followed", s)
				}
				for _, name := range rc.made {
					if !strings.Contains(logs.String(), filepath.Join(dir, name)) {
						t.Errorf("%s is not named in the log:\n%s", name, logs.String())
					}
				}
			})
		}
	}
}

// TestReadToEndRefusesCompressedByTheirBytes: ReadToEnd refuses a file that begins as an
// archive of each compressor does, whatever its name, and reads a log whose text merely
// begins with some of an archive's first bytes ("BZh", which bzip2's magic is, is also
// a word) or with a magic cut short.
func TestReadToEndRefusesCompressedByTheirBytes(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte("GET / 200\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, content, refused string // refused: the compressor named, "" when read
	}{
		{"gzip", gz.String(), "gzip"},
		{"bzip2", "BZh91AY&SY\x12\x34", "bzip2"},
		{"xz", "\xfd7zXZ\x00\x00\x04", "xz"},
		{"zstd", "\x28\xb5\x2f\xfd\x04\x00", "zstd"},
		{"a line opening with BZh", "BZh91 AY&SY went well\n", ""},
		{"a line that is BZh and a digit", "BZh9\n", ""},
		{"bzip2's block magic after no block size", "BZh01AY&SY\n", ""},
		{"gzip's first byte alone", "\x1f\n", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var lines int
			st, err := ReadToEnd(Options{Path: p}, func(string, []byte) { lines++ })
			if tc.refused == "" {
				if err != nil || lines != strings.Count(tc.content, "\n") {
					t.Errorf("read %d lines, %v; want the file read as text", lines, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), p+": "+tc.refused+"-compressed") || lines != 0 || st.ErrorsByReason["not_regular"] != 1 {
				t.Errorf("read %d lines, stats %+v, %v; want it refused as %s-compressed, counted as not_regular", lines, st, err, tc.refused)
			}
		})
	}
}
