package deploy

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestChartReadmeValues: the README's table of values names every value of values.yaml
// (a value, or one that holds it: `resources` stands for resources.limits.memory), and
// nothing values.yaml lacks.
func TestChartReadmeValues(t *testing.T) {
	var values map[string]any
	if err := yaml.Unmarshal(mustRead(t, chartDir+"/values.yaml"), &values); err != nil {
		t.Fatal(err)
	}
	readme := string(mustRead(t, chartDir+"/README.md"))
	_, table, ok := strings.Cut(readme, "\n## Values\n")
	if !ok {
		t.Fatal("README: no ## Values")
	}
	table, _, _ = strings.Cut(table, "\n\n`files/`")
	named := map[string]bool{}
	for line := range strings.SplitSeq(table, "\n") {
		cols := strings.Split(line, "|")
		if len(cols) < 3 {
			continue
		}
		for _, m := range regexp.MustCompile("`([A-Za-z.]+)`").FindAllStringSubmatch(cols[1], -1) {
			named[m[1]] = true
		}
	}
	var keys []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		keys = append(keys, prefix)
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for k, sub := range m {
				walk(prefix+"."+k, sub)
			}
		}
	}
	for k, v := range values {
		walk(k, v)
	}
	for _, k := range slices.Sorted(slices.Values(keys)) {
		covered := false
		for p := k; p != ""; p = p[:max(strings.LastIndex(p, "."), 0)] {
			covered = covered || named[p]
		}
		if !covered && !slices.ContainsFunc(keys, func(sub string) bool { return strings.HasPrefix(sub, k+".") }) {
			t.Errorf("README's values table does not name %s", k)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(named)) {
		if !slices.Contains(keys, n) {
			t.Errorf("README's values table names %s, which values.yaml has not", n)
		}
	}
}
