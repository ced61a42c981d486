package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// gives decides whether some captures render a template as a value: its literal text in
// the value in its order, the first at the start unless a capture comes before it, the
// last at the end unless one comes after it. A literal that occurs more than once in the
// value is placed at its first occurrence, which leaves the most of the value to the
// parts after it.
func TestTemplateGives(t *testing.T) {
	for _, c := range []struct {
		template, value string
		want            bool
	}{
		{"web", "web", true},
		{"web", "webx", false},
		{"${a}", "", true},
		{"http_${a}", "http_", true},
		{"http_${a}", "500", false},
		{"${a}xx", "xxx", true},
		{"${a}xx", "5x", false},
		{"a${a}a", "a", false},
		{"a${a}a", "aa", true},
		{"<${a}|${b}>", "<|>", true},
		{"<${a}|${b}>", "<1|1", false},
		{"${a}/${b}/x", "/x/x", true},
		{"${a}/${b}/x", "/x", false},
		{"${a}.${b}.${c}", "..", true},
		{"${a}.${b}.${c}", "1.2", false},
		{"$$${a}", "$5", true},
	} {
		t.Run(c.template+" "+c.value, func(t *testing.T) {
			cfg, err := Parse([]byte("rules:\n  - name: r\n    match: '(?P<a>.*)(?P<b>.*)(?P<c>.*)'\n    labels: {l: '"+c.template+"'}\n"), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Rules[0].Labels[0].Template.gives(c.value); got != c.want {
				t.Errorf("gives(%q) = %v, want %v", c.value, got, c.want)
			}
		})
	}
}

// An initial value is refused, or warned of, only when no line could give it: one a
// rewrite may have made, or one cut at the cap on a label value (which may be any prefix
// of a longer value), loads without a word, whatever the template's text around its
// captures or the rewrites would make of it again.
func TestInitialValuesLinesMayGive(t *testing.T) {
	capped := strings.Repeat("a", maxLabelValueBytes)
	for _, c := range []struct{ name, keys string }{
		{"rewritten from a template of text around a capture",
			"    labels: {ver: 'v${a}'}\n    rewrite: [{label: ver, regex: '^v', replacement: ''}]\n    initial: [{ver: '1'}]\n"},
		{"rewritten by rewrites that change what they give",
			"    labels: {route: '${a}'}\n    rewrite: [{label: route, regex: '^/(.+)$', replacement: '/api/$1'}]\n    initial: [{route: /api/users}]\n"},
		{"cut at the cap before its template's suffix",
			"    labels: {page: '${a}.html'}\n    initial: [{page: " + capped + "}]\n"},
		{"cut at the cap after a rewrite lengthened it",
			"    labels: {p: '${a}'}\n    rewrite: [{label: p, regex: '^(a+)$', replacement: '${1}-end'}]\n    initial: [{p: " + capped + "}]\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := parseWarned(t, "rules.yaml", "rules:\n  - name: r\n    match: '(?P<a>.*)'\n"+c.keys, "")
			if len(cfg.Rules[0].Initial) != 1 {
				t.Errorf("initial %q, want the label set kept", cfg.Rules[0].Initial)
			}
		})
	}
}

// The rewriting of initial label sets to find those the rewrites would change is bounded
// for the file, not per rule: rules sharing many rewrites by an alias, each with many
// sets, loaded in seconds where they took a fraction of one. Once a rule spent the bound,
// the sets of the rules after it are not rewritten, and not warned of.
func TestInitialRewriteBoundedPerFile(t *testing.T) {
	race.Skip(t)
	var rws, sets strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&rws, "      - {label: p, regex: 'q%d', replacement: z}\n", i)
	}
	for i := range 300 { // 300 sets through 1,000 rewrites: more than maxInitialRewriteBytes
		fmt.Fprintf(&sets, "{p: v%d}, ", i)
	}
	text := "global: {max_series_per_rule: 1000}\nrules:\n" +
		"  - name: spends\n    match: '(?P<p>\\S+)'\n    labels: {p: '${p}'}\n    rewrite: &rws\n" + rws.String() +
		"    initial: [" + strings.TrimSuffix(sets.String(), ", ") + "]\n" +
		"  - name: after\n    match: '(?P<p>\\S+)'\n    labels: {p: '${p}'}\n    rewrite: *rws\n    initial: [{p: q7}]\n"
	parseWarned(t, "rules.yaml", text, "")
}
