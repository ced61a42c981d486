// Package parser turns log lines into events: for every rule a line matches, the rule, its
// label values, its value and, for event-time rules, the line's own time.
//
// Rules whose regexes are the same after %{PATTERN} expansion form one group and share one
// match per line, so adding rules over the nginx pattern adds only the per-rule work
// (filters, value, labels), never another regex run. A group reading a web server's log
// format cuts its lines with the format's scanner (parser/formatscan) when the scanner
// reads the format; any other group's regex runs on parser/fastmatch when fastmatch accepts
// it and on regexp otherwise; regexp is then guarded by a literal every match must
// contain, so most lines that cannot match never reach it.
package parser

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/parser/event"
)

// DropReason says why a matched line produced no event for a rule.
type DropReason = event.DropReason

// The drop reasons, as the parser's callers have always named them.
const (
	NoValue      = event.NoValue
	BadNumber    = event.BadNumber
	BadTimestamp = event.BadTimestamp
	Negative     = event.Negative
)

// Event is one rule matching one line; see event.Event.
type Event = event.Event

// KeySep joins the label values of Event.Key; see event.KeySep.
const KeySep = event.KeySep

// Sink receives what Parse finds. Parse calls it synchronously, from the goroutine calling
// Parse; one line can give several calls (one per rule).
type Sink interface {
	// Event is a rule matching the line; e is valid only during the call.
	Event(e *Event)
	// Drop is a rule matching the line without an event, for the reason given.
	Drop(rule int, reason DropReason)
}

// MaxLabelValueLen caps a label value in bytes: whatever a line holds, a series' label set
// stays small. Longer values are cut at a UTF-8 boundary, so values that differ only past
// the cap share a series.
const MaxLabelValueLen = 1024

// Parser matches lines against a fixed set of rules. It is immutable once built and safe
// for concurrent use (the pipeline parses each input from its own goroutine).
type Parser struct {
	groups []group
	rules  int // how many rules New was given
	// base is the program of a line read by no candidate format: the groups of rules
	// that read no candidates. cands are the programs of the candidate formats of the
	// rules (config.Rule.Candidates), in their order, and byID finds them by their
	// format's ID.
	base  *formatProgram
	cands []*formatProgram
	byID  map[string]int
	// inputs are the programs of the formats of the inputs of each name, their
	// candidates or their one format (SetInputs); nil until SetInputs: every candidate
	// then. one is the program of the inputs of a name that are of one format, which a
	// rule reading candidates reads: it reads every line of theirs.
	inputs map[string][]*formatProgram
	one    map[string]*formatProgram
	// byFormat are the rules reading candidates, for Explain.
	byFormat []ruleEntry
	// objects are the programs of JSON object files by the members their objects have
	// (objectProgram), made as files need them.
	objects sync.Map
	// paths are the path captures the rules read, sorted: the order Session.SetPath
	// takes their values in.
	paths []string
	// timeRules are, per slot of the times' cache (timestampSpec.slot), the rules that
	// read it: TimeRules.
	timeRules [][]int
	// scratch holds the per-call buffers, so Parse allocates nothing per line and
	// concurrent calls never share a buffer.
	scratch sync.Pool
}

// group is the rules sharing one regex, hence one match per line; or the fields rules of
// one structured format, which share one read of the line.
type group struct {
	m compiled
	// parse is m recording only the groups the rules read, for Parse; Explain shows
	// every group, so it runs m.
	parse compiled
	// prog is the regex m runs as a syntax program, for Explain, compiled on its first
	// use and then kept; nil for a fields group.
	prog func() *regexProgram
	// fields is set for a group of fields rules (m is then unused), ex once built.
	fields *fieldsGroup
	ex     extractor
	ncap   int // ints of caps the matcher fills; 0 when no rule reads a capture
	// pathBase is the slot of the first path capture when a rule reads path captures
	// (caps then go on past ncap with them, Parser.paths in order), else 0.
	pathBase int
	// format is the log format of a regex group whose rules read one, and derived its
	// derived captures (numbered after the regex's groups); post processes the captures
	// the rules read once matched, postAll every capture (for Explain). nall is the ints
	// of caps every capture takes.
	format        *logformat.Format
	derived       []config.Derived
	post, postAll *formatPost
	nall          int
	// inputs is the union of the rules' inputs; nil when some rule reads every input.
	inputs []string
	rules  []rule
	// cand is the ID of the candidate format whose lines the group reads, for rules
	// compiled against it (config.Rule.Variants); "" for a group every line goes to.
	// strict is the group a line must give for it to fit the format (its last: the
	// variables a format ends with may be missing, see logformat.compileText), 0 for none.
	cand   string
	strict int
	// members are, for the group of a JSON template, the slots of the members its rules
	// read, which the template always writes: a line that lacks one is not of it.
	members []int
	// absent are, for the group of a file's JSON objects (Parser.objectProgram), the
	// slots of the members its rules read that none of the file's objects had so far:
	// a line that has one is read by a program with more of the rules (Session.grow).
	absent []int
	// entries are the config rules of rules, in the same order, while the parser is
	// built.
	entries []ruleEntry
}

// rule is a config.Rule reduced to what the per-line work reads.
type rule struct {
	index  int
	inputs []string // nil: every input
	where  []where
	// whereNot filters drop the line when their capture matches.
	whereNot []where
	value    int // capture index, -1 for a counting rule
	// valueList: the value is a list, of which the first counts (config.Rule.ValueList).
	valueList bool
	ts        *timestampSpec
	labels    []config.Template
	items     []config.Item
	// labelRewriters and itemRewriters are, per label and item, the index of its
	// rewriter in the scratch's caches, -1 for none; nil when the rule rewrites none.
	labelRewriters, itemRewriters []int
	// labelSet and itemSet number the rule's label templates and its items (with their
	// rewriters), equal lists sharing a number, so that rules of a group with the same
	// labels (or items) render them once per line.
	labelSet, itemSet int
	// literalsValid: the literal text of the labels and items is valid UTF-8, so a label
	// value cut from an ASCII line needs no check.
	literalsValid bool
	// oneLabel is the capture that is the rule's one label, when its labels are one
	// template of one capture and nothing rewrites it, else -1; itemCaptures is the same
	// per item. A value that is already a valid label value (or an item kept in full) is
	// then given as the capture's bytes where they are, not copied.
	oneLabel     int
	itemCaptures []int
	// labelCaptures are the captures that are the rule's labels, when it has more than
	// one label, each one capture, and nothing rewrites them, else nil: renderCaptures
	// renders such a set.
	labelCaptures []int
	// oneItem is itemCaptures[0] when the rule has exactly one item, else -1.
	oneItem int
	// names are the rule's named captures and where they are in its group's caps: what
	// Explain shows. Parse does not read them.
	names []namedCapture
	// keys are, for a rule reading JSON objects (logformat.JSONObject), the members it
	// reads: it applies to a file whose objects have them all.
	keys []string
}

type where struct {
	capture int
	f       filter
}

type timestampSpec struct {
	capture int
	layout  string
	// loc is the zone a layout without one reads its times in (config.Timestamp.In).
	loc *time.Location
	// unix: the capture is seconds since the epoch (config.Timestamp.Unix).
	unix bool
	// folds: the layout reads no zone, and loc is not UTC, so a time may fall in an hour
	// loc repeats, read at the offset nearer the line before's time (nearerReading).
	folds bool
	// zoneName: the layout reads a zone abbreviation, which loc must know (zoneKnown).
	zoneName bool
	// slot indexes the per-call cache; rules of a group with the same capture and layout
	// share one, so a line's time is parsed once, and not again while it repeats.
	slot int
}

// New builds a parser for rules (normally config.Config.Rules); events name rules by
// their index in this slice. It fails only on rules that config.Load would not produce.
func New(rules []*config.Rule) (*Parser, error) {
	return build(rules, viaScanner)
}

// build is New with the choice of matcher, so tests and benchmarks can compare the scanner,
// fastmatch and plain regexp in one run.
func build(rules []*config.Rule, eng engine) (*Parser, error) {
	p := &Parser{byID: map[string]int{}}
	byRegex := map[string]int{}
	var sz sizes
	rewriters := map[string]int{}
	// rewriterOf numbers a label's rewrites; -1 for a label without.
	rewriterOf := func(rws []config.Rewrite) int {
		if len(rws) == 0 {
			return -1
		}
		key := rewriterKey(rws)
		w, ok := rewriters[key]
		if !ok {
			w = len(sz.rewriters)
			rewriters[key] = w
			sz.rewriters = append(sz.rewriters, newRewriter(rws))
		}
		return w
	}
	entries, cands, err := p.entries(rules)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		i, cr := e.index, e.rule
		if err := check(cr); err != nil {
			return nil, fmt.Errorf("rule %d: %w", i, err)
		}
		// Regex groups are keyed by the regex; a fields group by its format, which no
		// regex's text can equal (it starts with a NUL).
		key := "\x00fields " + cr.Format.String()
		if cr.Regexp != nil {
			key = cr.Regexp.String()
			if cr.LogFormat != nil {
				// The same regex undoes escapes of another kind (default and none).
				key += "\x00log format " + cr.LogFormat.Escape.String()
			}
		}
		if e.cand != nil {
			key += "\x00candidate " + e.cand.ID()
		}
		gi, ok := byRegex[key]
		if !ok {
			gi = len(p.groups)
			byRegex[key] = gi
			p.groups = append(p.groups, newGroup(cr, eng))
			if e.cand != nil {
				p.groups[gi].cand = e.cand.ID()
			}
		}
		g := &p.groups[gi]
		r := rule{index: i, inputs: cr.Inputs, value: cr.ValueCapture, valueList: cr.ValueList}
		if e.cand != nil && e.cand.AnyObject() {
			for _, f := range cr.Fields {
				r.keys = append(r.keys, f.Capture)
			}
		}
		for _, l := range cr.Labels {
			r.labels = append(r.labels, l.Template)
		}
		r.items = cr.Items
		if len(cr.Rewrites) > 0 {
			r.labelRewriters = make([]int, len(cr.Labels))
			for j, l := range cr.Labels {
				r.labelRewriters[j] = rewriterOf(cr.RewritesOf(l.Name))
			}
			r.itemRewriters = make([]int, len(cr.Items))
			for j := range cr.Items {
				r.itemRewriters[j] = -1
				if cr.Top != nil && cr.Top.Item == j+1 {
					r.itemRewriters[j] = rewriterOf(cr.RewritesOf(cr.Top.Label))
				}
			}
		}
		r.literalsValid = literalsValid(r.labels, r.items)
		r.where = filters(cr.Where, eng, &sz)
		r.whereNot = filters(cr.WhereNot, eng, &sz)
		if ts := cr.Timestamp; ts != nil {
			r.ts = newTimestampSpec(ts)
		}
		if g.fields != nil {
			// The group learns the rule's fields now; their slots do not move as
			// later rules add theirs.
			g.fields.slots(cr)
		}
		for _, name := range cr.PathCaptures {
			if !slices.Contains(p.paths, name) {
				p.paths = append(p.paths, name)
			}
		}
		if len(g.rules) == 0 || g.inputs != nil {
			g.inputs = unionInputs(g.inputs, cr.Inputs)
		}
		g.rules = append(g.rules, r)
		g.entries = append(g.entries, e)
		sz.labels = max(sz.labels, len(r.labels))
		sz.items = max(sz.items, len(r.items))
	}
	p.fitGroups(cands, eng)
	slices.Sort(p.paths)
	sz.paths = len(p.paths)
	var labelSets [][]rendering[config.Template]
	var itemSets [][]rendering[config.Item]
	slots := map[string]int{}
	for i := range p.groups {
		g := &p.groups[i]
		// A group's own captures (a regex group's derived ones after its groups) are
		// known once every rule is in; the path captures take the slots after them.
		g.nall = g.m.ncap + 2*len(g.derived)
		if g.fields != nil {
			if g.cand == logformat.JSONObject {
				g.fields.readStatus()
			}
			ex, err := g.fields.extractor()
			if err != nil {
				return nil, err
			}
			g.ex, g.ncap = ex, 2*(len(g.fields.paths)+1)
			g.nall = g.ncap
			g.post = g.fields.post()
			g.postAll = g.post
		}
		base := g.nall / 2
		for j := range g.rules {
			r := &g.rules[j]
			e := g.entries[j]
			cr := e.rule
			slot := p.slotOf(g, cr, base)
			if g.fields != nil || len(cr.PathCaptures) > 0 {
				r.remap(slot)
			}
			if len(cr.PathCaptures) > 0 {
				g.pathBase = base
			}
			r.names = captureNames(e.rule, slot)
			r.oneLabel = -1
			if len(r.labels) == 1 && r.labelRewriters == nil {
				r.oneLabel = oneCapture(r.labels[0])
			}
			r.labelCaptures = nil
			if len(r.labels) > 1 && r.labelRewriters == nil {
				r.labelCaptures = make([]int, len(r.labels))
				for j, t := range r.labels {
					if r.labelCaptures[j] = oneCapture(t); r.labelCaptures[j] < 0 {
						r.labelCaptures = nil
						break
					}
				}
			}
			r.itemCaptures = make([]int, len(r.items))
			for j, it := range r.items {
				r.itemCaptures[j] = oneCapture(it.Template)
				if r.itemRewriters != nil && r.itemRewriters[j] >= 0 {
					r.itemCaptures[j] = -1
				}
			}
			r.oneItem = -1
			if len(r.items) == 1 {
				r.oneItem = r.itemCaptures[0]
			}
			// Sets and time slots are found on the indexes in the group, so that two
			// rules that read one slot share, and two that read different ones do not.
			r.labelSet = setIndex(&labelSets, renderings(r.labels, r.labelRewriters), func(a, b rendering[config.Template]) bool {
				return a.rewriter == b.rewriter && slices.Equal(a.of, b.of)
			})
			r.itemSet = setIndex(&itemSets, renderings(r.items, r.itemRewriters), func(a, b rendering[config.Item]) bool {
				return a.rewriter == b.rewriter && a.of.Label == b.of.Label && slices.Equal(a.of.Template, b.of.Template)
			})
			if r.ts != nil {
				key := fmt.Sprintf("%d\x00%d\x00%s\x00%s\x00%t", i, r.ts.capture, r.ts.layout, r.ts.loc, r.ts.unix)
				slot, ok := slots[key]
				if !ok {
					slot = len(slots)
					slots[key] = slot
					p.timeRules = append(p.timeRules, nil)
				}
				r.ts.slot = slot
				if !slices.Contains(p.timeRules[slot], r.index) {
					p.timeRules[slot] = append(p.timeRules[slot], r.index)
				}
			}
		}
		if g.fields == nil {
			if g.cand != "" {
				g.strict = g.m.ncap/2 - 1
			}
			g.ncap = g.m.capsNeeded(g.strict > 0 || slices.ContainsFunc(g.rules, rule.readsCaptures))
			read := make([]bool, base)
			read[g.strict] = g.strict > 0
			for _, r := range g.rules {
				r.captures(func(c int) {
					if c < base {
						read[c] = true
					}
				})
			}
			if g.format != nil {
				for j, d := range g.derived {
					if read[g.m.ncap/2+j] {
						read[d.From] = true
						// A request's parts read its $status too (nginxVerdict).
						if st := statusSource(g.derived); st > 0 && d.Kind != logformat.StatusClass && g.format.Server == logformat.Nginx {
							read[st] = true
						}
					}
				}
				g.post = newFormatPost(g.format, g.derived, func(c int) bool { return read[c] })
				g.postAll = newFormatPost(g.format, g.derived, func(int) bool { return true })
				if g.ncap > 0 {
					g.ncap = g.nall
				}
			}
			g.parse = g.m.only(func(group int) bool { return read[group] })
		}
		sz.caps = max(sz.caps, g.ncap)
		if g.pathBase > 0 {
			sz.caps = max(sz.caps, 2*(base+len(p.paths)))
		}
	}
	sz.slots = len(slots)
	p.rules = len(rules)
	p.buildPrograms(cands)
	p.scratch.New = func() any { return newScratch(sz) }
	return p, nil
}

// slotOf maps the capture indexes of rule cr of group g (config's: the line's, then the
// path captures) to the group's: a fields rule's captures to the group's slots, the path
// captures to the slots from base on, in the parser's order of path captures.
func (p *Parser) slotOf(g *group, cr *config.Rule, base int) func(int) int {
	own := cr.Captures()
	var fields []int
	if g.fields != nil {
		fields = g.fields.slots(cr) // every field is in already: nothing is added
	}
	return func(c int) int {
		switch {
		case c < 0:
			return c
		case c > own:
			return base + slices.Index(p.paths, cr.PathCaptures[c-own-1])
		case fields != nil:
			return fields[c]
		}
		return c
	}
}

// setIndex returns the index of list in sets, adding it if no equal list is there yet.
func setIndex[E any](sets *[][]E, list []E, eq func(a, b E) bool) int {
	for i, l := range *sets {
		if slices.EqualFunc(l, list, eq) {
			return i
		}
	}
	*sets = append(*sets, list)
	return len(*sets) - 1
}

// rendering is a label template or an item with the rewriter of its value (-1: none).
type rendering[T any] struct {
	of       T
	rewriter int
}

// renderings pairs each of list with its rewriter in rewriters (nil: none rewritten).
func renderings[T any](list []T, rewriters []int) []rendering[T] {
	out := make([]rendering[T], len(list))
	for i, x := range list {
		out[i] = rendering[T]{x, -1}
		if rewriters != nil {
			out[i].rewriter = rewriters[i]
		}
	}
	return out
}

// oneCapture is the capture t is made of when it is one capture and nothing else, else -1.
func oneCapture(t config.Template) int {
	if len(t) == 1 && t[0].Capture >= 0 {
		return t[0].Capture
	}
	return -1
}

// literalsValid reports whether the literal parts of labels and items are valid UTF-8.
func literalsValid(labels []config.Template, items []config.Item) bool {
	for _, t := range labels {
		for _, part := range t {
			if !utf8.ValidString(part.Literal) {
				return false
			}
		}
	}
	for _, it := range items {
		for _, part := range it.Template {
			if !utf8.ValidString(part.Literal) {
				return false
			}
		}
	}
	return true
}

// filters compiles where or where_not filters, growing sz for those that need a matcher.
func filters(ws []config.Where, eng engine, sz *sizes) []where {
	var out []where
	for _, w := range ws {
		f := newFilter(w.Regexp, eng)
		out = append(out, where{capture: w.Capture, f: f})
		sz.whereCaps = max(sz.whereCaps, f.ncap)
	}
	return out
}

// check rejects rules whose capture indexes would fall outside the regex or fields:
// config.Load never builds those, but Parse must not panic on a hand-made rule. A rule
// compiled against a candidate that is any JSON object (logformat.JSONObject) has no
// fields when it reads no member: it counts every object, as it counts every line of a
// text candidate.
func check(r *config.Rule) error {
	if r == nil || r.Regexp == nil && len(r.Fields) == 0 && (r.LogFormat == nil || !r.LogFormat.AnyObject()) {
		return fmt.Errorf("no compiled regex and no fields")
	}
	n := r.Captures() + len(r.PathCaptures)
	bad := func(c int) bool { return c < 0 || c > n }
	for _, l := range r.Labels {
		for _, part := range l.Template {
			if part.Capture > n {
				return fmt.Errorf("label %s: capture %d out of range", l.Name, part.Capture)
			}
		}
	}
	for _, it := range r.Items {
		for _, part := range it.Template {
			if part.Capture > n {
				return fmt.Errorf("item: capture %d out of range", part.Capture)
			}
		}
	}
	for _, w := range slices.Concat(r.Where, r.WhereNot) {
		if bad(w.Capture) || w.Regexp == nil {
			return fmt.Errorf("where %s: capture %d out of range or no regex", w.CaptureName, w.Capture)
		}
	}
	if r.ValueCapture > n {
		return fmt.Errorf("value capture %d out of range", r.ValueCapture)
	}
	if ts := r.Timestamp; ts != nil && bad(ts.Capture) && ts.Capture != config.WrapperTime {
		return fmt.Errorf("timestamp capture %d out of range", ts.Capture)
	}
	return nil
}

// unionInputs merges a rule's inputs into its group's; nil (every input) absorbs all.
func unionInputs(group, rule []string) []string {
	if rule == nil {
		return nil
	}
	out := slices.Clone(group)
	for _, in := range rule {
		if !slices.Contains(out, in) {
			out = append(out, in)
		}
	}
	return out
}

// reads reports whether the rule takes lines of input.
func (r *rule) reads(input string) bool {
	return r.inputs == nil || slices.Contains(r.inputs, input)
}

// captures calls f with every capture index the rule reads.
func (r *rule) captures(f func(int)) {
	for _, t := range r.labels {
		for _, part := range t {
			if part.Capture >= 0 {
				f(part.Capture)
			}
		}
	}
	for _, it := range r.items {
		for _, part := range it.Template {
			if part.Capture >= 0 {
				f(part.Capture)
			}
		}
	}
	for _, w := range slices.Concat(r.where, r.whereNot) {
		f(w.capture)
	}
	if r.value >= 0 {
		f(r.value)
	}
	if r.ts != nil && r.ts.capture != config.WrapperTime {
		f(r.ts.capture)
	}
}

func (r rule) readsCaptures() bool {
	return len(r.labels) > 0 || len(r.items) > 0 || len(r.where) > 0 || len(r.whereNot) > 0 || r.value >= 0 || r.ts != nil
}

// Parse matches line against every rule that reads input (the config.Input's Name, "" for
// an unnamed input) and reports the results to sink before returning. line is only read,
// and not kept. It returns false when fields rules read the input and the line is not of
// their format (not JSON, not logfmt): those rules see nothing of it, rules with a match
// regex still do.
func (p *Parser) Parse(input string, line []byte, sink Sink) bool {
	return p.ParseWrapped(input, line, nil, sink)
}

// ParseWrapped is Parse for a line that came wrapped (a CRI container log line): line is
// the message, and wrapperTime the wrapper's time text, which rules timed by cri_time read.
//
// Without a file to go by, a line is read by the candidate log format (config.Rule.Candidates)
// it fits best, as if it were a file's first line; a Session's ParseFile goes by the file.
func (p *Parser) ParseWrapped(input string, line, wrapperTime []byte, sink Sink) bool {
	s := p.scratch.Get().(*scratch)
	defer p.scratch.Put(s)
	_, ok := p.parse(s, p.lineProgram(s, input, line).groups, false, input, line, wrapperTime, sink)
	return ok
}

// parse is ParseWrapped with the buffers s over the groups of a program. fits says
// whether some group read the line (LineDone's fitted). With mustFit, groups[0] is a
// candidate format's, and a line that does not fit it is not parsed at all.
func (p *Parser) parse(s *scratch, groups []group, mustFit bool, input string, line, wrapperTime []byte, sink Sink) (fits, wellFormed bool) {
	s.wrapperTime = wrapperTime
	wellFormed = true
	var m match
	for i := range groups {
		g := &groups[i]
		fitting := mustFit && i == 0
		if !fitting && g.inputs != nil && !slices.Contains(g.inputs, input) {
			continue
		}
		// The match is written field by field where apply reads it: a match built
		// apart and copied whole would be read back just after its fields were written.
		m.src.line, m.src.more, m.caps = line, nil, s.caps[:g.ncap]
		if g.ex != nil {
			var ok bool
			if m.src, ok = g.ex.extract(line, m.caps, s); !ok {
				if fitting {
					return false, true
				}
				wellFormed = false
				continue
			}
			if fitting && (!hasMembers(m.caps, g.members) || hasAny(m.caps, g.absent)) {
				return false, true
			}
		} else if !g.parse.Match(line, m.caps) || fitting && g.strict > 0 && m.caps[2*g.strict] < 0 {
			// A line that is parsed by the format without having to fit it (held, of a
			// file of that format) may end before the variables it ends with, as the
			// lines of an input of that one format may.
			if fitting {
				return false, true
			}
			continue
		}
		fits = true
		if !g.post.empty() {
			g.post.apply(&m, s)
		}
		if g.pathBase > 0 {
			s.withPath(&m, g.pathBase)
		}
		s.newMatch()
		for j := range g.rules {
			s.apply(&g.rules[j], input, &m, sink)
		}
	}
	return fits, wellFormed
}

// hasAny reports whether some slot of members has a value in caps.
func hasAny(caps, members []int) bool {
	for _, k := range members {
		if caps[2*k] >= 0 {
			return true
		}
	}
	return false
}

// hasMembers reports whether every slot of members has a value in caps.
func hasMembers(caps, members []int) bool {
	for _, k := range members {
		if caps[2*k] < 0 {
			return false
		}
	}
	return true
}

// apply runs one rule of a matched group on its match m: input, filters, value, time,
// labels. It tells the sink and returns what it decided, with a detail: the index of the
// filter that failed (WhereFailed, WhereNotMatched) or the DropReason (Dropped). Explain
// reports the decisions Parse takes by calling it too.
func (s *scratch) apply(r *rule, input string, m *match, sink Sink) (Outcome, int) {
	if !r.reads(input) {
		return OtherInput, 0
	}
	for i := range r.where {
		w := &r.where[i]
		if !w.f.match(m.capture(w.capture), s.whereCaps) {
			return WhereFailed, i
		}
	}
	for i := range r.whereNot {
		w := &r.whereNot[i]
		if w.f.match(m.capture(w.capture), s.whereCaps) {
			return WhereNotMatched, i
		}
	}
	value := 1.0
	if r.value >= 0 {
		// A byte count or a time of nginx's (nearly every value) is read without a call;
		// a list's first item of that shape is the whole list.
		raw := m.capture(r.value)
		v, ok := parseUsual(raw)
		if !ok {
			var reason DropReason
			if v, reason, ok = readValue(raw, r.valueList); !ok {
				sink.Drop(r.index, reason)
				return Dropped, int(reason)
			}
		}
		value = v
	}
	var at int64
	if r.ts != nil {
		// Another rule of this match read the same capture with the same layout: the
		// check is here, where it costs no call.
		c := &s.times[r.ts.slot]
		if c.match != s.match {
			s.time(c, r.ts, m)
		}
		if !c.ok {
			sink.Drop(r.index, BadTimestamp)
			return Dropped, int(BadTimestamp)
		}
		at = c.unix
	}
	// Rules of a group often share their labels (and items): what the previous rule
	// rendered from this match is used again.
	valid := len(r.labels)+len(r.items) > 0 && r.literalsValid && s.asciiText(m)
	// The event's slices are written only when they change: a rule with the labels of
	// the previous one leaves them as they are.
	e := &s.event
	if s.keyMatch != s.match || s.keySet != r.labelSet {
		s.keyMatch, s.keySet = s.match, r.labelSet
		var v []byte
		direct := r.oneLabel >= 0
		if direct {
			v = m.capture(r.oneLabel)
			direct = asIs(v, valid)
		}
		if direct {
			s.labels[0] = v[:len(v):len(v)]
			e.Key, e.Labels = s.labels[0], s.labels[:1]
		} else {
			if r.labelCaptures == nil || !s.renderCaptures(r.labelCaptures, m, valid) {
				s.render(r.labels, r.labelRewriters, m, valid)
			}
			e.Key, e.Labels = s.key, s.labels[:len(r.labels)]
		}
	}
	if len(r.items) > 0 {
		if s.itemsMatch != s.match || s.itemsSet != r.itemSet {
			s.itemsMatch, s.itemsSet = s.match, r.itemSet
			// A rule's one item given as its capture's bytes (a distinct count's text, a
			// top label's value) costs no call; one that cannot be is copied without
			// renderItems asking again.
			if r.oneItem < 0 {
				s.renderItems(r.items, r.itemCaptures, r.itemRewriters, m, valid)
			} else if v, ok := asItem(m.capture(r.oneItem), r.items[0].Label, valid); ok {
				s.items[0] = v
			} else {
				s.renderItems(r.items, nil, r.itemRewriters, m, valid)
			}
		}
		e.Items = s.items[:len(r.items)]
	} else if e.Items != nil {
		e.Items = nil
	}
	e.Rule, e.Value, e.Time, e.HasTime = r.index, value, at, r.ts != nil
	sink.Event(e)
	return Counted, 0
}

// readValue reads a value capture that parseUsual did not, a list's first item when list,
// or says why the rule drops the line.
func readValue(raw []byte, list bool) (float64, DropReason, bool) {
	if len(raw) == 0 || len(raw) == 1 && raw[0] == '-' {
		return 0, NoValue, false
	}
	if list {
		if raw = firstOfList(raw); len(raw) == 1 && raw[0] == '-' {
			return 0, NoValue, false
		}
	}
	v, ok := parseNumber(raw)
	if !ok {
		return 0, BadNumber, false
	}
	// The one comparison a value pays for: parseNumber reads -0 as 0, which counts.
	if v < 0 {
		return 0, Negative, false
	}
	return v, 0, true
}

// asIs reports whether v is a label value as it is: valid UTF-8 (known to be when valid)
// and within the cap. Such a value is given where it is, with its capacity cut to its
// length so that a sink appending to it cannot write over what follows it.
func asIs(v []byte, valid bool) bool {
	return len(v) <= MaxLabelValueLen && (valid || utf8.Valid(v))
}

// asItem returns a capture's bytes v as an item given where it is, its capacity cut as
// asIs says, and whether the item may be: it is not shown as a label, or v is a label
// value as it is.
func asItem(v []byte, label, valid bool) ([]byte, bool) {
	return v[:len(v):len(v)], !label || asIs(v, valid)
}

// text is what a match's captures index: the line, and after it (from offset len(line) on)
// the values decoded or derived from it, kept apart so that the line is never copied.
// more is always a buffer of the scratch parsing the line, whose capacity renderCaptures
// reads past its length: never a buffer of the caller's.
type text struct {
	line, more []byte
}

// match is a group's match of a line, which the group's rules read: the text its captures
// index and the captures, which the per-rule calls take as one pointer rather than nine
// words each.
type match struct {
	src  text
	caps []int
}

// capture returns capture i of the match.
func (m *match) capture(i int) []byte {
	return capture(&m.src, m.caps, i)
}

// capture returns capture i of src; one that did not participate reads as empty. src is a
// pointer: the text (six words) given by value was copied for every capture read, and the
// first copy of a match read back words that Parser.parse had just written one by one.
func capture(src *text, caps []int, i int) []byte {
	lo, hi := caps[2*i], caps[2*i+1]
	if n := len(src.line); lo >= n {
		return src.more[lo-n : hi-n]
	}
	if lo < 0 {
		return nil
	}
	return src.line[lo:hi]
}

// time parses a rule's timestamp capture of line into c, its cache, for the current
// match, remembering the last text and result: log lines come in time order, so
// consecutive lines mostly repeat the same second.
func (s *scratch) time(c *timeCache, ts *timestampSpec, m *match) {
	c.match = s.match
	raw := s.wrapperTime
	if ts.capture != config.WrapperTime {
		raw = m.capture(ts.capture)
	}
	if c.valid && sameTime(c.raw, raw) {
		return
	}
	c.raw = append(c.raw[:0], raw...)
	c.valid = true
	if ts.unix {
		c.unix, c.ok = unixSeconds(raw)
		return
	}
	// Layouts without a zone read in the rule's location (UTC unless given); with a
	// numeric zone the line's offset is applied.
	t, err := parseTime(ts, string(raw))
	if err != nil {
		t, err = leapSecond(ts, err)
	}
	if c.ok = err == nil; !c.ok {
		return // c.unix stays the time of the line before, for nearerReading
	}
	if ts.folds {
		t = nearerReading(t, c.unix, c.parsed, s.wall, s.live)
	}
	c.unix, c.parsed = t.Unix(), true
}

// sameTime is string(a) == string(b) without runtime.memequal's call for texts of 16 to 32
// bytes, as the usual times are (nginx's $time_local 26, $time_iso8601 25): four words,
// the last two overlapping the first two, compared at once.
func sameTime(a, b []byte) bool {
	n := len(a)
	if n != len(b) || n < 16 || n > 32 {
		return string(a) == string(b)
	}
	return (binary.LittleEndian.Uint64(a)^binary.LittleEndian.Uint64(b))|
		(binary.LittleEndian.Uint64(a[8:])^binary.LittleEndian.Uint64(b[8:]))|
		(binary.LittleEndian.Uint64(a[n-16:])^binary.LittleEndian.Uint64(b[n-16:]))|
		(binary.LittleEndian.Uint64(a[n-8:])^binary.LittleEndian.Uint64(b[n-8:])) == 0
}

// foldReach is how far from a time a zone's offset is looked up to find the other offset
// of an hour it repeats: more than any change of offset a zone makes (an hour, two in
// a few).
const foldReach = 3 * time.Hour

// foldNear is how near the line before a time of the repeated hour must be for the log
// to be taken as going on from it (see nearerReading): lines minutes apart are in order.
const foldNear = 5 * 60

// nearerReading returns, of the instants at which the zone of t reads the wall-clock time
// t reads (two in the hour its clocks repeat when they go back, which Go reads at one of
// them), the one a log's lines in order put it at. It is t elsewhere.
//
// When one of them is within foldNear of second prev, the time of the line before (known),
// that one: the second time through the hour goes on from the first's end, not an hour
// back (in no window shorter than an hour). Otherwise, for a line read as it is written
// (live, at wall-clock second wall), the one nearer the clock of those not ahead of it
// by more than foldNear: the first time through, the later is an hour ahead of the clock;
// the second, the earlier an hour behind it; so a quiet log's line after half an hour
// without one, or the first line after a start, is read at the clock. Else (a replay, a
// warm start's old lines) the one nearer prev, the later when both are as near; with no
// line before, the later: Go's own pick is the earlier west of Greenwich and the later
// east of it, and the earlier, wrong, puts the lines of the second time through an hour
// back until the hour ends, where the later, wrong, puts those of the first ahead of the
// clock, which places them at the second they are read.
func nearerReading(t time.Time, prev int64, known bool, wall int64, live bool) time.Time {
	alt, ok := otherReading(t)
	if !ok {
		return t
	}
	early, late := t, alt
	if late.Before(early) {
		early, late = late, early
	}
	e, l := early.Unix(), late.Unix()
	switch {
	case known && min(dist(e, prev), dist(l, prev)) < foldNear, !live && known:
		if dist(e, prev) < dist(l, prev) {
			return early
		}
	case live:
		if l > wall+foldNear || dist(e, wall) < dist(l, wall) {
			return early
		}
	}
	return late
}

// OtherReading returns the other instant at which the zone of t reads the wall-clock
// time t reads, if the zone has one: in the hour its clocks repeat, which a line of it
// is read at by the line before it, or by the clock (see Session.SetWall).
func OtherReading(t time.Time) (time.Time, bool) { return otherReading(t) }

// otherReading returns the other instant at which the zone of t reads the wall-clock
// time t reads, if the zone has one: in the hour its clocks repeat.
func otherReading(t time.Time) (time.Time, bool) {
	_, off := t.Zone()
	for _, d := range [...]time.Duration{-foldReach, foldReach} {
		_, other := t.Add(d).Zone()
		if other == off {
			continue
		}
		// The same wall-clock reading at the other offset, if the zone is at that offset
		// then: a time in the hour skipped when the clocks go forward has none.
		alt := t.Add(time.Duration(off-other) * time.Second)
		if _, at := alt.Zone(); at == other {
			return alt, true
		}
	}
	return t, false
}

// dist is the distance between seconds a and b.
func dist(a, b int64) int64 {
	if a < b {
		return b - a
	}
	return a - b
}

// newTimestampSpec is how the parser reads the times of ts.
func newTimestampSpec(ts *config.Timestamp) *timestampSpec {
	return &timestampSpec{capture: ts.Capture, layout: ts.ReadLayout(), loc: ts.In(), unix: ts.Unix,
		folds: ts.Folds(), zoneName: ts.ReadsZoneName()}
}

// UnknownZone is the *ZoneError for which value is no time of ts, or nil when it is
// a time, or none for another reason (which the layout says).
func UnknownZone(ts *config.Timestamp, value []byte) *ZoneError {
	spec := newTimestampSpec(ts)
	if !spec.zoneName {
		return nil
	}
	_, err := parseTime(spec, string(value))
	if err != nil {
		_, err = leapSecond(spec, err)
	}
	ze, _ := err.(*ZoneError)
	return ze
}

// ZoneError is a time whose zone abbreviation (a layout's MST) the rule's location has
// no offset for. Go's time parser reads such a time at offset 0, an hour off for CET and
// eight for PST, where the line is dropped instead; the abbreviation is only known in the
// zone that writes it, and one (IST, CST) names several.
type ZoneError struct {
	Abbreviation string
	Location     *time.Location
}

func (e *ZoneError) Error() string {
	return fmt.Sprintf("the zone abbreviation %q is none of %s's, whose offset is unknown", e.Abbreviation, e.Location)
}

// zoneKnown checks that the zone abbreviation t was read with is loc's, UTC's, or GMT or
// another name of offset 0 (+00, -00, GMT+0), which Go's parser reads at offset 0, as it
// reads any other: CET an hour off, +03 three hours, and GMT with hours (GMT+1) at the
// offset's wall time but the instant of UTC's, where the tz database's Etc/GMT+1 is an
// hour behind UTC, not ahead: no one reading is right.
func zoneKnown(t time.Time, loc *time.Location) error {
	if l := t.Location(); l == loc || l == time.UTC {
		return nil
	}
	if name, _ := t.Zone(); !zeroOffsetName(name) {
		return &ZoneError{Abbreviation: name, Location: loc}
	}
	return nil
}

// zeroOffsetName reports whether a zone name Go's parser read (its parseTimeZone) says
// offset 0: GMT, or a sign and zeros, after GMT or not.
func zeroOffsetName(name string) bool {
	n := strings.TrimPrefix(name, "GMT")
	return n == "" || len(n) > 1 && (n[0] == '+' || n[0] == '-') && strings.Trim(n[1:], "0") == ""
}

// parseTime reads value with the layout of ts, and again where Go's time parser refuses
// what RFC 3339 allows: a lower-case t or z where the layout has a T or a Z offset
// (Z07:00). A zone abbreviation the layout reads must be known (zoneKnown).
func parseTime(ts *timestampSpec, value string) (time.Time, error) {
	t, err := time.ParseInLocation(ts.layout, value, ts.loc)
	for range 2 {
		pe, ok := err.(*time.ParseError)
		if !ok || pe.ValueElem == "" {
			break
		}
		c := pe.ValueElem[0]
		if !(c == 't' && pe.LayoutElem == "T" || c == 'z' && strings.HasPrefix(pe.LayoutElem, "Z07")) {
			break
		}
		at := len(pe.Value) - len(pe.ValueElem)
		t, err = time.ParseInLocation(ts.layout, pe.Value[:at]+string(c-'a'+'A')+pe.Value[at+1:], ts.loc)
	}
	if err == nil && ts.zoneName {
		err = zoneKnown(t, ts.loc)
	}
	return t, err
}

// leapSecond reads again, as second 59 of its minute, a time that failed to parse
// (err) only because its second is 60: a leap second (23:59:60 UTC), which a clock that
// follows UTC writes and time.Parse refuses as out of range. The line counts at the last
// second of the minute rather than being dropped. A leap second is only ever the last of
// a UTC day, so a 60 in any other minute (12:34:60 UTC, or 23:59:60 in a zone other than
// UTC's) is no time a clock writes and stays the error. The error locates the second:
// its ValueElem is what follows the element that was out of range.
func leapSecond(ts *timestampSpec, err error) (time.Time, error) {
	pe, ok := err.(*time.ParseError)
	if !ok || pe.Message != ": second out of range" {
		return time.Time{}, err
	}
	end := len(pe.Value) - len(pe.ValueElem)
	if end < 2 || pe.Value[end-2:end] != "60" {
		return time.Time{}, err
	}
	t, again := parseTime(ts, pe.Value[:end-2]+"59"+pe.Value[end:])
	if again != nil {
		return time.Time{}, again
	}
	if h, m, s := t.UTC().Clock(); h != 23 || m != 59 || s != 59 {
		return time.Time{}, err
	}
	return t, nil
}
