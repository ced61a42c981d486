package follow

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBlock: the lines a handler takes whole (Options.Block) and those handed on one by
// one are together every line the handler alone would have been given, in order, each
// once and counted as read; lines that end in "\r\n" keep their "\r" in a block. No block
// is offered while a line too long to read is skipped (its rest would be taken for
// lines), nor at a cap under which the buffer may hold a complete line too long.
func TestBlock(t *testing.T) {
	var text strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&text, "%d %s", i, strings.Repeat("x", i*37%900))
		if i%7 == 0 {
			text.WriteString("\r")
		}
		text.WriteString("\n")
		if i%1000 == 500 {
			text.WriteString("\n" + strings.Repeat("z", 150_000) + "\n") // an empty line, one too long
		}
	}
	text.WriteString("last line without a newline")
	path := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(path, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := func(maxLine int) []string {
		var want []string
		for _, l := range strings.Split(strings.ReplaceAll(text.String(), "\r\n", "\n"), "\n") {
			if len(l) <= maxLine {
				want = append(want, l)
			}
		}
		return want
	}

	for _, tc := range []struct {
		name    string
		maxLine int
		take    func(block int) bool
		blocks  bool // some block is taken
	}{
		{"every block taken", 0, func(int) bool { return true }, true},
		{"none taken", 0, func(int) bool { return false }, false},
		{"every other taken", 0, func(b int) bool { return b%2 == 0 }, true},
		{"a cap under the buffer", 1000, func(int) bool { return true }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			offered, taken := 0, 0
			block := func(_ string, b []byte) bool {
				offered++
				if len(b) == 0 || b[len(b)-1] != '\n' {
					t.Fatalf("block %d does not end in a newline: %.40q", offered, b)
				}
				if !tc.take(offered) {
					return false
				}
				taken++
				for _, l := range strings.Split(string(b[:len(b)-1]), "\n") {
					got = append(got, strings.TrimSuffix(l, "\r"))
				}
				return true
			}
			st, err := ReadToEnd(Options{Path: path, MaxLineBytes: tc.maxLine, Block: block}, func(_ string, line []byte) {
				got = append(got, string(bytes.Clone(line)))
			})
			if err != nil {
				t.Fatal(err)
			}
			if (taken > 0) != tc.blocks {
				t.Fatalf("%d of %d blocks offered taken", taken, offered)
			}
			want := lines(cmp.Or(tc.maxLine, DefaultMaxLineBytes))
			if st.LinesRead != uint64(len(want)) || st.TooLong != 3 {
				t.Errorf("%d lines read and %d too long, want %d and 3", st.LinesRead, st.TooLong, len(want))
			}
			if len(got) != len(want) {
				t.Fatalf("%d lines, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("line %d = %.40q, want %.40q", i, got[i], want[i])
				}
			}
		})
	}
}
