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

// BenchmarkHandleLine is a line handed on one by one (stream.handle, as a cri input's
// are) through its parse and its counts, a read's worth of lines written at a time (one op
// is one line): half the lines match the rule, half no rule, which counts them unmatched.
func BenchmarkHandleLine(b *testing.B) {
	path := b.TempDir() + "/0.log"
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Parse([]byte("inputs: [{path: '"+path+"', wrapper: cri}]\nrules: [{name: lines, match: '^x'}]\n"), "rules.yaml")
	if err != nil {
		b.Fatal(err)
	}
	p, err := Start(cfg, Options{Now: time.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Stop()
	var in *stream
	for _, s := range p.inputs {
		in = s
	}
	h := in.handle(p)
	lines := [][]byte{
		[]byte("2024-03-01T12:00:00Z stdout F x matched"),
		[]byte("2024-03-01T12:00:00Z stdout F y unmatched"),
	}
	p.cut.RLock() // as the follower holds it around a read
	defer p.cut.RUnlock()
	for i := 0; b.Loop(); i++ {
		h(path, lines[i&1])
		if i%256 == 255 {
			in.flush()
		}
	}
	in.flush()
}
