package parser

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
)

// TestRequestCheckGate: the check of a request line is made by the status of the line
// wherever the format has its $status, before or after $request, in a preset, a text
// format or a JSON template, read by a rule that reads the request's parts alone.
func TestRequestCheckGate(t *testing.T) {
	formats := []struct {
		name, format, escape, line string // line: {S} the status, {R} the request
	}{
		{"combined", "combined", "default", `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "{R}" {S} 5 "-" "curl"`},
		{"upstreaminfo", "upstreaminfo", "default", `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "{R}" {S} 5 "-" "curl" 80 0.001 [up] [] 10.0.0.2:80 5 0.001 200 abc`},
		{"status after request", `"$request" $status`, "default", `"{R}" {S}`},
		{"JSON, status after request", `{"request":"$request","status":$status}`, "json", `{"request":"{R}","status":{S}}`},
	}
	lines := []struct {
		status, request string
		m, t, p         string
	}{
		{"200", "GET /a%zz HTTP/1.1", "GET", "/a%zz", "HTTP/1.1"},
		{"400", "GET /a%zz HTTP/1.1", "GET", "", "HTTP/1.1"},
		{"400", "GET /a b HTTP/1.1", "", "", ""},
		{"200", "GET / HTTP/2.0", "GET", "/", "HTTP/2.0"},
		{"505", "GET / HTTP/2.0", "", "", ""},
		{"414", "GET /aaaa", "", "", ""},
		{"408", "GET /a", "GET", "/a", ""},
		{"408", "POST /a", "", "", ""},
	}
	for _, f := range formats {
		eachNginxRequestParser(t, f.format, f.escape, "m: '${request_method}', t: '${request_uri}', p: '${server_protocol}'", "gate.yaml", func(matcher string, p *Parser, r *config.Rule) {
			for _, l := range lines {
				t.Run(f.name+"/"+matcher+"/"+l.status+" "+l.request, func(t *testing.T) {
					text := strings.NewReplacer("{S}", l.status, "{R}", l.request).Replace(f.line)
					got := parsedLabels(p, r, text)
					want := map[string]string{"m": l.m, "t": l.t, "p": l.p}
					for k, w := range want {
						if got[k] != w {
							t.Errorf("%q: %s = %q, want %q", text, k, got[k], w)
						}
					}
				})
			}
		})
	}
}

// eachNginxRequestParser hands each, for every matcher, a parser of one rule, r, with
// the labels given (the request's parts, as nginx's variables name them) read from an
// input logged in format: the nginx tests read the same lines by every engine.
func eachNginxRequestParser(t *testing.T, format, escape, labels, file string, each func(matcher string, p *Parser, r *config.Rule)) {
	t.Helper()
	c, err := config.Parse([]byte(fmt.Sprintf("inputs: [{name: web, path: /a, log_format: %s, log_format_escape: %s}]\nrules:\n"+
		"  - name: r\n    labels: {%s}\n", strconv.Quote(format), escape, labels)), file)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matchers {
		p, err := build(c.Rules, m.engine)
		if err != nil {
			t.Fatal(err)
		}
		each(m.name, p, c.Rules[0])
	}
}

// TestRequestCheckGateForms: the parts of a request line are the same whether nginx
// logged it in a text format, in a JSON template or as a JSON object read by
// log_format: [json], each with its $status, for every request line of
// TestRequestLinesNginx under every status: the object form goes by its status member
// as the others go by theirs, the request read by a rule that reads no status.
func TestRequestCheckGateForms(t *testing.T) {
	labels := "m: '${request_method}', u: '${uri}', t: '${request_uri}', p: '${server_protocol}'"
	forms := []struct{ name, config, line string }{
		{"text", `log_format: '"$request" $status'`, `"{R:default}" {S}`},
		{"template", `log_format: '{"request":"$request","status":$status}', log_format_escape: json`, `{"request":"{R:json}","status":{S}}`},
		{"object", `log_format: [json]`, `{"request":"{R:json}","status":{S}}`},
		{"object, status a string", `log_format: [json]`, `{"status":"{S}","request":"{R:json}"}`},
	}
	type parsed struct {
		p *Parser
		r *config.Rule
	}
	parsers := map[string]parsed{}
	for _, f := range forms {
		c, err := config.Parse([]byte("inputs: [{name: web, path: /a, "+f.config+"}]\nrules:\n  - name: r\n    labels: {"+labels+"}\n"), "forms.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(c.Rules)
		if err != nil {
			t.Fatal(err)
		}
		parsers[f.name] = parsed{p, c.Rules[0]}
	}
	for _, status := range []string{"200", "301", "400", "404", "408", "414", "499", "500", "505"} {
		for _, req := range requestLineCases() {
			var want map[string]string
			for i, f := range forms {
				line := strings.NewReplacer("{S}", status, "{R:default}", nginxEscape(req, "default"), "{R:json}", nginxEscape(req, "json")).Replace(f.line)
				got := parsedLabels(parsers[f.name].p, parsers[f.name].r, line)
				if got == nil {
					t.Fatalf("%s: %q counted nothing", f.name, line)
				}
				if i == 0 {
					want = got
					continue
				}
				for k, w := range want {
					if got[k] != w {
						t.Errorf("%s, status %s, %q: %s = %q, the text form's %q", f.name, status, req, k, got[k], w)
					}
				}
			}
		}
	}
}

// A file of JSON objects has its requests checked by the status member of each line that
// has one, and every line without it, as a text format without $status: the member is
// read for the check alone, and a line that brings it to a file whose objects lacked it
// fits the file's format all the same.
func TestRequestCheckGateObjectFile(t *testing.T) {
	c := mustParse(t, `
inputs:
  - {name: app, path: /a, log_format: [json]}
rules:
  - {name: requests, labels: {m: '${request_method}', t: '${request_uri}'}}
`)
	p := newOfInputs(t, c)
	s, files, rec, count := autoSession(t, p, c)
	for i, line := range []string{
		`{"request":"GET /a b HTTP/1.1"}`,
		`{"request":"GET /a b HTTP/1.1","status":200}`,
		`{"request":"GET /a b HTTP/1.1","status":400}`,
		`{"request":"GET /a%zz HTTP/1.1","status":"200"}`,
		`{"request":"GET /a%zz HTTP/1.1"}`,
		// A status of another type is none; of two, the last is the line's (as
		// encoding/json reads it, and as its status class is).
		`{"request":"GET /a b HTTP/1.1","status":null}`,
		`{"request":"GET /a b HTTP/1.1","status":[200]}`,
		`{"request":"GET /a b HTTP/1.1","status":400,"status":200}`,
		`{"request":"GET /a b HTTP/1.1","status":200,"status":400}`,
	} {
		// Each line is parsed as it comes, none held as a misfit of the file's format.
		if s.ParseFile("f", "app", []byte(line), nil, rec, count.done); count.lines != i+1 {
			t.Fatalf("%q: %d lines parsed, want %d", line, count.lines, i+1)
		}
	}
	want := []record{
		{Rule: "requests", Labels: "m=,t=", Value: 1},
		{Rule: "requests", Labels: "m=GET,t=/a b", Value: 1},
		{Rule: "requests", Labels: "m=,t=", Value: 1},
		{Rule: "requests", Labels: "m=GET,t=/a%zz", Value: 1},
		{Rule: "requests", Labels: "m=GET,t=", Value: 1},
		{Rule: "requests", Labels: "m=,t=", Value: 1},
		{Rule: "requests", Labels: "m=,t=", Value: 1},
		{Rule: "requests", Labels: "m=GET,t=/a b", Value: 1},
		{Rule: "requests", Labels: "m=,t=", Value: 1},
	}
	if got := rec.take(); !slices.Equal(got, want) || count.lines != len(want) || len(files.NoFormatFiles()) != 0 {
		t.Errorf("%d lines parsed, files of no format %q:\n got %v\nwant %v", count.lines, files.NoFormatFiles(), got, want)
	}
}

// The status member a file of JSON objects is read for, for the request's check alone,
// is none of the members its rules read: a file of another application's objects that
// have a status and none of those members is unread, as it was before the check read it.
func TestRequestCheckStatusNoMember(t *testing.T) {
	for _, tc := range []struct {
		name, labels, line string
		unread             bool
	}{
		{"status alone", `m: '${request_method}'`, `{"level":"info","status":200,"msg":"up"}`, true},
		{"a request", `m: '${request_method}'`, `{"request":"GET / HTTP/1.1","status":200}`, false},
		{"status read by a rule", `m: '${request_method}', s: '${status}'`, `{"level":"info","status":200,"msg":"up"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, "inputs: [{name: app, path: /a, log_format: [combined, json]}]\n"+
				"rules:\n  - {name: requests, labels: {"+tc.labels+"}}\n")
			s, files, rec, count := autoSession(t, newOfInputs(t, c), c)
			unread := 0
			for range MaxHeld {
				s.ParseFile("f", "app", []byte(tc.line), nil, rec, count.done)
				if s.Unread("app") {
					unread++
				}
			}
			want, wantFiles := 0, 0
			if tc.unread {
				want, wantFiles = MaxHeld, 1
			}
			if unread != want || len(files.UnreadFiles()) != wantFiles {
				t.Errorf("%d of %d lines unread, want %d; unread files %q", unread, MaxHeld, want, files.UnreadFiles())
			}
		})
	}
}
