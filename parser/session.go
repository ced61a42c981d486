package parser

// Session parses the lines of one goroutine (an input's) with buffers of its own. Parse
// takes its buffers from a pool that every goroutine shares and gives them back, a Get and
// a Put for each line; a Session keeps its buffers and pays neither. A Session is not safe
// for concurrent use.
type Session struct {
	p *Parser
	s *scratch
}

// NewSession returns a Session of p's rules.
func (p *Parser) NewSession() *Session {
	return &Session{p: p, s: p.scratch.New().(*scratch)}
}

// ParseWrapped is Parser.ParseWrapped, with the Session's buffers.
func (s *Session) ParseWrapped(input string, line, wrapperTime []byte, sink Sink) bool {
	return s.p.parse(s.s, input, line, wrapperTime, sink)
}

// SetPath gives the values of the path captures of the lines parsed next, those of the
// file they come from, in Parser.PathCaptures order, until the next call: nil for one
// that did not take part in the path's match (it reads as empty, as a regex group that
// did not), and none at all for a line from no file. values is copied.
func (s *Session) SetPath(values [][]byte) {
	s.s.setPath(values)
}

// PathCaptures are the names of the path captures the rules read (config.Rule.PathCaptures),
// sorted: the order in which Session.SetPath takes their values.
func (p *Parser) PathCaptures() []string {
	return p.paths
}
