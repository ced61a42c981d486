package parser

import (
	"fmt"
	"slices"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
)

// extractor reads the fields of a structured line, the counterpart of a regex match for
// fields rules: it fills caps (slot k at caps[2k:2k+2], -1 for a field the line lacks) with
// offsets into the text it returns (the line, then the values it decoded), so the rules
// read captures exactly as they read a regex's groups. It is false when the line is
// malformed.
type extractor interface {
	extract(line []byte, caps []int, s *scratch) (text, bool)
}

// fieldsGroup collects the fields rules of one format while the parser is built: every
// field any of them uses gets one slot, so a line is read once for all of them.
type fieldsGroup struct {
	format config.Format
	paths  [][]string // slot k+1 reads paths[k]; nil for a derived capture's slot
	// derived are the captures a JSON log format computes from fields, each with a slot.
	derived []derivation
	// status is, for a group of JSON objects (logformat.JSONObject) whose rules read a
	// request's parts and not its status class, the slot of the "status" member the
	// request's check reads (nginxVerdict); 0 for none. A line without it has its request
	// checked as a format without $status has.
	status int
	// checkOnly is status when no rule reads the member itself: it is then read for the
	// check alone and is none of the members the rules read, which tell a file's objects
	// apart from another application's (members, Parser.objectProgram).
	checkOnly int
}

// reads reports whether slot k+1 reads a member the group's rules read: neither a
// derived capture's nor the status read for the request's check alone.
func (fg *fieldsGroup) reads(k int) bool {
	return fg.paths[k] != nil && k+1 != fg.checkOnly
}

// slots returns, for each capture index of r, its slot in the group (index 0, the whole
// line, maps to 0), adding the fields the group does not read yet.
func (fg *fieldsGroup) slots(r *config.Rule) []int {
	out := make([]int, r.Captures()+1)
	for i, f := range r.Fields {
		k := slices.IndexFunc(fg.paths, func(p []string) bool { return p != nil && slices.Equal(p, f.Segments) })
		if k < 0 {
			k = len(fg.paths)
			fg.paths = append(fg.paths, f.Segments)
		}
		out[i+1] = k + 1
	}
	for j, d := range r.Derived {
		from := out[d.From]
		k := slices.IndexFunc(fg.derived, func(x derivation) bool { return x.kind == d.Kind && x.from == from })
		if k < 0 {
			fg.paths = append(fg.paths, nil)
			k = len(fg.derived)
			fg.derived = append(fg.derived, derivation{kind: d.Kind, from: from, to: len(fg.paths)})
		}
		out[len(r.Fields)+1+j] = fg.derived[k].to
	}
	return out
}

// post is the processing of the group's derived captures; nil without any.
func (fg *fieldsGroup) post() *formatPost {
	if len(fg.derived) == 0 {
		return nil
	}
	// Only nginx writes JSON templates (escape=json).
	p := &formatPost{derive: slices.Clone(fg.derived), method: &nginxMethod, status: fg.status}
	for _, d := range fg.derived {
		if d.kind == logformat.StatusClass {
			p.status = d.from
		}
	}
	p.compile()
	return p
}

// readStatus gives a group of JSON objects, whose rules derive only the captures they
// read, a slot for the "status" member when they read a request's parts and not its
// class, so that a request is checked by its line's status as in a text format (where
// the status is read for it whether a rule reads it or not) rather than on every line.
// Called once every rule is in, before the extractor is built.
func (fg *fieldsGroup) readStatus() {
	request := false
	for _, d := range fg.derived {
		if d.kind == logformat.StatusClass {
			return
		}
		request = true
	}
	if !request {
		return
	}
	k := slices.IndexFunc(fg.paths, func(p []string) bool { return slices.Equal(p, []string{"status"}) })
	if k < 0 {
		fg.paths = append(fg.paths, []string{"status"})
		k = len(fg.paths) - 1
		fg.checkOnly = k + 1
	}
	fg.status = k + 1
}

// extractor builds the group's reader once every rule is in.
func (fg *fieldsGroup) extractor() (extractor, error) {
	switch fg.format {
	case config.FormatJSON:
		return newJSONExtractor(fg.paths), nil
	case config.FormatLogfmt:
		keys := make([]string, len(fg.paths))
		for i, p := range fg.paths {
			// A logfmt key is flat: dots in it are part of the key.
			keys[i] = joinDots(p)
		}
		return newLogfmtExtractor(keys), nil
	}
	return nil, fmt.Errorf("fields rules over %s lines", fg.format)
}

func joinDots(segs []string) string {
	out := segs[0]
	for _, s := range segs[1:] {
		out += "." + s
	}
	return out
}

// remap rewrites the capture indexes of a rule to its group's (Parser.slotOf): those of a
// fields rule to the group's slots, path captures to theirs; templates are copied, since
// config's belong to the config.
func (r *rule) remap(at func(int) int) {
	r.value = at(r.value)
	if r.ts != nil {
		r.ts.capture = at(r.ts.capture)
	}
	for i := range r.where {
		r.where[i].capture = at(r.where[i].capture)
	}
	for i := range r.whereNot {
		r.whereNot[i].capture = at(r.whereNot[i].capture)
	}
	remapped := func(t config.Template) config.Template {
		t = slices.Clone(t)
		for j := range t {
			t[j].Capture = at(t[j].Capture)
		}
		return t
	}
	for i, t := range r.labels {
		r.labels[i] = remapped(t)
	}
	r.items = slices.Clone(r.items)
	for i := range r.items {
		r.items[i].Template = remapped(r.items[i].Template)
	}
}
