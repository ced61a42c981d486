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
	if t.constant() {
		rd.add(e.key.Line, rd.subject, "distinct: '%s' refers to no capture: every line gives the same text, so a window counts 1 value; write what is counted, e.g. '${remote_addr}'", text)
		return
	}
	// A label keys the series: a count of its own text is 1 in every series but the
	// overflow's, unless its rewrites make several texts one value.
	for _, l := range r.Labels {
		if slices.Equal(l.Template, t) && len(r.RewritesOf(l.Name)) == 0 {
			rd.warn(e.key.Line, rd.subject, "distinct: '%s' is the template of label %s, which keys the series: each series counts 1 value, its own; count another capture, or leave the label out", text, l.Name)
			break
		}
	}
	r.Items = append(r.Items, Item{Template: t})
	r.DistinctItem = len(r.Items)
	r.Aggregations.Distinct = true
}
