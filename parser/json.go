package parser

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// jsonExtractor reads the fields rules use from lines that are each one JSON object, in one
// pass over the line: it validates the whole document as encoding/json would, descends
// only into objects on the way to a field, and decodes only the values of fields (a string
// with escapes into the scratch buffer, every other value as its text). Nothing else of
// the document is decoded.
type jsonExtractor struct {
	root jsonNode
}

// jsonNode is one key on the way to fields: a trie over the fields' key paths.
type jsonNode struct {
	key string
	// slot is the capture slot of the field ending here, 0 when none does.
	slot     int
	children []*jsonNode
	// byLen lists children by their key's length: a key is compared only with the few
	// (mostly one or none) of its length, not with every child.
	byLen [][]*jsonNode
	// subtree lists the slots at and under this node: they are cleared whenever the key
	// appears, so that of duplicate keys the last one wins, as in encoding/json.
	subtree []int
}

// maxJSONDepth is encoding/json's nesting limit; deeper documents are malformed there too.
const maxJSONDepth = 10000

// newJSONExtractor builds the trie for paths; paths[i] fills slot i+1.
func newJSONExtractor(paths [][]string) *jsonExtractor {
	x := &jsonExtractor{}
	for i, segs := range paths {
		if segs == nil {
			continue // a derived capture's slot
		}
		n := &x.root
		for _, seg := range segs {
			var next *jsonNode
			for _, c := range n.children {
				if c.key == seg {
					next = c
					break
				}
			}
			if next == nil {
				next = &jsonNode{key: seg}
				n.children = append(n.children, next)
				for len(n.byLen) <= len(seg) {
					n.byLen = append(n.byLen, nil)
				}
				n.byLen[len(seg)] = append(n.byLen[len(seg)], next)
			}
			next.subtree = append(next.subtree, i+1)
			n = next
		}
		n.slot = i + 1
	}
	return x
}

// jsonScan is the state of one extraction.
type jsonScan struct {
	line  []byte
	i     int
	depth int
	vals  []byte // decoded strings, which caps index from len(line) on
	caps  []int
	key   []byte // a key with escapes, decoded
	// mayDecode is set by str when the string it scanned holds an escape or a non-ASCII
	// byte: only then can its decoded text differ from its bytes.
	mayDecode bool
}

// extract reads line into caps (slot k at caps[2k:2k+2], -1 when absent). A value that
// reads as its own bytes (nearly all of them) is captured where it is in line; a string
// that decodes to other bytes is decoded into sc.vals and indexed as if sc.vals followed
// line (text.more), so no line is copied. It returns what caps index, and false when the
// line is not one JSON object.
func (x *jsonExtractor) extract(line []byte, caps []int, sc *scratch) (text, bool) {
	for i := range caps {
		caps[i] = -1
	}
	s := jsonScan{line: line, vals: sc.vals[:0], caps: caps, key: sc.jsonKey[:0]}
	s.ws()
	ok := s.i < len(line) && line[s.i] == '{' && s.object(&x.root)
	s.ws()
	sc.vals, sc.jsonKey = s.vals, s.key
	if !ok || s.i != len(line) {
		return text{}, false
	}
	return text{line, sc.vals}, true
}

func (s *jsonScan) ws() {
	for s.i < len(s.line) && jsonSpace[s.line[s.i]] {
		s.i++
	}
}

// jsonSpace marks JSON's whitespace: one lookup tells the common case, none, apart.
var jsonSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// object scans the object at s.i, extracting the fields under n (nil: none).
func (s *jsonScan) object(n *jsonNode) bool {
	if s.depth++; s.depth > maxJSONDepth {
		return false
	}
	ok := s.members(n)
	s.depth--
	return ok
}

// members scans an object's members after its '{'.
func (s *jsonScan) members(n *jsonNode) bool {
	s.i++ // '{'
	s.ws()
	if s.i < len(s.line) && s.line[s.i] == '}' {
		s.i++
		return true
	}
	for {
		if s.i >= len(s.line) || s.line[s.i] != '"' {
			return false
		}
		kstart := s.i + 1
		if !s.str() {
			return false
		}
		var child *jsonNode
		if n != nil && len(n.children) > 0 {
			child = n.child(s.keyText(s.line[kstart:s.i-1], s.mayDecode))
		}
		s.ws()
		if s.i >= len(s.line) || s.line[s.i] != ':' {
			return false
		}
		s.i++
		s.ws()
		if child == nil {
			if !s.value(nil) {
				return false
			}
		} else {
			for _, slot := range child.subtree {
				s.caps[2*slot], s.caps[2*slot+1] = -1, -1
			}
			start := s.i
			if !s.value(child) {
				return false
			}
			if child.slot > 0 {
				s.capture(child.slot, start, s.mayDecode)
			}
		}
		if more, ok := s.next('}'); !more {
			return ok
		}
	}
}

func (n *jsonNode) child(key []byte) *jsonNode {
	if len(key) >= len(n.byLen) {
		return nil
	}
	for _, c := range n.byLen[len(key)] {
		if c.key == string(key) {
			return c
		}
	}
	return nil
}

// keyText returns a key's text as encoding/json decodes it; mayDecode is str's verdict on it.
func (s *jsonScan) keyText(raw []byte, mayDecode bool) []byte {
	if !mayDecode || !needsDecoding(raw) {
		return raw
	}
	s.key, _ = appendUnquoted(s.key[:0], raw, false)
	return s.key
}

// value scans any value at s.i; an object descends into n's fields.
func (s *jsonScan) value(n *jsonNode) bool {
	if s.i >= len(s.line) {
		return false
	}
	switch c := s.line[s.i]; {
	case c == '{':
		return s.object(n)
	case c == '[':
		return s.array()
	case c == '"':
		return s.str()
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *jsonScan) array() bool {
	if s.depth++; s.depth > maxJSONDepth {
		return false
	}
	ok := s.elements()
	s.depth--
	return ok
}

// elements scans an array's elements after its '['.
func (s *jsonScan) elements() bool {
	s.i++ // '['
	s.ws()
	if s.i < len(s.line) && s.line[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value(nil) {
			return false
		}
		if more, ok := s.next(']'); !more {
			return ok
		}
	}
}

// next reads what follows a member or element: a ',' before another (more), or the
// container's closing byte (done, ok); anything else is malformed.
func (s *jsonScan) next(closing byte) (more, ok bool) {
	s.ws()
	if s.i >= len(s.line) {
		return false, false
	}
	switch s.line[s.i] {
	case ',':
		s.i++
		s.ws()
		return true, true
	case closing:
		s.i++
		return false, true
	}
	return false, false
}

// plainASCIIByte marks the ASCII bytes a JSON string holds as themselves: not '"', '\\'
// nor a control character. The common run of them is skipped by table lookups alone; a
// byte of a multibyte character stops it, to be noted.
var plainASCIIByte = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str scans a string at s.i (its opening quote) to just past its closing quote, and sets
// s.mayDecode.
func (s *jsonScan) str() bool {
	line := s.line
	i := s.i + 1
	s.mayDecode = false
	for {
		i = skipPlainASCII(line, i)
		if i >= len(line) {
			return false
		}
		switch c := line[i]; {
		case c == '"':
			s.i = i + 1
			return true
		case c >= utf8.RuneSelf:
			s.mayDecode = true
			i++
		case c == '\\':
			s.mayDecode = true
			if i+1 >= len(line) {
				return false
			}
			switch line[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if hex4(line[i:]) < 0 {
					return false
				}
				i += 6
			default:
				return false
			}
		default: // a control character
			return false
		}
	}
}

// skipPlainASCII returns the index of the first byte of line from i on that plainASCIIByte
// does not mark, or len(line): eight bytes at a time while eight remain. In the word x, a
// byte below 0x20, or equal to '"' or '\\' after the xor, wraps when the bytewise
// subtraction reaches it and so sets its top bit, as a multibyte character's bytes have
// theirs. Borrows only travel upward, so no byte below the first of those is marked, and
// the lowest top bit set is that byte's.
func skipPlainASCII(line []byte, i int) int {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	for i+8 <= len(line) {
		x := binary.LittleEndian.Uint64(line[i:])
		if t := ((x ^ ones*'"' - ones) | (x ^ ones*'\\' - ones) | (x - ones*' ') | x) & tops; t != 0 {
			return i + bits.TrailingZeros64(t)/8
		}
		i += 8
	}
	for i < len(line) && plainASCIIByte[line[i]] {
		i++
	}
	return i
}

// number scans -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jsonScan) number() bool {
	b, i := s.line, s.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	s.i = i
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (s *jsonScan) literal(word string) bool {
	if len(s.line)-s.i < len(word) || string(s.line[s.i:s.i+len(word)]) != word {
		return false
	}
	s.i += len(word)
	return true
}

// capture records the value from start to s.i (already validated) in slot: a string
// decoded, null empty, anything else as its text. mayDecode is str's verdict on a string.
func (s *jsonScan) capture(slot, start int, mayDecode bool) {
	end := s.i
	switch s.line[start] {
	case '"':
		start, end = start+1, end-1
		if mayDecode && needsDecoding(s.line[start:end]) {
			at := len(s.line) + len(s.vals)
			s.vals, _ = appendUnquoted(s.vals, s.line[start:end], false)
			start, end = at, len(s.line)+len(s.vals)
		}
	case 'n':
		end = start
	}
	s.caps[2*slot], s.caps[2*slot+1] = start, end
}
