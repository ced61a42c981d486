package parser

import (
	"strings"
	"testing"
)

// Fits says whether some rule of the input matched the line or read its fields, as
// Explain tells it: filters, values and times aside, and rules of other inputs aside; and
// rules reading candidate formats aside where the line's format lacks what they read.
func TestFitsAgreesWithExplain(t *testing.T) {
	cfg := mustParse(t, `
inputs:
  - {name: web, path: /a}
  - {name: app, path: /b, format: json}
  - {name: none, path: /c}
  - {name: pods, path: /d, log_format: [combined, upstreaminfo, json]}
rules:
  - {name: upstream, labels: {addr: '${upstream_addr}'}, inputs: [pods]}
  - {name: errors, match: 'status=(?P<s>\d+)', where: {s: '^5'}, inputs: [web]}
  - {name: slow, match: 'took=(?P<t>\S+)', value: t, inputs: [web]}
  - {name: levels, fields: {level: level}, where: {level: '^error$'}, inputs: [app]}
`)
	p, err := New(cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
	const upstreaminfo = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl" 90 0.002 [a] [] 10.1.0.5:80 5 0.001 200 ab`
	for _, tc := range []struct {
		input, line string
		fits        bool
	}{
		{"web", "status=200", true}, // the filter drops it: it fits all the same
		{"web", "status=503", true},
		{"web", "took=bad", true}, // a bad number: it fits
		{"web", "nothing here", false},
		{"web", `{"level":"error"}`, false},
		{"app", `{"level":"info"}`, true},
		{"app", "status=503", false}, // not JSON, and the regexes read other inputs
		{"none", "status=503", false},
		{"pods", upstreaminfo, true},
		{"pods", upstreaminfo[:strings.Index(upstreaminfo, ` "curl"`)+7], false}, // combined, without upstream_addr
		{"pods", `{"upstream_addr":"10.1.0.5:80"}`, true},
		{"pods", `{"status":"200"}`, false},
		{"pods", "status=503", false},
		{"web", upstreaminfo, false},
	} {
		t.Run(tc.input+" "+tc.line, func(t *testing.T) {
			if got := p.Fits(tc.input, []byte(tc.line)); got != tc.fits {
				t.Errorf("Fits = %v, want %v", got, tc.fits)
			}
			read := false
			for _, r := range p.Explain(tc.input, []byte(tc.line)).Rules {
				read = read || r.Outcome != NoMatch && r.Outcome != Malformed && r.Outcome != OtherInput && r.Outcome != OtherFormat
			}
			if read != tc.fits {
				t.Errorf("Explain: some rule read the line %v, want %v", read, tc.fits)
			}
		})
	}
	if !p.ReadsInput("web") || !p.ReadsInput("app") || p.ReadsInput("none") {
		t.Errorf("ReadsInput web %v, app %v, none %v; want true, true, false", p.ReadsInput("web"), p.ReadsInput("app"), p.ReadsInput("none"))
	}
}
