package fastmatch

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode"
	"unicode/utf8"
)

// runeSet is what the compile-time analysis reasons about: a set of runes as
// sorted, disjoint, non-adjacent [lo, hi] pairs, plus two pseudo members. eof
// stands for "at the end of the line"; all stands for "anything, including the
// end" and marks a path that can succeed without consuming a rune.
type runeSet struct {
	ranges []rune
	eof    bool
	all    bool
}

// normRanges sorts and merges rune pairs so that sets can be compared pairwise.
func normRanges(r []rune) []rune {
	type pair struct{ lo, hi rune }
	ps := make([]pair, 0, len(r)/2)
	for i := 0; i+1 < len(r); i += 2 {
		ps = append(ps, pair{r[i], r[i+1]})
	}
	slices.SortFunc(ps, func(a, b pair) int { return int(a.lo - b.lo) })
	out := make([]rune, 0, len(r))
	for _, p := range ps {
		if n := len(out); n > 0 && p.lo <= out[n-1]+1 {
			out[n-1] = max(out[n-1], p.hi)
			continue
		}
		out = append(out, p.lo, p.hi)
	}
	return out
}

// union adds o to s.
func (s *runeSet) union(o runeSet) {
	s.eof = s.eof || o.eof
	s.all = s.all || o.all
	if len(o.ranges) > 0 {
		s.ranges = normRanges(append(slices.Clone(s.ranges), o.ranges...))
	}
}

func (s runeSet) empty() bool { return !s.all && !s.eof && len(s.ranges) == 0 }

// intersects reports whether a and b can share a member. all shares with
// anything that is not empty.
func intersects(a, b runeSet) bool {
	if a.empty() || b.empty() {
		return false
	}
	if a.all || b.all || (a.eof && b.eof) {
		return true
	}
	return rangesIntersect(a.ranges, b.ranges)
}

func rangesIntersect(a, b []rune) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i+1] < b[j]:
			i += 2
		case b[j+1] < a[i]:
			j += 2
		default:
			return true
		}
	}
	return false
}

// rangesSubset reports whether every rune of a is in b (both normalised).
func rangesSubset(a, b []rune) bool {
	j := 0
	for i := 0; i < len(a); i += 2 {
		for j < len(b) && b[j+1] < a[i] {
			j += 2
		}
		if j == len(b) || b[j] > a[i] || b[j+1] < a[i+1] {
			return false
		}
	}
	return true
}

// foldOrbit is the set a case-folded literal rune matches in regexp: the
// rune and every rune reached from it by unicode.SimpleFold.
func foldOrbit(r rune) []rune {
	out := []rune{r, r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		out = append(out, f, f)
	}
	return normRanges(out)
}

// class is a runeSet compiled for the matcher. Membership of an ASCII byte is
// one table load; bytes from 0x80 up are decoded exactly like regexp decodes
// them (utf8.DecodeRune, an invalid byte being U+FFFD of width 1).
type class struct {
	// tbl answers (1 or 0) for bytes below 0x80; from 0x80 up it holds
	// high, so a byte-wise scan is exact for classes that take all or none
	// of the non-ASCII runes.
	tbl [256]uint8
	// high: every rune from 0x80 up (surrogates cannot be decoded) is a member.
	high bool
	// noHigh: no rune from 0x80 up is a member; each member is one byte.
	noHigh bool
	// hi holds the member ranges from 0x80 up, when neither high nor noHigh.
	hi  []rune
	eof bool
	// stops, for a class that has every rune from 0x80 up and all but one to maxStops
	// ASCII bytes ([^"], [^ "], [^ "?]), are those bytes: a run of it ends exactly at the
	// first of them. Finding that byte with bytes.IndexByte or a word at a time is
	// several times cheaper than the table on the long runs of a log line (a user agent,
	// a referer).
	stops []byte
	// swar holds each stop repeated in every byte of a word (the last repeated to fill
	// it), for span's word-at-a-time scan.
	swar [maxStops]uint64
}

// maxStops bounds the stops span looks for in a word: each costs four operations per
// eight bytes, so beyond a few the table is as fast.
const maxStops = 3

func newClass(s runeSet) *class {
	c := &class{eof: s.eof || s.all}
	if s.all {
		s.ranges = []rune{0, unicode.MaxRune}
	}
	for i := 0; i < len(s.ranges); i += 2 {
		lo, hi := s.ranges[i], s.ranges[i+1]
		for r := lo; r <= hi && r < utf8.RuneSelf; r++ {
			c.tbl[r] = 1
		}
		if hi >= utf8.RuneSelf {
			c.hi = append(c.hi, max(lo, utf8.RuneSelf), hi)
		}
	}
	c.noHigh = len(c.hi) == 0
	c.high = rangesSubset([]rune{utf8.RuneSelf, 0xD7FF, 0xE000, unicode.MaxRune}, c.hi)
	if c.high || c.noHigh {
		c.hi = nil
	}
	if c.high {
		for b := utf8.RuneSelf; b < len(c.tbl); b++ {
			c.tbl[b] = 1
		}
		for b := range utf8.RuneSelf {
			if c.tbl[b] == 0 {
				c.stops = append(c.stops, byte(b))
			}
		}
		if len(c.stops) > maxStops {
			c.stops = nil
		}
		for i := range c.swar {
			if len(c.stops) > 0 {
				c.swar[i] = everyByte * uint64(c.stops[min(i, len(c.stops)-1)])
			}
		}
	}
	return c
}

// spanASCII is span for a class without non-ASCII members (noHigh). Their runs are
// usually short (a status, a method, a number), so it goes a byte at a time and is small
// enough to be inlined, where a call would cost more than the scan.
func (c *class) spanASCII(line []byte, p, lim int) int {
	for p < lim && c.tbl[line[p]] != 0 {
		p++
	}
	return p
}

// span returns where the run of members starting at p ends, looking no further than
// lim. It reads bytes, not runes: only for classes a byte table decides (scanBytes).
func (c *class) span(line []byte, p, lim int) int {
	switch len(c.stops) {
	case 0: // too many stops to look for (\S has six), or a class without non-ASCII members
	case 1:
		if i := bytes.IndexByte(line[p:lim], c.stops[0]); i >= 0 {
			return p + i
		}
		return lim
	default:
		for p+8 <= lim {
			w := binary.LittleEndian.Uint64(line[p:])
			if m := zeroByte(w^c.swar[0]) | zeroByte(w^c.swar[1]) | zeroByte(w^c.swar[2]); m != 0 {
				return p + bits.TrailingZeros64(m)/8
			}
			p += 8
		}
	}
	tbl := &c.tbl
	for p+4 <= lim && tbl[line[p]]&tbl[line[p+1]]&tbl[line[p+2]]&tbl[line[p+3]] != 0 {
		p += 4
	}
	for p < lim && tbl[line[p]] != 0 {
		p++
	}
	return p
}

const everyByte = 0x0101010101010101

// zeroByte sets the top bit of the lowest zero byte of w. Bytes above it may be flagged
// too (a borrow runs into them), never a byte below it, so the lowest flag is exact.
func zeroByte(w uint64) uint64 {
	return (w - everyByte) &^ w & (everyByte << 7)
}

// hasHigh reports membership of a decoded rune from 0x80 up.
func (c *class) hasHigh(r rune) bool {
	if c.high {
		return true
	}
	for i := 0; i < len(c.hi); i += 2 {
		if r < c.hi[i] {
			return false
		}
		if r <= c.hi[i+1] {
			return true
		}
	}
	return false
}

// at reports whether the rune at pos (or the end of the line) is a member.
func (c *class) at(line []byte, pos int) bool {
	if pos >= len(line) {
		return c.eof
	}
	if b := line[pos]; b < utf8.RuneSelf || c.hi == nil {
		return c.tbl[b] != 0
	}
	return c.hasHighAt(line[pos:])
}

func (c *class) hasHighAt(s []byte) bool {
	r, _ := utf8.DecodeRune(s)
	return c.hasHigh(r)
}

// step returns the width of the rune at p if it is a member, else 0 (also at
// the end of the line).
func (c *class) step(line []byte, p int) int {
	if uint(p) < uint(len(line)) {
		if b := line[p]; b < utf8.RuneSelf {
			return int(c.tbl[b])
		}
	}
	return c.stepSlow(line, p)
}

func (c *class) stepSlow(line []byte, p int) int {
	if p >= len(line) || c.noHigh {
		return 0
	}
	r, w := utf8.DecodeRune(line[p:])
	if c.hasHigh(r) {
		return w
	}
	return 0
}
