package follow

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestByteOrderMark: a UTF-8 byte order mark opening a file, as tools on Windows write
// one, is the file's encoding, not its first line's text (a JSON object after it is no
// JSON), so the first line is handed on without it, whether a block takes it or not and
// however the file's first bytes are split between reads. One further in the file (files
// concatenated) is text of its line and stays.
func TestByteOrderMark(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	text := bom + `{"status":200}` + "\n" + bom + "second\nthird\n"
	want := []string{`{"status":200}`, bom + "second", "third"}
	path := filepath.Join(t.TempDir(), "bom.log")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		take bool
	}{{"lines", false}, {"blocks", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			block := func(_ string, b []byte) bool {
				if tc.take {
					got = append(got, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
				}
				return tc.take
			}
			st, err := ReadToEnd(Options{Path: path, Block: block}, func(_ string, line []byte) {
				got = append(got, string(bytes.Clone(line)))
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || st.LinesRead != 3 {
				t.Errorf("lines %q (%d read), want %q", got, st.LinesRead, want)
			}
		})
	}
	// The mark written a byte at a time, each read by a follower before the next.
	grown := filepath.Join(t.TempDir(), "grown.log")
	w := create(t, grown)
	var reads atomic.Int64
	lines := make(chan string, 4)
	start(t, Options{Path: grown, FromBeginning: true, PollInterval: 5 * time.Millisecond, Chunk: func() { reads.Add(1) }},
		func(_ string, line []byte) { lines <- string(line) })
	for i, piece := range []string{bom[:1], bom[1:2], bom[2:] + "first\n"} {
		if _, err := w.WriteString(piece); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the piece read", func() bool { return reads.Load() > int64(i) })
	}
	if got := <-lines; got != "first" {
		t.Errorf("first line %q, want %q", got, "first")
	}
}
