package logformat

import (
	"slices"
	"testing"
)

// TestTemplateMembers: only a member whose text is one variable is a field; a member of
// literal text, even empty, is read but not captured.
func TestTemplateMembers(t *testing.T) {
	f, err := ParseNginx(`{"k":"abc","e":"","s":"$status","m":"$a $b"}`, EscapeJSON)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Names(); !slices.Equal(got, []string{"status", "status_class"}) {
		t.Errorf("captures %v, want status and its class", got)
	}
}
