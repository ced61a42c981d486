package pipeline

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPoolAddRunsAreTheLines: the lines of a read buffer put into a batch (pool.add), as
// the follower hands them (without "\n" and one "\r" before it, lines past the cap
// skipped, some with a wrapper or a stream, some copied), split at "\n" as a worker
// splits a line of the buffer, are the lines handed, in order.
func TestPoolAddRunsAreTheLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		seed uint64
		max  int
	}{
		{"short lines", 1, 8},
		{"long lines", 2, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 3))
			alphabet := []byte("ab\r\n\n")
			for range 2000 {
				buf := make([]byte, 256)
				for i := range buf {
					buf[i] = alphabet[rng.IntN(len(alphabet))]
				}
				w := &pool{cur: &batch{read: buf}, read: buf}
				var want [][]byte
				start := 0
				for {
					i := bytes.IndexByte(buf[start:], '\n')
					if i < 0 {
						break
					}
					line := buf[start : start+i]
					start += i + 1
					if len(line) > tc.max {
						continue
					}
					if n := len(line); n > 0 && line[n-1] == '\r' {
						line = line[:n-1]
					}
					var wrapper, strm []byte
					switch rng.IntN(10) {
					case 0:
						wrapper = []byte("1")
					case 1:
						strm = []byte("stdout")
					case 2:
						line = bytes.Clone(line)
					}
					want = append(want, bytes.Clone(line))
					w.add("f", line, wrapper, strm)
				}
				var got [][]byte
				bt := w.cur
				for i := range bt.lines {
					l := &bt.lines[i]
					if !l.inRead {
						got = append(got, bytes.Clone(bt.bytes(l.msg)))
						continue
					}
					got = append(got, bytes.Split(bt.msg(l), []byte("\n"))...)
				}
				if !slices.EqualFunc(got, want, bytes.Equal) {
					t.Fatalf("buffer %q: lines %q, want %q", buf, got, want)
				}
			}
		})
	}
}
