package event

import "testing"

// TestDropReasonString: every reason has a name of its own, which the exporter's drop
// counter is labelled with, and a value past the reasons is "unknown".
func TestDropReasonString(t *testing.T) {
	for r, want := range map[DropReason]string{NoValue: "no_value", BadNumber: "bad_number", BadTimestamp: "bad_timestamp", Negative: "negative", DropReason(NumDropReasons): "unknown", 99: "unknown"} {
		if got := r.String(); got != want {
			t.Errorf("%d: %q, want %q", r, got, want)
		}
	}
	seen := map[string]DropReason{"unknown": DropReason(NumDropReasons)}
	for i := range NumDropReasons {
		r := DropReason(i)
		if prev, ok := seen[r.String()]; ok {
			t.Errorf("reason %d is named %q, as %d is", r, r, prev)
		}
		seen[r.String()] = r
	}
}
