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

// A distinct: template that is a kept label's, not rewritten, counts in each series the one
// text that keys it: it loads with a warning naming the file, the line and the rule. A top
// label's (ranked, not kept), a rewritten label's and another template have none.
func TestDistinctOfLabelWarns(t *testing.T) {
	const head = "rules:\n  - name: r\n    match: '(?P<a>\\S+) (?P<p>\\S+)'\n"
	for _, c := range []struct {
		name, keys, want string
	}{
		{"kept label", "    labels: {client: '${a}', path: '${p}'}\n    distinct: '${a}'\n",
			`rules.yaml:5: warning: rule "r": distinct: '${a}' is the template of label client, which keys the series: each series counts 1 value, its own; count another capture, or leave the label out`},
		{"top label", "    labels: {client: '${a}', path: '${p}'}\n    top: {label: client, k: 3}\n    distinct: '${a}'\n", ""},
		{"rewritten label", "    labels: {client: '${a}'}\n    rewrite: [{label: client, regex: '\\.[0-9]+$', replacement: '.0'}]\n    distinct: '${a}'\n", ""},
		{"another template", "    labels: {client: '${a}'}\n    distinct: '${a} ${p}'\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := parseWarned(t, "rules.yaml", head+c.keys, c.want)
			if cfg.Rules[0].DistinctItem == 0 {
				t.Error("the distinct count was not kept")
			}
		})
	}
}
