package pipeline

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
)

// BenchmarkUnmatchedCounting is the per-line cost of counting unmatched lines: the
// bundled sample log through example-rules.yaml into a Set, without counting and with the
// sink's Received read before and after each line as the inputs do (one op is one line).
// Compare the two as a ratio within one run.
func BenchmarkUnmatchedCounting(b *testing.B) {
	cfg, err := config.Load("../../example-rules.yaml")
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile("../../examples/access.log")
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	for _, counted := range []bool{false, true} {
		b.Run(map[bool]string{false: "sink", true: "received"}[counted], func(b *testing.B) {
			gen, err := newGeneration(cfg, nil, Options{})
			if err != nil {
				b.Fatal(err)
			}
			sink := gen.set.NewSink()
			unmatched := 0
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				sink.SetNow(1_700_000_000, 1_700_000_000)
				if !counted {
					gen.parser.Parse("", lines[i%len(lines)], sink)
					continue
				}
				received := sink.Received()
				if gen.parser.Parse("", lines[i%len(lines)], sink); sink.Received() == received {
					unmatched++
				}
			}
		})
	}
}

// BenchmarkClockRead is a reading of the pipeline's clock on the host's clock, as each read
// of a file takes one.
func BenchmarkClockRead(b *testing.B) {
	clk := newClock(time.Now, nil, nil)
	for b.Loop() {
		clk.read()
	}
}
