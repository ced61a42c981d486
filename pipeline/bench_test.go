package pipeline

import (
	"bytes"
	"os"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/parser"
)

// BenchmarkUnmatchedCounting is the per-line cost of counting unmatched lines: the
// bundled sample log through example-rules.yaml into a Set, with the Set's sink given to
// the parser as is and wrapped in the lineSink the inputs use (one op is one line).
// Compare the two as a ratio within one run.
func BenchmarkUnmatchedCounting(b *testing.B) {
	cfg, err := config.Load("../example-rules.yaml")
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile("../examples/access.log")
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	for _, wrapped := range []bool{false, true} {
		b.Run(map[bool]string{false: "sink", true: "lineSink"}[wrapped], func(b *testing.B) {
			gen, err := newGeneration(cfg, nil, Options{})
			if err != nil {
				b.Fatal(err)
			}
			sink := gen.set.NewSink()
			var s parser.Sink = sink
			ls := &lineSink{Sink: sink}
			if wrapped {
				s = ls
			}
			unmatched := 0
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				sink.SetNow(1_700_000_000, 1_700_000_000)
				ls.matched = false
				gen.parser.Parse("", lines[i%len(lines)], s)
				if wrapped && !ls.matched {
					unmatched++
				}
			}
		})
	}
}
