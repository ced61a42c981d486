package parser

import "slices"

// Fits reports whether line is of input's format: some rule that reads input matched it
// (its regex, a log format's included, matched) or read its fields (it is JSON or logfmt
// as the rule's format says), whatever the rule's filters, value and time then made of
// it. A line of one of the input's candidate formats (as Explain reads it) is read by the
// rules that apply to that format, if any: a line of a format that lacks what they read
// is not, as Parse does not read it. A line of none is read by a candidate's rules whose
// regex matches it, as they read it among lines of their format (where it may end
// before the variables the format ends with). It runs the matchers Parse runs and tells
// no sink; ReadsInput says whether any rule could.
func (p *Parser) Fits(input string, line []byte) bool {
	s := p.scratch.Get().(*scratch)
	defer p.scratch.Put(s)
	if prog := p.lineProgram(s, input, line); prog.format != nil {
		return p.reads(s, input, line, prog.groups)
	}
	for _, c := range p.inputCands(input) {
		if p.reads(s, input, line, c.groups[:1]) {
			return true
		}
	}
	return p.reads(s, input, line, p.base.groups)
}

// Fitted reports whether a rule that reads input read line (as Fits says) by the program
// the Session parsed it with, as its input reads it: its one format's, its file's chosen
// one's, or the groups every line goes to. Call it from the LineDone of that line's parse
// (ParseFile, CloseFile), while that program is the Session's.
func (s *Session) Fitted(input string, line []byte) bool {
	prog := s.p.base
	switch {
	case s.files == nil && s.one != nil:
		prog = s.one
	case s.files != nil && s.prog != nil:
		prog = s.prog
	}
	return s.p.reads(s.s, input, line, prog.groups)
}

// reads reports whether a rule of groups that reads input matches line or reads its
// fields.
func (p *Parser) reads(s *scratch, input string, line []byte, groups []group) bool {
	for i := range groups {
		g := &groups[i]
		if !slices.ContainsFunc(g.rules, func(r rule) bool { return r.reads(input) }) {
			continue
		}
		caps := s.caps[:g.ncap]
		if g.ex != nil {
			if _, ok := g.ex.extract(line, caps, s); ok {
				return true
			}
		} else if g.parse.Match(line, caps) {
			return true
		}
	}
	return false
}

// ReadsInput reports whether some rule reads the lines of input.
func (p *Parser) ReadsInput(input string) bool {
	for i := range p.groups {
		// A candidate format no rule's variant reads has a group without rules, which
		// tells a file of that format from others and reads nothing.
		if g := &p.groups[i]; len(g.rules) > 0 && (g.inputs == nil || slices.Contains(g.inputs, input)) {
			return true
		}
	}
	return false
}
