// Package formatscan reads the lines of a web server's text log format by the format's
// pieces (logformat.Piece) instead of running the regex it compiles to: each value runs up
// to the next occurrence of the character that ends it, found with bytes.IndexByte, and
// the literal text between values is compared in place. The captures are those the
// format's regex gives under regexp's leftmost-first semantics, on every line but those
// of a value of words past maxItems reads (see below).
//
// That holds because every choice the regex has on a line of the usual formats is decided
// by the next character: a value stops at its stop character, which it cannot hold and
// the text after it starts with; an escape sequence starts at a backslash the value would
// otherwise not take; an optional part at the end starts with a space where the line's end
// is the only other way on. Where that is not so the scanner is not built (Compile fails)
// and the caller keeps its regex. The choices left open on some lines, where a value
// could end at more than one place (an upstream list at a " : " that the text after it
// also starts with, values joined by ", ", a value of words, logformat.Piece.Words), are
// read by reading the rest of the line from each end in the regex's order, up to maxItems
// times a line; past that, a line is handed to the regex matcher given to Compile, which
// reads a value of words as one word, and one that fits only with such a value ending
// past maxItems of its next ends does not fit.
package formatscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf8"

	"github.com/logwindow/logwindow_exporter/config/logformat"
)

// ErrUnsupported is wrapped by Compile's error for a format whose lines the scanner cannot
// read exactly as its regex does; the caller runs the regex.
var ErrUnsupported = errors.New("formatscan: the format's regex has choices the next character does not decide")

// Matcher is a matcher of the format's regex, filling caps as regexp.FindSubmatchIndex does.
type Matcher interface {
	Match(line []byte, caps []int) bool
}

// Scanner reads the lines of one text format. It holds no mutable state and is safe for
// concurrent use.
type Scanner struct {
	pieces []piece
	esc    logformat.Escape
	ncap   int
	// regex reads the lines the scanner leaves undecided with the value of words, if
	// the format has one, read as one word.
	regex Matcher
	// head reads a line up to the end of the first word of the format's value of words
	// (logformat.Piece.Words), nil for a format without one: the pieces before it, which
	// have no choice (logformat's wordsAfterFixed), and it. words is its piece, lead the
	// byte the value after its then starts with, 0 when that is not one byte (an Apache
	// %t's '['): an end where the line has another is not read on from.
	head  *Scanner
	words int
	lead  byte
}

// piece is a logformat.Piece as the scanner runs it.
type piece struct {
	kind logformat.PieceKind
	// lit is a literal's text, or a value's stop character encoded.
	lit []byte
	// stop is the stop character when it is one byte other than NUL (ASCII), else 0:
	// lit is then searched for.
	stop     byte
	group    int
	optional bool
	// byteStop: the piece is a value up to an ASCII stop, not optional, the piece
	// nearly every value of a usual format is, which scan reads apart from the rest with
	// capture its first slot in caps: 2*group, or 0 for a value not captured, whose slots
	// a match sets last.
	byteStop bool
	capture  int
	// words is how many words of the line from the value's start are looked at for its
	// stop before bytes.IndexByte is called past them: the value is mostly that short.
	words int
	// spaces are the spaces a Spaced value holds.
	spaces int
	// then is the literal text that follows a value, read in the same step; nil when the
	// value is followed by an optional part, another value or nothing.
	then []byte
	// thenWord is then's first 8 bytes (or fewer) as a little-endian word and thenMask
	// the bytes of the word that then has: where 8 bytes of the line are left, a then of
	// at most 8 bytes (thenShort) is compared in one step.
	thenWord, thenMask uint64
	thenShort          bool
	// fewest: a Joined value takes the fewest items the rest of the line fits with.
	fewest bool
}

// Compile builds the scanner of text format f, which hands the lines it cannot decide to
// regex (a matcher of f.MisfitRegex: f.Regex with a value of words read as one word); an
// error wrapping ErrUnsupported when some choice of the regex is not decided by the next
// character (see the package comment).
func Compile(f *logformat.Format, regex Matcher) (*Scanner, error) {
	if f.JSON() {
		return nil, fmt.Errorf("%w: %s is read as JSON", ErrUnsupported, f.Describe())
	}
	s := &Scanner{esc: f.Escape, ncap: 2 * (len(f.Captures) + 1), regex: regex, words: -1}
	if err := f.Undecided(); err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrUnsupported, f.Describe(), err)
	}
	for _, p := range f.Pieces {
		if p.Words {
			if p.Group == 0 || s.words >= 0 {
				return nil, fmt.Errorf("%w: %s: a value of words not captured, or two", ErrUnsupported, f.Describe())
			}
			s.words = len(s.pieces)
		}
		sp := piece{kind: p.Kind, lit: []byte(p.Lit), group: p.Group, optional: p.Optional, capture: 2 * p.Group, spaces: p.Spaces, fewest: p.Fewest}
		if p.Kind == logformat.PieceUntil || p.Kind == logformat.PieceUntilEscaped {
			sp.lit = utf8.AppendRune(nil, p.Stop)
			if p.Stop < utf8.RuneSelf {
				sp.stop = byte(p.Stop)
			}
		}
		if p.Kind == logformat.PieceUntil && sp.stop != 0 && !p.Optional {
			sp.byteStop = true
			if p.Group > 0 {
				sp.words = wordsOf(f, f.Captures[p.Group-1].Name)
			}
		}
		if n := len(s.pieces); n > 0 && p.Kind == logformat.PieceLiteral && !p.Optional && s.pieces[n-1].kind != logformat.PieceLiteral {
			s.pieces[n-1].setThen(sp.lit)
			continue
		}
		s.pieces = append(s.pieces, sp)
	}
	if w := s.words; w >= 0 {
		s.head = &Scanner{pieces: s.pieces[: w+1 : w+1], esc: s.esc, ncap: s.ncap, words: -1}
		if next := s.pieces[w+1:]; s.pieces[w].then != nil && len(next) > 0 && next[0].kind == logformat.PieceBracketed {
			s.lead = '['
		}
	}
	return s, nil
}

// wordsOf is how many words of a line the value of variable name mostly ends within,
// its stop included: one for a number (logformat.Format.Numeric: a status, a byte
// count, a time), and for nginx's $remote_user, which is "-" but for requests with basic
// authentication; two for a client address, an IPv4 address of at most 15 bytes; four
// for the local times of nginx, 25 and 26 bytes. 0 for the others, mostly longer: a word
// looked at before the call costs more than it spares there.
func wordsOf(f *logformat.Format, name string) int {
	switch {
	case f.Numeric(name):
		return 1
	case f.Server == logformat.Apache:
		return 0
	case name == "remote_user":
		return 1
	case name == "remote_addr" || name == "realip_remote_addr":
		return 2
	case name == "time_local" || name == "time_iso8601":
		return 4
	}
	return 0
}

// setThen makes then the literal text the value of sp is followed by.
func (sp *piece) setThen(then []byte) {
	sp.then = then
	sp.thenShort = len(then) <= 8
	for i, c := range then[:min(len(then), 8)] {
		sp.thenWord |= uint64(c) << (8 * i)
		sp.thenMask |= 0xff << (8 * i)
	}
}

// result is what a scan tells of a line.
type result uint8

const (
	noMatch result = iota
	matched
	// undecided: the line was read maxItems times from a value's next ends, and fitted
	// with none of them.
	undecided
)

// Match reports whether line matches the format's regex and fills caps as
// regexp.FindSubmatchIndex does: caps must have room for 2*(len(f.Captures)+1) ints; after
// a false result its content is unspecified.
func (s *Scanner) Match(line []byte, caps []int) bool {
	if len(caps) < s.ncap {
		panic(fmt.Sprintf("formatscan: caps has %d ints, the format needs %d", len(caps), s.ncap))
	}
	res := s.scanFrom(line, caps, 0, 0, nil)
	if res == matched {
		return true
	}
	return s.misfit(line, caps, res)
}

// misfit decides a line that did not fit with the value of words, if the format has one,
// read as one word: a line read maxItems times to no end (undecided) is handed to the
// regex, which reads that value as one word too (logformat.Format.MisfitRegex); then the
// scan reads the line on with the value's next ends, up to maxItems more times, past
// which the line does not fit: the regex's reading of those, the fewest words the line
// fits with, would cost a crafted user name or path the square of its length.
func (s *Scanner) misfit(line []byte, caps []int, res result) bool {
	if res == undecided && s.regex.Match(line, caps) {
		return true
	}
	if s.head == nil {
		return false
	}
	tries := maxItems
	return s.moreWords(line, caps, &tries) == matched
}

// moreWords reads a line that did not fit with the value of words' first word with
// more of its words, the fewest the rest of the line fits with (the regex's
// `(?:[^ ]* )*?[^ ]*`): it ends at each next space after which the line has the text
// after the value (and lead), and the rest of the line is read from there; before a
// part the line may leave out, it may run to the end of the line. Each read takes one of
// tries, shared with the choices of the rest: undecided when none is left.
//
// So a line costs at most 2*maxItems+2 reads of it, each linear in its length: the
// scan's (maxItems for its lists and values joined by ", ", one more), head's, and
// maxItems here; and the text after the value is looked for once over the line; and,
// where the scan left it undecided, the regex's, with the value of one word. A line
// of 64 KiB crafted to fail every end, a user name of " [x" repeated, takes some 25 µs,
// where the regex takes 23 ms (BenchmarkCraftedLines).
func (s *Scanner) moreWords(line []byte, caps []int, tries *int) result {
	sp := &s.pieces[s.words]
	// The slot of the value's end shows whether head reached the value: the line may
	// stop fitting before it, and caps may hold another line's.
	caps[sp.capture+1] = -1
	s.head.scanFrom(line, caps, 0, 0, nil)
	start, end := caps[sp.capture], caps[sp.capture+1]
	if end < 0 {
		return noMatch
	}
	for end < len(line) {
		switch {
		case sp.then == nil:
			if j := bytes.IndexByte(line[end+1:], ' '); j >= 0 {
				end += 1 + j
			} else {
				end = len(line)
			}
		default:
			// The text after the value starts with a space (Format.Undecided): the
			// next end is where it is found.
			j := bytes.Index(line[end+1:], sp.then)
			if j < 0 {
				return noMatch
			}
			end += 1 + j
			if after := end + len(sp.then); s.lead != 0 && (after == len(line) || line[after] != s.lead) {
				continue
			}
		}
		if res := s.rest(line, caps, s.words, start, end, tries); res != noMatch {
			return res
		}
	}
	return noMatch
}

// Regex returns the matcher the scanner hands undecided lines to.
func (s *Scanner) Regex() Matcher { return s.regex }

// WithRegex returns the scanner handing undecided lines to regex instead (a matcher of the
// same regex recording fewer groups).
func (s *Scanner) WithRegex(regex Matcher) *Scanner {
	t := *s
	t.regex = regex
	return &t
}

// scanFrom reads line from byte p along the pieces from piece from on, taking at each
// choice the way the regex prefers; tries is what is left of the reads of the rest of the
// line its choices may make (nil: none made yet).
func (s *Scanner) scanFrom(line []byte, caps []int, from, p int, tries *int) result {
	pieces := s.pieces[from:]
	for i := range pieces {
		sp := &pieces[i]
		if sp.byteStop {
			// The value runs to its stop, found in the words looked at first, else by a
			// call (every value held in a register is stored before a call and loaded
			// after it, which costs more than a short value's search).
			start, j := p, -1
			w := 0
			for ; w < sp.words && p+8*w+8 <= len(line); w++ {
				x := binary.LittleEndian.Uint64(line[p+8*w:p+8*w+8:p+8*w+8]) ^ lows*uint64(sp.stop)
				// The lowest byte flagged is the first zero byte of x, where the line
				// holds the stop (a flag above a zero byte may be false, one below
				// never is).
				if found := (x - lows) &^ x & highs; found != 0 {
					j = 8*w + bits.TrailingZeros64(found)/8
					break
				}
			}
			if j < 0 {
				if k := bytes.IndexByte(line[p+8*w:], sp.stop); k >= 0 {
					j = 8*w + k
				}
			}
			if j < 0 {
				if sp.then != nil {
					return noMatch // the text after the value starts with its stop (Undecided)
				}
				p = len(line)
			} else {
				p += j
			}
			caps[sp.capture], caps[sp.capture+1] = start, p
			if sp.then != nil {
				// The text after the value starts with its stop (Format.Undecided),
				// found at p. A short one is compared as a word.
				if sp.thenShort && p+8 <= len(line) {
					if binary.LittleEndian.Uint64(line[p:p+8:p+8])&sp.thenMask != sp.thenWord {
						return noMatch
					}
				} else if !hasPrefix(line[p:], sp.then) {
					return noMatch
				}
				p += len(sp.then)
			}
			continue
		}
		if sp.optional && p == len(line) {
			// The line ends before this part, which the regex then leaves out.
			for _, q := range pieces[i:] {
				if q.group > 0 {
					caps[2*q.group], caps[2*q.group+1] = -1, -1
				}
			}
			break
		}
		start := p
		switch sp.kind {
		case logformat.PieceLiteral:
			if !hasPrefix(line[p:], sp.lit) {
				return noMatch
			}
			p += len(sp.lit)
		case logformat.PieceUntil:
			// A stop of more than a byte (not ASCII), or an optional value's.
			p = until(line, p, sp.lit)
		case logformat.PieceUntilEscaped:
			if p = s.untilEscaped(line, p, sp.stop); p < 0 {
				return noMatch
			}
		case logformat.PieceRest:
			if bytes.IndexByte(line[p:], '\n') >= 0 {
				return noMatch // `.` does not take a newline, and the line must end here
			}
			p = len(line)
		case logformat.PieceList:
			var colon bool
			if p, colon = list(line, p); colon {
				return s.mostItems(line, caps, from+i, start, p, tries)
			}
		case logformat.PieceSpaced:
			j := bytes.IndexByte(line[p:], ' ')
			if j < 0 {
				return noMatch
			}
			p += j + 1
			for range sp.spaces - 1 {
				if j = bytes.IndexByte(line[p:], ' '); j < 0 {
					return noMatch
				}
				p += j + 1
			}
			if j = bytes.IndexByte(line[p:], ' '); j < 0 {
				p = len(line)
			} else {
				p += j
			}
		case logformat.PieceJoined:
			if sp.fewest {
				return s.fewestItems(line, caps, from+i, p, tries)
			}
			var joined bool
			if p, joined = joinedEnd(line, p); joined {
				return s.mostItems(line, caps, from+i, start, p, tries)
			}
		case logformat.PieceBracketed:
			if p == len(line) || line[p] != '[' {
				return noMatch
			}
			j := bytes.IndexByte(line[p+1:], ']')
			if j < 0 {
				return noMatch
			}
			p += j + 2
		}
		if sp.group > 0 {
			caps[2*sp.group], caps[2*sp.group+1] = start, p
		}
		if sp.then != nil {
			if !hasPrefix(line[p:], sp.then) {
				return noMatch
			}
			p += len(sp.then)
		}
	}
	if p != len(line) {
		return noMatch
	}
	caps[0], caps[1] = 0, len(line)
	return matched
}

// maxItems is how many reads of the rest of the line a scan makes from a value's next
// ends before it leaves the line undecided: X-Forwarded-For lists a few proxies, an
// upstream list goes past a " : " after an internal redirect, a user name or a path holds
// a space or two, and each try reads the rest of the line again. The bound is on the
// line's tries, not each value's: those of a value after another are made for each of
// the other's, and two such values would otherwise make maxItems² reads of a line crafted
// to fail them.
const maxItems = 16

// rest reads the line on from piece i's value, line[start:end], and the text after it:
// one of the line's tries, undecided when none is left.
func (s *Scanner) rest(line []byte, caps []int, i, start, end int, tries *int) result {
	if *tries == 0 {
		return undecided
	}
	*tries--
	sp := &s.pieces[i]
	if sp.group > 0 {
		caps[2*sp.group], caps[2*sp.group+1] = start, end
	}
	if sp.then != nil && !hasPrefix(line[end:], sp.then) {
		return noMatch
	}
	return s.scanFrom(line, caps, i+1, end+len(sp.then), tries)
}

// fewestItems reads the rest of the line from piece i, a value of items joined by ", "
// starting at p, with the fewest items the rest fits with, as the regex's lazy
// repetition does: one more each time it does not fit and the value's last item ends
// with a comma before a space. Past maxItems tries on the line, undecided.
func (s *Scanner) fewestItems(line []byte, caps []int, i, p int, tries *int) result {
	if tries == nil {
		left := maxItems
		tries = &left
	}
	start := p
	for {
		end := len(line)
		if j := bytes.IndexByte(line[p:], ' '); j >= 0 {
			end = p + j
		}
		if res := s.rest(line, caps, i, start, end, tries); res != noMatch {
			return res
		}
		if end == len(line) || end == p || line[end-1] != ',' {
			return noMatch
		}
		p = end + 1
	}
}

// mostItems reads the rest of the line from piece i, an upstream list that went past a
// " : " or items joined by ", " before a value read to the end of the line, from start,
// with the most items the rest fits with, as the regex's greedy repetition does: read
// whole, to end, then ending at each earlier place the text after it may start at, the
// latest first: a list's " : " (a ", " is no space), joined items' space after a comma.
// Past maxItems tries on the line, undecided.
func (s *Scanner) mostItems(line []byte, caps []int, i, start, end int, tries *int) result {
	if tries == nil {
		left := maxItems
		tries = &left
	}
	for end >= 0 {
		if res := s.rest(line, caps, i, start, end, tries); res != noMatch {
			return res
		}
		if s.pieces[i].kind == logformat.PieceList {
			end = lastColon(line, start, end)
		} else if k := bytes.LastIndexByte(line[start:end], ' '); k >= 0 {
			end = start + k
		} else {
			end = -1
		}
	}
	return noMatch
}

// Word-at-a-time constants: a byte of ones, and the top bit of every byte.
const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// until is the end of a value starting at p that runs up to its stop character, lit
// encoded (one that is not a byte scan searches for itself), or the end of the line.
func until(line []byte, p int, lit []byte) int {
	if j := bytes.Index(line[p:], lit); j >= 0 {
		return p + j
	}
	return len(line)
}

// short is the longest text hasPrefix compares itself.
const short = 16

// hasPrefix is bytes.HasPrefix, faster on the short text between values most is.
func hasPrefix(b, prefix []byte) bool {
	if len(b) < len(prefix) {
		return false
	}
	if len(prefix) > short {
		return bytes.Equal(b[:len(prefix)], prefix)
	}
	for i, c := range prefix {
		if b[i] != c {
			return false
		}
	}
	return true
}

// untilEscaped is the end of an escaped value starting at p: at its stop character (an
// ASCII one, never a backslash) outside the escape sequences, which every backslash starts;
// -1 at a backslash starting none, which the regex then cannot read past.
//
// The stop found is searched for again only past an escape sequence that held it (an
// Apache `\"`): searched again after every sequence, a value of many would be read once
// per sequence, its time the square of its length.
func (s *Scanner) untilEscaped(line []byte, p int, stop byte) int {
	end := -1
	for {
		if p > end {
			end = len(line)
			if j := bytes.IndexByte(line[p:], stop); j >= 0 {
				end = p + j
			}
		}
		k := bytes.IndexByte(line[p:end], '\\')
		if k < 0 {
			return end
		}
		p += k
		n := s.esc.SequenceLen(line[p:])
		if n == 0 {
			return -1
		}
		p += n
	}
}

// list is the end of an upstream list starting at p: items without ' ' or ',', each
// after ", " or " : " (colon reports one of the latter, where the regex could also have
// ended the list).
func list(line []byte, p int) (end int, colon bool) {
	for {
		for p < len(line) && line[p] != ' ' && line[p] != ',' {
			p++
		}
		switch rest := line[p:]; {
		case bytes.HasPrefix(rest, listComma):
			p += len(listComma)
		case bytes.HasPrefix(rest, listColon):
			p += len(listColon)
			colon = true
		default:
			return p, colon
		}
	}
}

// joinedEnd is where items joined by ", " that start at p end: at the first space not
// after a comma, or the end of line; joined says that one was, where the value could also
// have ended, as the regex may end it when the line does not fit otherwise.
func joinedEnd(line []byte, p int) (end int, joined bool) {
	for {
		j := bytes.IndexByte(line[p:], ' ')
		if j < 0 {
			return len(line), joined
		}
		if j == 0 || line[p+j-1] != ',' {
			return p + j, joined
		}
		p, joined = p+j+1, true
	}
}

// lastColon is where the last " : " of an upstream list read from p starts before end, an
// end of the list; -1 if none does. Every ' ' or ',' there starts a separator.
func lastColon(line []byte, p, end int) int {
	last := -1
	for {
		for p < end && line[p] != ' ' && line[p] != ',' {
			p++
		}
		if p >= end {
			return last
		}
		if line[p] == ' ' {
			last = p
			p += len(listColon)
		} else {
			p += len(listComma)
		}
	}
}

var (
	listComma = []byte(", ")
	listColon = []byte(" : ")
)
