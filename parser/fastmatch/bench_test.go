package fastmatch

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
)

// lazyCombined is the combined format as often written with lazy dots.
const lazyCombined = `^(?P<ip>[\d.]+) - (?P<user>\S+) \[(?P<ts>.*?)\] "(?P<req>.*?)" (?P<status>\d+) (?P<bytes>\d+) "(?P<referer>.*?)" "(?P<agent>.*?)"`

// BenchmarkNginx compares Match with regexp.FindSubmatchIndex on generated
// lines; ns/op is per line.
func BenchmarkNginx(b *testing.B) {
	lines := nginxlog.Lines(b, 20000, 1)
	for _, p := range []struct{ name, expr string }{
		{"main", nginxMain},
		{"combined", combined},
		{"lazy", lazyCombined},
	} {
		re := regexp.MustCompile(p.expr)
		m, err := Compile(p.expr)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(p.name+"/fastmatch", func(b *testing.B) {
			caps := make([]int, 2*(re.NumSubexp()+1))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if !m.Match(lines[i], caps) {
					b.Fatalf("no match: %q", lines[i])
				}
				if i++; i == len(lines) {
					i = 0
				}
			}
		})
		// One op is a block of lines through each engine in turn, so that
		// load from other processes hits both alike; speedup is their ratio.
		b.Run(p.name+"/ratio", func(b *testing.B) {
			caps := make([]int, 2*(re.NumSubexp()+1))
			var fast, slow time.Duration
			const block = 500
			i := 0
			for b.Loop() {
				ls := lines[i : i+block]
				if i += block; i+block > len(lines) {
					i = 0
				}
				t0 := time.Now()
				for _, l := range ls {
					m.Match(l, caps)
				}
				t1 := time.Now()
				for _, l := range ls {
					re.FindSubmatchIndex(l)
				}
				fast += t1.Sub(t0)
				slow += time.Since(t1)
			}
			b.ReportMetric(float64(fast.Nanoseconds())/float64(b.N*block), "fast-ns/line")
			b.ReportMetric(float64(slow.Nanoseconds())/float64(b.N*block), "regexp-ns/line")
			b.ReportMetric(float64(slow)/float64(fast), "speedup")
		})
		b.Run(p.name+"/regexp", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if re.FindSubmatchIndex(lines[i]) == nil {
					b.Fatalf("no match: %q", lines[i])
				}
				if i++; i == len(lines) {
					i = 0
				}
			}
		})
	}
}

// BenchmarkExampleRules compares Match with regexp.FindSubmatchIndex on the regexes of the
// rule files the repository ships (each distinct regex once: example-rules.yaml's rules
// share one), over generated lines; both fill every group. ratio runs blocks of lines
// through each engine in turn, so that a neighbour's load hits both alike; its speedup is
// regexp's time over Match's.
func BenchmarkExampleRules(b *testing.B) {
	lines := nginxlog.Lines(b, 20000, 1)
	seen := map[string]bool{}
	for _, file := range []string{"example-rules.yaml", "examples/quickstart.yaml"} {
		c, err := config.Load(filepath.Join("..", "..", file))
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range c.Rules {
			if r.Regexp == nil || seen[r.Expanded] {
				continue
			}
			seen[r.Expanded] = true
			m, err := Compile(r.Expanded)
			if err != nil {
				b.Fatalf("%s: rule %s: %v", file, r.Name, err)
			}
			benchEngines(b, strings.TrimSuffix(filepath.Base(file), ".yaml")+"/"+r.Name, r.Regexp, m, lines)
		}
	}
}

// benchEngines runs Match and regexp over lines, each alone and both in one loop.
func benchEngines(b *testing.B, name string, re *regexp.Regexp, m *Matcher, lines [][]byte) {
	caps := make([]int, 2*(re.NumSubexp()+1))
	for _, l := range lines {
		if m.Match(l, caps) != (re.FindSubmatchIndex(l) != nil) {
			b.Fatalf("%s: the engines disagree on %q", name, l)
		}
	}
	b.Run(name+"/fastmatch", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			m.Match(lines[i], caps)
			if i++; i == len(lines) {
				i = 0
			}
		}
	})
	b.Run(name+"/regexp", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			re.FindSubmatchIndex(lines[i])
			if i++; i == len(lines) {
				i = 0
			}
		}
	})
	b.Run(name+"/ratio", func(b *testing.B) {
		var fast, slow time.Duration
		const block = 500
		i := 0
		for b.Loop() {
			ls := lines[i : i+block]
			if i += block; i+block > len(lines) {
				i = 0
			}
			t0 := time.Now()
			for _, l := range ls {
				m.Match(l, caps)
			}
			t1 := time.Now()
			for _, l := range ls {
				re.FindSubmatchIndex(l)
			}
			fast += t1.Sub(t0)
			slow += time.Since(t1)
		}
		b.ReportMetric(float64(fast.Nanoseconds())/float64(b.N*block), "fast-ns/line")
		b.ReportMetric(float64(slow.Nanoseconds())/float64(b.N*block), "regexp-ns/line")
		b.ReportMetric(float64(slow)/float64(fast), "speedup")
	})
}
