package formatscan

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
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
	s, err := Compile(f, fm)
	if err != nil {
		b.Fatal(err)
	}
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
