package config

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// A where filter whose regex matches no text at all, and a where_not filter with the
// regex of the where filter of its capture, leave a rule counting no line forever: each
// loads with a warning naming the file, the line and the rule. Regexes that can match
// some text, however rarely, and different regexes of one capture, are not warned of.
func TestWhereMatchingNothingWarns(t *testing.T) {
	const head = "rules:\n  - name: r\n    match: '(?P<s>\\S+) (?P<p>\\S*)'\n"
	never := func(re string) string {
		return fmt.Sprintf(`rules.yaml:4: warning: rule "r": where: s: '%s' matches no text at all, so the rule will count no line`, re)
	}
	both := func(re string) string {
		return fmt.Sprintf(`rules.yaml:5: warning: rule "r": where_not: s: '%s' is the regex of where: s: a value that matches it is both required and dropped, so the rule will count no line`, re)
	}
	where := func(capture, re string) string { return fmt.Sprintf("    where: {%s: '%s'}\n", capture, re) }
	for _, c := range []struct {
		name, keys, want string
		sample           string // for a case not warned of, a value its where regex matches
	}{
		{"a character before ^", where("s", `a^b`), never(`a^b`), ""},
		{"a character before \\A", where("s", `5\A`), never(`5\A`), ""},
		{"a character after $", where("s", `$x`), never(`$x`), ""},
		{"a character after \\z", where("s", `x\zy`), never(`x\zy`), ""},
		{"a class of no character", where("s", `[^\x00-\x{10FFFF}]`), never(`[^\x00-\x{10FFFF}]`), ""},
		{"a class of no character, written another way", where("s", `^5[^\s\S]`), never(`^5[^\s\S]`), ""},
		{"every branch dead", where("s", `^(a^|b$c|[^\d\D])`), never(`^(a^|b$c|[^\d\D])`), ""},
		{"repeated dead", where("s", `(x^)+`), never(`(x^)+`), ""},
		{"where_not of where's regex", where("s", `^5`) + "    where_not: {s: '^5'}\n", both(`^5`), ""},
		{"where_not of where's regex, written another way", where("s", `^5`) + "    where_not: {s: '^(?:5)'}\n", both(`^(?:5)`), ""},
		// Must not warn: each can match some text (sample), or filters another capture.
		{"plain", where("s", `^5`), "", "5"},
		{"empty text only", where("p", `^$`), "", ""},
		{"$ then ^ (the empty text)", where("p", `$^`), "", ""},
		{"^ twice", where("s", `^^5`), "", "5"},
		{"$ twice", where("s", `5$$`), "", "5"},
		{"^ after an empty loop", where("s", `x*^5`), "", "5"},
		{"$ before an empty loop", where("s", `5$x*`), "", "5"},
		{"one live branch", where("s", `a^b|c`), "", "c"},
		{"multi-line ^ after a newline", where("s", `(?m)a\n^b`), "", "a\nb"},
		{"multi-line $ before a newline", where("s", `(?m)a$\nb`), "", "a\nb"},
		{"word boundaries", where("s", `\bx\B`), "", "xy"},
		{"every character", where("s", `[\x00-\x{10FFFF}]`), "", "z"},
		{"case folded", where("s", `(?i)^GET$`), "", "get"},
		{"where_not of another capture", where("s", `^5`) + "    where_not: {p: '^5'}\n", "", "5"},
		{"where_not of another regex", where("s", `^5`) + "    where_not: {s: '^50'}\n", "", "5"},
		{"where_not of a case-folded regex", where("s", `^a`) + "    where_not: {s: '(?i)^a'}\n", "", "a"},
		{"^ after a repetition of none", where("s", `a{0}^b`), "", "b"},
		{"^ after an empty alternation", where("s", `(|x)^5`), "", "5"},
		{"a dot matching a newline before $", where("s", `(?s)a.$`), "", "a\n"},
		{"multi-line $ and ^ about a newline", where("s", `(?m)$\n^`), "", "\n"},
		{"a Unicode class", where("s", `^\p{Greek}+$`), "", "αβ"},
		{"a class of every letter but one, case folded", where("s", `(?i)[^\PLk]`), "", "q"},
		{"word boundary before ^", where("s", `\b^x`), "", "x"},
		{"where_not of a dot matching newlines", where("s", `^.$`) + "    where_not: {s: '(?s)^.$'}\n", "", "a"},
		{"where_not of a multi-line $", where("s", `5$`) + "    where_not: {s: '(?m)5$'}\n", "", "5"},
		{"where_not anchored more", where("s", `^5`) + "    where_not: {s: '^5$'}\n", "", "5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := parseWarned(t, "rules.yaml", head+c.keys, c.want)
			if len(cfg.Rules[0].Where) == 0 {
				t.Fatal("the where filter was not kept")
			}
			if w := cfg.Rules[0].Where[0]; c.want == "" && !w.Regexp.MatchString(c.sample) {
				t.Errorf("where: %s: '%s' does not match %q: not a filter a rule counts with", w.CaptureName, w.Regexp, c.sample)
			}
		})
	}
}

// TestMatchesNothingSound: of random regexes of a few characters, assertions and
// operators, every one matchesNothing says matches nothing is found in no text of up to
// six characters of its alphabet: a regex of six pieces or fewer that matches some text
// matches a text of as many characters, each piece reading one at most.
// It warns of no rule that counts lines.
func TestMatchesNothingSound(t *testing.T) {
	race.Skip(t) // 2 s of one goroutine's regex matching, 100 s under the detector
	pieces := []string{"a", "b", `\n`, "^", "$", `\A`, `\z`, `\b`, `\B`, "(?m:^)", "(?m:$)", "|", "*", "?", "(", ")", "[^a]", "[^\\x00-\\x{10FFFF}]", "."}
	var texts []string
	var grow func(s string)
	grow = func(s string) {
		texts = append(texts, s)
		if len(s) < 6 {
			for _, c := range []string{"a", "b", "\n"} {
				grow(s + c)
			}
		}
	}
	grow("")
	rng := rand.New(rand.NewPCG(1, 2))
	nothing := 0
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(6) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		re, err := regexp.Compile(b.String())
		if err != nil || !matchesNothing(re) {
			continue
		}
		nothing++
		for _, s := range texts {
			if re.MatchString(s) {
				t.Fatalf("matchesNothing(%q) but it matches %q", re, s)
			}
		}
	}
	if nothing == 0 {
		t.Fatal("no regex generated matches nothing: the test tries nothing")
	}
	t.Logf("%d regexes said to match nothing", nothing)
}
