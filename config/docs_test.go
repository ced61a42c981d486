package config

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// ruleReference is docs/configuration.md's block of every rule key.
var ruleReference = regexp.MustCompile("(?s)Every key:\n\n```yaml\n(rules:\n.*?)```")

// TestDocsRuleReferenceHasEveryKey holds docs/configuration.md's reference of a rule's keys
// to the keys a rule takes: a key the reference leaves out is one a reader looking there
// does not know of.
func TestDocsRuleReferenceHasEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	m := ruleReference.FindSubmatch(doc)
	if m == nil {
		t.Fatal(`docs/configuration.md has no yaml block of every rule key after "Every key:"`)
	}
	for _, key := range ruleKeys {
		// A key is given (    key:) or shown as the alternative of one (    # key:).
		if !regexp.MustCompile(`(?m)^ {2,4}(- |# )?` + key + `:`).Match(m[1]) {
			t.Errorf("docs/configuration.md's reference of a rule's keys lacks %s", key)
		}
	}
}

// TestDocsLimits holds docs/configuration.md's table of limits to the limits the loader
// applies: a row per key, with its number.
func TestDocsLimits(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for key, limit := range map[string]int{
		"rules": maxRules, "inputs": maxInputs, "patterns": maxPatterns, "windows": maxWindows,
		"labels": maxLabels, "fields": maxFields, "rewrite": maxRewrites, "quantiles": maxQuantiles,
		"buckets": maxBuckets, "initial": maxInitial, "log_format": maxCandidates,
	} {
		row := regexp.MustCompile("(?m)^\\| `" + key + "` \\| " + regexp.QuoteMeta(thousands(limit)) + " ")
		if !row.Match(doc) {
			t.Errorf("docs/configuration.md has no limits row | `%s` | %s ... |", key, thousands(limit))
		}
	}
}

// thousands writes n with commas, as the docs write numbers.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
