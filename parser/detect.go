package parser

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
)

// ruleEntry is a rule as the parser builds it: a config rule, or a rule's variant for one
// of its candidate formats (cand), under the index of the rule it stands for.
type ruleEntry struct {
	index int
	rule  *config.Rule
	cand  *logformat.Format
}

// entries lists the rules to build, each rule reading candidates once per candidate that
// gives its captures, and the candidate formats in the order the rules name them.
func (p *Parser) entries(rules []*config.Rule) ([]ruleEntry, []*logformat.Format, error) {
	var out []ruleEntry
	var cands []*logformat.Format
	for i, cr := range rules {
		if cr == nil || cr.Candidates == nil {
			out = append(out, ruleEntry{index: i, rule: cr})
			continue
		}
		p.byFormat = append(p.byFormat, ruleEntry{index: i, rule: cr})
		if len(cr.Variants) != len(cr.Candidates) {
			return nil, nil, fmt.Errorf("rule %d: %d variants of %d candidate formats", i, len(cr.Variants), len(cr.Candidates))
		}
		for k, v := range cr.Variants {
			f := cr.Candidates[k]
			if _, ok := p.byID[f.ID()]; !ok {
				p.byID[f.ID()] = len(cands)
				cands = append(cands, f)
			}
			if v != nil {
				out = append(out, ruleEntry{index: i, rule: v, cand: f})
			}
		}
	}
	return out, cands, nil
}

// newGroup is the group of the regex or the fields cr reads.
func newGroup(cr *config.Rule, eng engine) group {
	if cr.Regexp == nil {
		return group{fields: &fieldsGroup{format: cr.Format}}
	}
	return group{m: compile(cr.Regexp, eng, cr.LogFormat), prog: sync.OnceValue(func() *regexProgram { return misfitProgram(cr) }),
		format: cr.LogFormat, derived: cr.Derived}
}

// misfitProgram is the program a line cr's regex does not match is explained by: its log
// format's MisfitRegex, else the regex. A line the regex does match, as it may one whose
// value of words the scan tries too many ends of, is told by the regex.
func misfitProgram(cr *config.Rule) *regexProgram {
	f := cr.LogFormat
	if f == nil || f.MisfitRegex() == f.Regex {
		return program(cr.Regexp)
	}
	rp := program(regexp.MustCompile(f.MisfitRegex()))
	if rp != nil {
		k := slices.IndexFunc(f.Pieces, func(p logformat.Piece) bool { return p.Words })
		rp.words, rp.wordsName = cr.Regexp, f.Captures[f.Pieces[k].Group-1].Name
	}
	return rp
}

// fitGroups adds a group without rules for each candidate format no rule's variant reads:
// whether a line fits it is still told, so that a file of that format is not read by
// another.
func (p *Parser) fitGroups(cands []*logformat.Format, eng engine) {
	for _, f := range cands {
		found := false
		for i := range p.groups {
			found = found || p.groups[i].cand == f.ID()
		}
		if found {
			continue
		}
		g := group{fields: &fieldsGroup{format: config.FormatJSON}}
		if !f.JSON() {
			// The format compiler writes only regexes of valid syntax.
			re := regexp.MustCompile(f.Regex)
			g = newGroup(&config.Rule{Regexp: re, LogFormat: f}, eng)
		}
		g.cand = f.ID()
		p.groups = append(p.groups, g)
	}
}

// formatProgram is what reads the lines of a file: the group of its candidate format, if any,
// first, then the groups every line goes to.
type formatProgram struct {
	groups []group
	// format is the candidate format, nil for the base program; numeric are the groups of
	// its regex whose values are numbers (logformat.Format.Numeric), which a line must
	// have so to fit it when its format is chosen.
	format  *logformat.Format
	numeric []int
	// written reads, for a JSON template (logformat.Format.Fields), the members the
	// template has: nginx writes them all on every line, so a line must have them to fit
	// it. nwritten is their number.
	written  *jsonExtractor
	nwritten int
}

// buildPrograms makes the base program and one per candidate format, once every group is
// complete.
func (p *Parser) buildPrograms(cands []*logformat.Format) {
	for i := range p.groups {
		p.groups[i].entries, p.groups[i].members = nil, nil
	}
	// The groups every line goes to come first, and are the base program's as they are.
	slices.SortStableFunc(p.groups, func(a, b group) int {
		return cmp.Compare(min(len(a.cand), 1), min(len(b.cand), 1))
	})
	common := slices.IndexFunc(p.groups, func(g group) bool { return g.cand != "" })
	if common < 0 {
		common = len(p.groups)
	}
	p.base = &formatProgram{groups: p.groups[:common:common]}
	for _, f := range cands {
		prog := &formatProgram{format: f}
		if len(f.Fields) > 0 {
			paths := make([][]string, len(f.Fields))
			for i, fl := range f.Fields {
				paths[i] = fl.Path
			}
			prog.written, prog.nwritten = newJSONExtractor(paths), len(paths)
		}
		for k, c := range f.Captures {
			if f.Numeric(c.Name) {
				prog.numeric = append(prog.numeric, k+1)
			}
		}
		for i := range p.groups {
			g := &p.groups[i]
			if g.cand != f.ID() {
				continue
			}
			if g.fields != nil && len(f.Fields) > 0 && !f.AnyObject() {
				for k, path := range g.fields.paths {
					if path != nil {
						g.members = append(g.members, k+1)
					}
				}
			}
			prog.groups = append(prog.groups, *g)
		}
		prog.groups = append(prog.groups, p.base.groups...)
		p.cands = append(p.cands, prog)
	}
}

// SetInputs tells the parser the log formats of the inputs its rules read (config.Input:
// its candidates, or its one format), so that a line of an input is read by its own: an
// input of one format that a rule reading candidates reads (another input's) has its
// lines read by that rule's variant for its format, and a line is never read by a
// candidate of another input. Inputs that share a name (those without one) cannot be
// told apart by it: a line of that name is read by the one of their formats it fits
// best, unless they are all of the same one; a Session is told its own input's
// (Session.SetFormats, Session.SetFormat). Call it once, before any line.
func (p *Parser) SetInputs(inputs []config.Input) {
	p.inputs, p.one = map[string][]*formatProgram{}, map[string]*formatProgram{}
	candidates := map[string]bool{}
	for _, in := range inputs {
		formats := in.LogFormats
		if formats != nil {
			candidates[in.Name] = true
		} else if in.LogFormat != nil {
			formats = []*logformat.Format{in.LogFormat}
		}
		progs := p.inputs[in.Name]
		for _, f := range formats {
			if k, ok := p.byID[f.ID()]; ok && !slices.Contains(progs, p.cands[k]) {
				progs = append(progs, p.cands[k])
			}
		}
		p.inputs[in.Name] = progs
	}
	for name, progs := range p.inputs {
		if candidates[name] {
			continue
		}
		// Of inputs of one format, only the formats that rules reading candidates read
		// them by are theirs to be read by: the others' groups read nothing of them.
		progs = slices.DeleteFunc(progs, func(prog *formatProgram) bool { return !prog.readsInput(name) })
		p.inputs[name] = progs
		if len(progs) == 1 {
			p.one[name] = progs[0]
		}
	}
}

// readsInput reports whether a rule of the groups of prog's own format (the variants for
// it of the rules reading candidates) reads input: else its lines need them not, and
// would pay for their match for nothing.
func (prog *formatProgram) readsInput(input string) bool {
	for i := range prog.groups {
		g := &prog.groups[i]
		if g.cand == "" {
			break
		}
		if slices.ContainsFunc(g.rules, func(r rule) bool { return r.reads(input) }) {
			return true
		}
	}
	return false
}

// inputCands are the programs of input's candidate formats (SetInputs); every
// candidate's before SetInputs, or for an input it was not told of.
func (p *Parser) inputCands(input string) []*formatProgram {
	if progs, ok := p.inputs[input]; ok {
		return progs
	}
	return p.cands
}

// Candidates are the candidate formats of the parser's rules, in the order the rules
// name them.
func (p *Parser) Candidates() []*logformat.Format {
	out := make([]*logformat.Format, len(p.cands))
	for i, c := range p.cands {
		out[i] = c.format
	}
	return out
}

// lineProgram is the formatProgram of the format of input that line alone fits best (of
// those it fits alike, one a rule applies to: readFirst), or the base program when it
// fits none (or there are none).
func (p *Parser) lineProgram(s *scratch, input string, line []byte) *formatProgram {
	if len(p.cands) == 0 {
		return p.base
	}
	if prog := p.one[input]; prog != nil {
		return prog
	}
	cands := p.inputCands(input)
	k, _ := chooseFits(cands, [][]byte{line}, s, &s.tied)
	switch {
	case k < 0:
		return p.base
	case cands[k].format.AnyObject():
		return p.objectProgram(cands[k], members(cands[k], [][]byte{line}, s))
	}
	// A tie goes to a candidate a rule applies to, as a file's does (Session.decide).
	return cands[readFirst(cands, k, s.tied, input)]
}

// reads reports whether a rule reads the lines of input that fit prog, a candidate's
// program: its format gives every capture the rule reads (for a JSON object's program,
// objectProgram's, the members its file's objects have).
func (prog *formatProgram) reads(input string) bool {
	return slices.ContainsFunc(prog.groups[0].rules, func(r rule) bool { return r.reads(input) })
}

// objectProgram is prog, JSONObject's, with only the rules whose members are all among
// present (sorted): the program of a file whose objects have those members. A line with
// another member a rule reads does not fit it (group.absent).
func (p *Parser) objectProgram(prog *formatProgram, present []string) *formatProgram {
	key := strings.Join(present, "\x00")
	if v, ok := p.objects.Load(key); ok {
		return v.(*formatProgram)
	}
	sub := &formatProgram{format: prog.format, groups: slices.Clone(prog.groups)}
	g := &sub.groups[0]
	g.rules = slices.DeleteFunc(slices.Clone(g.rules), func(r rule) bool {
		return slices.ContainsFunc(r.keys, func(k string) bool { _, ok := slices.BinarySearch(present, k); return !ok })
	})
	g.absent = nil
	for k, path := range g.fields.paths {
		if !g.fields.reads(k) {
			continue
		}
		if _, ok := slices.BinarySearch(present, path[0]); !ok {
			g.absent = append(g.absent, k+1)
		}
	}
	v, _ := p.objects.LoadOrStore(key, sub)
	return v.(*formatProgram)
}

// members are the members that the rules of prog, JSONObject's, read and that one of
// the lines fitting it has, sorted.
func members(prog *formatProgram, lines [][]byte, s *scratch) []string {
	g := &prog.groups[0]
	caps := s.detectCaps([]*formatProgram{prog})
	var out []string
	for _, line := range lines {
		if _, ok := g.ex.extract(line, caps[:g.ncap], s); !ok {
			continue
		}
		for k, path := range g.fields.paths {
			if g.fields.reads(k) && caps[2*(k+1)] >= 0 && !slices.Contains(out, path[0]) {
				out = append(out, path[0])
			}
		}
	}
	slices.Sort(out)
	return out
}

// fit tells whether line fits the format of prog (every variable present, those the
// server writes as numbers numbers; or a JSON object, with every member of a template),
// and how many of its variables have a value (neither empty nor "-"; a template's members
// that are not empty; none for any JSON object, whose members a line may have or not).
// caps has room for every group of the format's regex and every member of its template.
func fit(prog *formatProgram, line []byte, s *scratch, caps []int) (bool, int) {
	g := &prog.groups[0]
	if prog.written != nil {
		caps = caps[:2*(prog.nwritten+1)]
		if _, ok := prog.written.extract(line, caps, s); !ok {
			return false, 0
		}
		values := 0
		for k := 1; k <= prog.nwritten; k++ {
			if caps[2*k] < 0 {
				return false, 0
			}
			if caps[2*k+1] > caps[2*k] {
				values++
			}
		}
		return true, values
	}
	if g.ex != nil {
		_, ok := g.ex.extract(line, caps[:g.ncap], s)
		return ok, 0
	}
	caps = caps[:g.m.ncap]
	if !g.m.Match(line, caps) || g.strict > 0 && caps[2*g.strict] < 0 {
		return false, 0
	}
	for _, k := range prog.numeric {
		if lo := caps[2*k]; lo >= 0 && !numbers(line[lo:caps[2*k+1]]) {
			return false, 0
		}
	}
	return true, filled(line, caps)
}

// numbers reports whether v is made of what a number, a list of them or "-" is.
func numbers(v []byte) bool {
	for _, c := range v {
		if (c < '0' || c > '9') && c != '.' && c != '-' && c != ',' && c != ' ' && c != ':' {
			return false
		}
	}
	return true
}

// filled counts the groups of caps that have a value.
func filled(line []byte, caps []int) int {
	n := 0
	for i := 2; i+1 < len(caps); i += 2 {
		lo, hi := caps[i], caps[i+1]
		if lo >= 0 && hi > lo && !(hi == lo+1 && line[lo] == '-') {
			n++
		}
	}
	return n
}

// tryFit is fit as chooseFits tries a line against a candidate: a variable, so that a test
// can count what choosing a file's format costs.
var tryFit = fit

// chooseFits is the index of the candidate whose format most of lines fit (a tie goes to
// the one whose captures have a value most often in them, then to the earlier; -1 when
// no line fits any), and how many of lines fit it; with tied, it
// sets *tied to the indexes of the later candidates that lines fit as well as the one
// chosen, as many and with as many values (nginx's and Apache's combined, whose lines
// differ only in Apache's escapes).
func chooseFits(cands []*formatProgram, lines [][]byte, s *scratch, tied *[]int) (int, int) {
	best, bestFits, bestValues := -1, 0, 0
	if tied != nil {
		*tied = (*tied)[:0]
	}
	caps := s.detectCaps(cands)
	for k, prog := range cands {
		fits, values := 0, 0
		for _, line := range lines {
			if ok, v := tryFit(prog, line, s, caps); ok {
				fits++
				values += v
			}
		}
		switch {
		case fits > bestFits || fits > 0 && fits == bestFits && values > bestValues:
			best, bestFits, bestValues = k, fits, values
			if tied != nil {
				*tied = (*tied)[:0]
			}
		case tied != nil && fits > 0 && fits == bestFits && values == bestValues:
			*tied = append(*tied, k)
		}
	}
	return best, bestFits
}

// detectCaps is a buffer with room for every group of every candidate's format.
func (s *scratch) detectCaps(cands []*formatProgram) []int {
	n := 0
	for _, prog := range cands {
		g := &prog.groups[0]
		n = max(n, g.m.ncap, g.ncap, 2*(prog.nwritten+1))
	}
	if cap(s.detect) < n {
		s.detect = make([]int, n)
	}
	return s.detect[:n]
}
