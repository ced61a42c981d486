package parser

import (
	"testing"
)

// Fits says whether some rule of the input matched the line or read its fields, as
// Explain tells it: filters, values and times aside, and rules of other inputs aside.
func TestFitsAgreesWithExplain(t *testing.T) {
	cfg := mustParse(t, `
inputs:
  - {name: web, path: /a}
  - {name: app, path: /b, format: json}
  - {name: none, path: /c}
rules:
  - {name: errors, match: 'status=(?P<s>\d+)', where: {s: '^5'}, inputs: [web]}
  - {name: slow, match: 'took=(?P<t>\S+)', value: t, inputs: [web]}
  - {name: levels, fields: {level: level}, where: {level: '^error$'}, inputs: [app]}
`)
	p, err := New(cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
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
	} {
		t.Run(tc.input+" "+tc.line, func(t *testing.T) {
			if got := p.Fits(tc.input, []byte(tc.line)); got != tc.fits {
				t.Errorf("Fits = %v, want %v", got, tc.fits)
			}
			read := false
			for _, r := range p.Explain(tc.input, []byte(tc.line)).Rules {
				read = read || r.Outcome != NoMatch && r.Outcome != Malformed && r.Outcome != OtherInput
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
