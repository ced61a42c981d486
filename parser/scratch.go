package parser

import (
	"encoding/binary"
	"unicode/utf8"
	"unsafe"

	"github.com/logwindow/logwindow_exporter/config"
)

// sizes bounds the buffers of a scratch for one parser's rules.
type sizes struct {
	caps      int // the most ints a group's matcher fills
	whereCaps int // the same for where filters
	labels    int // the most labels of a rule
	items     int // the most items of a rule
	slots     int // distinct timestamp specs
	paths     int // path captures the rules read
	// rewriters are the labels' rewriters, each with a cache in every scratch.
	rewriters []*rewriter
}

// scratch is what one Parse call writes to. Buffers keep their capacity between calls, so
// once they have grown to the longest label set seen, a line allocates nothing.
type scratch struct {
	caps []int
	// tied is chooseFits' buffer of the candidates tied with the one it chose.
	tied      []int
	whereCaps []int
	key       []byte
	ends      []int
	labels    [][]byte
	// itemText holds the items of Event.Items, which point into it.
	itemText []byte
	itemEnds []int
	items    [][]byte
	fix      []byte // invalid UTF-8 being rewritten
	// rewrites has a cache per rewriter of the rules' labels (sizes.rewriters).
	rewrites []rewriteCache
	times    []timeCache
	event    Event
	// vals holds what captures index past the end of the line (text.more): the decoded
	// strings of a structured line, and the values a log format's processing unescaped or
	// derived; jsonKey a JSON key with escapes, decoded for comparison.
	vals    []byte
	jsonKey []byte
	// detect holds the captures of a candidate format's full match while a file's format
	// is chosen.
	detect []int
	// wrapperTime is the time text of the line's wrapper, during one ParseWrapped call.
	wrapperTime []byte
	// wall is the wall-clock second the lines are read at, when live (Session.SetWall).
	wall int64
	live bool
	// pathText holds the values of the path captures (Session.SetPath), pathCaps their
	// offsets in it in pairs (-1: not set); pathMore is a match's decoded values followed by them.
	pathText []byte
	pathCaps []int
	pathMore []byte
	// match numbers the group matches this scratch has seen (newMatch). What is
	// remembered below for one match is used again by the other rules of the group, which
	// read the same captures of the same line.
	match uint64
	// keySet is the label set that key and labels hold, rendered for match keyMatch;
	// itemsSet the same for items.
	keyMatch, itemsMatch uint64
	keySet, itemsSet     int
	// ascii: the line of match asciiMatch has only ASCII bytes.
	asciiMatch uint64
	ascii      bool
}

type timeCache struct {
	raw []byte
	// unix is the time of raw when ok; else still that of the last time that parsed, if
	// parsed: the line before, by which a time of an hour its zone repeats is read
	// (nearerReading), which a line whose time does not parse between does not change.
	unix   int64
	ok     bool
	parsed bool
	valid  bool   // raw, unix and ok hold a result
	match  uint64 // the result is that of the capture of this match
}

// newScratch sizes every buffer to whole cache lines. Inputs on different cores parse
// with scratches of their own, made one after the other and often placed side by side by
// the allocator; a buffer that shared a cache line with another scratch's would have the
// two cores take that line from each other on every line parsed (bench/RESULTS.md has the
// measurements). The byte buffers start at textBuf, from which append grows them to sizes
// that are whole lines too.
func newScratch(sz sizes) *scratch {
	s := &scratch{
		caps:      ownLines[int](sz.caps, sz.caps),
		whereCaps: ownLines[int](sz.whereCaps, sz.whereCaps),
		key:       ownLines[byte](0, textBuf),
		ends:      ownLines[int](0, sz.labels),
		labels:    ownLines[[]byte](sz.labels, sz.labels),
		itemText:  ownLines[byte](0, textBuf),
		itemEnds:  ownLines[int](0, 2*sz.items),
		items:     ownLines[[]byte](sz.items, sz.items),
		fix:       ownLines[byte](0, textBuf),
		times:     ownLines[timeCache](sz.slots, sz.slots),
		vals:      ownLines[byte](0, textBuf),
		jsonKey:   ownLines[byte](0, textBuf),
		pathText:  ownLines[byte](0, textBuf),
		pathCaps:  unset(ownLines[int](2*sz.paths, 2*sz.paths)),
		pathMore:  ownLines[byte](0, textBuf),
	}
	if len(sz.rewriters) > 0 {
		s.rewrites = ownLines[rewriteCache](len(sz.rewriters), len(sz.rewriters))
		for i, w := range sz.rewriters {
			s.rewrites[i].w = w
		}
	}
	return s
}

// unset marks every capture of caps as not set.
func unset(caps []int) []int {
	for i := range caps {
		caps[i] = -1
	}
	return caps
}

// setPath keeps the values of the path captures for the lines parsed next.
func (s *scratch) setPath(values [][]byte) {
	s.pathText = s.pathText[:0]
	unset(s.pathCaps)
	for i, v := range values[:min(len(values), len(s.pathCaps)/2)] {
		if v != nil {
			s.pathCaps[2*i] = len(s.pathText)
			s.pathText = append(s.pathText, v...)
			s.pathCaps[2*i+1] = len(s.pathText)
		}
	}
}

// withPath makes the path captures captures of m: their values follow what m.src holds,
// in a buffer of the scratch that becomes its more (after what was decoded or derived from
// the line, copied first), and m.caps grows by their slots from base on, pointing at them
// there. The line itself is never copied.
func (s *scratch) withPath(m *match, base int) {
	n := len(m.src.line) + len(m.src.more)
	s.pathMore = append(append(s.pathMore[:0], m.src.more...), s.pathText...)
	caps := m.caps[:2*base+len(s.pathCaps)]
	for i, off := range s.pathCaps {
		if off >= 0 {
			off += n
		}
		caps[2*base+i] = off
	}
	m.src.more, m.caps = s.pathMore, caps
}

// newMatch starts the rules of a group on a match: nothing remembered of the previous
// match is used for this one.
func (s *scratch) newMatch() {
	s.match++
}

// asciiText reports whether the text of m, the current match, has only ASCII bytes,
// looking once per match. Then every capture is valid UTF-8, and so is any label value
// made of captures and valid literal text. The match is passed by its pointer, as its
// text passed as a value would be copied for every rule that asks.
func (s *scratch) asciiText(m *match) bool {
	if s.asciiMatch != s.match {
		s.lookASCII(m)
	}
	return s.ascii
}

// lookASCII is asciiText's look at the text, apart so that the rules after the first
// inline the check.
func (s *scratch) lookASCII(m *match) {
	s.asciiMatch, s.ascii = s.match, isASCII(m.src.line) && (len(m.src.more) == 0 || isASCII(m.src.more))
}

// Word-at-a-time constants: a byte of ones, and the top bit of every byte.
const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// isASCII reports whether b has no byte from 0x80 up, a word at a time. The bytes the
// whole blocks leave are read as the block (or word) that ends b, overlapping what was
// read already: a line's length varies, and a loop over its last bytes would end at a
// different count each time, a branch the processor mispredicts.
func isASCII(b []byte) bool {
	n := len(b)
	if n < 8 {
		var acc byte
		for _, c := range b {
			acc |= c
		}
		return acc < 0x80
	}
	var acc uint64
	if n < 32 {
		for i := 0; i+8 <= n; i += 8 {
			acc |= binary.LittleEndian.Uint64(b[i : i+8 : i+8])
		}
		return (acc|binary.LittleEndian.Uint64(b[n-8:]))&highs == 0
	}
	// Two blocks a step, into two accumulators: a line of a few hundred bytes takes a
	// few steps, each of loads that do not wait for one another.
	i, acc2 := 0, uint64(0)
	for ; i+64 <= n; i += 64 {
		w := b[i : i+64 : i+64]
		acc |= words32(w[:32])
		acc2 |= words32(w[32:])
	}
	if i+32 <= n {
		acc |= words32(b[i : i+32 : i+32])
	}
	return (acc|acc2|words32(b[n-32:]))&highs == 0
}

// words32 ORs the four words of a 32-byte block, as two pairs: ORed in a row, each OR
// waited for the one before.
func words32(w []byte) uint64 {
	w = w[:32:32]
	return (binary.LittleEndian.Uint64(w) | binary.LittleEndian.Uint64(w[8:])) |
		(binary.LittleEndian.Uint64(w[16:]) | binary.LittleEndian.Uint64(w[24:]))
}

// cacheLine is the unit the cores of a processor hand each other memory in.
const cacheLine = 64

// textBuf is the first capacity of a byte buffer: append grows a buffer of 256 bytes or
// more to 512, 896, … bytes, all allocator size classes that are whole cache lines.
const textBuf = 256

// ownLines returns a slice of n Ts with room for at least c whose array fills whole cache
// lines: the allocator rounds such a size to a size class that is a multiple of the line
// and places its objects at multiples of it, so no other object shares those lines.
func ownLines[T any](n, c int) []T {
	size := int(unsafe.Sizeof(*new(T)))
	// The capacity is a multiple of the elements one line's worth of bytes needs.
	per := cacheLine / gcd(size, cacheLine)
	return make([]T, n, (max(c, 1)+per-1)/per*per)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// render writes the label values of a rule into s.key, joined by KeySep, and points
// s.labels at them. Each value is made valid UTF-8 and capped, then rewritten by its
// rewriter (rewriters: its index per label, nil for none), before the next is written, so
// the key is exactly the label set the store will see; valid says the values are known to
// be valid UTF-8 already.
func (s *scratch) render(labels []config.Template, rewriters []int, m *match, valid bool) {
	key := s.key[:0]
	s.ends = s.ends[:0]
	for i, t := range labels {
		if i > 0 {
			key = append(key, KeySep...)
		}
		start := len(key)
		// Most labels are one capture: it is appended here, without a call.
		if c := oneCapture(t); c >= 0 {
			key = append(key, m.capture(c)...)
		} else {
			key = appendLabel(key, t, m)
		}
		key = s.sanitize(key, start, valid)
		if rewriters != nil && rewriters[i] >= 0 {
			key = s.rewrite(rewriters[i], key, start)
		}
		s.ends = append(s.ends, len(key))
	}
	s.key = key
	// Labels are cut only now: appends above may have moved key's array.
	start := 0
	for i, end := range s.ends {
		s.labels[i] = key[start:end:end]
		start = end + len(KeySep)
	}
}

// renderCaptures is render for labels that are captures alone, none rewritten (as
// nginx_http_requests' method, status and class), when every value is known valid and
// has at most 8 bytes: it writes each value as one word, without a call, and reports
// whether it did; when it did not, render does it all. A call copying each value, with the
// appends around it, took longer than the copy, and its spills of the loop's registers as
// long again. A value's word is the 8 bytes of the text from its start, read when the text
// holds them: within the line, or within the capacity of more, which is always a buffer of
// the parse's own scratch (what a structured line decoded, what a log format unescaped or
// derived, the path captures), never the caller's.
func (s *scratch) renderCaptures(caps []int, m *match, valid bool) bool {
	// Every value takes at most a word and the separator before it, so the key's array
	// never moves and each label is cut as it is written.
	key := s.key[:cap(s.key)]
	if !valid || len(key) < len(caps)*(8+len(KeySep)) || len(s.labels) < len(caps) {
		return false
	}
	line, more := m.src.line, m.src.more[:cap(m.src.more)]
	n := 0
	for i, c := range caps {
		lo, hi := m.caps[2*c], m.caps[2*c+1]
		var w uint64
		switch {
		case hi-lo > 8:
			return false
		case lo >= len(line):
			lo, hi = lo-len(line), hi-len(line)
			if lo+8 > len(more) {
				return false
			}
			w = binary.LittleEndian.Uint64(more[lo : lo+8])
		case lo < 0:
			lo, hi = 0, 0 // did not participate: empty
		case lo+8 > len(line):
			return false
		default:
			w = binary.LittleEndian.Uint64(line[lo : lo+8])
		}
		if i > 0 {
			key[n] = KeySep[0]
			n++
		}
		// The word's bytes past the value are overwritten by the next value's, or lie
		// past the key's end.
		binary.LittleEndian.PutUint64(key[n:n+8], w)
		end := n + hi - lo
		s.labels[i] = key[n:end:end]
		n = end
	}
	s.key = key[:n]
	return true
}

// The key's separator is written as its one byte.
var _ = [1]struct{}{}[len(KeySep)-1]

// renderItems writes the items of a rule into s.itemText and points s.items at them:
// those shown as labels made valid UTF-8 (unless known to be valid), capped and rewritten
// as render does, the others in full. An item that is one capture (direct: its index per
// item, -1 for the others) and needs none of that is its capture's bytes, not copied.
func (s *scratch) renderItems(items []config.Item, direct, rewriters []int, m *match, valid bool) {
	text := s.itemText[:0]
	// itemEnds holds where each copied item starts and ends in text, -1s for one that
	// was not copied.
	s.itemEnds = s.itemEnds[:0]
	for i, it := range items {
		if direct != nil && direct[i] >= 0 {
			if v, ok := asItem(m.capture(direct[i]), it.Label, valid); ok {
				s.items[i] = v
				s.itemEnds = append(s.itemEnds, -1, -1)
				continue
			}
		}
		start := len(text)
		if it.Label {
			text = s.sanitize(appendLabel(text, it.Template, m), start, valid)
		} else {
			text = appendTemplate(text, it.Template, m)
		}
		if rewriters != nil && rewriters[i] >= 0 {
			text = s.rewrite(rewriters[i], text, start)
		}
		s.itemEnds = append(s.itemEnds, start, len(text))
	}
	s.itemText = text
	// Items are cut only now: appends above may have moved text's array.
	for i := range items {
		if start, end := s.itemEnds[2*i], s.itemEnds[2*i+1]; start >= 0 {
			s.items[i] = text[start:end:end]
		}
	}
}

// appendTemplate appends t rendered from the captures of m.
func appendTemplate(dst []byte, t config.Template, m *match) []byte {
	for _, part := range t {
		if part.Capture < 0 {
			dst = append(dst, part.Literal...)
		} else {
			dst = append(dst, m.capture(part.Capture)...)
		}
	}
	return dst
}

// labelRender is how much of a label value's template is rendered: sanitize keeps at most
// MaxLabelValueLen bytes of what it makes of them, which come of as many bytes rendered at
// most (an invalid byte grows into U+FFFD), and a character that starts among them ends
// within utf8.UTFMax-1 bytes more.
const labelRender = MaxLabelValueLen + utf8.UTFMax - 1

// appendLabel is appendTemplate for a label value, which renders no more than sanitize
// keeps (labelRender): a template of many references, each as long as the line, costs
// no more than one, where it cost their sum on every line.
func appendLabel(dst []byte, t config.Template, m *match) []byte {
	limit := len(dst) + labelRender
	for _, part := range t {
		room := limit - len(dst)
		if room <= 0 {
			break
		}
		if part.Capture < 0 {
			dst = append(dst, part.Literal[:min(len(part.Literal), room)]...)
		} else {
			v := m.capture(part.Capture)
			dst = append(dst, v[:min(len(v), room)]...)
		}
	}
	return dst
}

// sanitize makes key[start:] valid UTF-8, unless the caller knows it is, and at most
// MaxLabelValueLen bytes. The usual case, a short value known to be valid, is decided
// inline; the rest is in fixValue.
func (s *scratch) sanitize(key []byte, start int, valid bool) []byte {
	if valid && len(key)-start <= MaxLabelValueLen {
		return key
	}
	return s.fixValue(key, start, valid)
}

// fixValue is sanitize for a value that may be invalid or too long.
func (s *scratch) fixValue(key []byte, start int, valid bool) []byte {
	if !valid && !utf8.Valid(key[start:]) {
		s.fix = append(s.fix[:0], key[start:]...)
		key = appendValidUTF8(key[:start], s.fix)
	}
	return key[:start+capLen(key[start:])]
}

// capLen is the length of v as a label value: at most MaxLabelValueLen bytes, cut at the
// start of a character.
func capLen[S ~string | ~[]byte](v S) int {
	if len(v) <= MaxLabelValueLen {
		return len(v)
	}
	end := MaxLabelValueLen
	for !utf8.RuneStart(v[end]) {
		end--
	}
	return end
}

// appendValidUTF8 appends src with each byte that is not part of valid UTF-8 replaced by
// U+FFFD, as encoding/json and go-logfmt decode such bytes in a string (and Go's range
// over a string reads them): a value reads the same whether a JSON or logfmt reader
// decoded it, an escape (nginx's \xHH) was undone, or it came raw from a line.
func appendValidUTF8(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		if src[i] < utf8.RuneSelf {
			dst = append(dst, src[i])
			i++
			continue
		}
		if _, w := utf8.DecodeRune(src[i:]); w == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
			i++
		} else {
			dst = append(dst, src[i:i+w]...)
			i += w
		}
	}
	return dst
}
