package quantity

import "testing"

func TestSuffix(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"window", "_window"},
		{"per_second", "_window_per_second"},
		{"max", "_window_max"},
		{"quantiles", ""}, // its families are the rule's quantiles
		{"nope", ""},
	} {
		if got := Suffix(tc.name); got != tc.want {
			t.Errorf("Suffix(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestDescribe: what a rule computes is said by its kind, not as "counts lines" for every
// rule that counts lines.
func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"counter", Spec{Aggregations: Aggregations{Window: true, PerSecond: true}},
			"counts lines; per window: matched lines, per-second rate"},
		{"total only", Spec{}, "counts lines"},
		{"value", Spec{ValueName: "request_time", Aggregations: Aggregations{Window: true, Events: true, Max: true, Quantiles: true},
			Quantiles: []float64{0.5, 0.999}, Buckets: []float64{0.1, 1}},
			"sums request_time; per window: sum of request_time, matched lines, largest request_time, p50 p99_9 of request_time, distribution of request_time over 3 buckets"},
		{"value aggregations of a counter are not exported", Spec{Aggregations: Aggregations{Window: true, Max: true}},
			"counts lines; per window: matched lines"},
		{"distinct", Spec{Aggregations: Aggregations{Window: true, Distinct: true}, DistinctItem: 1},
			"counts lines; per window: matched lines, different distinct: values"},
		{"top", Spec{Aggregations: Aggregations{Window: true}, Top: &Top{Label: "path", K: 10}},
			"counts lines; per window: matched lines, top 10 path by matched lines"},
		{"top by a value", Spec{ValueName: "bytes", Top: &Top{Label: "path", K: 3}},
			"sums bytes; per window: top 3 path by sum of bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.spec.Describe(); got != tc.want {
				t.Errorf("Describe() =\n %q\nwant\n %q", got, tc.want)
			}
		})
	}
}
