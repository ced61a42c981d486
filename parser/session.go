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
