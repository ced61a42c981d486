package parser

import (
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/parser/formatscan"
)

// TestFormatGroupsScan checks that every group reading a text log format of the shipped
// configurations and of auto's candidates (every preset) cuts its lines with the format's
// scanner, on the parser's default engine, and that a format the scanner cannot read
// (Apache's %U%q: a value with no text before the next) keeps its regex.
func TestFormatGroupsScan(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     func(t *testing.T) *config.Config
		scanned bool
	}{
		{"example-rules.yaml", func(t *testing.T) *config.Config { return loadExample(t) }, true},
		{"auto", func(t *testing.T) *config.Config { return mustParse(t, autoRules) }, true},
		{"apache %U%q", func(t *testing.T) *config.Config {
			return mustParse(t, "inputs:\n  - {name: a, path: /x, apache_log_format: '%h %U%q %>s'}\nrules:\n  - name: r\n    labels: {s: '${s}'}\n")
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := New(c.cfg(t).Rules)
			if err != nil {
				t.Fatal(err)
			}
			formats := 0
			for _, g := range p.groups {
				if g.format == nil || g.format.JSON() {
					continue
				}
				formats++
				_, full := g.m.matcher.(*formatscan.Scanner)
				_, parse := g.parse.matcher.(*formatscan.Scanner)
				if full != c.scanned || parse != c.scanned {
					t.Errorf("%s: scanner %v (Parse's %v), want %v", g.format.Describe(), full, parse, c.scanned)
				}
			}
			if formats == 0 {
				t.Fatal("no group reads a text log format")
			}
		})
	}
}
