package parser

import "slices"

// Fits reports whether line is of input's format: some rule that reads input matched it
// (its regex, a log format's included, matched) or read its fields (it is JSON or logfmt
// as the rule's format says), whatever the rule's filters, value and time then made of
// it. It runs the matchers Parse runs and tells no sink; ReadsInput says whether any rule
// could.
func (p *Parser) Fits(input string, line []byte) bool {
	s := p.scratch.Get().(*scratch)
	defer p.scratch.Put(s)
	for i := range p.groups {
		g := &p.groups[i]
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
		if g := &p.groups[i]; g.inputs == nil || slices.Contains(g.inputs, input) {
			return true
		}
	}
	return false
}
