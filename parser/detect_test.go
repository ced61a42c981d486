package parser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// autoRules read every candidate of auto: a rule over status (which every format has,
// by its own name or Apache's) and one over request_time (which some have).
const autoRules = `
inputs:
  - {name: pods, path: /var/log/pods/*.log, log_format: auto}
rules:
  - name: requests
    labels: {status: '${status}'}
  - name: request_seconds
    value: request_time
  - name: apache_requests
    labels: {status: '${s}'}
`

// autoParser is the parser of autoRules.
func autoParser(t testing.TB) (*Parser, *config.Config) {
	t.Helper()
	c := mustParse(t, autoRules)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

// sampleValue is a value a server could write for a variable (by its capture's name),
// drawn from r: some values are "-" or empty, some hold the characters that bound others.
func sampleValue(r *rand.Rand, name string) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	switch name {
	case "remote_addr", "h":
		return pick("10.0.0.1", "2001:db8::1", "203.0.113.7")
	case "remote_user", "u", "l":
		return pick("-", "-", "alice")
	case "time_local":
		return "01/Mar/2024:12:00:00 +0000"
	case "t":
		return "[01/Mar/2024:12:00:00 +0000]"
	case "request", "r":
		return pick("GET /a?b=1 HTTP/1.1", "POST /api/v1/cart HTTP/2.0", "-", `GET /x\x22y HTTP/1.1`)
	case "status", "s", "upstream_status":
		return pick("200", "404", "502")
	case "body_bytes_sent", "b", "request_length", "upstream_response_length":
		return pick("0", "612", "-")
	case "http_referer", "i_referer":
		return pick("-", "https://example.com/")
	case "http_user_agent", "i_user_agent":
		return pick("Mozilla/5.0 (X11; Linux x86_64)", "curl/8.5.0", "-")
	case "http_x_forwarded_for":
		return pick("-", "198.51.100.1, 10.0.0.2")
	case "request_time":
		return pick("0.012", "1.500")
	case "upstream_response_time":
		return pick("0.010", "0.001, 0.020", "0.1 : 0.2", "-")
	case "proxy_upstream_name":
		return pick("default-web-80", "")
	case "proxy_alternative_upstream_name":
		return ""
	case "upstream_addr":
		return pick("10.1.0.5:8080", "10.1.0.5:8080, 10.1.0.6:8080", "-")
	case "req_id":
		return pick("5e1f8a2c9b", "")
	}
	return "x"
}

// variableRef finds the variables of an nginx format string ($name, ${name}) and of an
// Apache one (%>s, %{Referer}i).
var (
	nginxVar  = regexp.MustCompile(`\$\{?([A-Za-z0-9_]+)\}?`)
	apacheVar = regexp.MustCompile(`%[<>!,0-9]*(?:\{([^}]*)\})?([a-zA-Z])`)
)

// sampleLine writes a line of format f with values from r, as the server would; for
// JSONObject, an object of some of nginx's variables.
func sampleLine(r *rand.Rand, f *logformat.Format) string {
	if f.AnyObject() {
		m := map[string]string{"status": sampleValue(r, "status"), "request": sampleValue(r, "request")}
		if r.IntN(2) == 0 {
			m["request_time"] = sampleValue(r, "request_time")
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	if f.Server == logformat.Apache {
		return apacheVar.ReplaceAllStringFunc(f.Text, func(v string) string {
			m := apacheVar.FindStringSubmatch(v)
			name := m[2]
			if m[1] != "" {
				name += "_" + strings.ReplaceAll(strings.ToLower(m[1]), "-", "_")
			}
			return sampleValue(r, name)
		})
	}
	return nginxVar.ReplaceAllStringFunc(f.Text, func(v string) string {
		return sampleValue(r, nginxVar.FindStringSubmatch(v)[1])
	})
}

// formatRegexps are the formats' regexes compiled, by regex.
var formatRegexps sync.Map

func formatRegexp(f *logformat.Format) *regexp.Regexp {
	re, ok := formatRegexps.Load(f.Regex)
	if !ok {
		re, _ = formatRegexps.LoadOrStore(f.Regex, regexp.MustCompile(f.Regex))
	}
	return re.(*regexp.Regexp)
}

// numberText is what a value the server writes as a number may be.
var numberText = regexp.MustCompile(`^[0-9.\-, :]*$`)

// numbersWhereNumeric reports whether the groups of m that the server writes as numbers
// (logformat.Format.Numeric) hold them.
func numbersWhereNumeric(f *logformat.Format, re *regexp.Regexp, m [][]byte) bool {
	for i, name := range re.SubexpNames() {
		if i > 0 && f.Numeric(name) && !numberText.Match(m[i]) {
			return false
		}
	}
	return true
}

// referenceChoice is which candidate lines are in, worked out from the formats' own
// regexes (config/logformat's) rather than from the parser's matchers: a line fits a
// text format when its regex matches with every group taking part and numbers where the
// server writes numbers, a JSON format when
// the line is a JSON object; the most lines win, then the most variables with a value
// (neither empty nor "-") over them, then the earlier candidate.
func referenceChoice(cands []*logformat.Format, lines [][]byte) int {
	best, bestFits, bestValues := -1, 0, 0
	for k, f := range cands {
		fits, values := 0, 0
		for _, line := range lines {
			if f.JSON() {
				var obj map[string]any
				if json.Unmarshal(line, &obj) == nil && obj != nil {
					fits++
				}
				continue
			}
			re := formatRegexp(f)
			m := re.FindSubmatch(line)
			if m == nil || m[len(m)-1] == nil || !numbersWhereNumeric(f, re, m) {
				continue
			}
			fits++
			for _, g := range m[1:] {
				if len(g) > 0 && string(g) != "-" {
					values++
				}
			}
		}
		if fits > bestFits || fits > 0 && fits == bestFits && values > bestValues {
			best, bestFits, bestValues = k, fits, values
		}
	}
	return best
}

// Lines of every candidate of auto, alone and mixed with another's, are put in the
// format the formats' own regexes say they fit best (ties included: nginx's and Apache's
// combined have one shape).
func TestDetectDifferential(t *testing.T) {
	p, _ := autoParser(t)
	cands := p.Candidates()
	if len(cands) != len(logformat.Auto) {
		t.Fatalf("%d candidates, want auto's %d", len(cands), len(logformat.Auto))
	}
	s := p.NewSession().s
	r := rand.New(rand.NewPCG(1, 2))
	// The samples are one goroutine's: the race detector is given a few, and .ci/run runs
	// them all without it.
	samples := 200
	if race.Enabled {
		samples = 40
	}
	ties := 0
	for k, f := range cands {
		t.Run(f.Describe(), func(t *testing.T) {
			for range samples {
				var lines [][]byte
				for range 1 + r.IntN(MaxHeld) {
					from := f
					if r.IntN(4) == 0 {
						from = cands[r.IntN(len(cands))] // another format's line
					}
					lines = append(lines, []byte(sampleLine(r, from)))
				}
				want := referenceChoice(cands, lines)
				if got := choose(p.cands, lines, s); got != want {
					t.Fatalf("lines of %s chosen as #%d, the reference says #%d:\n%s", f.Describe(), got, want, bytes.Join(lines, []byte("\n")))
				}
				if want != k {
					ties++
				}
			}
		})
	}
	if ties == 0 {
		t.Error("no sample was chosen as another format than its own: the ties are not exercised")
	}
}

// The shapes of the ties: a line that fits two formats goes to the one with more values,
// then to the earlier.
func TestDetectTies(t *testing.T) {
	p, _ := autoParser(t)
	s := p.NewSession().s
	index := func(name string) int {
		for i, f := range p.Candidates() {
			if f.Describe() == name {
				return i
			}
		}
		t.Fatalf("no candidate %s", name)
		return -1
	}
	tests := []struct {
		name, line, want string
	}{
		{"combined shape, no identity: nginx's, listed first", `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`, "combined"},
		{"an identity: only Apache's has it", `10.0.0.1 ident - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`, "apache_combined"},
		{"request time without upstream", `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl" 0.003`, "combined_request_time"},
		{"request and upstream time", `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl" 0.003 -`, "combined_upstream_time"},
		{"common", `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5`, "apache_common"},
		{"JSON object", `{"status":"200"}`, logformat.JSONObject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := choose(p.cands, [][]byte{[]byte(tt.line)}, s), index(tt.want); got != want {
				t.Errorf("chosen #%d, want #%d (%s)", got, want, tt.want)
			}
		})
	}
	if got := choose(p.cands, [][]byte{[]byte("no format at all")}, s); got != -1 {
		t.Errorf("a line of no format chosen as #%d", got)
	}
}

// A JSON template (escape=json) writes every member on every line: a JSON line fits it
// when it has them all, so that of several templates, and json, each reads its own lines;
// one with every member of two is the one listed first's.
func TestDetectJSONTemplates(t *testing.T) {
	c := mustParse(t, `
inputs:
  - name: web
    path: /a
    log_format:
      - 'log_format a escape=json ''{"status":"$status","ua":"$http_user_agent"}'';'
      - 'log_format b escape=json ''{"code":$status,"up":{"addr":"$upstream_addr"}}'';'
      - json
rules:
  - {name: requests, labels: {status: '${status}'}}
`)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	s := p.NewSession().s
	for _, tt := range []struct{ line, want string }{
		{`{"status":"200","ua":"curl"}`, "a"},
		{`{"code":200,"up":{"addr":"10.1.0.5:80"}}`, "b"},
		{`{"code":200,"up":{}}`, logformat.JSONObject},
		{`{"status":"200"}`, logformat.JSONObject},
		{`{"status":"200","ua":"curl","code":200,"up":{"addr":""}}`, "a"},
	} {
		t.Run(tt.line, func(t *testing.T) {
			k := choose(p.cands, [][]byte{[]byte(tt.line)}, s)
			if k < 0 || p.cands[k].format.Describe() != tt.want {
				t.Errorf("chosen #%d, want %s", k, tt.want)
			}
		})
	}
}

// A line is read by the formats of its input alone: an input of one format read by a rule
// that reads another input's candidates has its lines read by that format, and a line
// that would fit another input's candidate is not read by it.
func TestInputsOwnFormats(t *testing.T) {
	c := mustParse(t, `
inputs:
  - {name: one, path: /a, log_format: combined}
  - {name: many, path: /b, log_format: [main, upstreaminfo]}
rules:
  - {name: requests, labels: {status: '${status}'}}
`)
	p := newOfInputs(t, c)
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`
	const upstreaminfo = combined + ` 90 0.002 [a] [] 10.1.0.5:80 5 0.001 200 ab`
	for _, tt := range []struct {
		input, line string
		counted     bool
	}{
		{"one", combined, true},
		{"one", upstreaminfo, false},
		{"many", upstreaminfo, true},
		{"many", combined, false},
	} {
		t.Run(tt.input+" "+tt.line, func(t *testing.T) {
			s := p.NewSession()
			for _, in := range c.Inputs {
				if in.Name == tt.input {
					s.SetFormats(in.LogFormats, NewFiles())
					s.SetFormat(in.Name, in.LogFormat)
				}
			}
			rec := &recorder{t: t, rules: c.Rules}
			fitted := fittedBy(t, s, tt.input, tt.line, rec)
			if got := len(rec.got) == 1; got != tt.counted {
				t.Errorf("ParseFile: %v, want counted %v", rec.got, tt.counted)
			}
			if got := p.Explain(tt.input, []byte(tt.line)).Rules[0].Outcome == Counted; got != tt.counted {
				t.Errorf("Explain: counted %v, want %v", got, tt.counted)
			}
			if fitted != tt.counted {
				t.Errorf("Fitted: %v, want %v", fitted, tt.counted)
			}
		})
	}
}

// Inputs without a name share theirs: each is read by its own format at runtime, as its
// Session is told (SetFormats, SetFormat), and by name a line is read by the one of their
// formats it fits, not by one of them for all.
func TestUnnamedInputsOwnFormats(t *testing.T) {
	c := mustParse(t, `
inputs:
  - {path: /a, log_format: combined}
  - {path: /b, log_format: 'status=$status from $remote_addr'}
  - {path: /c, log_format: [upstreaminfo, json]}
rules:
  - {name: requests, labels: {status: '${status}'}}
`)
	p := newOfInputs(t, c)
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`
	for _, tt := range []struct {
		input int
		line  string
	}{
		{0, combined},
		{1, "status=200 from 10.0.0.1"},
		{2, combined + ` 90 0.002 [a] [] 10.1.0.5:80 5 0.001 200 ab`},
		{2, `{"status":"200"}`},
	} {
		t.Run(c.Inputs[tt.input].Source()+" "+tt.line, func(t *testing.T) {
			s := p.NewSession()
			s.SetFormats(c.Inputs[tt.input].LogFormats, NewFiles())
			s.SetFormat("", c.Inputs[tt.input].LogFormat)
			rec := &recorder{t: t, rules: c.Rules}
			fitted := fittedBy(t, s, "", tt.line, rec)
			if len(rec.got) != 1 {
				t.Errorf("ParseFile: %v, want the line counted", rec.got)
			}
			if got := p.Explain("", []byte(tt.line)).Rules[0].Outcome; got != Counted {
				t.Errorf("Explain: %s, want counted", got)
			}
			if !fitted {
				t.Error("Fitted: false")
			}
		})
	}
}

// A line that fits two formats of inputs without a name as well is read by the first of
// them by name, but by its own input's through a Session told that input's formats:
// ExplainWrapped and Fitted read it as ParseFile does.
func TestSessionExplainsByItsInputsFormats(t *testing.T) {
	c := mustParse(t, `
inputs:
  - {path: /a, log_format: '$remote_addr $http_host'}
  - {path: /b, log_format: '$http_host [$remote_addr]'}
  - {path: /c, log_format: ['$remote_addr $http_host', '$http_host [$remote_addr]']}
rules:
  - {name: requests, labels: {host: '${http_host}'}}
`)
	p := newOfInputs(t, c)
	for _, tt := range []struct {
		line, host string // host: "" for a line b's format does not read
	}{
		{"h1 [x]", "h1"},
		{"h1 x", ""},
	} {
		s := p.NewSession()
		s.SetFormats(c.Inputs[1].LogFormats, NewFiles())
		s.SetFormat("", c.Inputs[1].LogFormat)
		rec := &recorder{t: t, rules: c.Rules}
		var fitted []bool
		s.ParseFile("f", "", []byte(tt.line), nil, rec, func(_, fits bool) { fitted = append(fitted, fits && s.Fitted("", []byte(tt.line))) })
		want := []record{{Rule: "requests", Labels: "host=" + tt.host, Value: 1}}
		if tt.host == "" {
			want = nil
		}
		if got := rec.take(); !slices.Equal(got, want) {
			t.Errorf("%q: ParseFile %v, want %v", tt.line, got, want)
		}
		if !slices.Equal(fitted, []bool{tt.host != ""}) {
			t.Errorf("%q: Fitted %v, want %v", tt.line, fitted, tt.host != "")
		}
		res := s.ExplainWrapped("", []byte(tt.line), nil).Rules[0]
		if got := res.Outcome == Counted && string(res.Event.Labels[0]) == tt.host; got != (tt.host != "") {
			t.Errorf("%q: ExplainWrapped %s %q, want host %q", tt.line, res.Outcome, res.Event.Labels, tt.host)
		}
	}
}

// An input of one format that no rule reading candidates reads is parsed by the groups
// every line goes to alone, though its format is another input's candidate: the group of
// that candidate (here one without rules, that only tells its files) is no match its
// lines pay for.
func TestOneFormatNotReadByCandidates(t *testing.T) {
	c := mustParse(t, `
inputs:
  - {name: one, path: /a, log_format: combined}
  - {name: many, path: /b, log_format: [combined, upstreaminfo]}
rules:
  - {name: upstream, inputs: [many], labels: {addr: '${upstream_addr}'}}
  - {name: requests, inputs: [one], labels: {status: '${status}'}}
`)
	p := newOfInputs(t, c)
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`
	s := p.NewSession()
	s.SetFormats(nil, nil)
	s.SetFormat("one", c.Inputs[0].LogFormat)
	if prog := p.lineProgram(s.s, "one", []byte(combined)); prog != p.base || s.one != nil {
		t.Errorf("input one is read by its format's candidate program (by name %v, by its session %v), which no rule of it has",
			prog != p.base, s.one != nil)
	}
	rec := &recorder{t: t, rules: c.Rules}
	s.ParseFile("f", "one", []byte(combined), nil, rec, func(bool, bool) {})
	if want := []record{{Rule: "requests", Labels: "status=200", Value: 1}}; !slices.Equal(rec.take(), want) {
		t.Errorf("the line of input one is not counted by its rule alone")
	}
}

// A line of a file's format that ends before the variables the format ends with fits it
// not (nor any candidate), and is held; parsed with the next that fits, it is read as an
// input of that one format reads it: its missing variables empty.
func TestHeldLineEndsEarly(t *testing.T) {
	c := mustParse(t, `
inputs:
  - {name: web, path: /a, log_format: [combined_upstream_time]}
rules:
  - {name: requests, labels: {status: '${status}'}}
  - {name: upstream, value: upstream_response_time}
`)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`
	s := p.NewSession()
	s.SetFormats(c.Inputs[0].LogFormats, NewFiles())
	rec := &recorder{t: t, rules: c.Rules}
	for _, line := range []string{combined + " 0.1 0.05", combined, combined + " 0.2", combined + " 0.1 0.05"} {
		s.ParseFile("f", "web", []byte(line), nil, rec, func(bool, bool) {})
	}
	want := []record{{Rule: "requests", Labels: "status=200", Value: 1}, {Rule: "upstream", Value: 0.05},
		{Rule: "requests", Labels: "status=200", Value: 1}, {Rule: "upstream", Drop: NoValue.String()},
		{Rule: "requests", Labels: "status=200", Value: 1}, {Rule: "upstream", Drop: NoValue.String()},
		{Rule: "requests", Labels: "status=200", Value: 1}, {Rule: "upstream", Value: 0.05}}
	if got := rec.take(); !slices.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

// autoSession returns a session of p counting files by c's first input's formats in
// files, a recorder of c's rules for it and a count of the lines it parses: what every
// test of a session's format detection starts from.
func autoSession(t testing.TB, p *Parser, c *config.Config) (*Session, *Files, *recorder, *countingDone) {
	t.Helper()
	files := NewFiles()
	s := p.NewSession()
	s.SetFormats(c.Inputs[0].LogFormats, files)
	return s, files, &recorder{t: t, rules: c.Rules}, &countingDone{}
}

// countingDone counts the lines a Session says it parsed.
type countingDone struct{ lines, malformed int }

func (c *countingDone) done(wellFormed, _ bool) {
	c.lines++
	if !wellFormed {
		c.malformed++
	}
}

// A file's format is chosen from its first fitting line and again after MaxHeld lines in a
// row that do not fit it; every line is parsed once, under the format chosen for it.
func TestSessionChoosesPerFile(t *testing.T) {
	p, c := autoParser(t)
	r := rand.New(rand.NewPCG(3, 4))
	combined, upstream := p.Candidates()[6], p.Candidates()[0]
	if combined.Describe() != "combined" || upstream.Describe() != "upstreaminfo" {
		t.Fatalf("candidates %s, %s", combined.Describe(), upstream.Describe())
	}
	s, files, rec, count := autoSession(t, p, c)
	feed := func(file string, f *logformat.Format, n int) {
		for range n {
			s.ParseFile(file, "pods", []byte(sampleLine(r, f)), nil, rec, count.done)
		}
	}
	feed("a", combined, 10)
	feed("b", upstream, 10)
	feed("a", combined, 5)
	if got := files.Formats(); got["combined"] != 1 || got["upstreaminfo"] != 1 || len(got) != 2 {
		t.Errorf("formats %v, want a combined and an upstreaminfo file", got)
	}
	// File a's server now writes upstreaminfo: after MaxHeld lines it is read so, and the
	// held ones too.
	feed("a", upstream, MaxHeld-1)
	if count.lines != 25 {
		t.Errorf("%d lines parsed while %d are held, want 25", count.lines, MaxHeld-1)
	}
	feed("a", upstream, 1)
	if got := files.Formats(); got["upstreaminfo"] != 2 || len(got) != 1 {
		t.Errorf("formats %v, want two upstreaminfo files", got)
	}
	requests, timed := 0, 0
	for _, e := range rec.take() {
		switch {
		case e.Rule == "requests":
			requests++
		case e.Rule == "request_seconds" && e.Drop == "":
			timed++
		}
	}
	if count.lines != 41 || requests != 41 || timed != 10+MaxHeld || count.malformed != 0 {
		t.Errorf("%d lines parsed (%d malformed), %d requests, %d timed; want 41, 0, 41, %d", count.lines, count.malformed, requests, timed, 10+MaxHeld)
	}
	// A line between two that fit is the chosen format's, and a closed file's held lines
	// are parsed.
	s.ParseFile("a", "pods", []byte("garbage"), nil, rec, count.done)
	s.ParseFile("a", "pods", []byte(sampleLine(r, upstream)), nil, rec, count.done)
	s.ParseFile("b", "pods", []byte("garbage"), nil, rec, count.done)
	s.CloseFile("b", "pods", rec, count.done)
	if count.lines != 44 || len(rec.take()) != 2 {
		t.Errorf("%d lines parsed, want 44 with one more request and its time", count.lines)
	}
	if got := files.Formats(); got["upstreaminfo"] != 1 {
		t.Errorf("formats %v after b closed, want one upstreaminfo file", got)
	}
}

// A file whose JSON template changes (its server now writes other members) is read by
// the new one after MaxHeld of its lines, and the held ones too, as a file whose text
// format changes is: a line that lacks a member the rules read of the chosen template is
// not of it, though it is a JSON object.
func TestSessionTemplateSwitch(t *testing.T) {
	c := mustParse(t, `
inputs:
  - name: web
    path: /a
    log_format:
      - 'log_format a escape=json ''{"status":"$status","ua":"$http_user_agent"}'';'
      - 'log_format b escape=json ''{"code":$status,"up":{"addr":"$upstream_addr"}}'';'
rules:
  - {name: requests, labels: {status: '${status}'}}
`)
	p := newOfInputs(t, c)
	s, files, rec, count := autoSession(t, p, c)
	feed := func(line string, n int) {
		for range n {
			s.ParseFile("f", "web", []byte(line), nil, rec, count.done)
		}
	}
	feed(`{"status":"200","ua":"curl"}`, 3)
	feed(`{"code":404,"up":{"addr":"10.1.0.5:80"}}`, MaxHeld-1)
	if count.lines != 3 {
		t.Errorf("%d lines parsed, want the 3 of a, b's held", count.lines)
	}
	feed(`{"code":404,"up":{"addr":"10.1.0.5:80"}}`, 1)
	if got := files.Formats(); got["b"] != 1 || len(got) != 1 {
		t.Errorf("formats %v, want the file read as b", got)
	}
	statuses := map[string]int{}
	for _, e := range rec.take() {
		statuses[e.Labels]++
	}
	if want := map[string]int{"status=200": 3, "status=404": MaxHeld}; !maps.Equal(statuses, want) || count.lines != 3+MaxHeld {
		t.Errorf("%d lines parsed, requests %v; want %d, %v", count.lines, statuses, 3+MaxHeld, want)
	}
}

// FuzzDetect feeds random files to a Session reading auto's candidates: every line is
// parsed exactly once by the time the file is closed, the Session holds lines whenever
// some fed are not parsed yet, and the choice over lines agrees with the reference over
// the formats' own regexes.
func FuzzDetect(f *testing.F) {
	p, c := autoParser(f)
	r := rand.New(rand.NewPCG(5, 6))
	for _, cand := range p.Candidates() {
		f.Add([]byte(sampleLine(r, cand) + "\n" + sampleLine(r, cand)))
	}
	f.Add([]byte("garbage\n{\"status\":\"200\"}\n{not json\n"))
	// Objects whose members grow: a start-up message first.
	f.Add([]byte("{\"msg\":\"start\"}\n{\"status\":\"200\"}\nnot json\n{\"request_time\":\"1\"}\n{\"s\":\"2\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Split(data, []byte("\n"))
		s := p.NewSession()
		if got, want := choose(p.cands, lines, s.s), referenceChoice(p.Candidates(), lines); got != want {
			t.Fatalf("chosen #%d, the reference says #%d", got, want)
		}
		s.SetFormats(c.Inputs[0].LogFormats, NewFiles())
		var count countingDone
		rec := &recorder{t: t, rules: c.Rules}
		for i, line := range lines {
			s.ParseFile("f", "pods", line, nil, rec, count.done)
			if held := count.lines < i+1; s.Holds() != held {
				t.Fatalf("after line %d, %d parsed: Holds says %v", i+1, count.lines, s.Holds())
			}
		}
		s.CloseFile("f", "pods", rec, count.done)
		if s.Holds() {
			t.Fatal("a closed file holds lines")
		}
		if count.lines != len(lines) {
			t.Fatalf("%d lines parsed of %d", count.lines, len(lines))
		}
	})
}

// BenchmarkDetect is the cost of choosing a file's format among auto's candidates from
// MaxHeld lines: paid once per file (and again when its lines stop fitting).
func BenchmarkDetect(b *testing.B) {
	p, _ := autoParser(b)
	s := p.NewSession().s
	r := rand.New(rand.NewPCG(7, 8))
	for _, f := range []int{0, 6, 7} {
		cand := p.Candidates()[f]
		var lines [][]byte
		for range MaxHeld {
			lines = append(lines, []byte(sampleLine(r, cand)))
		}
		b.Run(fmt.Sprint(cand.Describe()), func(b *testing.B) {
			for b.Loop() {
				choose(p.cands, lines, s)
			}
		})
	}
}

// BenchmarkParseFile is a line's cost once its file's format is chosen, against the same
// rules over an input of that one format.
func BenchmarkParseFile(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	one := strings.Replace(autoRules, "log_format: auto", "log_format: combined_request_time", 1)
	one = strings.Replace(one, "  - name: apache_requests\n    labels: {status: '${s}'}\n", "", 1)
	auto := strings.Replace(autoRules, "  - name: apache_requests\n    labels: {status: '${s}'}\n", "", 1)
	for _, tc := range []struct{ name, rules string }{{"one_format", one}, {"auto", auto}} {
		c := mustParse(b, tc.rules)
		p, err := New(c.Rules)
		if err != nil {
			b.Fatal(err)
		}
		f, err := logformat.ParseCandidate("combined_request_time")
		if err != nil {
			b.Fatal(err)
		}
		var lines [][]byte
		for range 64 {
			lines = append(lines, []byte(sampleLine(r, f)))
		}
		s := p.NewSession()
		s.SetFormats(c.Inputs[0].LogFormats, NewFiles())
		var count countingDone
		sink := discard{}
		b.Run(tc.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				s.ParseFile("f", "pods", lines[i%len(lines)], nil, sink, count.done)
				i++
			}
		})
	}
}

// newOfInputs is the parser of c's rules, told of c's inputs as the pipeline tells it.
func newOfInputs(t *testing.T, c *config.Config) *Parser {
	t.Helper()
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	p.SetInputs(c.Inputs)
	return p
}

// A file none of whose last MaxHeld lines fits a candidate, never fitted or since it
// switched, counts under NoFormat, its path among NoFormatFiles, until a line of it fits
// again or it is closed.
func TestSessionFileOfNoFormat(t *testing.T) {
	p, c := autoParser(t)
	r := rand.New(rand.NewPCG(7, 8))
	combined := p.Candidates()[6]
	s, files, rec, count := autoSession(t, p, c)
	feed := func(file, line string, n int) {
		for range n {
			if line == "" {
				line = sampleLine(r, combined)
			}
			s.ParseFile(file, "pods", []byte(line), nil, rec, count.done)
		}
	}
	for _, step := range []struct {
		name, file, line string // line "" is one of combined
		n                int
		close            bool
		formats          map[string]int
		none             []string
	}{
		{"too few to tell", "x", "hello world", MaxHeld - 1, false, map[string]int{}, nil},
		{"none", "x", "hello world", 1, false, map[string]int{NoFormat: 1}, []string{"x"}},
		{"another of a format", "a", "", 3, false, map[string]int{NoFormat: 1, "combined": 1}, []string{"x"}},
		{"it switches to none", "a", "hello world", MaxHeld, false, map[string]int{NoFormat: 2}, []string{"a", "x"}},
		{"and back", "a", "", 1, false, map[string]int{NoFormat: 1, "combined": 1}, []string{"x"}},
		{"the first fits at last", "x", "", 1, false, map[string]int{"combined": 2}, nil},
		{"none again", "x", "hello world", MaxHeld, false, map[string]int{NoFormat: 1, "combined": 1}, []string{"x"}},
		{"closed", "x", "", 0, true, map[string]int{"combined": 1}, nil},
	} {
		feed(step.file, step.line, step.n)
		if step.close {
			s.CloseFile(step.file, "pods", rec, count.done)
		}
		if got := files.Formats(); !maps.Equal(got, step.formats) {
			t.Errorf("%s: formats %v, want %v", step.name, got, step.formats)
		}
		if got := files.NoFormatFiles(); !slices.Equal(got, step.none) {
			t.Errorf("%s: files of no format %q, want %q", step.name, got, step.none)
		}
	}
}

// A file none of whose lines fits a candidate, a container that is not nginx under a glob
// over all of them, has each of its lines tried against each candidate once, not again at
// every line held after it: choosing among its held lines costs as much as fitting one.
// What is chosen is what choosing among all held lines chooses, and a reload, which may
// bring other candidates, has the held lines tried again.
func TestNoFormatFileTriesEachLineOnce(t *testing.T) {
	p, c := autoParser(t)
	tries := 0
	defer func(f func(*formatProgram, []byte, *scratch, []int) (bool, int)) { tryFit = f }(tryFit)
	tryFit = func(prog *formatProgram, line []byte, s *scratch, caps []int) (bool, int) {
		tries++
		return fit(prog, line, s, caps)
	}
	s, files, rec, count := autoSession(t, p, c)
	const lines = 10 * MaxHeld
	for range lines {
		s.ParseFile("x", "pods", []byte(`I0301 12:00:00.000000       1 controller.go:123] "Syncing" key="default/web"`), nil, rec, count.done)
	}
	if want := lines * len(p.cands); tries != want || count.lines != lines {
		t.Errorf("%d lines parsed, %d tries of a line against a candidate, want %d, %d", count.lines, tries, lines, want)
	}
	// Held lines (MaxHeld-1 of them) are tried again against a reload's candidates.
	for range MaxHeld - 1 {
		s.ParseFile("x", "pods", []byte("hello"), nil, rec, count.done)
	}
	tries = 0
	s.SetFormats(c.Inputs[0].LogFormats, files)
	s.ParseFile("x", "pods", []byte("hello"), nil, rec, count.done)
	if want := MaxHeld * len(p.cands); tries != want {
		t.Errorf("after a reload, %d tries, want %d", tries, want)
	}
	// A line that fits has the file's format chosen at once, its held lines parsed by it.
	r := rand.New(rand.NewPCG(9, 9))
	for range MaxHeld - 1 {
		s.ParseFile("x", "pods", []byte("hello"), nil, rec, count.done)
	}
	s.ParseFile("x", "pods", []byte(sampleLine(r, p.Candidates()[6])), nil, rec, count.done)
	if got := files.Formats(); count.lines != lines+2*MaxHeld || got["combined"] != 1 || len(got) != 1 {
		t.Errorf("%d lines parsed, formats %v; want %d, the file combined", count.lines, got, lines+2*MaxHeld)
	}
}

// A file of JSON objects read by json (any object) has a rule apply from the first of its
// lines with every member the rule reads, though the line its format was chosen from (a
// start-up message) lacked one: an application's access lines come after what it says as
// it starts. From then on a line that lacks the member reads it as empty, as it does in
// a file whose first line had it. The growth survives a switch between files.
func TestSessionObjectMembersGrow(t *testing.T) {
	c := mustParse(t, `
inputs:
  - {name: app, path: /a, log_format: [json]}
rules:
  - {name: requests, labels: {status: '${status}'}}
  - {name: seconds, value: request_time}
`)
	p := newOfInputs(t, c)
	s := p.NewSession()
	s.SetFormats(c.Inputs[0].LogFormats, NewFiles())
	rec := &recorder{t: t, rules: c.Rules}
	var count countingDone
	for _, l := range []struct{ file, line string }{
		{"f", `{"msg":"starting"}`},
		{"f", `{"status":"200"}`},
		{"g", `{"msg":"other file"}`},
		{"f", `{"status":"404","request_time":0.5}`},
		{"f", `{"msg":"stopping"}`},
		{"g", `not json`},
		{"g", `{"request_time":"1.5","status":"500"}`},
	} {
		s.ParseFile(l.file, "app", []byte(l.line), nil, rec, count.done)
	}
	want := []record{
		{Rule: "requests", Labels: "status=200", Value: 1},
		{Rule: "requests", Labels: "status=404", Value: 1}, {Rule: "seconds", Value: 0.5},
		{Rule: "requests", Labels: "status=", Value: 1}, {Rule: "seconds", Drop: NoValue.String()},
		{Rule: "requests", Labels: "status=500", Value: 1}, {Rule: "seconds", Value: 1.5},
	}
	if got := rec.take(); !slices.Equal(got, want) || count.lines != 7 {
		t.Errorf("%d lines parsed:\n got %v\nwant %v", count.lines, got, want)
	}
}

// A file of JSON objects that went of no format (a stack trace of MaxHeld lines) is of
// json again at its next object, though that object brings a member the file's objects
// did not have (Session.grow): the line fits.
func TestSessionObjectMembersGrowEndNoFormat(t *testing.T) {
	c := mustParse(t, `
inputs:
  - {name: app, path: /a, log_format: [json]}
rules:
  - {name: requests, labels: {status: '${status}'}}
`)
	p := newOfInputs(t, c)
	s, files, rec, count := autoSession(t, p, c)
	parse := func(line string) { s.ParseFile("f", "app", []byte(line), nil, rec, count.done) }
	parse(`{"msg":"starting"}`)
	for range MaxHeld {
		parse("\tat com.example.Main.run(Main.java:42)")
	}
	if got := files.NoFormatFiles(); !slices.Equal(got, []string{"f"}) {
		t.Fatalf("files of no format %q after a trace, want f", got)
	}
	parse(`{"status":"200"}`)
	if got, want := files.Formats(), map[string]int{"json": 1}; !maps.Equal(got, want) {
		t.Errorf("formats %v after an object with a new member, want %v", got, want)
	}
	if got := files.NoFormatFiles(); len(got) != 0 {
		t.Errorf("files of no format %q after an object with a new member, want none", got)
	}
	if count.lines != MaxHeld+2 {
		t.Errorf("%d lines parsed, want %d", count.lines, MaxHeld+2)
	}
}

// Settle has a file that holds fewer than MaxHeld lines, none of which fits a candidate,
// counted under NoFormat and its lines parsed, as MaxHeld of them would: a short log of
// another format that then goes quiet is told of. A file whose format is chosen, or that
// holds no line, is left as it is; a file settled has its format chosen by its next line
// that fits, as one of MaxHeld misfits does.
func TestSessionSettle(t *testing.T) {
	p, c := autoParser(t)
	r := rand.New(rand.NewPCG(3, 4))
	combined := p.Candidates()[6]
	s, files, rec, count := autoSession(t, p, c)
	for range 3 {
		s.ParseFile("short", "pods", []byte("hello world"), nil, rec, count.done)
	}
	s.ParseFile("fits", "pods", []byte(sampleLine(r, combined)), nil, rec, count.done)
	s.ParseFile("fits", "pods", []byte("a stray line"), nil, rec, count.done)
	if count.lines != 1 {
		t.Fatalf("%d lines parsed before settling, want 1 (the others held)", count.lines)
	}
	for _, step := range []struct {
		file    string
		settled bool
		lines   int
		formats map[string]int
	}{
		{"fits", false, 1, map[string]int{"combined": 1}},    // a chosen format's misfit waits for a line that fits
		{"unknown", false, 1, map[string]int{"combined": 1}}, // never seen
		{"short", true, 4, map[string]int{"combined": 1, NoFormat: 1}},
		{"short", false, 4, map[string]int{"combined": 1, NoFormat: 1}}, // holds nothing now
	} {
		if got := s.Settle(step.file, "pods", rec, count.done); got != step.settled {
			t.Errorf("Settle(%s) = %v, want %v", step.file, got, step.settled)
		}
		if count.lines != step.lines {
			t.Errorf("after settling %s, %d lines parsed, want %d", step.file, count.lines, step.lines)
		}
		if got := files.Formats(); !maps.Equal(got, step.formats) {
			t.Errorf("after settling %s, formats %v, want %v", step.file, got, step.formats)
		}
	}
	if got := files.NoFormatFiles(); !slices.Equal(got, []string{"short"}) {
		t.Errorf("files of no format %q, want [short]", got)
	}
	s.ParseFile("short", "pods", []byte(sampleLine(r, combined)), nil, rec, count.done)
	if got := files.Formats(); count.lines != 5 || !maps.Equal(got, map[string]int{"combined": 2}) {
		t.Errorf("a line of a format after settling: %d lines parsed, formats %v; want 5, both combined", count.lines, got)
	}
}

// Settle chooses again the format of a quiet file whose held lines fit a candidate and
// outnumber the lines that ever fitted its format: one chosen from a stray first line (a
// container's JSON start-up message before its access lines), which a low-traffic pod
// would otherwise follow with up to MaxHeld-1 requests held, uncounted, for hours. A
// format that more lines fitted keeps its misfits held, as does one whose held lines fit
// no candidate, for their file's next line that fits.
func TestSessionSettleChoosesAgain(t *testing.T) {
	p, c := autoParser(t)
	r := rand.New(rand.NewPCG(5, 6))
	combined := p.Candidates()[6]
	for _, tc := range []struct {
		name    string
		lines   []string
		settled bool
		formats map[string]int
		parsed  int
	}{
		{"a JSON line, then requests", append([]string{`{"msg":"starting","level":"info"}`}, repeat(r, combined, 5)...), true, map[string]int{"combined": 1}, 6},
		{"requests, then fewer JSON lines", append(repeat(r, combined, 5), `{"a":1}`, `{"a":2}`, `{"a":3}`), false, map[string]int{"combined": 1}, 5},
		{"as many", append(repeat(r, combined, 2), `{"a":1}`, `{"a":2}`), false, map[string]int{"combined": 1}, 2},
		{"a request, then lines of no candidate", append(repeat(r, combined, 1), "\tat a.B(C.java:1)", "\tat a.B(C.java:2)"), false, map[string]int{"combined": 1}, 1},
		// More JSON lines than requests, but no rule applies to them (an application's
		// messages, which have no status): no sign of a new format. Chosen again, the file
		// would hold its next requests, uncounted, until they outnumbered them.
		{"requests, then more JSON lines no rule applies to", append(repeat(r, combined, 3), `{"level":"warn","msg":"a"}`, `{"level":"warn","msg":"b"}`, `{"level":"warn","msg":"c"}`, `{"level":"warn","msg":"d"}`), false, map[string]int{"combined": 1}, 3},
		// nginx reconfigured to an escape=json template a few requests in.
		{"requests, then more JSON requests", append(repeat(r, combined, 3), `{"status":"500"}`, `{"status":"502"}`, `{"status":"503"}`, `{"status":"504"}`), true, map[string]int{"json": 1}, 7},
		// Held lines outnumber the requests, but fewer of them fit another candidate than
		// fitted its format: a JSON line amid a stack trace is no sign of a new format.
		{"requests, then a JSON line amid lines of no candidate", append(repeat(r, combined, 2), `{"a":1}`, "\tat a.B(C.java:1)", "\tat a.B(C.java:2)", "\tat a.B(C.java:3)"), false, map[string]int{"combined": 1}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, files, rec, count := autoSession(t, p, c)
			for _, line := range tc.lines {
				s.ParseFile("pod", "pods", []byte(line), nil, rec, count.done)
			}
			if got := s.Settle("pod", "pods", rec, count.done); got != tc.settled {
				t.Errorf("Settle = %v, want %v", got, tc.settled)
			}
			if got := files.Formats(); !maps.Equal(got, tc.formats) || count.lines != tc.parsed {
				t.Errorf("formats %v, %d lines parsed; want %v, %d", got, count.lines, tc.formats, tc.parsed)
			}
		})
	}
}

// CloseFile parses the lines a file holds as Settle would have them parsed: a file done
// with (a pod deleted) within a minute of a stray first line and a few requests has them
// counted by the format they fit, as a one-shot of its file counts them.
func TestSessionCloseFileChoosesAgain(t *testing.T) {
	p, c := autoParser(t)
	r := rand.New(rand.NewPCG(7, 8))
	combined := p.Candidates()[6]
	for _, tc := range []struct {
		name     string
		lines    []string
		requests int
	}{
		{"a JSON line, then requests", append([]string{`{"msg":"starting","level":"info"}`}, repeat(r, combined, 5)...), 5},
		{"requests, then fewer JSON lines", append(repeat(r, combined, 5), `{"a":1}`, `{"a":2}`), 5},
		// Its status is no request's: a format chosen again from it would count it.
		{"requests, then a JSON line amid lines of no candidate", append(repeat(r, combined, 2), `{"status":500}`, "\tat a.B(C.java:1)", "\tat a.B(C.java:2)", "\tat a.B(C.java:3)"), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, rec, count := autoSession(t, p, c)
			for _, line := range tc.lines {
				s.ParseFile("pod", "pods", []byte(line), nil, rec, count.done)
			}
			s.CloseFile("pod", "pods", rec, count.done)
			requests := 0
			for _, e := range rec.take() {
				if e.Rule == "requests" && e.Drop == "" {
					requests++
				}
			}
			if requests != tc.requests || count.lines != len(tc.lines) {
				t.Errorf("%d requests counted, %d lines parsed; want %d, %d", requests, count.lines, tc.requests, len(tc.lines))
			}
		})
	}
}

// repeat is n lines of format, drawn from r.
func repeat(r *rand.Rand, format *logformat.Format, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = sampleLine(r, format)
	}
	return out
}

// Settle leaves held a file whose held lines are an nginx image's start-up lines alone (an
// idle pod of the official image, or of ingress-nginx): they tell nothing of its access
// log's format, and are parsed by it once a line of it comes. A file that holds another
// line amid them is settled as any other.
func TestSessionSettleStartupLines(t *testing.T) {
	entrypoint := []string{
		"/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to perform configuration",
		"/docker-entrypoint.sh: Looking for shell scripts in /docker-entrypoint.d/",
		"/docker-entrypoint.sh: Launching /docker-entrypoint.d/10-listen-on-ipv6-by-default.sh",
		"10-listen-on-ipv6-by-default.sh: info: Getting the checksum of /etc/nginx/conf.d/default.conf",
		"10-listen-on-ipv6-by-default.sh: info: Enabled listen on IPv6 in /etc/nginx/conf.d/default.conf",
		"/docker-entrypoint.sh: Sourcing /docker-entrypoint.d/15-local-resolvers.envsh",
		"/docker-entrypoint.sh: Launching /docker-entrypoint.d/20-envsubst-on-templates.sh",
		"/docker-entrypoint.sh: Launching /docker-entrypoint.d/30-tune-worker-processes.sh",
		"/docker-entrypoint.sh: Configuration complete; ready for start up",
	}
	banner := []string{
		"-------------------------------------------------------------------------------",
		"NGINX Ingress controller",
		"  Release:       v1.12.1",
		"  Build:         51c2b819690bbf1709b844dbf321a9acf6eda5a7",
		"  Repository:    https://github.com/kubernetes/ingress-nginx",
		"  nginx version: nginx/1.25.5",
		"",
		"-------------------------------------------------------------------------------",
		"",
	}
	for _, tc := range []struct {
		name  string
		lines []string
		held  bool // left held by Settle
	}{
		{"official image", entrypoint, true},
		{"ingress-nginx", banner, true},
		{"a line of another kind after them", append(slices.Clone(entrypoint), "12:00:00 INFO warming the cache"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := autoParser(t)
			r := rand.New(rand.NewPCG(5, 6))
			main := p.Candidates()[3]
			s, files, rec, count := autoSession(t, p, c)
			for _, l := range tc.lines {
				s.ParseFile("pod", "pods", []byte(l), nil, rec, count.done)
			}
			if settled := s.Settle("pod", "pods", rec, count.done); settled == tc.held {
				t.Fatalf("Settle = %v, want %v", settled, !tc.held)
			}
			if tc.held {
				if count.lines != 0 || len(files.Formats()) != 0 || !s.Holds() {
					t.Fatalf("start-up lines alone: %d lines parsed, formats %v, held %v; want them held, the file uncounted", count.lines, files.Formats(), s.Holds())
				}
			} else if got := files.Formats(); count.lines != len(tc.lines) || !maps.Equal(got, map[string]int{NoFormat: 1}) {
				t.Fatalf("a line of another kind: %d lines parsed, formats %v; want %d, of no format", count.lines, got, len(tc.lines))
			}
			s.ParseFile("pod", "pods", []byte(sampleLine(r, main)), nil, rec, count.done)
			if got := files.Formats(); count.lines != len(tc.lines)+1 || !maps.Equal(got, map[string]int{"main": 1}) {
				t.Errorf("a line of main after them: %d lines parsed, formats %v; want %d, main", count.lines, got, len(tc.lines)+1)
			}
		})
	}
}

// An nginx image's start-up lines alone are no sign of another format past MaxHeld (up to
// MaxStartupLines, TestSessionStartupLinesBounded): the official image writes a line per
// template it renders, and with seven or more of them more than MaxHeld lines before its
// first request. They are parsed at MaxHeld,
// as any held lines, but the file is not counted under NoFormat for them; a line of
// another kind among them has it counted so, as before.
func TestSessionStartupLinesPastMaxHeld(t *testing.T) {
	var lines []string
	lines = append(lines,
		"/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to perform configuration",
		"/docker-entrypoint.sh: Looking for shell scripts in /docker-entrypoint.d/",
		"/docker-entrypoint.sh: Launching /docker-entrypoint.d/20-envsubst-on-templates.sh")
	for i := range MaxHeld {
		lines = append(lines, fmt.Sprintf("20-envsubst-on-templates.sh: Running envsubst on /etc/nginx/templates/site%d.conf.template to /etc/nginx/conf.d/site%d.conf", i, i))
	}
	lines = append(lines, "/docker-entrypoint.sh: Configuration complete; ready for start up")
	for _, tc := range []struct {
		name  string
		other bool // a line of another kind after the start-up lines
	}{{"start-up lines alone", false}, {"a line of another kind after them", true}} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := autoParser(t)
			r := rand.New(rand.NewPCG(7, 8))
			main := p.Candidates()[3]
			s, files, rec, count := autoSession(t, p, c)
			all := slices.Clone(lines)
			if tc.other {
				all = append(all, "12:00:00 INFO warming the cache")
			}
			for _, l := range all {
				s.ParseFile("pod", "pods", []byte(l), nil, rec, count.done)
			}
			s.Settle("pod", "pods", rec, count.done)
			var want map[string]int
			if tc.other {
				want = map[string]int{NoFormat: 1}
			}
			if got := files.Formats(); !maps.Equal(got, want) {
				t.Errorf("after %d lines and quiet: formats %v, want %v", len(all), got, want)
			}
			s.ParseFile("pod", "pods", []byte(sampleLine(r, main)), nil, rec, count.done)
			if got := files.Formats(); count.lines != len(all)+1 || !maps.Equal(got, map[string]int{"main": 1}) {
				t.Errorf("a line of main after them: %d lines parsed, formats %v; want %d, main", count.lines, got, len(all)+1)
			}
		})
	}
}

// An nginx image's start-up lines are no sign of another format up to MaxStartupLines of
// them, more than any real image writes before its first request; past it, a file of
// lines that only look like them (a loop of another image's, one that never serves) is
// judged as any other, at MaxHeld lines or quiet, and counted under NoFormat until a line
// of its format comes.
func TestSessionStartupLinesBounded(t *testing.T) {
	const launch = "/docker-entrypoint.sh: Launching /docker-entrypoint.d/30-tune-worker-processes.sh"
	for _, tc := range []struct {
		name  string
		lines int
		quiet bool // Settle after the lines
		none  bool // the file counted under NoFormat
	}{
		{"as many as the bound, quiet", MaxStartupLines, true, false},
		{"as many as the bound and a blank line, quiet", MaxStartupLines + 1, true, true},
		{"one more, quiet", MaxStartupLines + 1, true, true},
		{"MaxHeld more", MaxStartupLines + MaxHeld, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := autoParser(t)
			r := rand.New(rand.NewPCG(9, 10))
			main := p.Candidates()[3]
			s, files, rec, count := autoSession(t, p, c)
			for i := range tc.lines {
				line := launch
				if strings.Contains(tc.name, "blank") && i == tc.lines-1 {
					line = ""
				}
				s.ParseFile("pod", "pods", []byte(line), nil, rec, count.done)
			}
			if tc.quiet {
				s.Settle("pod", "pods", rec, count.done)
			}
			var want map[string]int
			if tc.none {
				want = map[string]int{NoFormat: 1}
			}
			if got := files.Formats(); !maps.Equal(got, want) {
				t.Errorf("after %d start-up lines: formats %v, want %v", tc.lines, got, want)
			}
			s.ParseFile("pod", "pods", []byte(sampleLine(r, main)), nil, rec, count.done)
			if got := files.Formats(); count.lines != tc.lines+1 || !maps.Equal(got, map[string]int{"main": 1}) {
				t.Errorf("a line of main after them: %d lines parsed, formats %v; want %d, main", count.lines, got, tc.lines+1)
			}
		})
	}
}

// A rule that reads no capture of the line (it counts every line, or labels it by its
// path or stream alone) applies to every file, whatever format is chosen for it: among
// candidates holding json, as auto does, too, where it counts every JSON object.
func TestRuleOfNoLineCaptureOverCandidates(t *testing.T) {
	for _, tc := range []struct {
		name, formats string
		want          []string // the rules' events, by line
	}{
		{"auto", "auto", []string{"lines", "lines", "lines", "lines", "lines"}},
		{"json and a text format", "[combined, json]", []string{"lines", "lines", "lines", "lines", "lines"}},
		{"json alone", "[json]", []string{"", "", "lines", "lines", "lines"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, `
inputs:
  - {name: pods, path: /var/log/pods/*/*/*.log, log_format: `+tc.formats+`}
rules:
  - name: lines
`)
			p, err := New(c.Rules)
			if err != nil {
				t.Fatal(err)
			}
			s, _, rec, count := autoSession(t, p, c)
			text := `10.0.0.1 - - [01/Dec/2026:01:50:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"`
			for i, line := range []string{text, text, `{"status":"200"}`, `{"msg":"started"}`, `{}`} {
				file := "text"
				if line[0] == '{' {
					file = "json"
				}
				s.ParseFile(file, "pods", []byte(line), nil, rec, count.done)
				s.CloseFile(file, "pods", rec, count.done)
				var got []string
				for _, e := range rec.take() {
					got = append(got, e.Rule+e.Drop)
				}
				if want := slices.DeleteFunc([]string{tc.want[i]}, func(s string) bool { return s == "" }); !slices.Equal(got, want) {
					t.Errorf("line %d %s: events %q, want %q", i+1, line, got, want)
				}
			}
		})
	}
}

// A rule that reads no capture, added to rules over auto's candidates, changes nothing
// the others count: over files of every candidate's lines, alone or mixed with others',
// with JSON objects of none of the members read and lines of no format, every other
// rule's events, and the lines parsed and malformed, are those without it.
func TestRuleOfNoLineCaptureLeavesOthers(t *testing.T) {
	type run struct {
		events []record
		done   countingDone
	}
	parse := func(rules string, files [][]string) run {
		c := mustParse(t, rules)
		p, err := New(c.Rules)
		if err != nil {
			t.Fatal(err)
		}
		s, _, rec, count := autoSession(t, p, c)
		for i, lines := range files {
			name := fmt.Sprintf("%d.log", i)
			for _, line := range lines {
				s.ParseFile(name, "pods", []byte(line), nil, rec, count.done)
			}
			s.CloseFile(name, "pods", rec, count.done)
		}
		return run{slices.DeleteFunc(rec.take(), func(r record) bool { return r.Rule == "lines" }), *count}
	}
	p, _ := autoParser(t)
	cands := p.Candidates()
	r := rand.New(rand.NewPCG(5, 6))
	files := make([][]string, 100)
	if race.Enabled {
		files = files[:20]
	}
	for i := range files {
		f := cands[r.IntN(len(cands))]
		for range 1 + r.IntN(2*MaxHeld) {
			switch r.IntN(8) {
			case 0:
				files[i] = append(files[i], sampleLine(r, cands[r.IntN(len(cands))]))
			case 1:
				files[i] = append(files[i], `{"msg":"started","level":"info"}`)
			case 2:
				files[i] = append(files[i], "panic: runtime error")
			default:
				files[i] = append(files[i], sampleLine(r, f))
			}
		}
	}
	without := parse(autoRules, files)
	for _, tc := range []struct{ name, rules string }{
		{"last", autoRules + "  - name: lines\n"},
		{"first", strings.Replace(autoRules, "rules:\n", "rules:\n  - name: lines\n", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with := parse(tc.rules, files)
			if without.done != with.done {
				t.Errorf("lines parsed, malformed: %v without the rule, %v with it", without.done, with.done)
			}
			if !slices.Equal(without.events, with.events) {
				t.Errorf("%d events without the rule, %d with it; they differ", len(without.events), len(with.events))
			}
		})
	}
}

// choose is chooseFits' choice alone.
func choose(cands []*formatProgram, lines [][]byte, s *scratch) int {
	k, _ := chooseFits(cands, lines, s, nil)
	return k
}
