package testexec

import (
	"bytes"
	"os/exec"
	"testing"
)

// ParseOpenMetrics has Python's prometheus_client parse scrape with its OpenMetrics
// parser, which holds a scrape to what OpenMetrics 1.0 requires (one TYPE per family,
// metadata before samples, a counter's _total, # EOF), and returns a line per family:
// its name, type and number of samples. It fails tb when the parser refuses the scrape,
// and skips it without the parser (failing it when Required). Debian: apt-get install
// python3-prometheus-client.
func ParseOpenMetrics(tb testing.TB, scrape []byte) string {
	tb.Helper()
	python := ""
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import prometheus_client.openmetrics.parser").Run() == nil {
			python = path
			break
		}
	}
	if python == "" {
		const why = "no python3 with prometheus_client (Debian: apt-get install python3-prometheus-client)"
		if Required {
			tb.Fatal(why)
		}
		tb.Skip(why)
	}
	const script = `import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
for f in text_string_to_metric_families(sys.stdin.read()):
    print(f.name, f.type, len(f.samples))
`
	cmd := exec.Command(python, "-c", script)
	cmd.Stdin = bytes.NewReader(scrape)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("prometheus_client's OpenMetrics parser: %v\n%s", err, out)
	}
	return string(out)
}
