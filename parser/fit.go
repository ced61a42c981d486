package parser

import "slices"

// Fits reports whether line is of input's format: some rule that reads input matched it
// (its regex, a log format's included, matched) or read its fields (it is JSON or logfmt
// as the rule's format says), whatever the rule's filters, value and time then made of
// it. Of the rules reading candidate formats, those that apply to the candidate the line
// fits best (as Explain reads it) read it: a line of a format that lacks what they read
// is not read, as Parse does not. It runs the matchers Parse runs and tells no sink;
// ReadsInput says whether any rule could.
func (p *Parser) Fits(input string, line []byte) bool {
	s := p.scratch.Get().(*scratch)
	defer p.scratch.Put(s)
	if prog := p.lineProgram(s, line); prog.format != nil {
		if g := &prog.groups[0]; g.cand != "" && slices.ContainsFunc(g.rules, func(r rule) bool { return r.reads(input) }) {
			return true
		}
	}
	for i := range p.base.groups {
		g := &p.base.groups[i]
		if g.inputs != nil && !slices.Contains(g.inputs, input) {
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
