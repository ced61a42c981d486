package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --config.check refuses a rule reading a capture that no candidate log format of its
// input gives, naming the file and line, the rule, the capture and the input; with a
// candidate that gives it, the same rule passes.
func TestConfigCheckCandidates(t *testing.T) {
	rules := `inputs:
  - name: pods
    path: /var/log/pods/*_*_*/*/*.log
    wrapper: cri
    log_format: FORMATS
rules:
  - name: http_requests
    labels: {status: '${status}'}
  - name: http_request_duration_seconds
    value: request_time
`
	tests := []struct {
		formats string
		code    int
		stderr  string
	}{
		{"[combined, main]", 1, `rules.yaml:10: rule "http_request_duration_seconds": capture "request_time" is given by no log format of input "pods"`},
		{"[combined, main, combined_request_time]", 0, ""},
		{"auto", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.formats, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "rules.yaml")
			if err := os.WriteFile(file, []byte(strings.Replace(rules, "FORMATS", tt.formats, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := run([]string{"--config.check", "--config.file=" + file}, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d with %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
}
