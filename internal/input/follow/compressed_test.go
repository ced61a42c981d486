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
// matches the archives a rotator compresses them into as well (access.log.1.gz, made
// beside the rotated file, which is then deleted). Such a file is never lines of text:
// it is not followed, but counted as not_regular and logged once, naming it, so that the
// glob can be fixed; the log and its uncompressed rotation are read exactly once.
func TestGlobPassesOverCompressedFiles(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "access.log")
			w := create(t, p)
			var logs syncbuf.Buffer
			o := m.options(p + "*")
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			c := newCollector()
			f := start(t, o, c.handle)
			writeLines(t, w, 1, 10)
			rename(t, p, p+".1")
			w2 := create(t, p)
			writeLines(t, w2, 11, 20)
			waitFor(t, "the log and its rotation read", func() bool { return c.has(1, 20) })

			rotated, err := os.ReadFile(p + ".1")
			if err != nil {
				t.Fatal(err)
			}
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			if _, err := zw.Write(rotated); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p+".1.gz", gz.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(p + ".1"); err != nil {
				t.Fatal(err)
			}
			// Refused, or read as lines that are not the log's.
			waitFor(t, "the compressed file looked at", func() bool {
				c.mu.Lock()
				defer c.mu.Unlock()
				return f.Stats().ErrorsByReason["not_regular"] == 1 || len(c.malformed) > 0
			})
			writeLines(t, w2, 21, 30)
			waitFor(t, "the lines written after", func() bool { return c.has(21, 30) })
			c.expectExactly(t, span{1, 30})
			s := f.Stats()
			if s.ErrorsByReason["not_regular"] != 1 || slices.ContainsFunc(s.Files, func(fs input.FileStats) bool { return fs.Path == p+".1.gz" }) {
				t.Errorf("stats %+v: want the compressed file counted once as not_regular, and not followed", s)
			}
			if !strings.Contains(logs.String(), p+".1.gz") {
				t.Errorf("the compressed file is not named in the log:\n%s", logs.String())
			}
		})
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
