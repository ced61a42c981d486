package parser

import (
	"slices"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
)

// Outcome is what a rule made of one line.
type Outcome uint8

const (
	// Counted: the rule produced an event (Parse called Sink.Event).
	Counted Outcome = iota
	// OtherInput: the rule reads only other inputs.
	OtherInput
	// NoMatch: the rule's regex does not match the line.
	NoMatch
	// WhereFailed: a where filter's regex does not match its capture.
	WhereFailed
	// Dropped: the regex and filters matched, but the line has no usable value or time
	// (Parse called Sink.Drop).
	Dropped
	// WhereNotMatched: a where_not filter's regex matches its capture.
	WhereNotMatched
	// Malformed: the line is not of the fields rule's format (JSON, logfmt).
	Malformed
	// OtherFormat: the rule reads candidate formats, and the one the line is read by
	// lacks a capture it reads (RuleResult.Lacks), so it does not apply.
	OtherFormat
)

// String names the outcome as --explain's JSON does.
func (o Outcome) String() string {
	switch o {
	case Counted:
		return "counted"
	case OtherInput:
		return "other_input"
	case NoMatch:
		return "no_match"
	case WhereFailed:
		return "where_failed"
	case Dropped:
		return "dropped"
	case WhereNotMatched:
		return "where_not_matched"
	case Malformed:
		return "malformed"
	case OtherFormat:
		return "other_format"
	}
	return "unknown"
}

// Explanation is what every rule made of one line, and what it was decided on.
type Explanation struct {
	// Rules has one result per rule, indexed like the rules given to New.
	Rules []RuleResult
}

// RuleResult is one rule's outcome for a line. Byte slices are copies: they stay valid.
type RuleResult struct {
	Rule    int
	Outcome Outcome
	// Drop is the reason when Outcome is Dropped.
	Drop DropReason
	// Where is the index of the filter that decided, in the rule's config.Rule.Where when
	// Outcome is WhereFailed, in its WhereNot when WhereNotMatched; the capture it read is
	// among Captures.
	Where int
	// Captures are the rule's named captures when its regex matched (in the regex's
	// order) or its fields were read (in the order of config.Rule.Fields).
	Captures []Capture
	// Event is what Sink.Event received, when Outcome is Counted.
	Event Event
	// Raw and RawItems are, where the rule's rewrites changed a value of Event.Labels or
	// Event.Items, the value before them (at the same index); nil elsewhere, and nil
	// slices when no rewrite changed anything.
	Raw, RawItems [][]byte
	// Prefix says how far the regex got, when Outcome is NoMatch.
	Prefix *Prefix
	// Format is, for a rule reading candidate formats (config.Rule.Candidates), the one
	// the line is read by; when it fits none (NoMatch), the text format it fits the
	// farthest, which Prefix then follows (nil when every candidate is JSON). Lacks are
	// the captures the rule reads that Format lacks (OtherFormat). Candidates are the
	// formats of the input, which the line was read by one of or fits none of.
	Format     *logformat.Format
	Lacks      []string
	Candidates []*logformat.Format
}

// Capture is one named group of a match.
type Capture struct {
	Name  string
	Value []byte
	// Matched is false for a group that did not take part in the match (it reads as
	// empty in labels, filters and values).
	Matched bool
}

// discard is the sink of Explain's calls to apply: the outcome apply returns and the event
// it leaves in the scratch say everything the sink would have been told.
type discard struct{}

func (discard) Event(*Event)         {}
func (discard) Drop(int, DropReason) {}

// Explain runs line through every rule as Parse does, with the same matchers and the same
// per-rule decisions, and returns what each rule made of it and why. It is not on the hot
// path: it allocates, and for a regex that does not match it also works out how far the
// regex got (see Prefix).
func (p *Parser) Explain(input string, line []byte) *Explanation {
	return p.ExplainWrapped(input, line, nil)
}

// ExplainWrapped is Explain for a line that came wrapped, as ParseWrapped is Parse's.
func (p *Parser) ExplainWrapped(input string, line, wrapperTime []byte) *Explanation {
	s := p.scratch.Get().(*scratch)
	defer p.scratch.Put(s)
	// A rule reading candidate formats is read by the one the line fits, if any.
	cands := p.inputCands(input)
	if one := p.one[input]; one != nil {
		cands = []*formatProgram{one}
	}
	return p.explain(s, input, line, wrapperTime, p.lineProgram(s, input, line), cands)
}

// ExplainWrapped is Parser.ExplainWrapped for a line of the Session's input as the
// Session's parse read it, by the formats the Session was told (SetFormats, SetFormat),
// not by those of the input's name, which inputs without one share: by the program Fitted
// names. Call it from the LineDone of that line's parse (ParseFile, CloseFile), so that a
// line of a file is explained by the format chosen for the file then, as it was parsed,
// not by the one it alone fits best. Explaining changes nothing of what ParseFile holds.
func (s *Session) ExplainWrapped(input string, line, wrapperTime []byte) *Explanation {
	cands := s.progs
	if s.files == nil && s.one != nil {
		cands = []*formatProgram{s.one}
	}
	return s.p.explain(s.s, input, line, wrapperTime, s.farthest(line), cands)
}

// farthest is the program the Session's parse read line with (program), or, for a line
// of a file that does not fit its chosen format, the program of the candidate among it and
// those tied with it (fileFormat.tied) that the line fits the farthest: a line of an
// Apache log read as nginx's combined that holds Apache's \" and is cut short is told by
// apache_combined, which it would have fitted whole.
func (s *Session) farthest(line []byte) *formatProgram {
	prog := s.program()
	if s.files == nil || s.prog == nil || len(s.last.tied) == 0 || s.fits(line) {
		return prog
	}
	g := &prog.groups[0]
	if g.ex != nil {
		return prog
	}
	end := longestPrefix(g.prog(), line).End
	for _, id := range s.last.tied {
		tied := s.candidate(id)
		if tied == nil || tied.groups[0].ex != nil {
			continue
		}
		if pr := longestPrefix(tied.groups[0].prog(), line); pr != nil && pr.End > end {
			prog, end = tied, pr.End
		}
	}
	return prog
}

// explain is ExplainWrapped with the buffers s, reading line by the groups of prog, chosen
// among the programs of the input's formats, cands.
func (p *Parser) explain(s *scratch, input string, line, wrapperTime []byte, prog *formatProgram, cands []*formatProgram) *Explanation {
	s.wrapperTime = wrapperTime
	out := &Explanation{Rules: make([]RuleResult, p.rules)}
	p.explainFormats(out, s, input, line, prog, cands)
	groups := prog.groups
	for i := range groups {
		g := &groups[i]
		// A regex group fills every group, also those no rule reads, so all can be shown.
		m := match{src: text{line: line}, caps: make([]int, max(g.ncap, g.nall), max(g.ncap, g.nall)+2*len(p.paths))}
		var matched bool
		if g.ex != nil {
			m.src, matched = g.ex.extract(line, m.caps, s)
		} else {
			matched = g.m.Match(line, m.caps)
		}
		if matched && !g.postAll.empty() {
			g.postAll.apply(&m, s)
		}
		if matched && g.pathBase > 0 {
			s.withPath(&m, g.pathBase)
		}
		var prefix *Prefix
		s.newMatch()
		for j := range g.rules {
			r := &g.rules[j]
			res := &out.Rules[r.index]
			res.Rule = r.index
			switch {
			case !r.reads(input):
				res.Outcome = OtherInput
			case !matched && g.ex != nil:
				res.Outcome = Malformed
				if g.cand != "" {
					res.Format = prog.format // the JSON the line is not
				}
			case !matched:
				if prefix == nil {
					prefix = longestPrefix(g.prog(), line)
				}
				res.Outcome, res.Prefix = NoMatch, prefix
			default:
				res.Captures = copyCaptures(r.names, m.src, m.caps)
				if g.cand != "" {
					res.Format = prog.format
				}
				outcome, detail := s.apply(r, input, &m, discard{})
				res.Outcome = outcome
				switch outcome {
				case WhereFailed, WhereNotMatched:
					res.Where = detail
				case Dropped:
					res.Drop = DropReason(detail)
				case Counted:
					res.Event = cloneEvent(&s.event)
					res.Raw, res.RawItems = s.unrewritten(r, &m, &res.Event)
				}
			}
		}
	}
	return out
}

// explainFormats gives the rules reading candidate formats their results where the
// program of the line, prog, does not run them: the line is of a candidate whose format
// lacks a capture they read (OtherFormat), or it fits no candidate (NoMatch, followed
// through the text candidate of the input's, cands, it fits the farthest), or it is of
// an input they do not read, or of one with no format (OtherInput). The rules prog runs
// then have theirs written over.
func (p *Parser) explainFormats(out *Explanation, s *scratch, input string, line []byte, prog *formatProgram, cands []*formatProgram) {
	var nearest *logformat.Format
	var prefix *Prefix
	var formats []*logformat.Format
	for _, c := range cands {
		formats = append(formats, c.format)
	}
	if prog.format == nil {
		for _, c := range cands {
			g := &c.groups[0]
			if g.ex != nil {
				continue
			}
			if pr := longestPrefix(g.prog(), line); prefix == nil || pr.End > prefix.End {
				nearest, prefix = c.format, pr
			}
		}
	}
	for _, e := range p.byFormat {
		res := RuleResult{Rule: e.index, Outcome: NoMatch, Format: nearest, Prefix: prefix, Candidates: formats}
		switch {
		case e.rule.Inputs != nil && !slices.Contains(e.rule.Inputs, input), prog.format == nil && len(cands) == 0:
			res = RuleResult{Rule: e.index, Outcome: OtherInput}
		case prog.format != nil:
			res = RuleResult{Rule: e.index, Outcome: OtherFormat, Format: prog.format, Lacks: p.lacks(e, prog, s, line), Candidates: formats}
		}
		out.Rules[e.index] = res
	}
}

// lacks are the captures rule e reads that the format of prog, the line's, does not give:
// for a JSON object, the members the rule reads that the line's object has not.
func (p *Parser) lacks(e ruleEntry, prog *formatProgram, s *scratch, line []byte) []string {
	if !prog.format.AnyObject() {
		return e.rule.Lacks(prog.format)
	}
	full := p.cands[p.byID[prog.format.ID()]]
	present := members(full, [][]byte{line}, s)
	var out []string
	for _, r := range full.groups[0].rules {
		if r.index != e.index {
			continue
		}
		for _, k := range r.keys {
			if _, ok := slices.BinarySearch(present, k); !ok && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// namedCapture is a capture's name and its index in its group's caps.
type namedCapture struct {
	name  string
	index int
}

// captureNames lists a rule's named captures with their indexes in the group (slot maps
// the rule's to them): a regex's named groups or a fields rule's captures, the captures
// its log format derives, then its path captures.
func captureNames(r *config.Rule, slot func(int) int) []namedCapture {
	var out []namedCapture
	for i := 1; i <= r.Captures()+len(r.PathCaptures); i++ {
		name := r.CaptureName(i)
		if name == "" {
			continue
		}
		at := slot(i)
		if r.Regexp != nil && i <= r.Read() {
			at = i // a regex's groups are its own
		}
		out = append(out, namedCapture{name, at})
	}
	return out
}

// copyCaptures copies the named captures out of src, which caps indexes.
func copyCaptures(names []namedCapture, src text, caps []int) []Capture {
	out := make([]Capture, 0, len(names))
	for _, n := range names {
		out = append(out, Capture{Name: n.name, Value: slices.Clone(capture(&src, caps, n.index)), Matched: caps[2*n.index] >= 0})
	}
	return out
}

// cloneEvent copies e out of the scratch it points into.
func cloneEvent(e *Event) Event {
	c := *e
	c.Key = slices.Clone(e.Key)
	c.Items = make([][]byte, len(e.Items))
	for i, it := range e.Items {
		c.Items[i] = slices.Clone(it)
	}
	c.Labels = make([][]byte, len(e.Labels))
	start := 0
	for i, l := range e.Labels {
		c.Labels[i] = c.Key[start : start+len(l) : start+len(l)]
		start += len(l) + 1
	}
	return c
}
