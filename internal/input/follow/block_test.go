package follow

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBlock: the lines a handler takes whole (Options.Block) and those handed on one by
// one are together every line the handler alone would have been given, in order, each
// once, and those handed on are the lines counted as read (the handler counts those it
// takes); lines that end in "\r\n" keep their "\r" in a block. No block
// is offered while a line too long to read is skipped (its rest would be taken for
// lines), nor at a cap under which the buffer may hold a complete line too long.
func TestBlock(t *testing.T) {
	text, path := readsText(t, "\n"+strings.Repeat("z", 150_000)+"\n") // an empty line, one too long
	lines := func(maxLine int) []string {
		var want []string
		for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
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
			offered, taken, inBlocks := 0, 0, 0
			block := func(_ string, b []byte) bool {
				offered++
				if len(b) == 0 || b[len(b)-1] != '\n' {
					t.Fatalf("block %d does not end in a newline: %.40q", offered, b)
				}
				if !tc.take(offered) {
					return false
				}
				taken++
				ls := strings.Split(string(b[:len(b)-1]), "\n")
				for _, l := range ls {
					got = append(got, strings.TrimSuffix(l, "\r"))
				}
				inBlocks += len(ls)
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
			if st.LinesRead != uint64(len(want)-inBlocks) || st.TooLong != 3 {
				t.Errorf("%d lines read and %d too long, want %d (of %d, %d taken in blocks) and 3", st.LinesRead, st.TooLong, len(want)-inBlocks, len(want), inBlocks)
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

// unlockHook is a Hold that calls unlock as it is let go.
type unlockHook func()

func (unlockHook) Lock()     {}
func (h unlockHook) Unlock() { h() }

// TestBlockPositions: as a file grows by pieces that end anywhere, each let go of Hold
// finds the file's position (tracked.done) at the end of the last line taken in a block
// or handed on, with every line before it handed on counted as read, whether blocks are
// taken or not and whether Lend takes the buffer or not.
func TestBlockPositions(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 5))
			var text strings.Builder
			var ends []int64 // the offset after each line's "\n"
			for range 3000 + rng.IntN(3000) {
				text.WriteString(strings.Repeat("x", rng.IntN(400)))
				if rng.IntN(4) == 0 {
					text.WriteString("\r")
				}
				text.WriteString("\n")
				ends = append(ends, int64(text.Len()))
			}
			path := filepath.Join(t.TempDir(), "a.log")
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			in, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			out, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()

			var c counters
			file := &tracked{f: in, path: path}
			lines, handed := 0, 0 // taken in blocks or handed on; handed on
			o, err := Options{
				Path: path,
				Hold: unlockHook(func() {
					want := int64(0)
					if lines > 0 {
						want = ends[lines-1]
					}
					if got := file.done.Load(); got != want || c.lines.Load() != uint64(handed) {
						t.Fatalf("position %d after %d lines, want %d; %d counted as read, %d handed on", got, lines, want, c.lines.Load(), handed)
					}
				}),
				Block: func(_ string, b []byte) bool {
					if rng.IntN(3) == 0 {
						return false
					}
					lines += bytes.Count(b, []byte("\n"))
					return true
				},
				Lend: func(buf []byte) []byte {
					if rng.IntN(2) == 0 {
						return make([]byte, len(buf))
					}
					return buf
				},
			}.normalize()
			if err != nil {
				t.Fatal(err)
			}
			r := newLineReader(o, func(string, []byte) { lines++; handed++ }, &c, nil)
			s := text.String()
			for written := 0; written < len(s); {
				n := min(len(s)-written, 1+rng.IntN(150_000))
				if _, err := out.WriteString(s[written : written+n]); err != nil {
					t.Fatal(err)
				}
				written += n
				if _, _, err := r.pass(file, path, int64(1+rng.IntN(200_000))); err != nil {
					t.Fatal(err)
				}
			}
			for atEOF := false; !atEOF; {
				if _, atEOF, err = r.pass(file, path, math.MaxInt64); err != nil {
					t.Fatal(err)
				}
			}
			if lines != len(ends) || file.done.Load() != int64(len(s)) {
				t.Fatalf("%d lines of %d, position %d of %d", lines, len(ends), file.done.Load(), len(s))
			}
		})
	}
}
