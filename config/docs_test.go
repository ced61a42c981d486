package config

import (
	"os"
	"regexp"
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
