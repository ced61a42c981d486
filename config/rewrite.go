package config

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Rewrite is one entry of a rule's `rewrite:` list: every match of Regexp in the value of
// label Label is replaced by Replacement, expanded as Regexp.ReplaceAllString expands it
// ($1, ${name}, $$). A label's rewrites apply in the order written, each to what the
// previous one left, to the label's value as it would be without them (valid UTF-8, capped
// in length), before the value keys a series or is ranked (a top label).
type Rewrite struct {
	Label       string
	Regexp      *regexp.Regexp
	Replacement string
	// Line is where the rewrite is written, for messages.
	Line int
}

// RewritesOf returns the rewrites of label name in the order they apply; nil for a label
// without any.
func (r *Rule) RewritesOf(name string) []Rewrite {
	var out []Rewrite
	for _, rw := range r.Rewrites {
		if rw.Label == name {
			out = append(out, rw)
		}
	}
	return out
}

// rewriteKeys are the keys of one entry of `rewrite:`.
var rewriteKeys = []string{"label", "regex", "replacement"}

// rewrite decodes `rewrite:`, which needs the rule's labels decoded and its top label
// still among them. labels are the names under `labels:` as written, so a label whose
// template was refused is not reported a second time here.
func (rd *ruleDecoder) rewrite(e entry, r *Rule, labels []string) {
	v := resolve(e.val)
	if v.Kind != yaml.SequenceNode {
		rd.add(e.key.Line, rd.subject, "rewrite: must be a list of rewrites (- {label: l, regex: r, replacement: s}), not %s", kindName(v))
		return
	}
	if len(labels) == 0 {
		rd.add(e.key.Line, rd.subject, "rewrite: the rule has no labels to rewrite")
		return
	}
	if rd.tooMany(e, rd.subject, len(v.Content), maxRewrites, "rewrites", "a rule") {
		return
	}
	for i, item := range v.Content {
		what := fmt.Sprintf("rewrite #%d", i+1)
		entries, ok := rd.mapping(item, rd.subject, what)
		if !ok {
			continue
		}
		rd.known(entries, rd.subject, what, rewriteKeys...)
		line := resolve(item).Line
		rw := Rewrite{Line: line}
		valid := true
		if le, ok := find(entries, "label"); !ok {
			rd.add(line, rd.subject, "%s: label: is missing; name the label whose value is rewritten (labels: %s)", what, listing(labels))
			valid = false
		} else if rw.Label, ok = rd.scalar(le, rd.subject, what+": label"); ok && !slices.Contains(labels, rw.Label) {
			rd.add(le.key.Line, rd.subject, "%s: label: %q is not a label of the rule%s (labels: %s)", what, rw.Label, rd.suggest(rw.Label, labels), listing(labels))
			valid = false
		} else if !ok {
			valid = false
		}
		re, ok := rd.rewriteRegex(entries, line, what)
		valid = valid && ok
		if pe, ok := find(entries, "replacement"); !ok {
			rd.add(line, rd.subject, "%s: replacement: is missing; give the text each match becomes ('' deletes it)", what)
			valid = false
		} else if rw.Replacement, ok = rd.scalar(pe, rd.subject, what+": replacement"); !ok {
			valid = false
		} else if re != nil {
			if msg := checkReplacement(re, rw.Replacement); msg != "" {
				rd.add(pe.key.Line, rd.subject, "%s: replacement: %s", what, msg)
				valid = false
			}
		}
		if valid {
			rw.Regexp = re
			r.Rewrites = append(r.Rewrites, rw)
		}
	}
}

// rewriteRegex decodes the regex of one rewrite; nil when it is missing or invalid.
func (rd *ruleDecoder) rewriteRegex(entries []entry, line int, what string) (*regexp.Regexp, bool) {
	xe, ok := find(entries, "regex")
	if !ok {
		rd.add(line, rd.subject, "%s: regex: is missing; give the regex whose every match is replaced", what)
		return nil, false
	}
	text, ok := rd.scalar(xe, rd.subject, what+": regex")
	switch {
	case !ok:
		return nil, false
	case text == "":
		rd.add(xe.key.Line, rd.subject, "%s: regex: is empty (it would match between every two characters)", what)
		return nil, false
	}
	return rd.compile(xe.key.Line, rd.subject, what+": regex", text)
}

// checkReplacement finds what in a replacement Regexp.Expand would quietly read as
// nothing: a reference to a group the regex lacks ($2 of a regex with one group, $1x read
// as the group named "1x"), and a $ that is no reference at all, which Expand keeps as a
// literal $. It returns "" when there is none.
func checkReplacement(re *regexp.Regexp, repl string) string {
	for i := strings.IndexByte(repl, '$'); i >= 0; i = strings.IndexByte(repl, '$') {
		rest := repl[i+1:]
		if strings.HasPrefix(rest, "$") {
			repl = rest[1:]
			continue
		}
		name, braced, n := referenceName(rest)
		if name == "" {
			return fmt.Sprintf("%q has a $ that is neither $1, ${name} nor $$ (a literal $)", repl[i:])
		}
		if !hasGroup(re, name) {
			ref := "$" + name
			hint := ""
			if braced {
				ref = "${" + name + "}"
			} else if j := firstNonDigit(name); j > 0 {
				// $1x is the group named "1x": the number ends only where the name does.
				hint = fmt.Sprintf("; for group %s followed by %q write ${%s}%s", name[:j], name[j:], name[:j], name[j:])
			}
			return fmt.Sprintf("%s names no group of the regex (groups: %s)%s", ref, groupList(re), hint)
		}
		repl = rest[n:]
	}
	return ""
}

// referenceName reads the group reference after a $ as Regexp.Expand does: ${name}, or the
// longest run of letters, digits and _ (Unicode's); n is the bytes it takes. name is ""
// when there is no reference.
func referenceName(s string) (name string, braced bool, n int) {
	braced = strings.HasPrefix(s, "{")
	if braced {
		n = 1
	}
	start := n
	for n < len(s) {
		r, size := utf8.DecodeRuneInString(s[n:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' {
			break
		}
		n += size
	}
	name = s[start:n]
	if braced {
		if name == "" || n >= len(s) || s[n] != '}' {
			return "", false, 0
		}
		n++
	}
	return name, braced, n
}

// hasGroup reports whether name refers to a group of re as Expand reads it: a number
// without a leading zero is a group's index, anything else a group's name.
func hasGroup(re *regexp.Regexp, name string) bool {
	if firstNonDigit(name) < 0 && (name == "0" || name[0] != '0') {
		n, err := strconv.Atoi(name)
		return err == nil && n <= re.NumSubexp()
	}
	return re.SubexpIndex(name) >= 0
}

// firstNonDigit is the index of the first byte of s that is not a digit, -1 for none.
func firstNonDigit(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return i
		}
	}
	return -1
}

// groupList words the groups a replacement may name: $0 to $n, and the named ones.
func groupList(re *regexp.Regexp) string {
	list := "$0"
	if n := re.NumSubexp(); n > 0 {
		list = fmt.Sprintf("$0 to $%d", n)
	}
	for _, name := range re.SubexpNames() {
		if name != "" {
			list += ", ${" + name + "}"
		}
	}
	return list
}

// Warnings are what --config.check points out in a config that loads: each names the
// file, the line and the rule, for a setting that works as written but likely not as
// meant. Today that is a rewrite whose regex matches empty text anywhere in a value: its
// replacement goes between every two characters ('z*' turns "ab" into "-a-b-"); a
// capture that only a JSON object candidate gives (objectOnly); a variable of a JSON
// template without quotes that nginx may write as no JSON value (logformat.Format.Unquoted);
// a format string holding what nginx.conf writes around a format (pasted); bucket
// bounds below 0, whose buckets no value reaches; and an initial label set whose value
// the label's rewrites would change (and not their own result), written as the raw value
// rather than the rewritten;
// a distinct: template that is a kept label's, which counts 1 value per series.
func Warnings(c *Config) []string {
	var out []string
	for _, p := range c.warned {
		out = append(out, fmt.Sprintf("%s:%d: warning: %s: %s", c.File, p.Line, p.Subject, p.Msg))
	}
	for _, r := range c.Rules {
		out = append(out, objectOnly(c, r)...)
		for _, rw := range r.Rewrites {
			if matchesEmptyAnywhere(rw.Regexp) {
				out = append(out, fmt.Sprintf("%s:%d: warning: rule %q: rewrite of label %q: regex '%s' can match empty text, at more than one place of a value, "+
					"and its replacement goes in at each ('z*' puts it between every two characters); make it match at least one character (+ instead of *), or anchor it (^, $)",
					c.File, rw.Line, r.Name, rw.Label, rw.Regexp))
			}
		}
	}
	return out
}

// matchesEmptyAnywhere reports whether re matches empty text at more than one place of
// some value: it can match empty, and is not anchored to the start or the end of the
// text, where only one match can be.
func matchesEmptyAnywhere(re *regexp.Regexp) bool {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil || !nullable(tree) {
		return false
	}
	for tree.Op == syntax.OpCapture {
		tree = tree.Sub[0]
	}
	switch tree.Op {
	case syntax.OpBeginText, syntax.OpEndText:
		return false
	case syntax.OpConcat:
		first, last := tree.Sub[0].Op, tree.Sub[len(tree.Sub)-1].Op
		return first != syntax.OpBeginText && last != syntax.OpEndText
	}
	return true
}

// nullable reports whether re matches the empty text in some context: assertions (^, $,
// \b) match empty.
func nullable(re *syntax.Regexp) bool {
	return nullableWhere(re, func(syntax.Op) bool { return true })
}

// nullableWhere reports whether re matches the empty text at a place where the
// assertions holds says hold (^, $, \b, \B, by their op) do, and no others.
func nullableWhere(re *syntax.Regexp, holds func(syntax.Op) bool) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return holds(re.Op)
	case syntax.OpEmptyMatch, syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpLiteral:
		return len(re.Rune) == 0
	case syntax.OpCapture, syntax.OpPlus:
		return nullableWhere(re.Sub[0], holds)
	case syntax.OpRepeat:
		return re.Min == 0 || nullableWhere(re.Sub[0], holds)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !nullableWhere(sub, holds) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		return slices.ContainsFunc(re.Sub, func(sub *syntax.Regexp) bool { return nullableWhere(sub, holds) })
	}
	return false // a character, a class, no match
}

// matchesEvery reports whether re, searched in a text, matches every text: it matches
// the empty text at the start of any text (where only ^ holds for certain) or at its end
// (where only $ does). A regex that needs a character misses the empty text.
func matchesEvery(re *regexp.Regexp) bool {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return false
	}
	atStart := func(op syntax.Op) bool { return op == syntax.OpBeginText || op == syntax.OpBeginLine }
	atEnd := func(op syntax.Op) bool { return op == syntax.OpEndText || op == syntax.OpEndLine }
	return nullableWhere(tree, atStart) || nullableWhere(tree, atEnd)
}
