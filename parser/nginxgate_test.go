package parser

import (
	"fmt"
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
