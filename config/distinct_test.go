package config

import (
	"testing"
)

// TestDistinctKey checks what `distinct:` compiles to, on a regex rule and on a fields
// rule: one item in full bytes, its index, the flag, and a summary in the layout.
func TestDistinctKey(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		template   Template
	}{
		{"regex", `
rules:
  - name: clients
    match: '(?P<addr>[^ ]+) (?P<status>[0-9]+)'
    labels: {status: '${status}'}
    distinct: 'ip ${addr}'
`, Template{{Literal: "ip ", Capture: -1}, {Capture: 1}}},
		{"fields", `
inputs: [{name: app, path: /a, format: json}]
rules:
  - name: users
    inputs: [app]
    fields: {user: user.id, took: ms}
    value: took
    distinct: '${user}'
`, Template{{Capture: 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.text), "distinct.yaml")
			if err != nil {
				t.Fatal(err)
			}
			r := c.Rules[0]
			if len(r.Items) != 1 || r.DistinctItem != 1 || !r.Aggregations.Distinct {
				t.Fatalf("items %+v, distinct item %d, flag %v", r.Items, r.DistinctItem, r.Aggregations.Distinct)
			}
			it := r.Items[0]
			if it.Label {
				t.Errorf("the counted text is rendered as a label value (capped), not in full")
			}
			if len(it.Template) != len(tc.template) {
				t.Fatalf("template %+v, want %+v", it.Template, tc.template)
			}
			for i, p := range tc.template {
				if it.Template[i] != p {
					t.Errorf("template part %d: %+v, want %+v", i, it.Template[i], p)
				}
			}
			if got := len(r.Options().Summaries); got != 1 {
				t.Errorf("%d summary kinds, want the distinct count's", got)
			}
		})
	}
}
