package config

import (
	"slices"
	"sort"
	"strings"
)

// format decodes an input's `format:`.
func (d *decoder) format(e entry, subject string) Format {
	text, ok := d.scalar(e, subject, "format")
	if !ok {
		return FormatText
	}
	if i := slices.Index(formatNames, text); i >= 0 {
		return Format(i)
	}
	d.add(e.key.Line, subject, "format: %q is not one of %s%s", text, strings.Join(formatNames, ", "), suggest(text, formatNames))
	return FormatText
}

// fields decodes a rule's `fields:` (capture name → field path) into its captures, in
// place of a match regex.
func (rd *ruleDecoder) fields(e entry, r *Rule) {
	if rd.tooMany(e, rd.subject, items(e.val), maxFields, "fields", "a rule") {
		return
	}
	entries, ok := rd.mapping(e.val, rd.subject, "fields")
	if !ok || rd.tooMany(e, rd.subject, len(entries), maxFields, "fields", "a rule") {
		return
	}
	if len(entries) == 0 {
		rd.add(e.key.Line, rd.subject, "fields: is empty; map each capture to a field, e.g. {status: status, route: http.route}")
		return
	}
	valid := true
	for _, f := range entries {
		what := "fields: " + f.key.Value
		if !isName(f.key.Value) {
			rd.add(f.key.Line, rd.subject, "%s: a capture name is letters, digits and _, not starting with a digit", what)
			valid = false
			continue
		}
		path, ok := rd.scalar(f, rd.subject, what)
		if !ok {
			valid = false
			continue
		}
		segments := strings.Split(path, ".")
		if slices.Contains(segments, "") {
			rd.add(f.key.Line, rd.subject, "%s: %q is not a field: give a key, with dots between nested keys (e.g. http.route)", what, path)
			valid = false
			continue
		}
		r.Fields = append(r.Fields, Field{Capture: f.key.Value, Path: path, Segments: segments})
	}
	sort.Slice(r.Fields, func(i, j int) bool { return r.Fields[i].Capture < r.Fields[j].Capture })
	if !valid {
		// Checks of capture names would each fail for the mistake already reported.
		return
	}
	names := []string{""}
	for _, f := range r.Fields {
		names = append(names, f.Capture)
	}
	rd.caps = &captures{names: names, fields: true}
}

// fieldsInputs checks that a fields rule names its inputs and that they share one
// structured format, which becomes the rule's.
func (rd *ruleDecoder) fieldsInputs(e entry, r *Rule) {
	if len(r.Inputs) == 0 {
		rd.add(e.key.Line, rd.subject, "fields: a fields rule must name its inputs (inputs: [...]), all json or all logfmt")
		return
	}
	formats := map[Format][]string{}
	for _, name := range r.Inputs {
		if f, ok := rd.inputFormats[name]; ok {
			formats[f] = append(formats[f], name)
		}
	}
	if text := formats[FormatText]; len(text) > 0 {
		rd.add(e.key.Line, rd.subject, "fields: input %s has no format: (text); fields are read from format: json or logfmt inputs", listing(quoteAll(text)))
		return
	}
	if len(formats) > 1 {
		rd.add(e.key.Line, rd.subject, "fields: inputs %s are json and %s are logfmt; a fields rule reads inputs of one format",
			listing(quoteAll(formats[FormatJSON])), listing(quoteAll(formats[FormatLogfmt])))
		return
	}
	for f := range formats {
		r.Format = f
	}
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = `"` + n + `"`
	}
	return out
}

// wrapper decodes an input's `wrapper:`.
func (d *decoder) wrapper(e entry, subject string) string {
	text, ok := d.scalar(e, subject, "wrapper")
	if !ok {
		return ""
	}
	if text != WrapperCRI {
		d.add(e.key.Line, subject, "wrapper: %q is not known (the one wrapper is cri: Kubernetes container logs)", text)
		return ""
	}
	return text
}

// isWrapperTime reports whether a timestamp capture names the wrapper's time: cri_time,
// unless the rule has a capture of that name itself.
func (rd *ruleDecoder) isWrapperTime(name string) bool {
	return name == CRITimeCapture && (rd.caps == nil || rd.caps.index(name) < 0)
}

// checkWrapperTime checks that a rule timed by cri_time reads only CRI inputs, named.
func (rd *ruleDecoder) checkWrapperTime(r *Rule) {
	if rd.wrapperTimeLine == 0 {
		return
	}
	for _, name := range r.Inputs {
		if w, ok := rd.inputWrappers[name]; ok && w != WrapperCRI {
			rd.add(rd.wrapperTimeLine, rd.subject, "timestamp: capture: input %q has no wrapper: cri, so its lines have no cri_time", name)
			return
		}
	}
	if len(r.Inputs) == 0 {
		rd.add(rd.wrapperTimeLine, rd.subject, "timestamp: capture: cri_time needs the rule to name its inputs (inputs: [...]), all with wrapper: cri")
	}
}
