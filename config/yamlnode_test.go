package config

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestMergeKeys: `<<:` merges as YAML says: the mapping's own keys override merged ones,
// a merged mapping's own keys override those it merges itself (they took the deepest
// one's), and of a list of mappings the earlier wins.
func TestMergeKeys(t *testing.T) {
	const text = `
rules:
  - &base {name: base, match: x, help: base help, windows: [1m]}
  - &mid
    <<: *base
    name: mid
    help: mid help
  - <<: *mid
    name: leaf
  - <<: [{help: first help}, *mid, {windows: [5m]}]
    name: listed
  - <<: *mid
    name: own
    help: own help
`
	c, err := Parse([]byte(text), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ help, window string }{
		"base":   {"base help", "1m"},
		"mid":    {"mid help", "1m"},
		"leaf":   {"mid help", "1m"},
		"listed": {"first help", "1m"},
		"own":    {"own help", "1m"},
	}
	if len(c.Rules) != len(want) {
		t.Fatalf("%d rules, want %d", len(c.Rules), len(want))
	}
	for _, r := range c.Rules {
		w := want[r.Name]
		if r.Help != w.help || len(r.WindowNames) != 1 || r.WindowNames[0] != w.window {
			t.Errorf("rule %s: help %q, windows %v; want %q, [%s]", r.Name, r.Help, r.WindowNames, w.help, w.window)
		}
	}
}

// TestAliasedProblemLines: a mistake a rule or an input makes with a value it aliases is
// reported at the alias, the line of the rule or input that made it, naming the anchored
// line too; at the anchor's line alone it would point at the rule that wrote the anchor,
// which reads it well.
func TestAliasedProblemLines(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string // each problem, rendered
	}{
		{"alias", `
rules:
  - name: first
    match: '(?P<t>.+)'
    timestamp: &when {capture: t, layout: '2006-01-02 15:04:05'}
  - name: second
    match: '(?P<code>\d+)'
    timestamp: *when
`, []string{`r.yaml:8: rule "second": timestamp: capture "t" is not in the match regex (have: code) (line 5, which *when repeats here)`}},
		{"block anchor", `
rules:
  - name: first
    match: '(?P<t>.+)'
    timestamp: &when
      capture: t
      layout: '2006-01-02 15:04:05'
  - name: second
    match: '(?P<code>\d+)'
    timestamp: *when
`, []string{`r.yaml:10: rule "second": timestamp: capture "t" is not in the match regex (have: code) (line 6, which *when repeats here)`}},
		{"merge key", `
rules:
  - &defaults
    name: first
    match: '(?P<st>\d+)'
    labels: {st: '${st}'}
  - <<: *defaults
    name: second
    match: '(?P<code>\d+)'
`, []string{`r.yaml:7: rule "second": labels: st: capture "st" is not in the match regex (have: code) (line 6, which *defaults repeats here)`}},
		{"nested", `
rules:
  - name: first
    match: '(?P<t>.+)'
    timestamp: &when {capture: t, layout: '2006-01-02 15:04:05'}
    labels: &labels {x: '${t}'}
  - &both
    name: second
    match: '(?P<t>.+)'
    timestamp: *when
  - <<: *both
    name: third
    match: '(?P<code>\d+)'
`, []string{`r.yaml:11: rule "third": timestamp: capture "t" is not in the match regex (have: code) (line 5, which *when repeats on line 10, which *both repeats here)`}},
		{"a chain of as many aliases as are named", `
rules:
  - name: first
    match: '(?P<t>.+)'
    timestamp: &a {capture: t, layout: '2006-01-02 15:04:05'}
  - &b {name: b, match: '(?P<t>.+)', timestamp: *a}
  - &c {<<: *b, name: c}
  - &d {<<: *c, name: d}
  - <<: *d
    name: f
    match: '(?P<code>\d+)'
`, []string{`r.yaml:9: rule "f": timestamp: capture "t" is not in the match regex (have: code) (line 5, which *a repeats on line 6, which *b repeats on line 7, which *c repeats on line 8, which *d repeats here)`}},
		{"a chain of aliases", `
rules:
  - name: first
    match: '(?P<t>.+)'
    timestamp: &a {capture: t, layout: '2006-01-02 15:04:05'}
  - &b {name: b, match: '(?P<t>.+)', timestamp: *a}
  - &c {<<: *b, name: c}
  - &d {<<: *c, name: d}
  - &e {<<: *d, name: e}
  - <<: *e
    name: f
    match: '(?P<code>\d+)'
`, []string{`r.yaml:10: rule "f": timestamp: capture "t" is not in the match regex (have: code) (line 5, which *a repeats on line 6, which *e repeats here through 3 more aliases)`}},
		{"input's directive", `
inputs:
  - name: a
    path: /var/log/a.log
    log_format: &fmt |
      log_format main '$remote_addr'
                      '$status';
  - name: b
    path: /var/log/b.log
    log_format: *fmt
rules:
  - name: r
    inputs: [a]
`, []string{
			`r.yaml:7: input "a": log_format: $status follows $remote_addr with no text between them, so where one ends cannot be told from the line, in "…at main '$remote_addr'\n                '⟨here⟩$status';\n"`,
			`r.yaml:10: input "b": log_format: $status follows $remote_addr with no text between them, so where one ends cannot be told from the line, in "…at main '$remote_addr'\n                '⟨here⟩$status';\n" (line 7, which *fmt repeats here)`,
		}},
		{"an anchor in a merged one, merged", `
rules:
  - &outer
    name: first
    match: '(?P<t>.+)'
    labels: {at: '${t}'}
    timestamp: &inner
      capture: t
      layout: '2006-01-02 15:04:05'
  - <<: *outer
    name: second
    match: '(?P<code>\d+)'
    timestamp: {<<: *inner, layout: '02/Jan/2006:15:04:05 -0700'}
`, []string{
			`r.yaml:10: rule "second": labels: at: capture "t" is not in the match regex (have: code) (line 6, which *outer repeats here)`,
			`r.yaml:13: rule "second": timestamp: capture "t" is not in the match regex (have: code) (line 8, which *inner repeats here)`,
		}},
		{"an anchor in a merged one, aliased after", `
rules:
  - &outer
    name: first
    match: '(?P<t>.+)'
    timestamp: &inner {capture: t, layout: '2006-01-02 15:04:05'}
  - <<: *outer
    name: second
    match: '(?P<code>\d+)'
    timestamp: *inner
`, []string{`r.yaml:10: rule "second": timestamp: capture "t" is not in the match regex (have: code) (line 6, which *inner repeats here)`}},
		{"an alias in a merged anchor, aliased after", `
rules:
  - name: first
    match: '(?P<t>.+)'
    timestamp: &when {capture: t, layout: '2006-01-02 15:04:05'}
  - &mid
    name: second
    match: '(?P<t>.+)'
    timestamp: *when
  - <<: *mid
    name: third
    match: '(?P<code>\d+)'
    help: via mid
    timestamp: *when
`, []string{`r.yaml:14: rule "third": timestamp: capture "t" is not in the match regex (have: code) (line 5, which *when repeats here)`}},
		{"an anchor in an aliased one, listed first", `
rules:
  - name: first
    match: '(?P<t>.+)'
    timestamp: &outer {capture: &inner t, layout: '2006-01-02 15:04:05'}
  - name: second
    match: '(?P<code>\d+)'
    timestamp: *outer
    labels: {code: '${code}', x: *inner}
`, []string{`r.yaml:8: rule "second": timestamp: capture "t" is not in the match regex (have: code) (line 5, which *outer repeats here)`}},
		{"the anchor's own rule", `
rules:
  - name: first
    match: '(?P<code>\d+)'
    timestamp: &when {capture: t, layout: '2006-01-02 15:04:05'}
  - name: second
    match: '(?P<t>.+)'
    timestamp: *when
`, []string{`r.yaml:5: rule "first": timestamp: capture "t" is not in the match regex (have: code)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.text), "r.yaml")
			if err == nil {
				t.Fatal("loads")
			}
			if got, want := err.Error(), strings.Join(c.want, "\n"); got != want {
				t.Errorf("errors\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestAliasedProblemLinesBounded: a rule with a mistake that repeats, many times over, an
// anchor holding many aliases (as much as the alias meter lets a large file add) has the
// lines its aliases repeat found once, not once for each time: its load allocates about
// what the file's decoding does, not tens of times the file's size.
func TestAliasedProblemLinesBounded(t *testing.T) {
	const anchors, repeats = 10000, 120
	var b strings.Builder
	b.WriteString("rules:\n  - name: first\n    match: '(?P<x>.)'\n    help: [")
	for i := range anchors {
		fmt.Fprintf(&b, "&s%d x, ", i)
	}
	b.WriteString("]\n    labels: {l: &many [")
	for i := range anchors {
		fmt.Fprintf(&b, "*s%d, ", i)
	}
	b.WriteString("]}\n  - name: second\n    match: '(?P<x>.)'\n    tags: [")
	b.WriteString(strings.Repeat("*many, ", repeats))
	// A file of 4 MiB may have its aliases add as much.
	b.WriteString("]\n# " + strings.Repeat("p", 4<<20) + "\n")
	text := []byte(b.String())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Parse(text, "r.yaml")
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), `r.yaml:8: rule "second": unknown key "tags"`) {
		t.Fatalf("error %v, want the unknown key", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 20*uint64(len(text)) {
		t.Errorf("the load of %d bytes allocated %d MB", len(text), alloc>>20)
	}
}

// TestCoreTagsMisused: a core tag says what YAML reads its value as, and the rule file
// reads the text alone, so a tag the value is not of was passed over: help: !!int abc
// loaded as abc, and help: !!null Some help loaded with no help, its text lost. Such a
// tag is refused, naming the line; a tag the value is of loads, as the value does
// untagged (help: 5 is text, and so is help: !!int 5).
func TestCoreTagsMisused(t *testing.T) {
	const leave = `, which the tag says it is; leave the tag out`
	for _, c := range []struct{ value, want string }{
		{"help: !!int abc", `t.yaml:4: rule "r": help: tag !!int: YAML does not read "abc" as an integer` + leave},
		{"help: !!null Some help", `t.yaml:4: rule "r": help: tag !!null: YAML does not read "Some help" as empty (null, ~ or nothing)` + leave},
		{"help: !!bool yes", `t.yaml:4: rule "r": help: tag !!bool: YAML does not read "yes" as true or false` + leave},
		{"windows: [1m, !!float 5m]", `t.yaml:4: rule "r": windows: tag !!float: YAML does not read "5m" as a number` + leave},
		{"help: !!seq x", `t.yaml:4: rule "r": help: tag !!seq: the value is a single value, not a list` + leave},
		{"labels: !!seq {v: '${v}'}", `t.yaml:4: tag !!seq: the value is a mapping, not a list` + leave},
		{"!!int help: x", `t.yaml:4: tag !!int: YAML does not read "help" as an integer` + leave},
		{"help: !!int 5", ""},
		{"help: !!float 5", ""},
		{"help: !!str 5", ""},
		{"help: !!null", ""},
		{"labels: !!map {v: '${v}'}", ""},
		{"windows: !!seq [!!str 1m]", ""},
		// YAML's integers and floats have no bound: one past what Go's int64, uint64 or
		// float64 holds is of its tag all the same.
		{"help: !!int 99999999999999999999", ""},
		{"help: !!int -9223372036854775809", ""},
		{"help: !!int 0x1_0000_0000_0000_0000", ""},
		{"help: !!float 1e400", ""},
		{"help: !!float -1e400", ""},
		{"help: !!int 1e400", `t.yaml:4: rule "r": help: tag !!int: YAML does not read "1e400" as an integer` + leave},
		{"help: !!float 1e400x", `t.yaml:4: rule "r": help: tag !!float: YAML does not read "1e400x" as a number` + leave},
		// The YAML library reads a leading 0 as YAML 1.1's octal, which has no 8 or 9:
		// 0999 is a float to it, which Decode refuses as a !!int. The error says so.
		{"help: !!int 0999", `t.yaml:4: rule "r": help: tag !!int: YAML does not read "0999" as an integer, which the tag says it is: a leading 0 makes an integer octal (0755), whose digits are 0 to 7, so YAML reads 0999 as the number 999; leave the tag out`},
		{"help: !!int -08", `t.yaml:4: rule "r": help: tag !!int: YAML does not read "-08" as an integer, which the tag says it is: a leading 0 makes an integer octal (0755), whose digits are 0 to 7, so YAML reads -08 as the number -8; leave the tag out`},
		{"help: !!int 0_999", `t.yaml:4: rule "r": help: tag !!int: YAML does not read "0_999" as an integer, which the tag says it is: a leading 0 makes an integer octal (0755), whose digits are 0 to 7, so YAML reads 0_999 as the number 999; leave the tag out`},
		{"help: !!int 0o9", `t.yaml:4: rule "r": help: tag !!int: YAML does not read "0o9" as an integer` + leave},
		{"help: !!int 0777", ""},
		{"help: !!int 0o777", ""},
		{"help: !!int 00", ""},
	} {
		t.Run(c.value, func(t *testing.T) {
			checkParseError(t, "rules:\n  - name: r\n    match: '(?P<v>x)'\n    "+c.value+"\n", "t.yaml", c.want)
		})
	}
}
