package config

import (
	"fmt"
	"slices"

	"github.com/logwindow/logwindow_exporter/config/logformat"
	"go.yaml.in/yaml/v3"
)

// LogFormatAuto is the log_format: value standing for logformat.Auto, the candidates the
// exporter tells apart by their lines.
const LogFormatAuto = "auto"

// maxOtherCaptures bounds the captures a rule reading candidates may name beyond those
// its inputs' text formats have (a JSON object's keys, or a mistake refused per input in
// variants): their numbers are set aside before the rule's captures are read, so that
// path captures can be numbered after them.
const maxOtherCaptures = 64

// logFormatCandidates decodes a log_format: of candidates, `auto` or a list, into
// in.LogFormats; it reports false for a log_format: of one format, which the caller reads.
func (d *decoder) logFormatCandidates(e entry, subject string, in *Input) bool {
	v := resolve(e.val)
	var texts []string
	// items are the entries of the candidates, for a refused one's line: a list item is
	// its own key and value, so that a directive in a | block is pointed at within it.
	var items []entry
	switch {
	case v.Kind == yaml.ScalarNode && v.Value == LogFormatAuto:
		// auto is read here, not by scalar: its tag is checked as scalar would.
		if d.badTag(v, e.key.Line, subject, "log_format") {
			d.refuse()
			return true
		}
		texts = logformat.Auto
		for range texts {
			items = append(items, e)
		}
	case v.Kind == yaml.SequenceNode:
		if d.tooMany(e, subject, len(v.Content), maxCandidates, "candidates", "an input") {
			d.refuse()
			return true
		}
		var ok bool
		if texts, ok = d.list(e, subject, "log_format"); !ok {
			d.refuse()
			return true
		}
		for _, item := range v.Content {
			items = append(items, entry{key: item, val: item})
		}
		if len(texts) == 0 {
			d.add(e.key.Line, subject, "log_format: the list of candidates is empty; give one format, a list of them, or auto")
			d.refuse()
			return true
		}
	default:
		return false
	}
	presets := logformat.CandidatePresets()
	for i, text := range texts {
		f, err := logformat.ParseCandidate(text)
		if err != nil {
			d.formatError(items[i], subject, "log_format", text, presets, err)
			continue
		}
		d.unquoted(items[i], subject, f)
		d.pasted(items[i], subject, text, f)
		d.clashes(items[i], subject, "log_format", text, f)
		if j := slices.IndexFunc(in.LogFormats, func(g *logformat.Format) bool { return g.ID() == f.ID() }); j >= 0 {
			d.add(items[i].key.Line, subject, "log_format: %q is the same format as candidate #%d", text, j+1)
			continue
		}
		if j := slices.IndexFunc(in.LogFormats, f.SameLines); j >= 0 {
			d.add(items[i].key.Line, subject, "log_format: %q fits the same lines as candidate #%d (%s), only its variables are named otherwise: "+
				"the first is chosen for every file of them, and no file would be read by this one; keep one", text, j+1, in.LogFormats[j].Describe())
			d.refuse()
			continue
		}
		if j := slices.IndexFunc(in.LogFormats, func(g *logformat.Format) bool { return g.Describe() == f.Describe() }); j >= 0 {
			// nginx.conf's of several servers often all name their format main: the files
			// are counted by the name (logwindow_input_file_format), as --explain and the
			// status page name the format chosen, which would not tell them apart.
			d.warn(items[i].key.Line, subject,
				"log_format: candidate #%d is named %q, as candidate #%d is: logwindow_input_file_format, --explain and the status page would not tell their files apart; name one otherwise in its log_format directive",
				len(in.LogFormats)+1, f.Describe(), j+1)
		}
		in.LogFormats = append(in.LogFormats, f)
	}
	return true
}

// candidatesOf are the formats a line of the input may be in: its candidates, or its one
// log format; nil without any.
func (in Input) candidatesOf() []*logformat.Format {
	switch {
	case in.LogFormats != nil:
		return in.LogFormats
	case in.LogFormat != nil:
		return []*logformat.Format{in.LogFormat}
	}
	return nil
}

// fromCandidates makes r, a rule without match: or fields: that reads an input with
// candidate formats, read the captures of them all by name (the union of their names, a
// JSON object's any name): the rule is compiled against each candidate once its
// captures are known (variants). It reports false when an input it reads has no format.
func (rd *ruleDecoder) fromCandidates(line int, r *Rule, reads []Input) bool {
	caps := &captures{names: []string{""}, candidates: true}
	for _, in := range reads {
		cands := in.candidatesOf()
		if cands == nil && rd.formatRefused[in.Label()] {
			// Its format's error is the one to fix.
			continue
		}
		if cands == nil {
			rd.add(line, rd.subject, "match: is missing, and input %q has no log format to read its lines by (the rule reads %s); give it one, or name only inputs with one (inputs: [...])", in.Label(), pluralInputs(r))
			return false
		}
		for _, f := range cands {
			if !slices.ContainsFunc(r.Candidates, func(g *logformat.Format) bool { return g.ID() == f.ID() }) {
				r.Candidates = append(r.Candidates, f)
			}
			for _, name := range f.Names() {
				if !slices.Contains(caps.names, name) {
					caps.names = append(caps.names, name)
				}
			}
		}
	}
	slices.Sort(caps.names[1:])
	caps.reserved = len(caps.names)
	caps.names = append(caps.names, make([]string, maxOtherCaptures)...)
	caps.lines = map[string]int{}
	rd.caps = caps
	return true
}

// readAt notes the line name is first read at.
func (c *captures) readAt(name string, line int) {
	if _, seen := c.lines[name]; c.lines != nil && !seen {
		c.lines[name] = line
	}
}

// otherCapture gives name, a capture no text candidate has, a number among those set
// aside for such; -1 when they are all taken, or the captures are not candidates'.
func (c *captures) otherCapture(name string) int {
	if !c.candidates {
		return -1
	}
	for i := c.reserved; i < len(c.names); i++ {
		if c.names[i] == "" {
			c.names[i] = name
			if c.at != nil {
				c.at[name] = i
			}
			return i
		}
	}
	return -1
}

// variants compiles the rule r read by name (fromCandidates) against each of its
// candidates, and refuses a capture that no candidate of an input it reads gives.
func (rd *ruleDecoder) variants(r *Rule, all []Input) {
	if rd.caps == nil || !rd.caps.candidates {
		return
	}
	for _, name := range rd.caps.names[1:] {
		r.Fields = append(r.Fields, Field{Capture: name, Path: name, Segments: []string{name}})
	}
	read := readNames(r)
	timed := r.Timestamp != nil && r.Timestamp.Capture > 0 && r.Timestamp.Layout == "" && !r.Timestamp.Unix
	for _, in := range all {
		if !r.Reads(in) {
			continue
		}
		if rd.formatRefused[in.Label()] {
			// A candidate refused may be the one that has the capture: its error is the
			// one to fix.
			continue
		}
		cands := in.candidatesOf()
		for _, name := range read {
			isTime := timed && name == r.Timestamp.CaptureName
			if slices.ContainsFunc(cands, func(f *logformat.Format) bool { return gives(f, name, isTime) }) {
				continue
			}
			names := make([]string, len(cands))
			var have []string
			for i, f := range cands {
				names[i] = f.Describe()
				have = append(have, f.Names()...)
			}
			what := "capture"
			if isTime {
				what = "time capture"
			}
			rd.add(rd.caps.lines[name], rd.subject, "%s %q is given by no log format of input %q, which the rule reads (its candidates: %s)%s; name only inputs whose formats have it (inputs: [...])",
				what, name, in.Label(), listing(names), rd.suggest(name, have))
		}
	}
	for _, f := range r.Candidates {
		r.Variants = append(r.Variants, rd.variant(r.Line, r, f, read, timed))
	}
}

// gives reports whether format f gives capture name (as a time, when isTime).
func gives(f *logformat.Format, name string, isTime bool) bool {
	if f.AnyObject() {
		if isTime {
			_, _, ok := logformat.TimeOfName(name)
			return ok
		}
		return true
	}
	if isTime {
		_, _, ok := f.Time(name)
		return ok
	}
	return slices.Contains(f.Names(), name)
}

// Lacks are the captures of the line the rule reads that candidate format f does not give:
// why it does not apply to a file of that format (none when it does, or for a JSON object
// format, whose lines may have any member).
func (r *Rule) Lacks(f *logformat.Format) []string {
	timed := r.Timestamp != nil && r.Timestamp.Capture > 0 && r.Timestamp.Layout == "" && !r.Timestamp.Unix
	var out []string
	for _, name := range readNames(r) {
		if !gives(f, name, timed && name == r.Timestamp.CaptureName) {
			out = append(out, name)
		}
	}
	return out
}

// objectOnly warns of each capture rule r reads that none of its candidate text formats
// gives, when a JSON object candidate (logformat.JSONObject, as in auto), which gives any
// name, is among them: a name mistyped is then refused by no format, and the rule applies
// only to JSON lines with such a member.
func objectOnly(c *Config, r *Rule) []string {
	var object *logformat.Format
	var names, have, lacked []string
	for _, f := range r.Candidates {
		if f.AnyObject() {
			object = f
			continue
		}
		lacks := r.Lacks(f)
		if names == nil {
			lacked = lacks
		} else {
			lacked = slices.DeleteFunc(lacked, func(name string) bool { return !slices.Contains(lacks, name) })
		}
		names = append(names, f.Describe())
		have = append(have, f.Names()...)
	}
	if object == nil {
		return nil
	}
	var out []string
	for _, name := range lacked {
		out = append(out, fmt.Sprintf("%s:%d: warning: rule %q: capture %q is given by none of the log formats it reads (%s) but %s, which gives it from a JSON line with a member %q%s: the rule applies to no other line",
			c.File, r.Line, r.Name, name, listing(names), object.Describe(), name, suggest(name, have)))
	}
	return out
}

// readNames are the names of the captures of the line that r reads (not its path
// captures, not a wrapper's time), sorted.
func readNames(r *Rule) []string {
	var out []string
	add := func(c int) {
		if name := r.CaptureName(c); c > 0 && c <= r.Captures() && name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	eachCapture(r, add)
	slices.Sort(out)
	return out
}

// eachCapture calls f with every capture index r reads, and lets it change it.
func eachCapture(r *Rule, f func(int)) {
	remapCaptures(r, func(c int) int { f(c); return c })
}

// remapCaptures replaces every capture index r reads by to's, in slices of r's own (r is
// a copy of the rule whose slices it must not change).
func remapCaptures(r *Rule, to func(int) int) {
	template := func(t Template) Template {
		out := slices.Clone(t)
		for i, p := range out {
			if p.Capture >= 0 {
				out[i].Capture = to(p.Capture)
			}
		}
		return out
	}
	r.Labels = slices.Clone(r.Labels)
	for i := range r.Labels {
		r.Labels[i].Template = template(r.Labels[i].Template)
	}
	r.Items = slices.Clone(r.Items)
	for i := range r.Items {
		r.Items[i].Template = template(r.Items[i].Template)
	}
	wheres := func(ws []Where) []Where {
		out := slices.Clone(ws)
		for i := range out {
			out[i].Capture = to(out[i].Capture)
		}
		return out
	}
	r.Where, r.WhereNot = wheres(r.Where), wheres(r.WhereNot)
	if r.ValueCapture >= 0 {
		r.ValueCapture = to(r.ValueCapture)
	}
	if ts := r.Timestamp; ts != nil && ts.Capture >= 0 {
		c := *ts
		c.Capture = to(ts.Capture)
		r.Timestamp = &c
	}
}

// variant is r compiled against candidate f: its captures numbered as f's, its value list
// and time layout f's; nil when f lacks a capture the rule reads.
func (rd *ruleDecoder) variant(line int, r *Rule, f *logformat.Format, read []string, timed bool) *Rule {
	if f.AnyObject() {
		f = objectFormat(read)
	}
	for _, name := range read {
		if !gives(f, name, timed && name == r.Timestamp.CaptureName) {
			return nil
		}
	}
	v := *r
	v.Fields, v.Candidates, v.Variants, v.Derived = nil, nil, nil, nil
	names, ok := rd.compileFormat(line, &v, f)
	if !ok {
		return nil
	}
	union, own := r.Captures(), len(names)-1
	remapCaptures(&v, func(c int) int {
		if c > union {
			return c - union + own
		}
		return slices.Index(names, r.CaptureName(c))
	})
	v.ValueList = r.ValueName != "" && f.List(r.ValueName)
	if timed {
		ts := *v.Timestamp
		ts.Layout, ts.Unix, _ = f.Time(ts.CaptureName)
		v.Timestamp = &ts
	}
	return &v
}

// objectFormat is a JSON object line's format as a rule reading captures read sees it:
// each a member of that key, or derived from request or status like nginx's.
func objectFormat(read []string) *logformat.Format {
	f := &logformat.Format{Server: logformat.Nginx, Preset: logformat.JSONObject, Escape: logformat.EscapeJSON}
	field := func(name string) {
		if !slices.ContainsFunc(f.Fields, func(fl logformat.Field) bool { return fl.Name == name }) {
			f.Fields = append(f.Fields, logformat.Field{Name: name, Var: "$" + name, Path: []string{name}})
		}
	}
	for _, name := range read {
		if d, ok := logformat.DerivedFrom(name); ok {
			field(d.From)
			f.Derived = append(f.Derived, d)
			continue
		}
		field(name)
	}
	return f
}
