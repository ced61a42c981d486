package pipeline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
)

// A line too long to read is skipped, but it is a line of its file: the lines after it are
// numbered as the file has them, in --explain and in the summary's first misfit, which
// numbered them one too low.
func TestOneShotsNumberLinesPastTooLongOnes(t *testing.T) {
	const good = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
	long := good + " " + strings.Repeat("x", 300)
	for _, tc := range []struct {
		name, wrapper, prefix string
	}{
		{"plain", "", ""},
		{"cri", ", wrapper: cri", "2024-03-01T12:00:00Z stdout F "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			for _, l := range []string{good, long, long, "not a log line", good} {
				b.WriteString(tc.prefix + l + "\n")
			}
			log := filepath.Join(t.TempDir(), "access.log")
			if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: web, path: '%s', log_format: combined%s}]\nrules: [{name: requests, labels: {status: '${status}'}}]\n", log, tc.wrapper), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var summary bytes.Buffer
			lines, err := explainAll(cfg, log, 10, Options{Now: time.Now, Summary: &summary, MaxLineBytes: 200})
			if err != nil {
				t.Fatal(err)
			}
			var numbers []int
			for _, l := range lines {
				numbers = append(numbers, l.Number)
			}
			if want := []int{1, 4, 5}; !slices.Equal(numbers, want) {
				t.Errorf("explained lines %v, want %v", numbers, want)
			}
			const want = "input web: 2 of 3 lines fit (first misfit at line 4: "
			if !strings.HasPrefix(summary.String(), want) {
				t.Errorf("summary %q, want %q...", summary.String(), want)
			}
		})
	}
}
