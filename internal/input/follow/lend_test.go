package follow

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLend: a handler that keeps the buffer of a read (Options.Lend) may use its lines
// after it returned, and the reader reads on into the buffer it is given; one given back
// is read into again. Lines cross reads (some are longer than what is left of a read),
// so the line carried from one read to the next moves to the new buffer.
func TestLend(t *testing.T) {
	text, path := readsText(t, "")
	want := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")

	for _, tc := range []struct {
		name string
		keep func(read int) bool
	}{
		{"every buffer kept", func(int) bool { return true }},
		{"every buffer given back", func(int) bool { return false }},
		{"every other buffer kept", func(read int) bool { return read%2 == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got, pending [][]byte // the lines, as handed on (kept reads) or copied
			var kept [][]byte         // the buffers taken from the reader
			reads, size := 0, 0
			lend := func(buf []byte) []byte {
				reads++
				if size == 0 {
					size = len(buf)
				}
				if len(buf) != size {
					t.Fatalf("read %d: a buffer of %d bytes, want %d", reads, len(buf), size)
				}
				for _, k := range kept {
					if &k[0] == &buf[0] {
						t.Fatalf("read %d: the reader read into a buffer it lent", reads)
					}
				}
				if !tc.keep(reads) {
					for _, l := range pending {
						got = append(got, bytes.Clone(l))
					}
					pending = pending[:0]
					return buf
				}
				got = append(got, pending...)
				pending = pending[:0]
				kept = append(kept, buf)
				return make([]byte, len(buf))
			}
			_, err := ReadToEnd(Options{Path: path, Lend: lend}, func(_ string, line []byte) {
				pending = append(pending, line)
			})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, pending...) // the last line, handed on after the last read
			if reads < 4 {
				t.Fatalf("%d reads, want the file to take several", reads)
			}
			if len(got) != len(want) {
				t.Fatalf("%d lines, want %d", len(got), len(want))
			}
			for i := range want {
				if string(got[i]) != want[i] {
					t.Fatalf("line %d = %.40q, want %.40q", i, got[i], want[i])
				}
			}
		})
	}
}

// readsText writes a log of 3,000 lines of up to 900 bytes, which cross reads, every
// seventh ending in "\r\n", and a last line without a newline; after the 501st, 1,501st
// and 2,501st lines, extra. It returns the text and the file's path.
func readsText(t *testing.T, extra string) (string, string) {
	t.Helper()
	var text strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&text, "%d %s", i, strings.Repeat("x", i*37%900))
		if i%7 == 0 {
			text.WriteString("\r")
		}
		text.WriteString("\n")
		if i%1000 == 500 {
			text.WriteString(extra)
		}
	}
	text.WriteString("last line without a newline")
	path := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(path, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return text.String(), path
}
