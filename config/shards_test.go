package config

import (
	"strings"
	"testing"
)

func TestShards(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		want        int    // Input.Shards when the file loads
		err         string // else in the error
	}{
		{"default", `{path: /p/*/0.log}`, 0, ""},
		{"a glob", `{path: /p/*/0.log, shards: 4}`, 4, ""},
		{"one file", `{path: /p/0.log, shards: 2}`, 2, ""},
		{"one file of candidate formats", `{path: /p/0.log, log_format: auto, shards: 2}`, 0, `shards: a file read by candidate formats (log_format: auto or a list) is parsed on one core`},
		{"a glob of candidate formats", `{path: /p/*/0.log, log_format: auto, shards: 2}`, 2, ""},
		{"a socket", `{syslog: 'udp://127.0.0.1:5140', shards: 2}`, 0, `shards: applies to file inputs (path:), not to a syslog input`},
		{"zero", `{path: /p/*.log, shards: 0}`, 0, `shards: "0" is not a whole number from 1 to 64`},
		{"too many", `{path: /p/*.log, shards: 65}`, 0, `shards: "65" is not a whole number from 1 to 64`},
		{"not a number", `{path: /p/*.log, shards: two}`, 0, `shards: "two" is not a whole number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte("inputs: ["+tc.input+"]\nrules: [{name: a, match: x}]\n"), "shards.yaml")
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err == "" && c.Inputs[0].File.Shards != tc.want:
				t.Errorf("shards %d, want %d", c.Inputs[0].File.Shards, tc.want)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("error %v, want one with %q", err, tc.err)
			}
		})
	}
}
