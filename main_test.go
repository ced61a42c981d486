package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTelemetryPathRefused(t *testing.T) {
	for _, path := range []string{"metrics", "/", "/-/healthy", "/-/ready", "/-/reload", "/{x...}", "/a b", "/metrics/{"} {
		t.Run(path, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"--config.file=examples/quickstart.yaml", "--web.telemetry-path=" + path}, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), "--web.telemetry-path") {
				t.Errorf("exit %d, stderr %q; want exit 2 naming the flag", code, stderr.String())
			}
		})
	}
}

func TestWebLimitsRefused(t *testing.T) {
	for _, flag := range []string{"--web.read-timeout=-1s", "--web.write-timeout=-1s", "--web.idle-timeout=-1s", "--web.max-connections=0", "--web.max-requests=-1"} {
		t.Run(flag, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			name, _, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
			code := run([]string{"--config.file=examples/quickstart.yaml", flag}, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), name) {
				t.Errorf("exit %d, stderr %q; want exit 2 naming the flag", code, stderr.String())
			}
		})
	}
}
