package config

import (
	"strings"
	"testing"
)

// cri_time is the runtime's RFC 3339 time: its layout may be left out, and one given that
// does not read a time some runtime writes (containerd's nanoseconds trimmed of zeros and
// Z, CRI-O's nine digits and +00:00) is refused at its line, naming that time, rather
// than drop a share of a node's lines as bad_timestamp.
func TestWrapperTimeLayout(t *testing.T) {
	for _, tc := range []struct {
		name, layout, err string
	}{
		{"none", "", ""},
		{"RFC 3339", ", layout: '2006-01-02T15:04:05Z07:00'", ""},
		{"RFC 3339 with nanoseconds", ", layout: '2006-01-02T15:04:05.999999999Z07:00'", ""},
		// Read as .999999999 is (Timestamp.ReadLayout): containerd's trimmed digits too.
		{"nine digits", ", layout: '2006-01-02T15:04:05.000000000Z07:00'", ""},
		{"nine digits, Z alone", ", layout: '2006-01-02T15:04:05.000000000Z'",
			`:4: rule "a": timestamp: layout: "2006-01-02T15:04:05.000000000Z" does not read "2024-03-17T14:04:05.123456789+01:00", a time containerd writes; cri_time is the runtime's RFC 3339 time: leave layout out, or give '2006-01-02T15:04:05Z07:00'`},
		{"Z alone", ", layout: '2006-01-02T15:04:05.999999999Z'",
			`:4: rule "a": timestamp: layout: "2006-01-02T15:04:05.999999999Z" does not read "2024-03-17T14:04:05.123456789+01:00", a time containerd writes; cri_time is the runtime's RFC 3339 time: leave layout out, or give '2006-01-02T15:04:05Z07:00'`},
		// Read as Z07:00 is (Timestamp.ReadLayout): containerd's Z too.
		{"an offset always", ", layout: '2006-01-02T15:04:05-07:00'", ""},
		{"no zone", ", layout: '2006-01-02T15:04:05'",
			`:4: rule "a": timestamp: layout: "2006-01-02T15:04:05" does not read "2024-03-17T13:04:05.123456789Z", a time containerd writes; cri_time is the runtime's RFC 3339 time: leave layout out, or give '2006-01-02T15:04:05Z07:00'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(`
inputs: [{name: pod, path: /var/log/pods/*/*/*.log, wrapper: cri}]
rules:
  - {name: a, match: x, inputs: [pod], timestamp: {capture: cri_time`+tc.layout+`}}
`), "in.yaml")
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("%v, want none", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("%v, want %s", err, tc.err)
			}
		})
	}
}
