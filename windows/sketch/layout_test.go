package sketch

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// TestLayoutWiden widens and extends runs of every packed width to every width it may take
// (up to 64 bits), by bins below and above, in a buffer of its own and in place, and
// holds every count to what it was: runs of 1 bin, runs whose bytes are no whole number
// of words, and runs of 503 to 513 bytes, about the end of the copy layout reads the old
// counts from on the stack. Every count holds the most its width takes or a random one,
// so that a bit lost or moved shows; the bits past the last count must be 0, and the run's
// snapshot must read back.
func TestLayoutWiden(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 18))
	n := 0 // numbers the layouts checked, of which race.Runs says which are
	widths := []uint8{64}
	for w := uint8(1); w <= maxPacked; w++ {
		widths = append(widths, w)
	}
	for _, oldW := range widths[1:] {
		for _, w := range widths {
			if w < oldW {
				continue
			}
			for _, bins := range []int{1, 2, 3, 7, 8, 9, 17, 64, 65} {
				for _, below := range []int{0, 1, 3, 8, 13} {
					for _, above := range []int{0, 1, 5} {
						// The same width with nothing below or above has nothing to lay out.
						if n++; (w != oldW || below != 0 || above != 0) && race.Runs(n) {
							checkLayouts(t, r, oldW, w, bins, below, above)
						}
					}
				}
			}
		}
		// The copy of the old counts is on the stack up to 512 bytes.
		for by := 503; by <= 513; by++ {
			for _, w := range []uint8{oldW, min(oldW+1, maxPacked), 64} {
				if n++; race.Runs(n) {
					checkLayouts(t, r, oldW, w, by*8/int(oldW), 1, 1)
				}
			}
		}
	}
}

// checkLayouts lays a run out as checkLayout does, in a buffer of its own and in place.
func checkLayouts(t *testing.T, r *rand.Rand, oldW, w uint8, n, below, above int) {
	t.Helper()
	for _, inPlace := range []bool{false, true} {
		name := fmt.Sprintf("%d bins of %d bits to %d, %d below, %d above, in place %v", n, oldW, w, below, above, inPlace)
		checkLayout(t, r, name, oldW, w, n, below, above, inPlace)
	}
}

// checkLayout fills a run of n counts of oldW bits and lays it out with below bins lower and
// above higher with counts w bits wide, its buffer given room to do it in place or not.
func checkLayout(t *testing.T, r *rand.Rand, name string, oldW, w uint8, n, below, above int, inPlace bool) {
	t.Helper()
	size := binBytes(n, oldW)
	capacity := size
	if inPlace {
		capacity = binBytes(n+below+above, w) + 8
	}
	var s bins
	s.lo = 100
	s.b = make([]byte, size, capacity)
	// What a reset left past the run: layout must clear it.
	for i := size; i < capacity; i++ {
		s.b[:capacity][i] = 0xff
	}
	s.setRun(n, oldW)
	want := make([]uint64, n)
	for j := range want {
		want[j] = uint64(1)<<oldW - 1
		if r.IntN(2) == 0 {
			want[j] = r.Uint64() >> (64 - oldW)
		}
		s.set(j, want[j])
	}
	s.layout(s.lo-int32(below), n+below+above, w)
	if s.lo != 100-int32(below) || s.len() != n+below+above || s.width() != w || len(s.b) != binBytes(s.len(), w) {
		t.Fatalf("%s: run %d+%d of %d bits in %d bytes", name, s.lo, s.len(), s.width(), len(s.b))
	}
	if inPlace && cap(s.b) != capacity {
		t.Fatalf("%s: laid out in a new buffer", name)
	}
	for j := range s.len() {
		var c uint64
		if k := j - below; k >= 0 && k < n {
			c = want[k]
		}
		if got := s.get(j); got != c {
			t.Fatalf("%s: count %d is %#x, want %#x", name, j, got, c)
		}
	}
	if used := s.len() * int(w); used%8 != 0 && s.b[len(s.b)-1]>>(used%8) != 0 {
		t.Fatalf("%s: the bits past the last count are %#x, not 0", name, s.b[len(s.b)-1]>>(used%8))
	}
	// A snapshot holds the run as it lies, and reading it back checks those bits again.
	var back bins
	rd := wire.NewReader(s.appendBinary(nil))
	back.unmarshal(rd, 0)
	if err := rd.Done(); err != nil {
		t.Fatalf("%s: the snapshot of the run does not read back: %v", name, err)
	}
	if back.lo != s.lo || back.run != s.run || !bytes.Equal(back.b, s.b) {
		t.Fatalf("%s: the snapshot reads back as run %d+%d of %d bits", name, back.lo, back.len(), back.width())
	}
}
