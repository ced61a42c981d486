package config

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestRewrite checks what `rewrite:` makes of a rule: each label's rewrites in the order
// written, a top label's among them.
func TestRewrite(t *testing.T) {
	c, err := Parse([]byte(`
rules:
  - name: routes
    match: '(?P<host>\S+) (?P<path>\S+)'
    labels: {vhost: '${host}', route: '${path}'}
    rewrite:
      - {label: route, regex: '/[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}', replacement: '/:uuid'}
      - {label: vhost, regex: '^www\.', replacement: ''}
      - {label: route, regex: '/[0-9]+(/|$)', replacement: '/:id$1'}
    top: {label: route, k: 5}
`), "rewrite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := c.Rules[0]
	got := func(label string) string {
		var parts []string
		for _, rw := range r.RewritesOf(label) {
			parts = append(parts, rw.Regexp.String()+" -> "+rw.Replacement)
		}
		return strings.Join(parts, "; ")
	}
	for label, want := range map[string]string{
		"route": `/[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12} -> /:uuid; /[0-9]+(/|$) -> /:id$1`,
		"vhost": `^www\. -> `,
		"other": "",
	} {
		if g := got(label); g != want {
			t.Errorf("RewritesOf(%s) = %q, want %q", label, g, want)
		}
	}
	if r.Top == nil || r.Top.Label != "route" || len(r.Labels) != 1 {
		t.Errorf("top %+v, labels %+v: want route ranked, vhost kept", r.Top, r.Labels)
	}
	if r.Rewrites[2].Line != 9 {
		t.Errorf("third rewrite on line %d, want 9", r.Rewrites[2].Line)
	}
}

// TestRewriteErrors checks that every mistake in `rewrite:` is a load error naming the
// file, the line and the rule, all of them in one pass.
func TestRewriteErrors(t *testing.T) {
	text := `rules:
  - name: ok
    match: '(?P<p>\S+) (?P<s>\d+)'
    labels: {route: '${p}', status: '${s}'}
    rewrite:
      - {label: rotue, regex: '/[0-9]+', replacement: '/:id'}
      - {label: route, regex: '/([0-9]+', replacement: '/:id'}
      - {label: route, regex: '', replacement: x}
      - {label: route, regex: '/[0-9]+'}
      - {regex: '/[0-9]+', replacement: x, replace: y}
      - {label: route, regex: '/([0-9]+)', replacement: '/$2'}
      - {label: route, regex: '/([0-9]+)x', replacement: '/$1x'}
      - {label: route, regex: '/(?P<n>[0-9]+)', replacement: '/${m}'}
      - {label: route, regex: '/[0-9]+', replacement: 'US$ 5'}
      - {label: route, regex: '/[0-9]+', replacement: '/$01'}
      - {label: route, regex: '/([0-9]+)', replacement: '/$1é'}
      - route
  - name: no_labels
    match: x
    rewrite: [{label: route, regex: x, replacement: y}]
  - name: not_a_list
    match: '(?P<p>\S+)'
    labels: {route: '${p}'}
    rewrite: {label: route, regex: x, replacement: y}
  - name: bad_template
    match: '(?P<p>\S+)'
    labels: {route: '${q}'}
    rewrite: [{label: route, regex: x, replacement: y}]
`
	want := []string{
		`r.yaml:6: rule "ok": rewrite #1: label: "rotue" is not a label of the rule (did you mean "route"?) (labels: route, status)`,
		"r.yaml:7: rule \"ok\": rewrite #2: regex: invalid regex: missing closing ) in `/([0-9]+`",
		`r.yaml:8: rule "ok": rewrite #3: regex: is empty (it would match between every two characters)`,
		`r.yaml:9: rule "ok": rewrite #4: replacement: is missing; give the text each match becomes ('' deletes it)`,
		`r.yaml:10: rule "ok": rewrite #5: unknown key "replace" (known keys: label, regex, replacement)`,
		`r.yaml:10: rule "ok": rewrite #5: label: is missing; name the label whose value is rewritten (labels: route, status)`,
		`r.yaml:11: rule "ok": rewrite #6: replacement: $2 names no group of the regex (groups: $0 to $1)`,
		`r.yaml:12: rule "ok": rewrite #7: replacement: $1x names no group of the regex (groups: $0 to $1); for group 1 followed by "x" write ${1}x`,
		`r.yaml:13: rule "ok": rewrite #8: replacement: ${m} names no group of the regex (groups: $0 to $1, ${n})`,
		`r.yaml:14: rule "ok": rewrite #9: replacement: "$ 5" has a $ that is neither $1, ${name} nor $$ (a literal $)`,
		`r.yaml:15: rule "ok": rewrite #10: replacement: $01 names no group of the regex (groups: $0)`,
		`r.yaml:16: rule "ok": rewrite #11: replacement: $1é names no group of the regex (groups: $0 to $1); for group 1 followed by "é" write ${1}é`,
		`r.yaml:17: rule "ok": rewrite #12: must be a mapping, not a single value`,
		`r.yaml:20: rule "no_labels": rewrite: the rule has no labels to rewrite`,
		`r.yaml:24: rule "not_a_list": rewrite: must be a list of rewrites (- {label: l, regex: r, replacement: s}), not a mapping`,
		`r.yaml:27: rule "bad_template": labels: route: capture "q" is not in the match regex (have: p)`,
	}
	_, err := Parse([]byte(text), "r.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheckReplacement holds checkReplacement to how Regexp.Expand reads a replacement:
// accepted are references to groups that exist and $$; refused are those Expand reads as
// empty (a missing group, a number with a leading zero, a name running into letters) and a
// $ it keeps as text.
func TestCheckReplacement(t *testing.T) {
	re := regexp.MustCompile(`(?P<a>x)(y)(z)`)
	for _, tc := range []struct {
		repl string
		ok   bool
	}{
		{"$0", true}, {"$1", true}, {"$2$3", true}, {"${1}0", true}, {"${a}", true}, {"$a", true},
		{"$$", true}, {"a$$1b", true}, {"", true}, {"plain", true}, {"$a€", true},
		{"$4", false}, {"$10", false}, {"$1x", false}, {"$ab", false}, {"${b}", false},
		{"$01", false}, {"$", false}, {"a$", false}, {"${", false}, {"${a", false},
		{"${}", false}, {"$-", false}, {"${a b}", false}, {"$aé", false}, {"$é", false},
	} {
		t.Run(tc.repl, func(t *testing.T) {
			if msg := checkReplacement(re, tc.repl); (msg == "") != tc.ok {
				t.Errorf("checkReplacement(%q) = %q, want ok %v", tc.repl, msg, tc.ok)
			}
		})
	}
}

// A rewrite may name a label its rule merges in from an anchor (`<<: *labels`), as any
// label of the rule.
func TestRewriteMergedLabel(t *testing.T) {
	c, err := Parse([]byte(`
rules:
  - name: hosts
    match: '(?P<h>\S+) (?P<p>\S+)'
    labels: &common {host: '${h}'}
  - name: routes
    match: '(?P<h>\S+) (?P<p>\S+)'
    labels: {<<: *common, route: '${p}'}
    rewrite: [{label: host, regex: '^www\.', replacement: ''}]
`), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if rw := c.Rules[1].Rewrites; len(rw) != 1 || rw[0].Label != "host" {
		t.Fatalf("rewrites %+v, want one of host", rw)
	}
}

// A rewrite whose regex can match empty text at more than one place of a value loads, with
// a warning naming the file, the line and the rule; one anchored to the text's start or
// end, or matching at least a character, has none.
func TestRewriteWarnings(t *testing.T) {
	for _, c := range []struct {
		regex string
		warns bool
	}{
		{`z*`, true},
		{`\b`, true},
		{`(a|)`, true},
		{`x{0,3}`, true},
		{`(?m)^`, true},
		{`^$`, false},
		{`^/*`, false},
		{`(?:x*)$`, false},
		{`\?.*`, false},
		{`/[0-9]+(/|$)`, false},
		{`z+`, false},
		{`(a|b)`, false},
	} {
		t.Run(c.regex, func(t *testing.T) {
			cfg, err := Parse([]byte(fmt.Sprintf("rules:\n  - name: r\n    match: '(?P<v>.*)'\n    labels: {route: '${v}'}\n    rewrite:\n      - {label: route, regex: '%s', replacement: '-'}\n", c.regex)), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got := Warnings(cfg)
			want := `rules.yaml:6: warning: rule "r": rewrite of label "route": regex '` + c.regex + `' can match empty text`
			if c.warns != (len(got) == 1) || c.warns && !strings.HasPrefix(got[0], want) || len(got) > 1 {
				t.Errorf("warnings %q; want a warning (%v) starting %q", got, c.warns, want)
			}
		})
	}
}

// An initial label set is written as the values are after rewriting: one whose value the
// label's rewrites would change again is warned of, naming the file, the line and the
// rule (a line counts in it only if a rewrite gives that value, which it may, so the file
// loads). Values the rewrites leave as they are, and labels without rewrites, have none.
func TestInitialRewrittenWarns(t *testing.T) {
	const head = "rules:\n  - name: r\n    match: '(?P<s>[0-9]+) (?P<p>\\S+)'\n    labels: {status: '${s}', route: '${p}'}\n" +
		"    rewrite:\n      - {label: status, regex: '^5..$', replacement: 5xx}\n      - {label: route, regex: '/[0-9]+', replacement: '/:id'}\n"
	for _, c := range []struct {
		initial, want string
	}{
		{"{status: '500', route: /}", `rules.yaml:8: warning: rule "r": initial #1: status: the label's rewrites turn "500" into "5xx"; initial label sets are written as the values are after rewriting, so no line counts in this one unless a rewrite gives "500"`},
		{"{status: 5xx, route: /users/42}", `rules.yaml:8: warning: rule "r": initial #1: route: the label's rewrites turn "/users/42" into "/users/:id"`},
		{"{status: 5xx, route: '/users/:id'}", ""},
		{"{status: '404', route: /}", ""},
	} {
		t.Run(c.initial, func(t *testing.T) {
			cfg := parseWarned(t, "rules.yaml", head+"    initial: ["+c.initial+"]\n", c.want)
			if len(cfg.Rules[0].Initial) != 1 {
				t.Errorf("initial %q, want the label set kept", cfg.Rules[0].Initial)
			}
		})
	}
}

// rewriteValue rewrites as Regexp.ReplaceAllString does, empty matches included, and stops
// once its budget is spent.
func TestRewriteValue(t *testing.T) {
	for _, c := range []struct{ regex, replacement string }{
		{`z*`, "-"}, {`\b`, "|"}, {`/[0-9]+`, "/:id"}, {`(a)(b)?`, "${2}$1"}, {`^`, "x"}, {`$`, "$$"},
	} {
		re := regexp.MustCompile(c.regex)
		for _, v := range []string{"", "ab", "/users/42/orders/7", "zaz", "ü/1"} {
			budget := 100
			got, ok := rewriteValue([]Rewrite{{Regexp: re, Replacement: c.replacement}}, v, &budget)
			if want := re.ReplaceAllString(v, c.replacement); !ok || got != want {
				t.Errorf("%s → %s of %q: %q, %v; want %q", c.regex, c.replacement, v, got, ok, want)
			}
		}
	}
	budget := 5
	if _, ok := rewriteValue([]Rewrite{{Regexp: regexp.MustCompile("x"), Replacement: "y"}}, "xxxxx", &budget); ok {
		t.Error("a value past the budget was rewritten")
	}
}
