package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/growth"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// repeat joins n copies of s with sep.
func repeat(s, sep string, n int) string {
	return strings.TrimSuffix(strings.Repeat(s+sep, n), sep)
}

// TestAliasBombs: aliases that repeat much of the file (a "billion laughs", or one rule
// repeated thousands of times) are refused at the alias that passes the bound, before the
// rules are decoded: decoding what they expand to took seconds and gigabytes of a file of
// kilobytes, and listed a problem per copy.
func TestAliasBombs(t *testing.T) {
	long := strings.Repeat("x", 1000)
	laughs := "rules:\n  - name: a\n    match: x\n    labels: *l9\n"
	var anchors strings.Builder
	anchors.WriteString("patterns: {L0: &l0 lol}\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&anchors, "x%d: &l%d [%s]\n", i, i, repeat(fmt.Sprintf("*l%d", i-1), ", ", 10))
	}
	tests := []struct {
		name, text string
		want       string
	}{
		{"billion laughs", anchors.String() + laughs,
			":7: alias *l5: the file's aliases, written out, add more than 1 MiB to it; write out what they share, or share less"},
		{"a rule repeated", "rules: [{name: a, help: &h '" + long + "', match: x}, " + repeat("{name: b, help: *h, match: x}", ", ", 1100) + "]\n",
			":1: alias *h: the file's aliases, written out, add more than 1 MiB to it; write out what they share, or share less"},
		{"label sets repeated", "rules:\n  - name: a\n    match: '(?P<v>.*)'\n    labels: {v: '${v}'}\n    initial: [&s {v: '" + long + "'}, " + repeat("*s", ", ", 1100) + "]\n",
			":5: alias *s: the file's aliases, written out, add more than 1 MiB to it; write out what they share, or share less"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.text), "rules.yaml")
			if want := "rules.yaml" + tt.want; err == nil || err.Error() != want {
				t.Errorf("got %.500v, want %s", err, want)
			}
		})
	}
}

// TestRegexTotal: patterns let a file of a few kilobytes compile megabytes of regex, a
// rule at a time (a hundred rules reading one pattern of 900 KiB took 85 s and 5 GB to
// load); the regexes of a file, patterns expanded, are bounded together, and the regex
// that passes the bound is named.
func TestRegexTotal(t *testing.T) {
	race.Skip(t)
	var b strings.Builder
	b.WriteString("patterns:\n  A0: 'ab'\n")
	for i := 1; i <= 16; i++ {
		fmt.Fprintf(&b, "  A%d: '%%{A%d}%%{A%d}'\n", i, i-1, i-1)
	}
	b.WriteString("rules:\n")
	for i := range 100 {
		fmt.Fprintf(&b, "  - name: r%d\n    match: '%%{A16}'\n", i)
	}
	_, err := Parse([]byte(b.String()), "rules.yaml")
	want := `rules.yaml:29: rule "r4": match: with this regex the file's regexes, patterns expanded, pass 4 MiB; expand big patterns in fewer places`
	if err == nil || err.Error() != want {
		t.Errorf("got %.500v, want %s", err, want)
	}
}

// TestLongListsLinear: lists are checked in work linear in their length: a rule's
// quantiles past their limit refused uncounted, its inputs for repeats (the inputs' beyond
// the problems reported), the groups of path_captures for names given twice, and the
// captures a rule reads looked up among its regex's groups. Each item looked for among the
// others took minutes on lists of a few hundred thousand, which a file of a few megabytes
// holds. The work is counted, not timed (a bound of 30 s failed on a loaded machine, where
// decoding the lists alone took minutes): see growth.Linear. A search that allocates
// nothing is not counted: the checks keep what they have seen in maps for that.
func TestLongListsLinear(t *testing.T) {
	race.Skip(t)
	// list joins n texts of format (of 1 to n) with sep; repeated lists n-1 of them and
	// then the first again.
	list := func(format, sep string, n int) string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(format, i+1)
		}
		return strings.Join(out, sep)
	}
	repeated := func(format, sep string, n int) string {
		return list(format, sep, n-1) + sep + fmt.Sprintf(format, 1)
	}
	const n, scale = 24000, 8
	tests := []struct {
		name string
		text func(n int) string
		want func(n int) string // the problem expected of a list of n, "" for none
	}{
		{"quantiles",
			func(n int) string {
				return "rules:\n  - name: r\n    match: '(?P<v>.*)'\n    value: v\n    aggregations: [quantiles]\n    quantiles: [" + repeated("0.%07d", ",", n) + "]\n"
			},
			func(n int) string {
				return fmt.Sprintf(`rules.yaml:6: rule "r": quantiles: %d quantiles, more than the 100 a rule may have`, n)
			}},
		{"inputs",
			func(n int) string {
				return "inputs: [{name: i1, path: /a.log}]\nrules:\n  - name: r\n    match: x\n    inputs: [" + repeated("i%d", ",", n) + "]\n"
			},
			func(n int) string {
				return fmt.Sprintf("rules.yaml: and %d more problems, not listed", n-1-maxProblems)
			}},
		{"path_captures",
			func(n int) string {
				return "inputs:\n  - path: /a.log\n    path_captures: '" + repeated("(?P<a%d>)", "", n) + "'\nrules:\n  - {name: r, match: x}\n"
			},
			func(int) string {
				return `rules.yaml:3: input #1: path_captures: capture "a1" is defined twice in the regex; rename one`
			}},
		{"captures read",
			func(n int) string {
				return "rules:\n  - name: r\n    match: '" + list("(?P<a%d>)", "", n) + "'\n    where: {" + list("a%d: x", ",", n) + "}\n"
			},
			func(int) string { return "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			growth.Linear(t, n, scale, func(n int) {
				_, err := Parse([]byte(tt.text(n)), "rules.yaml")
				switch want := tt.want(n); {
				case want == "" && err != nil:
					t.Errorf("%d items: got %.300v, want no problem", n, err)
				case want != "" && (err == nil || !strings.Contains(err.Error()+"\n", want+"\n")):
					t.Errorf("%d items: got %.300v, want %s among the problems", n, err, want)
				}
			})
		})
	}
}

// TestManyProblems: a file of thousands of names and thousands of mistakes naming them
// gets a report of bounded size, found in bounded time: each message listed every name
// (and looked for a typo among them all), so that a file of 600 KB made 2 GB of messages
// in two and a half minutes and 12 GB of memory.
func TestManyProblems(t *testing.T) {
	const inputs, refs = maxInputs, 4000
	var b strings.Builder
	b.WriteString("inputs:\n")
	for i := range inputs {
		fmt.Fprintf(&b, "  - {name: input_%05d, path: /var/log/%d.log}\n", i, i)
	}
	b.WriteString("rules:\n  - name: r\n    match: '(?P<a>x)'\n    inputs: [")
	for i := range refs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "other_%05d", i)
	}
	b.WriteString("]\n")
	_, err := Parse([]byte(b.String()), "rules.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxProblems+1 {
		t.Errorf("%d lines, want %d and one of the rest", len(lines), maxProblems)
	}
	for _, l := range lines {
		if len(l) > 1000 {
			t.Fatalf("a line of %d bytes: %.300s", len(l), l)
		}
	}
	want := `rules.yaml:1005: rule "r": inputs: no input is named "other_00000" (named inputs: input_00000, input_00001, input_00002, input_00003, input_00004, input_00005, input_00006, input_00007, input_00008, input_00009, input_00010, input_00011, input_00012, input_00013, input_00014, input_00015, input_00016, input_00017, input_00018, input_00019, and 980 more)`
	if lines[0] != want {
		t.Errorf("first problem:\n%s\nwant:\n%s", lines[0], want)
	}
	if last, want := lines[len(lines)-1], fmt.Sprintf("rules.yaml: and %d more problems, not listed", refs-maxProblems); last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
}
