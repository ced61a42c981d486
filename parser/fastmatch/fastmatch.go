// Package fastmatch runs the regular expressions typical of log parsing
// (literals, character classes and runs such as \S+ or [^"]*, capture
// groups, optional and repeated groups, anchors) several times faster than
// regexp, with exactly regexp's results.
//
// Compile decides on regexp's own simplified parse tree whether an
// expression is inside the supported subset; the caller keeps using regexp
// for anything else. The matcher is a backtracking matcher that tries
// alternatives in regexp's priority order, which gives Go's leftmost-first
// submatch semantics. Most of the speed comes from decisions taken at
// compile time: a run followed by something that cannot start with a rune
// of its class never gives anything back, and a choice whose branches start
// with different runes is decided by looking at one rune. Backtracking that
// remains is bounded by a budget proportional to the line; past it, or past a
// small fixed stack, Match hands the line to regexp, so results stay exact.
//
// Text is handled as regexp handles it: runes decoded with utf8.DecodeRune,
// an invalid byte being U+FFFD one byte wide.
package fastmatch

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
)

// ErrUnsupported is wrapped by Compile's error when the expression is valid
// but outside the specialised subset; errors.Is tells it apart from a syntax error.
var ErrUnsupported = errors.New("fastmatch: expression outside the specialised subset")

// Matcher matches one expression. It holds no mutable state and is safe for
// concurrent use.
type Matcher struct {
	re   *regexp.Regexp // for lines past the budget, and the group names
	prog []inst
	ncap int // 2 * (NumSubexp() + 1)
	// unset is ncap times -1, copied into caps before each try: cheaper than a loop.
	unset []int
	// anchored: only position 0 can start a match.
	anchored bool
	// prefix: every match starts with it; bytes.Index finds candidates.
	prefix []byte
	// start: the runes a match can start with, when there is no prefix and
	// the expression cannot match empty; nil means any position is a candidate.
	start *class
	// lead: the class of a leading x* (or x*?). A match starting anywhere
	// x* reaches from a failed start would have been found from that start
	// (x* could have consumed the difference), so the search resumes past it.
	lead *class
	// required: a literal every match contains; when prefilter is set, lines
	// without it are rejected by bytes.Contains before any matching.
	required  []byte
	prefilter bool
	// dropped are the slots of the groups an Only matcher does not record, cleared in
	// what regexp gives for a line handed to it.
	dropped []int
}

// Compile returns a matcher equivalent to regexp.MustCompile(expr) for every
// input, or an error: regexp's own for an invalid expression, or one
// wrapping ErrUnsupported that says why expr is outside the subset.
func Compile(expr string) (*Matcher, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	return FromRegexp(re)
}

// FromRegexp is Compile of re's expression for a caller that holds it compiled already
// (the rule file's regexes are compiled once, by config), so that it is not compiled a
// second time. re must be compiled with regexp's default (Perl) syntax, as
// regexp.Compile does.
func FromRegexp(re *regexp.Regexp) (*Matcher, error) {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil, err
	}
	n, err := convert(tree.Simplify())
	if err != nil {
		return nil, err
	}
	n = lower(n)
	c := &compiler{}
	if err := c.compile(n); err != nil {
		return nil, err
	}
	c.emit(inst{op: opMatch})
	analyse(c.prog)
	fuseCaps(c.prog)
	m := &Matcher{
		re:       re,
		prog:     c.prog,
		ncap:     2 * (re.NumSubexp() + 1),
		unset:    slices.Repeat([]int{-1}, 2*(re.NumSubexp()+1)),
		anchored: anchoredAt(c.prog, 0, make([]bool, len(c.prog))),
		required: requiredLiteral(n),
	}
	if !m.anchored {
		pc := 0
		for c.prog[pc].op == opCap {
			pc++
		}
		switch in := &c.prog[pc]; {
		case in.op == opLit:
			m.prefix = in.lit
		case in.op == opRun && in.min == 0 && in.max == maxInt:
			m.lead = in.cls
		}
		if f := first(c.prog, 0); m.prefix == nil && !f.all {
			m.start = newClass(f)
		}
		m.prefilter = m.prefix == nil && len(m.required) > 0
	}
	return m, nil
}

// Only returns a matcher for the same expression that records only the groups keep
// reports true for, besides the whole match: the others read as not participating (-1).
// Matches and the recorded groups are the same as m's; a caller reading few of a regex's
// groups then does not pay for setting (and, past a choice, saving) the others.
func (m *Matcher) Only(keep func(group int) bool) *Matcher {
	t := *m
	t.prog = slices.Clone(m.prog)
	for i := range t.prog {
		in := &t.prog[i]
		in.caps = slices.DeleteFunc(slices.Clone(in.caps), func(slot int) bool { return !keep(slot / 2) })
	}
	t.dropped = nil
	for slot := 2; slot < m.ncap; slot++ {
		if !keep(slot / 2) {
			t.dropped = append(t.dropped, slot)
		}
	}
	return &t
}

// Match reports whether line matches and fills caps like
// regexp.FindSubmatchIndex: a start and an end per group, group 0 (the whole
// match) first, -1 for a group that did not participate. caps must have room
// for 2*(n+1) ints, n the regex's number of groups (regexp's NumSubexp);
// after a false result its content is unspecified. Match does not allocate, except for the rare line it hands
// to regexp (see the package comment).
func (m *Matcher) Match(line []byte, caps []int) bool {
	if len(caps) < m.ncap {
		panic(fmt.Sprintf("fastmatch: caps has %d ints, %s needs %d", len(caps), m.re, m.ncap))
	}
	if m.prefilter && !bytes.Contains(line, m.required) {
		return false
	}
	switch m.exec(line, caps, m.budget(line)) {
	case matched:
		return true
	case noMatch:
		return false
	}
	loc := m.re.FindSubmatchIndex(line)
	copy(caps, loc)
	for _, slot := range m.dropped {
		caps[slot] = -1
	}
	return loc != nil
}

// budget is the work allowed on line before Match hands it to regexp.
func (m *Matcher) budget(line []byte) int {
	return budgetPerByte*len(line) + budgetPerInst*len(m.prog)
}

// The work budget of one Match, in steps (a program step, a rune scanned or
// given back, a start position skipped). A line of the usual log shape takes
// about one step per byte plus one per program step; the margin leaves room
// for honest backtracking and cuts off the exponential kind.
const (
	budgetPerByte = 8
	budgetPerInst = 8
)
