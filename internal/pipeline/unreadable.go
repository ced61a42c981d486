package pipeline

import (
	"slices"
	"time"

	"github.com/logwindow/logwindow_exporter/parser"
)

// unreadableMinLines is how many lines an input must have read since the last look for none
// of them being readable to be told of: a few odd lines (a startup banner, a stray
// error) are not a format that is not the file's.
const unreadableMinLines = 10

// unreadableLogEvery is how often, at most, an input none of whose lines could be read is
// logged again while it goes on.
const unreadableLogEvery = time.Hour

// unmatchedMinLines is how many lines an input without a log format must have read since
// its rules were loaded, none of them matched by any rule's regex, for that to be told of
// (once per load): rules of rare lines (match: ERROR) leave many lines between theirs,
// and are told of once at most, but a regex that fits no line of the file is seldom
// meant to.
const unmatchedMinLines = 100

// unreadable is what warnUnreadable keeps of an input between its looks.
type unreadable struct {
	// logged is when the episode going on was last logged (zero: none is going on).
	logged time.Time
	// sinceFit and sinceUnfit count the lines that fitted and did not since the rules
	// were loaded (the look of their reload, or Start), and told says whether an input
	// without a log format was told of, for these rules, that none of them fitted a
	// rule's regex.
	sinceFit, sinceUnfit uint64
	told                 bool
	// noFormat are the files of no candidate format (parser.NoFormat) told of, of those
	// that still are; noFormatLogged when some were last.
	noFormat       map[string]bool
	noFormatLogged time.Time
	// unread are the files of another application's JSON log told of
	// (parser.Files.UnreadFiles), of those that still are; unreadLogged when some were last.
	unread       map[string]bool
	unreadLogged time.Time
}

// lineCounts are the counts of an input's lines that warnUnreadable looks at.
type lineCounts struct{ fit, unfit, malformed uint64 }

// warnUnreadable logs each input none of whose lines read since the last look could be
// read as it says: not of its log format (nor matched by a rule's regex), not CRI lines on
// a wrapper: cri input, or not the JSON or logfmt its fields rules read. Its counters say
// so (logwindow_input_unmatched_lines_total, logwindow_input_malformed_lines_total), but
// the rules count zeros meanwhile, which a log line should make loud. Lines that are no
// message (parts of a CRI message, lines of a CRI stream the input does not read) are
// neither. It is logged when it starts and again at most every unreadableLogEvery while
// it goes on; a look that finds lines that fit ends it.
//
// Lines that were read and that no rule counted are not told of: they are also what rules
// that filter (where:) leave, and, of an input without a log format, what regex rules
// that match rare lines leave. But an input without a log format none of whose lines
// since its rules were loaded (unmatchedMinLines at least) any rule's regex matched is
// told of, once per load: that is a regex that is wrong more often than one of lines
// that did not come yet. An input no rule reads, followed for its own counters, has
// neither a log format its rules read it by nor a regex, and is told of neither way.
//
// A file of an input with candidate log formats none of whose last lines fit any
// (parser.NoFormat) is logged by its path, though the input's other files fit: a pod whose
// nginx writes a format of its own. Files that come to it are logged when the first does,
// and later ones at most every unreadableLogEvery, each once while it is of no format.
//
// It looks at counters the inputs keep anyway, or count without an atomic operation a
// line, so the lines pay next to nothing for it. Start's goroutine calls it every
// expireEvery.
func (p *Pipeline) warnUnreadable() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.lookUnreadable()
}

// reloadUnreadable has the lines since the rules were loaded counted anew, with p.mu held,
// as a reload puts its generation in force: what the lines read until then made of the
// rules it replaces was told of them before its build (lookBeforeBuild); those read
// during the build count as the new rules'.
func (p *Pipeline) reloadUnreadable() {
	for _, m := range p.unreadable {
		m.sinceFit, m.sinceUnfit, m.told = 0, 0, false
	}
}

// lookUnreadable is warnUnreadable with p.mu held.
func (p *Pipeline) lookUnreadable() {
	// The shards of an input are one input to the user; a stream's counts are taken
	// since the last look at it, so that a stream a reload started anew counts from none.
	type counts struct {
		lineCounts
		source   string
		format   bool
		noFormat []string
		// unread are the files of another application's JSON log.
		unread []string
		// reads says that a rule reads the input: of one no rule reads (followed for its
		// own counters), no line fits a rule, and no rule or regex is wrong for it.
		reads bool
	}
	gen := p.gen.Load()
	now := map[string]*counts{}
	looked := make(map[*stream]lineCounts, len(p.inputs))
	for _, in := range p.inputs {
		c := now[in.label]
		if c == nil {
			ci := gen.input(in.source)
			c = &counts{source: in.source, format: ci.LogFormat != nil || len(ci.LogFormats) > 0, reads: gen.parser.ReadsInput(ci.Name)}
			now[in.label] = c
		}
		// unfit is loaded before fit, which is added to first: a look never finds lines
		// that did not fit without those that did before them.
		cur := lineCounts{unfit: in.unfit.Load()}
		cur.fit, cur.malformed = in.fit.Load(), in.malformed.Load()
		last := p.looked[in]
		c.fit += cur.fit - last.fit
		c.unfit += cur.unfit - last.unfit
		c.malformed += cur.malformed - last.malformed
		looked[in] = cur
		if in.files != nil {
			c.noFormat = append(c.noFormat, in.files.NoFormatFiles()...)
			c.unread = append(c.unread, in.files.UnreadFiles()...)
		} else if in.judged != nil {
			c.noFormat = append(c.noFormat, in.judged.noFormatFiles()...)
		}
	}
	p.looked = looked
	if p.unreadable == nil {
		p.unreadable = map[string]*unreadable{}
	}
	for label := range p.unreadable {
		if now[label] == nil {
			delete(p.unreadable, label)
		}
	}
	at := p.opts.Now()
	for label, c := range now {
		m := p.unreadable[label]
		if m == nil {
			m = &unreadable{}
			p.unreadable[label] = m
		}
		// A well-formed line that fitted no rule is unreadable only by a log format the
		// rules read it by: without one, it is read as the input says (a CRI line, say)
		// and left by regexes of other lines.
		readable, unread := c.fit, c.malformed
		if c.format && c.reads {
			unread += c.unfit
		} else {
			readable += c.unfit
		}
		switch {
		case readable+unread < unreadableMinLines:
			// Too few to tell; an episode going on goes on.
		case readable > 0:
			m.logged = time.Time{}
		case m.logged.IsZero() || at.Sub(m.logged) >= unreadableLogEvery:
			m.logged = at
			p.opts.Logger.Warn("none of the lines the input read lately could be read as it says (not of its log_format, not CRI lines on a wrapper: cri input, or not the JSON or logfmt its fields rules read): its rules count nothing of them; --explain=FILE says where a line stops fitting (logged again at most once an hour while it goes on)",
				"input", label, "source", c.source, "lines", unread)
		}
		m.sinceFit += c.fit
		m.sinceUnfit += c.unfit
		if c.reads && !c.format && !m.told && m.sinceFit == 0 && m.sinceUnfit >= unmatchedMinLines {
			m.told = true
			p.opts.Logger.Warn("no rule's match regex matched any of the lines the input read since the rules were loaded: its rules count nothing; if they are of rare lines, this is expected, otherwise --explain=FILE says where a line stops matching (logged once per load)",
				"input", label, "source", c.source, "lines", m.sinceUnfit)
		}
		if fresh := newFiles(&m.noFormat, &m.noFormatLogged, c.noFormat, at); len(fresh) > 0 {
			p.opts.Logger.Warn("files of the input whose lines fit none of its log formats: their lines count as unmatched, and its rules count nothing of them; logwindow_input_file_format{format=\""+parser.NoFormat+"\"} counts them, --explain=FILE says where a line stops fitting (files that come to it later are logged at most once an hour)",
				"input", label, "source", c.source, "files", len(fresh), "example", fresh[0])
		}
		if fresh := newFiles(&m.unread, &m.unreadLogged, c.unread, at); len(fresh) > 0 {
			p.opts.Logger.Warn("files of the input of JSON objects with none of the members its rules read (another application's log): its rules count nothing of them, and logwindow_input_unread_lines_total counts their lines, not as unmatched; narrow the input's glob (by namespace or pod) to leave them out (files that come to it later are logged at most once an hour)",
				"input", label, "source", c.source, "files", len(fresh), "example", fresh[0])
		}
	}
}

// newFiles returns, sorted, the files of paths (an input's files of no candidate format, or
// of one no rule reads) not in *told, unless some were within unreadLogEvery of at, and
// adds them to *told, with *logged at; it forgets from *told the files no longer of paths.
// A file is thus logged once while it is of them, and files that come to them after the
// first at most every unreadLogEvery.
func newFiles(told *map[string]bool, logged *time.Time, paths []string, at time.Time) []string {
	var fresh []string
	still := make(map[string]bool, len(paths))
	for _, path := range paths {
		still[path] = true
		if !(*told)[path] {
			fresh = append(fresh, path)
		}
	}
	for path := range *told {
		if !still[path] {
			delete(*told, path)
		}
	}
	if len(fresh) == 0 || !logged.IsZero() && at.Sub(*logged) < unreadableLogEvery {
		return nil
	}
	if *told == nil {
		*told = map[string]bool{}
	}
	for _, path := range fresh {
		(*told)[path] = true
	}
	*logged = at
	slices.Sort(fresh)
	return fresh
}
