package follow

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
			inBlocks := 0
			block := func(_ string, b []byte) bool {
				if !tc.take {
					return false
				}
				ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
				got = append(got, ls...)
				inBlocks += len(ls)
				return true
			}
			st, err := ReadToEnd(Options{Path: path, Block: block}, func(_ string, line []byte) {
				got = append(got, string(bytes.Clone(line)))
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || st.LinesRead != uint64(3-inBlocks) {
				t.Errorf("lines %q (%d read, %d taken in blocks), want %q", got, st.LinesRead, inBlocks, want)
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

// TestByteOrderMarkResumed: a snapshot taken while a file's first line, after its byte
// order mark, was not complete yet has the position after the mark; a follower resumed
// from it reads that line whole, as from a position at 0, not as the rest of a line it
// started within.
func TestByteOrderMarkResumed(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	for _, tc := range []struct {
		name    string
		written string // before the first follower stops
	}{
		{"mark and part of the first line", bom + "fir"},
		{"the mark alone", bom},
		{"part of the mark", bom[:2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bom.log")
			w := create(t, path)
			if _, err := w.WriteString(tc.written); err != nil {
				t.Fatal(err)
			}
			var hold sync.RWMutex
			var reads atomic.Int64
			o := Options{Path: path, FromBeginning: true, PollInterval: 5 * time.Millisecond, Hold: hold.RLocker(), Chunk: func() { reads.Add(1) }}
			f := start(t, o, func(_ string, line []byte) { t.Errorf("line %q handed on before it is complete", line) })
			waitFor(t, "the first bytes read", func() bool { return reads.Load() > 0 })
			hold.Lock()
			positions := f.Positions()
			hold.Unlock()
			f.Stop()
			if _, err := w.WriteString(strings.TrimPrefix(bom+"first\nsecond\n", tc.written)); err != nil {
				t.Fatal(err)
			}
			o.FromBeginning, o.Resume, o.Chunk = false, positions, nil
			lines := make(chan string, 4)
			start(t, o, func(_ string, line []byte) { lines <- string(line) })
			for _, want := range []string{"first", "second"} {
				select {
				case got := <-lines:
					if got != want {
						t.Errorf("resumed from %+v: line %q, want %q", positions, got, want)
					}
				case <-givenUp(t):
					t.Fatalf("resumed from %+v: no line %q", positions, want)
				}
			}
		})
	}
}
