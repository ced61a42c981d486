package config

import "testing"

func TestWindowEnd(t *testing.T) {
	tests := []struct {
		name, line string
		want       WindowEnd
		err        string
	}{
		{"default", "", WindowEndCurrent, ""},
		{"current second", "window_end: current_second", WindowEndCurrent, ""},
		{"last complete second", "window_end: last_complete_second", WindowEndLastComplete, ""},
		{"typo", "window_end: last_complete_secnd", "", `:5: rule "r": window_end: "last_complete_secnd" is not one of current_second, last_complete_second (where a window read during a second ends: at it, or at the one before) (did you mean "last_complete_second"?)`},
		{"not a scalar", "window_end: [current_second]", "", `:5: rule "r": window_end: must be a single value, not a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte("rules:\n  - name: r\n    match: x\n    windows: [1m]\n    "+tt.line+"\n"), "e.yaml")
			if tt.err != "" {
				if err == nil || err.Error() != "e.yaml"+tt.err {
					t.Fatalf("error %v, want e.yaml%s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Rules[0].WindowEnd; got != tt.want {
				t.Errorf("WindowEnd = %q, want %q", got, tt.want)
			}
		})
	}
}
