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
