package parser

import "github.com/logwindow/logwindow_exporter/config/logformat"

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
	// one is the program of the one format of the input (SetFormat) that a rule reading
	// candidates reads, which reads every line of it; nil otherwise.
	one *formatProgram
	// formats numbers the SetFormats that gave progs (formatsSeq), by which a file knows
	// which of its held lines were tried against them (fileFormat.tried).
	formats uint64
	// cur keeps the path captures given while held lines are parsed with their own.
	cur pathState
}

// NewSession returns a Session of p's rules.
func (p *Parser) NewSession() *Session {
	return &Session{p: p, s: p.scratch.New().(*scratch)}
}

// ParseWrapped is Parser.ParseWrapped, with the Session's buffers; an input of one format
// told of by SetFormat has its line read by that format.
func (s *Session) ParseWrapped(input string, line, wrapperTime []byte, sink Sink) bool {
	prog := s.one
	if prog == nil {
		prog = s.p.lineProgram(s.s, input, line)
	}
	_, ok := s.p.parse(s.s, prog.groups, false, input, line, wrapperTime, sink)
	return ok
}

// SetFormat tells the Session the one log format f of input, the input whose lines it
// parses (config.Input.LogFormat; nil for none), for the input that SetFormats leaves
// without candidates: its lines are read by f's variants of the rules reading candidates
// that read input, as well as by the rules every line goes to. Unlike SetInputs, which
// tells inputs by their names, it tells apart inputs that have none.
func (s *Session) SetFormat(input string, f *logformat.Format) {
	s.one = nil
	if f == nil {
		return
	}
	if k, ok := s.p.byID[f.ID()]; ok && s.p.cands[k].readsInput(input) {
		s.one = s.p.cands[k]
	}
}

// SetWall tells the Session that the lines it parses next are read as they are written,
// at wall-clock second wall (Unix), until the next call: a time of the hour a zone
// repeats when its clocks go back is read at the offset that puts it nearer the clock
// when the line before does not tell (see nearerReading). A Session never told reads
// such a time by the line before alone, as a replay or a warm start's old lines are.
func (s *Session) SetWall(wall int64) {
	s.s.wall, s.s.live = wall, true
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

// TimeRules are the times the parser reads from a line, by number: each the indexes of the
// rules that read one capture with one layout in one zone of one match (rules reading it
// alike share it). Session.LastTime tells of each by its number. The caller does not
// modify them.
func (p *Parser) TimeRules() [][]int { return p.timeRules }

// LastTime is the time the session's rules read last for time i (TimeRules), in Unix
// seconds, with the number of the match it was read for, which grows as the session parses
// lines: a caller that keeps it knows whether a line read the time since. ok is false until
// a line gave one that parsed, and while the last one did not. It costs the parse nothing:
// it is what the session remembers anyway, so that lines of one second parse their time
// once.
func (s *Session) LastTime(i int) (unix int64, match uint64, ok bool) {
	c := &s.s.times[i]
	return c.unix, c.match, c.valid && c.ok
}
