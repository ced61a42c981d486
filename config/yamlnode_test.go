package config

import "testing"

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
