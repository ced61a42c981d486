package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// timestamp: location: gives the zone a layout without one reads its times in, and is part
// of the rule's definition: a reload that changes it starts the rule's windows over.
func TestTimestampLocation(t *testing.T) {
	rule := func(ts string) string {
		return "rules:\n  - name: r\n    match: '(?P<t>.+)'\n    timestamp: " + ts + "\n"
	}
	cases := []struct {
		name, ts string
		want     string // the zone's name; "" for none
	}{
		{"none", `{capture: t, layout: '2006-01-02 15:04:05'}`, ""},
		{"IANA name", `{capture: t, layout: '2006-01-02 15:04:05', location: America/New_York}`, "America/New_York"},
		{"UTC named", `{capture: t, layout: '2006-01-02 15:04:05', location: UTC}`, "UTC"},
		// A zone's abbreviation is read in the zone that has it (EST, EDT in New York).
		{"abbreviation", `{capture: t, layout: '2006-01-02 15:04:05 MST', location: America/New_York}`, "America/New_York"},
	}
	prints := map[string]string{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(rule(c.ts)), "r.yaml")
			if err != nil {
				t.Fatal(err)
			}
			ts := cfg.Rules[0].Timestamp
			got := ""
			if ts.Location != nil {
				got = ts.Location.String()
			}
			if got != c.want {
				t.Errorf("location %q, want %q", got, c.want)
			}
			if c.want == "" && ts.In() != time.UTC {
				t.Errorf("no location reads in %v, want UTC", ts.In())
			}
			prints[c.name] = cfg.Rules[0].Fingerprint
		})
	}
	if prints["none"] == prints["IANA name"] || prints["IANA name"] == prints["UTC named"] {
		t.Errorf("a change of location keeps the fingerprint: %v", prints)
	}
	again, err := Parse([]byte(rule(strings.ReplaceAll(cases[1].ts, "'", `"`))), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if again.Rules[0].Fingerprint != prints["IANA name"] {
		t.Error("the same location written otherwise changes the fingerprint")
	}
}

// A layout's literal Z says its times are UTC; Go's zone elements that begin with a Z, and
// a Z in a word, do not.
func TestLiteralZ(t *testing.T) {
	for layout, want := range map[string]bool{
		"2006-01-02T15:04:05Z":           true,
		"2006-01-02T15:04:05.000Z":       true,
		"2006-01-02 15:04:05 Z":          true,
		"2006-01-02T15:04:05Z07:00":      false,
		"2006-01-02T15:04:05Z0700":       false,
		"2006-01-02T15:04:05Z07":         false,
		"2006-01-02T15:04:05Z07:00:00":   false,
		"2006-01-02 15:04:05":            false,
		"2006-01-02 15:04:05 MST":        false,
		"2006-01-02 15:04:05 Zone MST":   false,
		"2006-01-02 15:04:05 (ZSTD) MST": false,
	} {
		if got := literalZ(layout); got != want {
			t.Errorf("literalZ(%q) = %v, want %v", layout, got, want)
		}
	}
}

// TestLongKeyHint: a key past the 1,024 characters YAML reads of one (its quotes counted)
// is said to be, with its length, where yaml.v3's own words (a colon not found, or not
// allowed) do not tell why; a key of 1,024 is read.
func TestLongKeyHint(t *testing.T) {
	for _, tt := range []struct {
		name   string
		text   func(key string) string
		quotes int    // the characters the text adds to the key
		want   string // after "rules.yaml", with %d for the key's length as written
	}{
		{"block", func(key string) string { return "patterns:\n  " + key + ": x\nrules: [{name: a, match: x}]\n" }, 0,
			`:2: not valid YAML: mapping values are not allowed in this context; the line's key is %d characters as written, and YAML reads a key of at most 1024: shorten it`},
		{"flow", func(key string) string { return "patterns: {A: x, " + key + ": x}\nrules: [{name: a, match: x}]\n" }, 0,
			`:1: not valid YAML: did not find expected ',' or '}'; the line's key is %d characters as written, and YAML reads a key of at most 1024: shorten it`},
		{"quoted", func(key string) string { return "patterns:\n  '" + key + "': x\nrules: [{name: a, match: x}]\n" }, 2,
			`:2: not valid YAML: mapping values are not allowed in this context; the line's key is %d characters as written, and YAML reads a key of at most 1024: shorten it`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse([]byte(tt.text(strings.Repeat("é", 1024-tt.quotes))), "rules.yaml"); err != nil && strings.Contains(err.Error(), "not valid YAML") {
				t.Errorf("a key of 1024 characters: %.300v", err)
			}
			key := strings.Repeat("k", 1025-tt.quotes)
			_, err := Parse([]byte(tt.text(key)), "rules.yaml")
			if want := "rules.yaml" + fmt.Sprintf(tt.want, len(key)+tt.quotes); err == nil || err.Error() != want {
				t.Errorf("got %.300v, want %s", err, want)
			}
		})
	}
}

// TestMissingCommaWhereWritten: an item is said to be written over two lines only where
// its text is: not one on a single line after a byte order mark (whose columns YAML
// counts after it) or after its anchor, nor an alias of one, which are plain mistakes.
func TestMissingCommaWhereWritten(t *testing.T) {
	const rule = "rules:\n  - name: r\n    match: x\n"
	notDuration := `rules.yaml:4: rule "r": windows: "1m 5m" is not a duration: it has a space (write e.g. 30s, 5m, 1h, 1d)`
	for _, tt := range []struct{ name, text, want string }{
		{"byte order mark", "\ufeffrules: [{name: r, match: x, windows: [1m 5m]}]\n",
			`rules.yaml:1: rule "r": windows: "1m 5m" is not a duration: it has a space (write e.g. 30s, 5m, 1h, 1d)`},
		{"anchored", rule + "    windows: [&w 1m 5m]\n", notDuration},
		{"aliased", "rules:\n  - {name: a, match: &w 1m 5m}\n  - name: r\n    match: x\n    windows: [*w]\n",
			`rules.yaml:5: rule "r": windows: "1m 5m" is not a duration: it has a space (write e.g. 30s, 5m, 1h, 1d)`},
		{"anchored, over two lines", rule + "    windows: [&w 1m\n      5m]\n",
			`rules.yaml:5: rule "r": windows: "1m 5m" is written over two lines with no comma between them (from line 4), which YAML reads as one item; put a comma between its parts`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse([]byte(tt.text), "rules.yaml"); err == nil || !strings.Contains(err.Error()+"\n", tt.want+"\n") {
				t.Errorf("got %.500v, want %s", err, tt.want)
			}
		})
	}
}
