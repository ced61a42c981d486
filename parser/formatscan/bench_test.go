package formatscan

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
	"github.com/logwindow/logwindow_exporter/internal/testutil/versus"
	"github.com/logwindow/logwindow_exporter/parser/fastmatch"
)

// BenchmarkExampleFormat compares the scanner with fastmatch and regexp on the log format
// of example-rules.yaml over generated lines, each filling every group; ns/op is per line,
// and ratio's fastmatch/scanner and regexp/scanner are their time over the scanner's in
// one interleaved loop. The engine that reads a block first fetches its lines from memory
// for the others, so ratio-fastmatch-first runs the two the other way round: the
// scanner's gain is between scanner/fastmatch there and fastmatch/scanner in ratio.
func BenchmarkExampleFormat(b *testing.B) {
	c, err := config.Load(filepath.Join("..", "..", "example-rules.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	f := c.Inputs[0].LogFormat
	re := regexp.MustCompile(f.Regex)
	fm, err := fastmatch.Compile(f.Regex)
	if err != nil {
		b.Fatal(err)
	}
	s := scanner(b, f)
	lines := nginxlog.Lines(b, 20000, 1)
	caps := make([]int, 2*(len(f.Captures)+1))
	for _, l := range lines {
		if !s.Match(l, caps) || !fm.Match(l, caps) {
			b.Fatalf("a generated line does not fit: %q", l)
		}
	}
	scanner := versus.Engine{Name: "scanner", Read: func(l []byte) { s.Match(l, caps) }}
	fast := versus.Engine{Name: "fastmatch", Read: func(l []byte) { fm.Match(l, caps) }}
	versus.Run(b, "", lines, scanner, fast,
		versus.Engine{Name: "regexp", Read: func(l []byte) { re.FindSubmatchIndex(l) }})
	versus.Ratio(b, "ratio-fastmatch-first", lines, fast, scanner)
}

// BenchmarkCraftedLines reads lines of combined (escape=json) of 1, 8 and 64 KiB whose user name or
// user agent a client crafted, and one a client did not, with the scanner and with
// fastmatch (regexp where fastmatch gives up on the line), which read a line of a user
// of more words before the scanner did (its Matcher): scanner-ns/line and regex-ns/line
// are per line, regex/scanner their ratio summed over the rounds, each round reading
// some 64 KiB with both in turn; ns/B is the scanner's per byte, reads/line its reads of
// the line from the user's next ends (TestWordsCap).
func BenchmarkCraftedLines(b *testing.B) {
	f := format(b, "combined", logformat.EscapeJSON, false)
	fm, err := fastmatch.Compile(f.Regex)
	if err != nil {
		b.Fatal(err)
	}
	s := scanner(b, f)
	const rest = ` [30/Nov/2026:23:19:46 +0000] "GET / HTTP/1.1" 401 157 "-" "curl/8.5.0"`
	lines := []struct {
		name string
		line func(n int) string
	}{
		{"normal", func(int) string { return `203.0.113.7 - alice` + rest }},
		// Every end of the user is followed by " [", and the line misses its last quote.
		{"user-brackets-unfit", func(n int) string { return `1.2.3.4 - a` + strings.Repeat(" [x", n/3) + strings.TrimSuffix(rest, `"`) }},
		// The line fits with the user's last end, past the cap.
		{"user-brackets-fit", func(n int) string { return `1.2.3.4 - a` + strings.Repeat(" [x]", n/4) + rest }},
		{"user-words-unfit", func(n int) string { return `1.2.3.4 - a` + strings.Repeat(" b a", n/4) + strings.TrimSuffix(rest, `"`) }},
		// A user agent of backslashes, each written \\ (escape=json): the stop is at the
		// end of the line, past every escape sequence.
		{"agent-escapes", func(n int) string {
			return `1.2.3.4 - -` + strings.TrimSuffix(rest, `curl/8.5.0"`) + strings.Repeat(`\\`, n/2) + `"`
		}},
	}
	for _, c := range lines {
		for _, size := range []int{1 << 10, 8 << 10, 64 << 10} {
			line := []byte(c.line(size))
			name := fmt.Sprintf("%s/%dKiB", c.name, size>>10)
			if c.name == "normal" {
				if size > 1<<10 {
					continue
				}
				name = "normal"
			}
			b.Run(name, func(b *testing.B) {
				caps := make([]int, 2*(len(f.Captures)+1))
				_, reads := s.scanWith(line, caps, maxItems)
				reps := max(1, 64<<10/len(line))
				var scanner, regex time.Duration
				for b.Loop() {
					t0 := time.Now()
					for range reps {
						s.Match(line, caps)
					}
					t1 := time.Now()
					for range reps {
						fm.Match(line, caps)
					}
					scanner += t1.Sub(t0)
					regex += time.Since(t1)
				}
				lines := float64(b.N * reps)
				b.ReportMetric(float64(scanner.Nanoseconds())/lines, "scanner-ns/line")
				b.ReportMetric(float64(regex.Nanoseconds())/lines, "regex-ns/line")
				b.ReportMetric(float64(scanner.Nanoseconds())/lines/float64(len(line)), "ns/B")
				b.ReportMetric(float64(regex)/float64(scanner), "regex/scanner")
				b.ReportMetric(float64(reads), "reads/line")
			})
		}
	}
}

// scanner is f's scanner, handing the lines it leaves undecided to fastmatch of the
// regex it is given in the parser (Compile).
func scanner(b *testing.B, f *logformat.Format) *Scanner {
	one, err := fastmatch.Compile(f.MisfitRegex())
	if err != nil {
		b.Fatal(err)
	}
	s, err := Compile(f, one)
	if err != nil {
		b.Fatal(err)
	}
	return s
}
