package explain

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// TestDisplay: text reaches a terminal or page as it is only when it is valid UTF-8 of
// graphic characters alone (no control character, no invisible formatting one such as a
// byte order mark that makes a JSON line malformed or a right-to-left override that
// shows it reordered, no line separator); else Go-quoted.
func TestDisplay(t *testing.T) {
	cases := []struct {
		in, want string
		escaped  bool
	}{
		{"GET / 200", "GET / 200", false},
		{"héllo <b>", "héllo <b>", false},
		{"a\xffb", `"a\xffb"`, true},
		{"a\x1b[31mred", `"a\x1b[31mred"`, true},
		{"tab\there", `"tab\there"`, true},
		{"\ufeff{\"status\":\"200\"}", `"\ufeff{\"status\":\"200\"}"`, true},
		{"GET /\u202egnp.exe 200", `"GET /\u202egnp.exe 200"`, true},
		// A line or paragraph separator breaks the line on some terminals and pages, and
		// stderr shows it escaped (\u2028): as it is, it would read as a name of a
		// backslash and digits.
		{"/logs/a\u2028b.log", `"/logs/a\u2028b.log"`, true},
		{"/logs/a\u2029b.log", `"/logs/a\u2029b.log"`, true},
		{`"GET / HTTP/1.1" 200`, `"GET / HTTP/1.1" 200`, false},
		{"non\u00a0breaking", "non\u00a0breaking", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, esc := display([]byte(c.in))
		if got != c.want || esc != c.escaped {
			t.Errorf("display(%q) = %q, %v; want %q, %v", c.in, got, esc, c.want, c.escaped)
		}
	}
}

// TestDisplayName: a file name is shown as a text is, and Go-quoted too when it opens
// with a quote: as it is, a name of a quote, x, a backslash, n, y and a quote showed as
// the name of x, a newline and y does, Go-quoted.
func TestDisplayName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/logs/a.log", "/logs/a.log"},
		{`x\ny`, `x\ny`},
		{"x\ny", `"x\ny"`},
		{`"x\ny"`, `"\"x\\ny\""`},
		{`a "b" c`, `a "b" c`},
		{"a\u2028b", `"a\u2028b"`},
		{"/logs/a: b.log", `"/logs/a: b.log"`},
		{"/logs/a:b.log", "/logs/a:b.log"},
		{"...", `"..."`},
		{"/logs/....log", "/logs/....log"},
	} {
		if got := Display(c.in); got != c.want {
			t.Errorf("Display(%q) = %q, want %q", c.in, got, c.want)
		}
		var l Line
		if l.SetFile(c.in); l.File != c.want || l.FileEscaped != (c.want != c.in) {
			t.Errorf("SetFile(%q): %q, escaped %v; want %q", c.in, l.File, l.FileEscaped, c.want)
		}
	}
}

// TestDisplayNameAmong: a name shown among others is Go-quoted also when it holds a text
// that parts them there, so that two names never read as three; a name without one is
// shown as Display shows it alone.
func TestDisplayNameAmong(t *testing.T) {
	for _, c := range []struct {
		in   string
		seps []string
		want string
	}{
		{"/logs/a, b.log", []string{", "}, `"/logs/a, b.log"`},
		{"/logs/a, b.log", nil, "/logs/a, b.log"},
		{"/logs/a,b.log", []string{", "}, "/logs/a,b.log"},
		{"/logs/a; b.log", []string{", ", "; "}, `"/logs/a; b.log"`},
		{"/logs/a.log", []string{", ", "; "}, "/logs/a.log"},
		{"/logs/a.log", []string{""}, "/logs/a.log"},
		{`x\ny, z`, []string{", "}, `"x\\ny, z"`},
		{`x\ny`, []string{", "}, `x\ny`},
	} {
		if got := Display(c.in, c.seps...); got != c.want {
			t.Errorf("Display(%q, %q) = %q, want %q", c.in, c.seps, got, c.want)
		}
	}
}

// TestWrite renders one explained line in both formats: the JSON decodes back to the same
// Line, the text names each rule's outcome, and an unknown format is an error.
func TestWrite(t *testing.T) {
	x := newExplainer(t, `
global: {windows: [1m], max_series_per_rule: 1}
rules:
  - name: requests
    match: '^(?P<method>[A-Z]+) (?P<status>\d+)$'
    labels: {method: '${method}'}
  - name: errors
    match: '^(?P<method>[A-Z]+) (?P<status>\d+)$'
    where: {status: '^5'}
`)
	lines := []Line{x.Explain("", []byte("GET 200"), true), x.Explain("", []byte("PUT 200"), false), x.Explain("", []byte("GET 2x"), false), TooLongLine("web", []byte("GET 200"))}
	// A line of one of the files a glob matched, whose name a newline would forge a line
	// with, is named Go-quoted.
	lines[2].Number = 3
	lines[2].SetFile("/logs/a\nline 9: x.log")

	var js bytes.Buffer
	if err := Write(&js, "json", lines); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&js)
	for i := range lines {
		var back Line
		if err := dec.Decode(&back); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(back)
		b, _ := json.Marshal(lines[i])
		if !bytes.Equal(a, b) {
			t.Errorf("line %d does not survive JSON:\n%s\n%s", i, a, b)
		}
	}

	var text bytes.Buffer
	if err := Write(&text, "text", lines); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`  + requests{method="GET"}: placed at 1970-01-01T00:16:40Z` + "\n",
		`  - errors: where status: "200" does not match ^5`,
		// The budget of one label set is taken by GET, which was fed; PUT would fold.
		`  + requests{method="PUT"}: placed at 1970-01-01T00:16:40Z; FOLDED into the __overflow__ series`,
		"line 3 of \"/logs/a\\nline 9: x.log\": GET 2x\n  UNMATCHED: no rule matches this line\n  - requests: regex does not match\n",
		`      then at byte 5 expects [0-9] or end of line ($), but the line has "x" (inside capture status)`,
		"  - errors: regex does not match (the same as requests's)\n",
		// Skipped by its input, read by no rule: neither matched nor unmatched.
		"line (input web): GET 200\n  SKIPPED: longer than --input.max-line-bytes, its input skips it and no rule reads it\n\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if err := Write(&text, "xml", lines); err == nil || !strings.Contains(err.Error(), "text, json") {
		t.Errorf("unknown format: %v", err)
	}
}

// TestNegativeValue: a line whose value is negative is dropped by a value rule, and the
// explanation says so and shows the value; -0 is zero and counted.
func TestNegativeValue(t *testing.T) {
	x := newExplainer(t, `
global: {windows: [1m], max_series_per_rule: 10}
rules:
  - {name: delta, match: '^(?P<v>-?[0-9.]+)', value: v}
`)
	for _, c := range []struct {
		line, outcome, text string
		value               float64
	}{
		{"-5", "negative", `  - delta: dropped, negative: v "-5"` + "\n", 0},
		{"-0.0", "counted", `  + delta value 0: placed at`, 0},
		{"2", "counted", `  + delta value 2: placed at`, 2},
	} {
		l := x.Explain("", []byte(c.line), false)
		if len(l.Rules) != 1 {
			t.Fatalf("%s: %+v", c.line, l)
		}
		r := l.Rules[0]
		if r.Outcome != c.outcome {
			t.Errorf("%s: outcome %q, want %q", c.line, r.Outcome, c.outcome)
		}
		if c.outcome == "counted" && (r.Value == nil || *r.Value != c.value || math.Signbit(*r.Value)) {
			t.Errorf("%s: value %v, want %v", c.line, r.Value, c.value)
		}
		if c.outcome != "counted" && (r.Drop == nil || r.Drop.Capture != "v" || r.Drop.Value != c.line || l.Counted) {
			t.Errorf("%s: drop %+v, counted %v; want the capture v = %q, not counted", c.line, r.Drop, l.Counted, c.line)
		}
		var text bytes.Buffer
		if err := Write(&text, "text", []Line{l}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), c.text) {
			t.Errorf("text lacks %q:\n%s", c.text, text.String())
		}
	}
}

// TestLogFormatMisfit: a line that does not fit a rule's log format is told in the
// format's terms: the variable the line stopped fitting in, or the one whose following
// text it stopped in, at which byte, and what was expected.
func TestLogFormatMisfit(t *testing.T) {
	x := newExplainer(t, `
inputs: [{name: web, path: /a, log_format: '$remote_addr [$time_local] "$request" $status $request_time'}]
rules:
  - {name: requests}
  - {name: duration, value: request_time}
`)
	for _, c := range []struct {
		line    string
		miss    NoMatch
		textHas []string
	}{
		{`10.0.0.1 [01/Mar/2024:12:00:00 +0000]`,
			NoMatch{End: 37, After: "$time_local", Expected: []string{"' '"}},
			[]string{"requests: the line does not fit the log format", "then at byte 37, in the text after $time_local, it expects ' ', but the line has the end of the line", "duration: the line does not fit the log format (the same as requests's)"}},
		{`10.0.0.1 01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 0.1`,
			NoMatch{End: 9, After: "$remote_addr", Expected: []string{"'['"}},
			[]string{`then at byte 9, in the text after $remote_addr, it expects '[', but the line has "0"`}},
		{`10.0.0.1 [01/Mar/2024:12:00:00 +0000`,
			NoMatch{End: 36, In: "$time_local", After: "$time_local", Expected: []string{`[^\]]`, "']'"}},
			[]string{`in $time_local or the text after it, it expects [^\]] or ']'`}},
		{`10.0.0.1 [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 0.1`[:42],
			NoMatch{End: 42, In: "$request", After: "$request", Expected: []string{`[^"]`, `'"'`}},
			[]string{`in $request or the text after it`}},
	} {
		l := x.Explain("web", []byte(c.line), false)
		if !l.Unmatched || len(l.Rules) != 2 || l.Rules[0].Miss == nil {
			t.Fatalf("%s: %+v", c.line, l)
		}
		m := l.Rules[0].Miss
		if m.LogFormat == "" || m.End != c.miss.End || m.In != c.miss.In || m.After != c.miss.After || strings.Join(m.Expected, "|") != strings.Join(c.miss.Expected, "|") {
			t.Errorf("%s: end %d in %q after %q expected %q; want %+v", c.line, m.End, m.In, m.After, m.Expected, c.miss)
		}
		var b bytes.Buffer
		if err := Write(&b, "text", []Line{l}); err != nil {
			t.Fatal(err)
		}
		for _, want := range c.textHas {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s: the text does not say %q:\n%s", c.line, want, b.String())
			}
		}
	}
}

// TestWordsPastTries: a line that would fit its log format with a user name ending past
// the 16 ends the scan tries does not fit, and is told so, not only where the user of one
// word stops fitting; a line that does not fit with any user is told as before.
func TestWordsPastTries(t *testing.T) {
	x := newExplainer(t, `
inputs: [{name: web, path: /a, log_format: combined}]
rules:
  - {name: requests}
`)
	const rest = ` [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "-"`
	for _, c := range []struct {
		name, line, words string
	}{
		{"past the tries", `10.0.0.1 - a` + strings.Repeat(" [x]", 17) + rest, "$remote_user"},
		{"within them", `10.0.0.1 - a` + strings.Repeat(" [x]", 16) + rest, ""},
		{"no user fits", `10.0.0.1 - a` + strings.Repeat(" [x]", 17) + strings.TrimSuffix(rest, `"`), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := x.Explain("web", []byte(c.line), false)
			if c.name == "within them" {
				if l.Unmatched {
					t.Fatalf("unmatched: %+v", l.Rules[0].Miss)
				}
				return
			}
			if !l.Unmatched || l.Rules[0].Miss == nil {
				t.Fatalf("%+v", l)
			}
			if m := l.Rules[0].Miss; m.Words != c.words || m.In == "" && m.After == "" {
				t.Fatalf("words %q, in %q, after %q; want words %q and where the user of one word stops", m.Words, m.In, m.After, c.words)
			}
			var b bytes.Buffer
			if err := Write(&b, "text", []Line{l}); err != nil {
				t.Fatal(err)
			}
			said := strings.Contains(b.String(), "ending at a later space than the 16 tried") && strings.Contains(l.Stopped(), "$remote_user ending at a later space")
			if said != (c.words != "") {
				t.Errorf("past the tries said %v, want %v:\n%s\n%s", said, c.words != "", b.String(), l.Stopped())
			}
		})
	}
}

// TestCandidatesMisfit: a rule reading candidate formats is told in the terms of the one
// the line is read by (it does not apply there, lacking a capture), or, when the line
// fits none, of the one it fits the farthest; the one-shots' summary says the same.
func TestCandidatesMisfit(t *testing.T) {
	x := newExplainer(t, `
inputs: [{name: web, path: /a, log_format: [combined, upstreaminfo]}]
rules:
  - {name: requests, labels: {status: '${status}'}}
  - {name: upstream, labels: {addr: '${upstream_addr}'}}
`)
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`
	for _, c := range []struct {
		name, line string
		textHas    []string
		stopped    string
	}{
		{"of a format without the capture", combined,
			[]string{`  + requests{status="200"}`, "  - upstream: does not apply to the line's log format, combined, which has no upstream_addr\n"}, ""},
		{"of no format", combined[:42] + "GET",
			[]string{"  UNMATCHED", "  - requests: the line fits none of the log formats combined, upstreaminfo\n      it fits combined the farthest:\n",
				`then at byte 42, in the text after $time_local, it expects '"', but the line has "G"`,
				"  - upstream: the line fits none of the log formats (the same as requests's)\n"},
			`the line fits none of the log formats combined, upstreaminfo; combined, which it fits the farthest, at byte 42, in the text after $time_local, expects '"', but the line has "G"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := x.Explain("web", []byte(c.line), false)
			var b bytes.Buffer
			if err := Write(&b, "text", []Line{l}); err != nil {
				t.Fatal(err)
			}
			for _, want := range c.textHas {
				if !strings.Contains(b.String(), want) {
					t.Errorf("the text does not say %q:\n%s", want, b.String())
				}
			}
			if c.stopped != "" && l.Stopped() != c.stopped {
				t.Errorf("Stopped: %q, want %q", l.Stopped(), c.stopped)
			}
		})
	}
}

// TestRewrite: a rewritten label is shown as the series has it, with the value it was
// rewritten from; a top label too; one the rewrite left alone has no raw value.
func TestRewrite(t *testing.T) {
	x := newExplainer(t, `
rules:
  - name: requests
    match: '^(?P<method>[A-Z]+) (?P<path>\S+)$'
    labels: {method: '${method}', route: '${path}'}
    rewrite: [{label: route, regex: '/[0-9]+', replacement: '/:id'}]
  - name: hot_routes
    match: '^(?P<method>[A-Z]+) (?P<path>\S+)$'
    labels: {route: '${path}'}
    rewrite: [{label: route, regex: '/[0-9]+', replacement: '/:id'}]
    top: {label: route, k: 3}
`)
	lines := []Line{x.Explain("", []byte("GET /users/8412"), false), x.Explain("", []byte("GET /users"), false)}
	var text, js bytes.Buffer
	if err := Write(&text, "text", lines); err != nil {
		t.Fatal(err)
	}
	if err := Write(&js, "json", lines); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`  + requests{method="GET", route="/users/:id" (rewritten from "/users/8412")}: placed`,
		`  + hot_routes top {route="/users/:id" (rewritten from "/users/8412")}: placed`,
		`  + requests{method="GET", route="/users"}: placed`,
		`  + hot_routes top {route="/users"}: placed`,
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{
		`"labels":[{"name":"method","value":"GET"},{"name":"route","value":"/users/:id","raw":"/users/8412"}]`,
		`"top":{"name":"route","value":"/users/:id","raw":"/users/8412"}`,
		`"labels":[{"name":"method","value":"GET"},{"name":"route","value":"/users"}]`,
	} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js.String())
		}
	}
}

// newExplainer builds the explainer of a rule file, its sink's clock at second 1000.
// TestFoldedByMemoryBound: a new label set that would pass --series.max-bytes is shown
// folded, and why, as one past max_series_per_rule is.
func TestFoldedByMemoryBound(t *testing.T) {
	x := newExplainerWith(t, `
global: {windows: [1m]}
rules:
  - name: requests
    match: '^(?P<method>[A-Z]+) (?P<status>\d+)$'
    labels: {method: '${method}'}
`, store.SetOptions{MaxBytes: 1})
	var text bytes.Buffer
	if err := Write(&text, "text", []Line{x.Explain("", []byte("GET 200"), false)}); err != nil {
		t.Fatal(err)
	}
	want := `  + requests{method="GET"}: placed at 1970-01-01T00:16:40Z; FOLDED into the __overflow__ series (--series.max-bytes reached)`
	if !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}
}

func newExplainer(t *testing.T, rules string) *Explainer {
	t.Helper()
	return newExplainerWith(t, rules, store.SetOptions{})
}

func newExplainerWith(t *testing.T, rules string, opts store.SetOptions) *Explainer {
	t.Helper()
	cfg, p := storetest.ParseRules(t, rules)
	set, err := store.NewSetWith(cfg, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	sink := set.NewSink()
	sink.SetNow(1000, 1000)
	return New(cfg.Rules, p, sink)
}

// TestBadWrapperTime: a line dropped for a cri_time that does not parse (no runtime's: a
// damaged line) shows that time, as a bad timestamp of a capture of the line shows the
// capture: shown empty, it read as a line without one, not as a time that does not parse.
func TestBadWrapperTime(t *testing.T) {
	x := newExplainer(t, `
global: {windows: [1m]}
inputs:
  - {name: pods, path: /var/log/pods/*/*/*.log, wrapper: cri}
rules:
  - name: reqs
    inputs: [pods]
    match: '^GET'
    timestamp: {capture: cri_time}
`)
	const at = "2026-11-29 15:00:00.5"
	l := x.ExplainWrapped("pods", []byte("GET"), []byte(at), false)
	if len(l.Rules) != 1 || l.Rules[0].Drop == nil {
		t.Fatalf("%+v, want a drop", l)
	}
	if d := l.Rules[0].Drop; d.Capture != "cri_time" || d.Value != at {
		t.Errorf("drop %+v, want cri_time %q", d, at)
	}
}

// TestRepeatedHour: a line's time in the hour its zone repeats when clocks go back reads
// two instants; the explanation, which reads it as a replay does, names the other, at
// which the running exporter reads it when its clock is nearer that one. A time the zone
// reads once, a zone of a fixed offset, and a time carrying its zone's name (which says
// which of the two it is, and is read so), say nothing of it.
func TestRepeatedHour(t *testing.T) {
	x := newExplainer(t, `
rules:
  - {name: ny, match: '^ny (?P<t>.+)', timestamp: {capture: t, layout: '2006-01-02 15:04:05', location: America/New_York}}
  - {name: utc, match: '^utc (?P<t>.+)', timestamp: {capture: t, layout: '2006-01-02 15:04:05'}}
  - {name: named, match: '^named (?P<t>.+)', timestamp: {capture: t, layout: '2006-01-02 15:04:05 MST', location: America/New_York}}
`)
	for _, c := range []struct {
		line, other, text string
	}{
		{"ny 2026-11-01 01:30:00", "2026-11-01T05:30:00Z", " (of the hour America/New_York repeats; also 2026-11-01T05:30:00Z"},
		{"ny 2026-11-01 02:30:00", "", ""},
		{"ny 2026-03-08 01:30:00", "", ""},
		{"utc 2026-11-01 01:30:00", "", ""},
		// The zone's name the line carries says which of the two it is: read as it is.
		{"named 2026-11-01 01:30:00 EST", "", ""},
		{"named 2026-11-01 01:30:00 EDT", "", ""},
	} {
		l := x.Explain("", []byte(c.line), false)
		if len(l.Rules) != 3 {
			t.Fatalf("%s: %+v", c.line, l)
		}
		r := l.Rules[map[string]int{"ny": 0, "utc": 1, "named": 2}[strings.Fields(c.line)[0]]]
		if r.Outcome != "counted" {
			t.Fatalf("%s: %+v", c.line, r)
		}
		if r.Repeated != c.other {
			t.Errorf("%s: the other reading %q, want %q", c.line, r.Repeated, c.other)
		}
		var text bytes.Buffer
		if err := Write(&text, "text", []Line{l}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(text.String(), "repeats"); c.text == "" && got || c.text != "" && !strings.Contains(text.String(), c.text) {
			t.Errorf("%s: text\n%s\nwant %q", c.line, text.String(), c.text)
		}
	}
}

// TestDropLayoutAsRead: a line whose time does not parse is told with the layout it was
// read with (Timestamp.ReadLayout: a fixed fraction read as one of any digits, an offset
// as one that reads a Z too), not the rule's as written, and for a rule reading candidate
// formats with that of the format the line is read by, which the rule itself lacks.
func TestDropLayoutAsRead(t *testing.T) {
	x := newExplainer(t, `
inputs:
  - {name: iso, path: /a, log_format: '$time_iso8601 $status'}
  - {name: cand, path: /b, log_format: [combined, upstreaminfo]}
rules:
  - {name: written, match: '^w (?P<t>.+)', timestamp: {capture: t, layout: '2006-01-02T15:04:05.000-07:00'}}
  - {name: format, inputs: [iso], timestamp: {capture: time_iso8601}}
  - {name: candidates, inputs: [cand], timestamp: {capture: time_local}}
`)
	for _, c := range []struct {
		input, line, rule, layout string
	}{
		{"iso", "w 2024-03-01 12:00:00", "written", "2006-01-02T15:04:05.999Z07:00"},
		{"iso", "2024-03-01T12:00:00 200", "format", "2006-01-02T15:04:05Z07:00"},
		{"cand", `10.0.0.1 - - [01/Mar/2024:12:00:00] "GET / HTTP/1.1" 200 5 "-" "curl"`, "candidates", "02/Jan/2006:15:04:05 Z0700"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			l := x.Explain(c.input, []byte(c.line), false)
			for _, r := range l.Rules {
				if r.Name != c.rule {
					continue
				}
				if r.Drop == nil || r.Outcome != "bad_timestamp" {
					t.Fatalf("%+v, want a bad timestamp", r)
				}
				if r.Drop.Layout != c.layout {
					t.Errorf("layout %q, want %q", r.Drop.Layout, c.layout)
				}
				return
			}
			t.Fatalf("rule %s not explained: %+v", c.rule, l)
		})
	}
}

// TestDropUnknownZone: a line whose time carries a zone abbreviation the rule's location
// has no offset for is told with that abbreviation and the location, not as a time that
// does not parse with the layout (it does); one that does not parse is told as before.
func TestDropUnknownZone(t *testing.T) {
	x := newExplainer(t, `
rules:
  - {name: berlin, match: '^b (?P<t>.+)', timestamp: {capture: t, layout: '2006-01-02 15:04:05 MST', location: Europe/Berlin}}
  - {name: utc, match: '^u (?P<t>.+)', timestamp: {capture: t, layout: '2006-01-02 15:04:05 MST'}}
`)
	for _, c := range []struct {
		line, zone, location, text string
	}{
		{"b 2026-11-29 15:00:00 PST", "PST", "Europe/Berlin", `: its zone "PST" is none of Europe/Berlin's abbreviations`},
		{"u 2026-11-29 15:00:00 CET", "CET", "UTC", `: its zone "CET" is none of UTC's abbreviations`},
		{"u 2017-01-01 00:59:60 CET", "CET", "UTC", `: its zone "CET" is none of UTC's abbreviations`}, // UTC's leap second, were it CET
		{"u 2026-11-29 15:00:00 cet", "", "", ` does not parse with layout "2006-01-02 15:04:05 MST"`},
	} {
		t.Run(c.line, func(t *testing.T) {
			l := x.Explain("", []byte(c.line), false)
			var r *Rule
			for i := range l.Rules {
				if l.Rules[i].Outcome == "bad_timestamp" {
					r = &l.Rules[i]
				}
			}
			if r == nil || r.Drop == nil {
				t.Fatalf("%+v, want a bad timestamp", l)
			}
			if r.Drop.Zone != c.zone || r.Drop.Location != c.location {
				t.Errorf("zone %q of %q, want %q of %q", r.Drop.Zone, r.Drop.Location, c.zone, c.location)
			}
			var text bytes.Buffer
			if err := Write(&text, "text", []Line{l}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), c.text) {
				t.Errorf("text\n%s\nwant %q", text.String(), c.text)
			}
		})
	}
}
