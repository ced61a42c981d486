package parser

import "slices"

// Fitted reports whether line is of input's format as the Session parsed it: some rule
// that reads input matched it (its regex, a log format's included, matched) or read its
// fields (it is JSON or logfmt as the rule's format says), whatever the rule's filters,
// value and time then made of it, by the program the Session parsed it with, as its input
// reads it: its one format's, its file's chosen one's (whose rules apply to a line of that
// format that has what they read), or the groups every line goes to. Call it from the
// LineDone of that line's parse (ParseFile, CloseFile), while that program is the
// Session's. It runs the matchers the parse ran and tells no sink; ReadsInput says
// whether any rule could.
func (s *Session) Fitted(input string, line []byte) bool {
	return s.p.reads(s.s, input, line, s.program().groups)
}

// Unread reports whether the line a LineDone is told of (of ParseFile, Settle or
// CloseFile) is of another application's JSON log (a Karpenter controller's messages,
// under a glob over ingress-nginx's controllers): the file's chosen format is json, one
// of several candidates, and its objects had none of the members the rules reading input
// read, so that no rule counts its lines. A file of an access log that no rule reads is
// not: a text format's (every candidate's is a server's access log), objects with some
// of the members (an nginx JSON template whose other keys are not the variables' names),
// or json as the only candidate (the input is meant to be JSON) are what the rules were
// meant to read, and their lines stay unmatched, loud. The
// MaxHeld-th such line since the file's format was chosen records the file among
// Files.UnreadFiles, until its format is chosen again or it is closed. Lines of no chosen
// format, and of an input of one format, are not unread either.
func (s *Session) Unread(input string) bool {
	if s.files == nil || len(s.progs) < 2 || s.prog == nil || !s.prog.format.AnyObject() || len(s.last.members) > 0 || s.prog.reads(input) {
		return false
	}
	if file := s.last; file.unread < MaxHeld {
		if file.unread++; file.unread == MaxHeld {
			s.files.mu.Lock()
			s.files.unread[file.path] = struct{}{}
			s.files.mu.Unlock()
		}
	}
	return true
}

// program is the program the Session's parse reads a line with (see ParseFile).
func (s *Session) program() *formatProgram {
	switch {
	case s.files == nil && s.one != nil:
		return s.one
	case s.files != nil && s.prog != nil:
		return s.prog
	}
	return s.p.base
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
