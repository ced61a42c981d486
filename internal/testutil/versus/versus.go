// Package versus benchmarks engines that read the same lines against each other: each
// alone, and all of them in turn over blocks of lines in one loop, so that load from other
// processes on a shared machine hits them alike and their ratio is what to compare.
package versus

import (
	"testing"
	"time"
)

// Engine is one way of reading a line.
type Engine struct {
	Name string
	Read func(line []byte)
}

// block is how many lines each engine reads in turn in the ratio loop: enough to amortise
// the clock readings, few enough that a burst of load is shared.
const block = 500

// Run benchmarks each engine alone over lines as prefix/<name> (ns/op and allocations per
// line), then prefix/ratio: the first engine's ns per line and, for each other engine, its
// time over the first's. lines must hold at least block lines.
func Run(b *testing.B, prefix string, lines [][]byte, engines ...Engine) {
	if prefix != "" {
		prefix += "/"
	}
	for _, e := range engines {
		b.Run(prefix+e.Name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				e.Read(lines[i])
				if i++; i == len(lines) {
					i = 0
				}
			}
		})
	}
	Ratio(b, prefix+"ratio", lines, engines...)
}

// Ratio is Run's ratio benchmark alone, named name: for engines whose lone runs a caller
// measures its own way.
func Ratio(b *testing.B, name string, lines [][]byte, engines ...Engine) {
	if len(lines) < block {
		b.Fatalf("versus: %d lines, want at least %d", len(lines), block)
	}
	b.Run(name, func(b *testing.B) {
		spent := make([]time.Duration, len(engines))
		i := 0
		for b.Loop() {
			ls := lines[i : i+block]
			if i += block; i+block > len(lines) {
				i = 0
			}
			for k, e := range engines {
				t0 := time.Now()
				for _, l := range ls {
					e.Read(l)
				}
				spent[k] += time.Since(t0)
			}
		}
		first := engines[0].Name
		b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N*block), first+"-ns/line")
		for k, e := range engines[1:] {
			b.ReportMetric(float64(spent[k+1])/float64(spent[0]), e.Name+"/"+first)
		}
	})
}
