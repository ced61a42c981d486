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
	var text strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&text, "%d %s", i, strings.Repeat("x", i*37%900))
		if i%7 == 0 {
			text.WriteString("\r")
		}
		text.WriteString("\n")
	}
	text.WriteString("last line without a newline")
	path := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(path, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.ReplaceAll(text.String(), "\r\n", "\n"), "\n")

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
