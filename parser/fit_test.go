package parser

import (
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
)

// Fitted says of a line a Session parsed whether some rule of the input matched it or read
// its fields, as Explain tells it: filters, values and times aside, and rules of other
// inputs aside; and rules reading candidate formats aside where the line's format lacks
// what they read.
func TestFittedAgreesWithExplain(t *testing.T) {
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
			if got := fittedAlone(t, p, cfg, tc.input, tc.line, discard{}); got != tc.fits {
				t.Errorf("Fitted = %v, want %v", got, tc.fits)
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

// fittedAlone parses line as the one line of a file of the input of cfg named input,
// through a Session told that input's formats, into sink, and says what the one-shots
// count it by: the LineDone of its parse said some group read it, and Session.Fitted that
// a rule reading the input did.
func fittedAlone(t *testing.T, p *Parser, cfg *config.Config, input, line string, sink Sink) bool {
	t.Helper()
	s := p.NewSession()
	for _, in := range cfg.Inputs {
		if in.Name == input {
			s.SetFormats(in.LogFormats, NewFiles())
			s.SetFormat(in.Name, in.LogFormat)
		}
	}
	return fittedBy(t, s, input, line, sink)
}

// fittedBy is fittedAlone through s, told its input's formats.
func fittedBy(t *testing.T, s *Session, input, line string, sink Sink) bool {
	t.Helper()
	var got []bool
	done := func(_, fits bool) { got = append(got, fits && s.Fitted(input, []byte(line))) }
	s.ParseFile("f", input, []byte(line), nil, sink, done)
	s.CloseFile("f", input, sink, done)
	if len(got) != 1 {
		t.Fatalf("%q: told of %d parses, want 1", line, len(got))
	}
	return got[0]
}
