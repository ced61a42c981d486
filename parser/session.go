package parser

// Session parses the lines of one goroutine (an input's) with buffers of its own. Parse
// takes its buffers from a pool that every goroutine shares and gives them back, a Get and
// a Put for each line; a Session keeps its buffers and pays neither. A Session is not safe
// for concurrent use.
type Session struct {
	p *Parser
	s *scratch
	// files is the state of the files of an input with candidate formats (SetFormats),
	// progs the programs of its candidates; nil for an input of one format. last is the
	// file of lastPath, whose lines came last, and prog the program of its chosen format
	// (nil before one is chosen): a line of the same file as the last costs one
	// comparison.
	files    *Files
	progs    []*formatProgram
	last     *fileFormat
	lastPath string
	prog     *formatProgram
	// cur keeps the path captures given while held lines are parsed with their own.
	cur pathState
}

// NewSession returns a Session of p's rules.
func (p *Parser) NewSession() *Session {
	return &Session{p: p, s: p.scratch.New().(*scratch)}
}

// ParseWrapped is Parser.ParseWrapped, with the Session's buffers.
func (s *Session) ParseWrapped(input string, line, wrapperTime []byte, sink Sink) bool {
	_, ok := s.p.parse(s.s, s.p.lineProgram(s.s, input, line).groups, false, input, line, wrapperTime, sink)
	return ok
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
