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
