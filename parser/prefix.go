package parser

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxPrefixBytes bounds the part of a line Explain follows a regex through when it does not
// match: the work is bytes × regex instructions, and lines longer than the input's line cap
// (64 KiB by default) never reach the rules anyway.
const MaxPrefixBytes = 64 << 10

// Prefix says how far a regex that does not match a line got through it.
//
// line[Start:End] is the longest stretch of the line that the regex can read from where an
// attempt to match starts: some string beginning with it matches the regex at Start, and
// no longer stretch has that property (of equal ones, the earliest). For a regex anchored
// with ^ Start is 0, so line[:End] is the longest prefix of the line the regex could still
// match if the line went on differently from End. Expected lists what the regex could
// have taken at End (up to a few alternatives: characters, or an assertion such as the end
// of the line); the line has something else there, or ends. Open names the capture group
// the attempt was inside at End, if any, and Captures are the named groups it had
// completed on the way.
//
// It is found by running the regex's own instructions (regexp/syntax) over the line as a
// set of threads, one step per character, a new attempt starting at every position as in
// an unanchored search: every arrival of a thread at a position is a stretch the regex can
// read. That costs at most the line's length times the number of instructions; only the
// first MaxPrefixBytes of a line are followed (Truncated is then set).
type Prefix struct {
	Start, End int
	Expected   []string
	Open       string
	Captures   []Capture
	Truncated  bool
	// Words names the capture of a log format's value of words (logformat.Piece.Words)
	// when the format's regex fits the line with that value ending past the scan's tries
	// of its ends (formatscan's maxItems): the line does not fit, and the rest of Prefix
	// is how far it fits with the value of one word. "" for any other line.
	Words string
}

// maxExpected bounds how many alternatives Prefix.Expected lists.
const maxExpected = 6

type thread struct {
	pc   uint32
	caps []int // shared until a capture instruction writes to it; caps[0] is its start
}

type prefixRun struct {
	prog *syntax.Prog
	line []byte
	seen []int // per pc: 1 + the position it was last added at
	// The longest stretch so far: its start and end, and at its end the caps of the first
	// (highest-priority) thread to get there, the instructions waiting for a character and
	// the assertions that failed.
	start, end int
	caps       []int
	waiting    []uint32
	failed     []syntax.EmptyOp
}

// regexProgram is a regex as longestPrefix follows it: its syntax program and the names
// of its groups; and for a log format's regex that reads a value of words, which the
// program reads as one word, that regex and the value's capture (Prefix.Words).
type regexProgram struct {
	prog      *syntax.Prog
	names     []string
	words     *regexp.Regexp
	wordsName string
}

// program compiles re for longestPrefix; nil if it cannot, which a compiled regexp never
// gives.
func program(re *regexp.Regexp) *regexProgram {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil
	}
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return nil
	}
	return &regexProgram{prog: prog, names: re.SubexpNames()}
}

// longestPrefix computes the Prefix of line for the program of a regex that does not match
// line (see Prefix); nil without a program.
func longestPrefix(rp *regexProgram, line []byte) *Prefix {
	if rp == nil {
		return nil
	}
	prog := rp.prog
	out := &Prefix{}
	if rp.words != nil && rp.words.Match(line) {
		out.Words = rp.wordsName
	}
	if len(line) > MaxPrefixBytes {
		line, out.Truncated = line[:MaxPrefixBytes], true
	}
	run := &prefixRun{prog: prog, line: line, seen: make([]int, len(prog.Inst)), start: -1}
	ncap := max(prog.NumCap, 2)
	var clist, nlist []thread
	for pos := 0; ; {
		// Threads of earlier attempts come first: they have priority, as in leftmost-first
		// matching. ^ makes the attempts after position 0 fail at once.
		caps := make([]int, ncap)
		for i := range caps {
			caps[i] = -1
		}
		caps[0] = pos
		clist = run.add(clist, uint32(prog.Start), pos, caps)
		if pos >= len(line) {
			break
		}
		r, w := utf8.DecodeRune(line[pos:])
		nlist = nlist[:0]
		for _, t := range clist {
			if prog.Inst[t.pc].MatchRune(r) {
				nlist = run.add(nlist, prog.Inst[t.pc].Out, pos+w, t.caps)
			}
		}
		clist, nlist = nlist, clist
		pos += w
	}
	out.Start, out.End = run.start, run.end
	out.Expected = run.expected()
	names := rp.names
	open := -1
	for i := 1; i < len(names) && 2*i+1 < len(run.caps); i++ {
		start, end := run.caps[2*i], run.caps[2*i+1]
		switch {
		case start >= 0 && end >= 0 && names[i] != "":
			out.Captures = append(out.Captures, Capture{Name: names[i], Value: append([]byte(nil), line[start:end]...), Matched: true})
		case start >= 0 && end < 0 && (open < 0 || start >= run.caps[2*open]):
			open = i
		}
	}
	if open > 0 {
		out.Open = names[open]
		if out.Open == "" {
			out.Open = "#" + strconv.Itoa(open)
		}
	}
	return out
}

// add puts the thread at pc on list with everything it reaches at position pos without
// reading a character, and records the longest stretch read.
func (run *prefixRun) add(list []thread, pc uint32, pos int, caps []int) []thread {
	if run.seen[pc] == pos+1 {
		return list
	}
	run.seen[pc] = pos + 1
	inst := &run.prog.Inst[pc]
	switch inst.Op {
	case syntax.InstAlt, syntax.InstAltMatch:
		list = run.add(list, inst.Out, pos, caps)
		return run.add(list, inst.Arg, pos, caps)
	case syntax.InstNop:
		return run.add(list, inst.Out, pos, caps)
	case syntax.InstCapture:
		if int(inst.Arg) < len(caps) {
			caps = append([]int(nil), caps...)
			caps[inst.Arg] = pos
		}
		return run.add(list, inst.Out, pos, caps)
	case syntax.InstEmptyWidth:
		if syntax.EmptyOp(inst.Arg)&^run.context(pos) != 0 {
			if run.reached(pos, caps) {
				run.failed = append(run.failed, syntax.EmptyOp(inst.Arg))
			}
			return list
		}
		return run.add(list, inst.Out, pos, caps)
	case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
		if run.reached(pos, caps) {
			run.waiting = append(run.waiting, pc)
		}
		return append(list, thread{pc: pc, caps: caps})
	}
	return list // InstFail; InstMatch cannot be reached on a line the regex does not match
}

// reached notes a thread of the attempt started at caps[0] stopping at pos, and reports
// whether that ends the longest stretch so far (a longer one starts a new record).
func (run *prefixRun) reached(pos int, caps []int) bool {
	switch n := pos - caps[0]; {
	case run.start < 0 || n > run.end-run.start:
		run.start, run.end, run.caps = caps[0], pos, caps
		run.waiting, run.failed = run.waiting[:0], run.failed[:0]
		return true
	case n == run.end-run.start && caps[0] == run.start:
		return true
	}
	return false
}

// context is the empty-width context at pos, with regexp's reading of invalid bytes.
func (run *prefixRun) context(pos int) syntax.EmptyOp {
	r1, r2 := rune(-1), rune(-1)
	if pos > 0 {
		r1, _ = utf8.DecodeLastRune(run.line[:pos])
	}
	if pos < len(run.line) {
		r2, _ = utf8.DecodeRune(run.line[pos:])
	}
	return syntax.EmptyOpContext(r1, r2)
}

// expected describes what the threads at the furthest position could have taken.
func (run *prefixRun) expected() []string {
	var out []string
	addOnce := func(s string) {
		for _, have := range out {
			if have == s {
				return
			}
		}
		if len(out) < maxExpected {
			out = append(out, s)
		}
	}
	for _, pc := range run.waiting {
		addOnce(describeInst(&run.prog.Inst[pc]))
	}
	for _, op := range run.failed {
		addOnce(describeEmpty(op))
	}
	return out
}

func describeInst(inst *syntax.Inst) string {
	switch inst.Op {
	case syntax.InstRuneAny:
		return "any character"
	case syntax.InstRuneAnyNotNL:
		return "any character but newline"
	case syntax.InstRune1:
		return strconv.QuoteRune(inst.Rune[0])
	}
	if len(inst.Rune) == 1 {
		// A single case-folded rune.
		return "(?i)" + strconv.QuoteRune(inst.Rune[0])
	}
	ranges, neg := inst.Rune, ""
	if ranges[0] == 0 && ranges[len(ranges)-1] == unicode.MaxRune {
		// A class taking nearly everything reads better as what it refuses: [^"].
		ranges, neg = complement(ranges), "^"
	}
	var b strings.Builder
	b.WriteString("[" + neg)
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		b.WriteString(classRune(lo))
		if hi != lo {
			b.WriteByte('-')
			b.WriteString(classRune(hi))
		}
	}
	b.WriteByte(']')
	return b.String()
}

// complement returns the ranges (sorted, inclusive pairs) not in rs, which starts at 0 and
// ends at unicode.MaxRune.
func complement(rs []rune) []rune {
	var out []rune
	for i := 1; i+1 < len(rs); i += 2 {
		out = append(out, rs[i]+1, rs[i+1]-1)
	}
	return out
}

// classRune writes a rune of a character class so that it reads back as regex syntax.
func classRune(r rune) string {
	switch {
	case r == utf8.MaxRune:
		return `\x{10FFFF}`
	case r < ' ' || r == 0x7f:
		return fmt.Sprintf(`\x%02x`, r)
	case strings.ContainsRune(`\-[]^`, r):
		return `\` + string(r)
	}
	return string(r)
}

func describeEmpty(op syntax.EmptyOp) string {
	switch {
	case op&syntax.EmptyEndText != 0:
		return "end of line ($)"
	case op&syntax.EmptyBeginText != 0:
		return "start of line (^)"
	case op&syntax.EmptyWordBoundary != 0:
		return `word boundary (\b)`
	case op&syntax.EmptyNoWordBoundary != 0:
		return `no word boundary (\B)`
	case op&syntax.EmptyEndLine != 0:
		return "end of line ((?m)$)"
	case op&syntax.EmptyBeginLine != 0:
		return "start of line ((?m)^)"
	}
	return "an empty-width assertion"
}
