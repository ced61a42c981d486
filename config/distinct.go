package config

import "slices"

// distinct reads `distinct:`, a template over captures whose text each line contributes to
// a count of different values per window. The text is kept in full bytes (not capped as a
// label value is), so that two texts differing only past a cap are two values.
func (rd *ruleDecoder) distinct(e entry, r *Rule) {
	text, ok := rd.scalar(e, rd.subject, "distinct")
	if !ok {
		return
	}
	if text == "" {
		rd.add(e.key.Line, rd.subject, "distinct: the template is empty; write what is counted once, e.g. '${remote_addr}'")
		return
	}
	t, ok := rd.template(text, e.key.Line, "distinct")
	if !ok {
		return
	}
	if !slices.ContainsFunc(t, func(p TemplatePart) bool { return p.Capture >= 0 }) {
		rd.add(e.key.Line, rd.subject, "distinct: '%s' refers to no capture: every line gives the same text, so a window counts 1 value; write what is counted, e.g. '${remote_addr}'", text)
		return
	}
	r.Items = append(r.Items, Item{Template: t})
	r.DistinctItem = len(r.Items)
	r.Aggregations.Distinct = true
}
