package parser

import (
	"bytes"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/logwindow/logwindow_exporter/config/logformat"
)

// MaxHeld is how many lines of a file are held while its format is chosen: a file's
// format is chosen again after this many consecutive lines that do not fit it, from
// those lines.
const MaxHeld = 16

// formatsSeq numbers the calls of SetFormats (Session.formats).
var formatsSeq atomic.Uint64

// NoFormat is the name Files.Formats counts a file under whose last MaxHeld lines fitted
// none of its input's candidates (or fewer, which Session.Settle settled): of no format
// they know, or of another since it switched.
// No candidate has it: a format string has variables, and a name in parentheses is none
// of nginx's or Apache's.
const NoFormat = "(none)"

// Files is, for one input with candidate log formats, the format chosen for each file and
// the lines held while it is being chosen (see Session.ParseFile). It outlives a Session:
// the Session of a reloaded parser takes over an input's Files, so that a reload loses no
// held line and chooses no format anew. Only its counts are safe for concurrent use.
type Files struct {
	files map[string]*fileFormat
	mu    sync.Mutex
	// counts are the files per chosen format's name, or NoFormat; noFormat the paths of
	// those counted under NoFormat.
	counts   map[string]int
	noFormat map[string]struct{}
	// unread are the paths of the files of another application's JSON log
	// (Session.Unread): lines of them fit, and no rule reads them.
	unread map[string]struct{}
}

// fileFormat is what Files knows of one file.
type fileFormat struct {
	// chosen is the ID of the format chosen (logformat.Format.ID), name its Name; ""
	// before one is.
	chosen, name string
	// tied are the IDs of the text candidates that the lines the format was chosen from
	// fit as well as they fit it (chooseFits): a line that does not fit the format but
	// fits one of them is read by it (Session.readTied).
	tied []string
	// held are the lines since the last that fitted the chosen format (all of them before
	// one is chosen), with the time text of their wrapper.
	held, heldTimes [][]byte
	// heldPaths are the path captures each held line was given (Session.SetPath), which
	// may not be those of the line that has it parsed: a line's own captures (its CRI
	// stream, its datagram's hostname and tag) are its alone.
	heldPaths []pathState
	// members are, for a file of JSON objects, the members the rules read that its
	// objects had: the lines its format was chosen from and those after them (grow).
	members []string
	// tried are how many of held, the first, fit none of the candidates of the
	// SetFormats numbered triedBy (Session.formats): while no format is chosen, a line is
	// tried against them once, not again at each line held after it.
	tried   int
	triedBy uint64
	// path is the file's source; none says that its last MaxHeld lines fitted no
	// candidate (a line that fits since ends it), counted under NoFormat rather than name.
	path string
	none bool
	// startup are the lines held and parsed since one last fitted, when they were an
	// nginx image's start-up lines alone (StartupLines): bounded, they are no sign of the
	// file's format.
	startup StartupLines
	// fitted counts the lines that fitted the chosen format, those it was chosen from
	// and those after, up to MaxHeld: Settle weighs them against the lines held.
	fitted int
	// unread counts the lines of the file that Session.Unread told of since its format
	// was last chosen, up to MaxHeld: at MaxHeld the file is among Files.unread. A stray
	// first line (a JSON start-up message before the access lines) is not that, and
	// counting here takes no lock.
	unread int
}

// NewFiles returns the state of an input none of whose files was seen yet.
func NewFiles() *Files {
	return &Files{files: map[string]*fileFormat{}, counts: map[string]int{}, noFormat: map[string]struct{}{}, unread: map[string]struct{}{}}
}

// Formats counts the files whose format is chosen by the format's name
// (logformat.Format.Name), those whose lines fit none under NoFormat; a snapshot.
func (f *Files) Formats() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.counts)
}

// NoFormatFiles are the paths of the files counted under NoFormat, sorted; a snapshot.
func (f *Files) NoFormatFiles() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.noFormat))
}

// UnreadFiles are the paths of the files of another application's JSON log
// (Session.Unread), sorted; a snapshot.
func (f *Files) UnreadFiles() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.unread))
}

// choose records name as the format of file, and that its lines fit it.
func (f *Files) choose(file *fileFormat, id, name string) {
	f.count(file, id, name, false)
}

// fitNone records that file's held lines fitted no candidate.
func (f *Files) fitNone(file *fileFormat) {
	f.count(file, file.chosen, file.name, true)
}

// count records name as the format of file and whether its lines fit none, moving it
// from where it was counted.
func (f *Files) count(file *fileFormat, id, name string, none bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if was := f.countedAs(file); was != "" {
		if f.counts[was]--; f.counts[was] == 0 {
			delete(f.counts, was)
		}
	}
	file.chosen, file.name, file.none, file.unread = id, name, none, 0
	delete(f.noFormat, file.path)
	delete(f.unread, file.path)
	if none {
		f.noFormat[file.path] = struct{}{}
	}
	if is := f.countedAs(file); is != "" {
		f.counts[is]++
	}
}

// countedAs is the name file is counted under ("" for none).
func (*Files) countedAs(file *fileFormat) string {
	switch {
	case file.none:
		return NoFormat
	case file.chosen != "":
		return file.name
	}
	return ""
}

// LineDone is told of each line a Session parsed, once: whether it was well formed (see
// Parser.Parse), and whether it fitted: some group of rules read it (its regex or log
// format matched, its fields were read), whatever the rules' filters then made of it. A
// line held while its file's format is chosen is told of when it is parsed, during a later
// call.
type LineDone func(wellFormed, fitted bool)

// SetFormats makes the Session read the lines of ParseFile by the candidate formats of
// their input, keeping per file what files holds; nil formats (an input of one format)
// read every line by its format (SetFormat) and the rules every line goes to.
func (s *Session) SetFormats(formats []*logformat.Format, files *Files) {
	s.files, s.progs, s.lastPath, s.last = files, nil, "", nil
	s.formats = formatsSeq.Add(1)
	if formats == nil {
		s.files = nil
		return
	}
	// A reload's rules may read the formats no rule read: the lines that none reads are
	// counted anew.
	for _, file := range files.files {
		if file.unread > 0 {
			files.count(file, file.chosen, file.name, file.none)
		}
	}
	for _, f := range formats {
		if k, ok := s.p.byID[f.ID()]; ok {
			s.progs = append(s.progs, s.p.cands[k])
		}
	}
}

// ParseFile parses a line of file source of the input (see SetFormats), with done told of
// it when it is parsed: at once, unless the line is held while the file's format is
// chosen.
//
// A file's format is the candidate its first line fits; a line that does not fit it is
// held, up to MaxHeld in a row, unless it fits a candidate that the lines the format was
// chosen from fitted as well (a tie the one listed first won), which reads it at once. The next line that fits parses them all with it; at
// MaxHeld, the format is chosen again as the candidate most of the held lines fit (see
// chooseFits), which parses them. A line is thus counted once, under the format chosen for
// it, and a file in no candidate's format has its lines parsed by the rules that read
// every line (after MaxHeld of them are held). Once a file's format is chosen, a line
// that fits it costs what ParseWrapped does.
func (s *Session) ParseFile(source, input string, line, wrapperTime []byte, sink Sink, done LineDone) {
	if s.files == nil {
		fits, ok := s.p.parse(s.s, s.groups(), false, input, line, wrapperTime, sink)
		done(ok, fits)
		return
	}
	if s.last == nil || source != s.lastPath {
		s.switchTo(source)
	}
	file := s.last
	if s.prog != nil && len(file.held) == 0 {
		if fits, ok := s.p.parse(s.s, s.prog.groups, true, input, line, wrapperTime, sink); fits {
			s.fitAgain(file)
			done(ok, fits)
			return
		}
	}
	file.held = append(file.held, slices.Clone(line))
	file.heldTimes = append(file.heldTimes, slices.Clone(wrapperTime))
	file.heldPaths = append(file.heldPaths, pathState{p: s.p, text: slices.Clone(s.s.pathText), caps: slices.Clone(s.s.pathCaps)})
	switch {
	case s.grow(file):
		// A JSON object with a member the file's did not have: the rules reading it
		// apply from this line on, which fits them.
		s.fitAgain(file)
		s.flush(file, input, sink, done)
	case s.prog != nil && len(file.held) > 1 && s.fits(file.held[len(file.held)-1]):
		// A line fits again: those before it are the chosen format's misfits.
		s.fitAgain(file)
		s.flush(file, input, sink, done)
	case s.readTied(file, input, sink, done):
		// A line of a candidate the file's first lines fitted as well: read by it.
	case s.prog == nil || len(file.held) >= MaxHeld:
		s.decide(file, input, sink, done, len(file.held) >= MaxHeld)
	}
}

// SpanSink is the Sink of ParseSpan: one that counts what it is given, by which a line no
// rule matched is told from one some rule did without a wrapper around every Event.
type SpanSink interface {
	Sink
	// Received is how many events and drops the sink was given so far.
	Received() uint64
}

// Span is what ParseSpan parsed: how many lines, and of them how many a LineDone would have
// been told were malformed, and how many well-formed ones were given to some rule (an
// event or a drop), fitted some group of rules that none of its rules matched, and fitted
// none.
type Span struct {
	Lines, Malformed, Matched, Fitted, Unfitted uint64
}

// ParseSpan parses the complete lines of span, each ended by "\n" (a "\r" before it is
// not the line's), as ParseFile parses them one by one without a wrapper's time, and
// returns what their LineDone would have been told, summed: the caller counts a read's
// lines once rather than in a call per line. A Session of candidate formats (SetFormats)
// parses nothing and returns a zero Span: its lines may be held, and go to ParseFile.
func (s *Session) ParseSpan(input string, span []byte, sink SpanSink) Span {
	var sp Span
	if s.files != nil {
		return sp
	}
	groups := s.groups()
	received := sink.Received()
	// Converted once: a SpanSink passed as a Sink would look up its method table per line.
	to := Sink(sink)
	for len(span) > 0 {
		n := bytes.IndexByte(span, '\n')
		line := span[:n]
		if n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		span = span[n+1:]
		fits, ok := s.p.parse(s.s, groups, false, input, line, nil, to)
		sp.Lines++
		// A line that fitted no group reached no rule: the sink's count is as it was.
		matched := false
		if fits {
			r := sink.Received()
			matched, received = r != received, r
		}
		switch {
		case !ok:
			sp.Malformed++
		case matched:
			sp.Matched++
		case fits:
			sp.Fitted++
		default:
			sp.Unfitted++
		}
	}
	return sp
}

// groups are the rules a Session without candidate formats parses its lines by
// (ParseFile, ParseSpan).
func (s *Session) groups() []group {
	if s.one != nil {
		// An input of one format read by rules reading candidates: their variant for its
		// format reads it.
		return s.one.groups
	}
	return s.p.base.groups
}

// decide chooses the format of file, the Session's last, as the candidate most of its
// held lines fit (of those they fit alike, one a rule applies to: readFirst), which
// parses them, and keeps those tied with it (fileFormat.tied). When none fits, settle has them parsed all the same,
// the file counted under NoFormat (unless they are an nginx image's start-up lines
// alone): MaxHeld lines in a row fit none, or the file went quiet (Settle).
func (s *Session) decide(file *fileFormat, input string, sink Sink, done LineDone, settle bool) {
	// With no format chosen, the held lines tried before fit no candidate: choosing
	// among the lines after them chooses what choosing among all would.
	from := 0
	if s.prog == nil && file.triedBy == s.formats {
		from = file.tried
	}
	if k, fits := chooseFits(s.progs, file.held[from:], s.s, &s.s.tied); k >= 0 {
		k = readFirst(s.progs, k, s.s.tied, input)
		file.startup, file.fitted = StartupLines{}, fits
		s.prog = s.progs[k]
		// A JSON object's program is made of its file's members: it is never tied.
		file.tied = file.tied[:0]
		for _, t := range s.s.tied {
			if f := s.progs[t].format; !f.AnyObject() && !s.prog.format.AnyObject() {
				file.tied = append(file.tied, f.ID())
			}
		}
		s.files.choose(file, s.prog.format.ID(), s.prog.format.Describe())
		if s.prog.format.AnyObject() {
			file.members = members(s.prog, file.held, s.s)
			s.prog = s.p.objectProgram(s.prog, file.members)
		}
		s.flush(file, input, sink, done)
		return
	}
	file.tried, file.triedBy = len(file.held), s.formats
	if settle {
		// MaxHeld of an nginx image's start-up lines alone (the official image writes a
		// line per template it renders) are parsed, but they tell nothing of the file's
		// format: it waits for its first request, as a quiet one of fewer does (Settle),
		// unless more came than any image writes (MaxStartupLines).
		file.startup = file.startup.With(file.held)
		if !file.none && !file.startup.Only() {
			s.files.fitNone(file)
		}
		s.flush(file, input, sink, done)
	}
}

// readFirst is the candidate of index k that chooseFits chose for lines of input, or,
// when no rule applies to its lines (no variant of a rule reading input is of it), the
// first of those tied with it (scratch.tied) that a rule applies to, k then among the
// tied: an Apache log whose rules read Apache's names is read by apache_combined,
// though nginx's combined, listed first, fits its lines alike.
func readFirst(cands []*formatProgram, k int, tied []int, input string) int {
	if cands[k].format.AnyObject() || cands[k].reads(input) {
		return k
	}
	for i, t := range tied {
		if !cands[t].format.AnyObject() && cands[t].reads(input) {
			tied[i] = k
			return t
		}
	}
	return k
}

// Settle decides the format of file source, of which no format is chosen and whose held
// lines fit no candidate, as MaxHeld such lines would: it is counted under NoFormat and
// its lines are parsed. A file that writes fewer (a short log of another format, then
// quiet) is otherwise never told of, and its lines never parsed, until it is closed.
// Its caller calls it once the file has been quiet for a while: a file's first lines that
// fit no candidate (a container's start-up messages) are often followed by ones that do.
// It reports whether it parsed held lines; a file whose format is chosen keeps those
// that do not fit it, for its next line that fits to parse them by it, unless more of
// them fit a candidate than ever fitted its format: the format was then
// chosen from a stray first line (a container's JSON start-up message before its access
// lines), and is chosen again from them, as MaxHeld of them would have it. One that holds
// an nginx image's start-up lines alone (StartupLines: a pod that served no request
// yet), with those parsed before them since a line last fitted, keeps them for its first
// access line.
func (s *Session) Settle(source, input string, sink Sink, done LineDone) bool {
	if s.files == nil {
		return false
	}
	if file, ok := s.files.files[source]; !ok || len(file.held) == 0 {
		return false
	}
	s.switchTo(source)
	file := s.last
	switch {
	case file.startup.With(file.held).Only():
		return false
	case s.prog != nil:
		return s.chooseAgain(file, input, sink, done)
	}
	s.decide(file, input, sink, done, true)
	return true
}

// chooseAgain chooses the format of file, the Session's last, whose format is chosen,
// again from its held lines when more of them fit a candidate a rule applies to than ever
// fitted its format, which parses them, and reports whether it did. Those that fit none
// do not weigh (a line of another candidate amid a stack trace is no sign of a new
// format), nor do a candidate's lines that no rule reads (an application's JSON messages
// between a few requests): chosen from them, the file would hold its next requests,
// uncounted, until they outnumbered them.
func (s *Session) chooseAgain(file *fileFormat, input string, sink Sink, done LineDone) bool {
	if file.fitted >= len(file.held) {
		return false // no candidate can be fitted by more: spare trying them
	}
	k, fits := chooseFits(s.progs, file.held, s.s, nil)
	if k < 0 || fits <= file.fitted {
		return false
	}
	prog := s.progs[k]
	if prog.format.AnyObject() {
		prog = s.p.objectProgram(prog, members(prog, file.held, s.s))
	}
	if !prog.reads(input) {
		return false
	}
	s.decide(file, input, sink, done, true)
	return true
}

// grow makes the program of a file of JSON objects (json, any object) that of the members
// its held lines add to those its objects had, and reports whether they added any: a
// file's format is chosen from its first lines, which may lack what its later ones have
// (an application's start-up messages before its access lines), and a rule applies from
// the line on by which the file's objects have had every member it reads.
func (s *Session) grow(file *fileFormat) bool {
	if s.prog == nil || !s.prog.format.AnyObject() {
		return false
	}
	full := s.p.cands[s.p.byID[s.prog.format.ID()]]
	present := file.members
	for _, m := range members(full, file.held, s.s) {
		if _, ok := slices.BinarySearch(present, m); !ok {
			present = append(slices.Clone(present), m)
			slices.Sort(present)
		}
	}
	if len(present) == len(file.members) {
		return false
	}
	file.members = present
	s.prog = s.p.objectProgram(full, present)
	if file.unread > 0 {
		// Rules may read the file now: the lines that none reads are counted anew.
		s.files.count(file, file.chosen, file.name, file.none)
	}
	return true
}

// readTied parses the line just held in file, the Session's last, which does not fit its
// chosen format, by a candidate tied with that format (fileFormat.tied) that it fits, and
// reports whether it did. The file's first lines fitted both alike, and the one listed
// first was chosen: an Apache log whose first lines hold no escape is read as
// nginx's combined, and a line with one of Apache's in a quoted field (\") fits only
// apache_combined. The lines held before it are parsed first, by the chosen format, as
// its next line that fits would have them; the file keeps its format, so a line that
// fits it costs nothing more, and no rule applying to it loses a line it read.
func (s *Session) readTied(file *fileFormat, input string, sink Sink, done LineDone) bool {
	if s.prog == nil || len(file.tied) == 0 {
		return false
	}
	last := len(file.held) - 1
	line := file.held[last]
	for _, id := range file.tied {
		prog := s.candidate(id)
		if prog == nil {
			continue
		}
		if ok, _ := fit(prog, line, s.s, s.s.detectCaps([]*formatProgram{prog})); !ok {
			continue
		}
		// The line's own path captures are the scratch's: flush gives them back.
		wrapperTime := file.heldTimes[last]
		file.held, file.heldTimes, file.heldPaths = file.held[:last], file.heldTimes[:last], file.heldPaths[:last]
		s.flush(file, input, sink, done)
		fits, wellFormed := s.p.parse(s.s, prog.groups, false, input, line, wrapperTime, sink)
		// Its slot, past those held, would keep its copy until the file held a line again.
		clear(file.held[last : last+1])
		clear(file.heldTimes[last : last+1])
		clear(file.heldPaths[last : last+1])
		s.fitAgain(file)
		// The line's LineDone asks the Session of the program that read it (program,
		// by Fitted and ExplainWrapped): the tied one's while it is told.
		chosen := s.prog
		s.prog = prog
		done(wellFormed, fits)
		s.prog = chosen
		return true
	}
	return false
}

// fitAgain records that a line of file fits its chosen format: a file counted under
// NoFormat is counted under it again, and start-up lines after it are counted anew.
func (s *Session) fitAgain(file *fileFormat) {
	if file.none {
		s.files.choose(file, file.chosen, file.name)
	}
	file.startup = StartupLines{}
	if file.fitted < MaxHeld {
		file.fitted++
	}
}

// fits tells whether line fits the chosen format.
func (s *Session) fits(line []byte) bool {
	ok, _ := fit(s.prog, line, s.s, s.s.detectCaps([]*formatProgram{s.prog}))
	return ok
}

// Holds reports whether lines of the file of the last ParseFile are held while its format
// is chosen: that line among them, and every line of the file since the first held.
func (s *Session) Holds() bool { return s.last != nil && len(s.last.held) > 0 }

// CloseFile parses what is held of file source and forgets it: it is read no more. Lines
// that Settle would have chosen the file's format again from are parsed by that format.
func (s *Session) CloseFile(source, input string, sink Sink, done LineDone) {
	if s.files == nil {
		return
	}
	s.switchTo(source)
	if s.prog != nil && len(s.last.held) > 0 {
		s.chooseAgain(s.last, input, sink, done)
	}
	s.flush(s.last, input, sink, done)
	s.files.count(s.last, "", "", false)
	delete(s.files.files, source)
	s.last, s.lastPath, s.prog = nil, "", nil
}

// switchTo makes source the file of the lines parsed next.
func (s *Session) switchTo(source string) {
	file, ok := s.files.files[source]
	if !ok {
		file = &fileFormat{path: source}
		s.files.files[source] = file
	}
	s.last, s.lastPath, s.prog = file, source, nil
	if prog := s.candidate(file.chosen); prog != nil {
		s.prog = prog
		if prog.format.AnyObject() {
			s.prog = s.p.objectProgram(prog, file.members)
		}
	}
}

// candidate is the program of the candidate format of ID id (logformat.Format.ID) among
// the Session's (SetFormats); nil for none, as for a format a reload took away.
func (s *Session) candidate(id string) *formatProgram {
	if k, ok := s.p.byID[id]; ok && id != "" && slices.Contains(s.progs, s.p.cands[k]) {
		return s.p.cands[k]
	}
	return nil
}

// flush parses the held lines of file with its chosen format's program (the base one
// without).
func (s *Session) flush(file *fileFormat, input string, sink Sink, done LineDone) {
	prog := s.prog
	if prog == nil {
		prog = s.p.base
	}
	s.cur = pathState{p: s.p, text: append(s.cur.text[:0], s.s.pathText...), caps: append(s.cur.caps[:0], s.s.pathCaps...)}
	for i, line := range file.held {
		s.setPathState(file.heldPaths[i])
		fits, ok := s.p.parse(s.s, prog.groups, false, input, line, file.heldTimes[i], sink)
		done(ok, fits)
	}
	s.setPathState(s.cur)
	file.tried = 0
	clear(file.held)
	clear(file.heldTimes)
	clear(file.heldPaths)
	file.held, file.heldTimes, file.heldPaths = file.held[:0], file.heldTimes[:0], file.heldPaths[:0]
}

// pathState is what Session.SetPath gave a session's scratch, kept with a held line.
type pathState struct {
	p    *Parser
	text []byte
	caps []int
}

// setPathState gives the session's scratch the path captures of ps. Those given by the
// parser of an earlier generation (a reload's session parses the line held) are taken by
// name: which captures the rules read, and so their order, may have changed.
func (s *Session) setPathState(ps pathState) {
	if ps.p == s.p {
		s.s.pathText = append(s.s.pathText[:0], ps.text...)
		copy(s.s.pathCaps, ps.caps)
		return
	}
	values := make([][]byte, len(s.p.paths))
	for i, name := range s.p.paths {
		if j := slices.Index(ps.p.paths, name); j >= 0 && 2*j+1 < len(ps.caps) && ps.caps[2*j] >= 0 {
			values[i] = ps.text[ps.caps[2*j]:ps.caps[2*j+1]]
		}
	}
	s.s.setPath(values)
}
