package fastmatch

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
	"github.com/logwindow/logwindow_exporter/internal/testutil/versus"
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
		benchEngines(b, p.name, re, m, lines)
	}
}

// BenchmarkExampleRules compares Match with regexp.FindSubmatchIndex on the regexes of the
// rule files the repository ships (each distinct regex once: example-rules.yaml's rules
// share one), over generated lines; both fill every group. ratio runs blocks of lines
// through each engine in turn, so that a neighbour's load hits both alike; its
// regexp/fastmatch is regexp's time over Match's.
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
	versus.Run(b, name, lines,
		versus.Engine{Name: "fastmatch", Read: func(l []byte) { m.Match(l, caps) }},
		versus.Engine{Name: "regexp", Read: func(l []byte) { re.FindSubmatchIndex(l) }})
}
