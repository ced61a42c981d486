package config

import (
	"testing"
)

// TestBucketsBelowZeroWarn: bucket bounds below 0 load, as a rule file written when value
// rules counted negative values has them, with a warning naming the file, the line and the
// rule: no value reaches their buckets. Bounds from 0 up have none.
func TestBucketsBelowZeroWarn(t *testing.T) {
	for _, c := range []struct {
		buckets, want string
	}{
		{"[-5, -1, 0, 1]", `rules.yaml:5: warning: rule "r": buckets: -5 is below 0, and a value rule counts no negative value (a line of one is dropped as negative): the buckets up to -1 stay empty`},
		{"[-0.5, 1]", `rules.yaml:5: warning: rule "r": buckets: -0.5 is below 0`},
		{"[0, 1]", ""},
		{"[0.1, 1]", ""},
	} {
		t.Run(c.buckets, func(t *testing.T) {
			cfg := parseWarned(t, "rules.yaml", "rules:\n  - name: r\n    match: '(?P<v>.*)'\n    value: v\n    buckets: "+c.buckets+"\n", c.want)
			if len(cfg.Rules[0].Buckets) == 0 {
				t.Error("the buckets were not kept")
			}
		})
	}
}
