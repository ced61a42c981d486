package config

import (
	"os"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config/logformat"
)

// TestLogFormatDirectiveErrors: a log_format directive that is wrong is an error at the
// file's line of the fault in a YAML block (at the key's line otherwise), naming the input
// and log_format, and showing where in the value.
func TestLogFormatDirectiveErrors(t *testing.T) {
	for _, c := range []struct {
		name, inputs, want string
	}{
		{"unclosed quote", `
  - name: web
    path: /a
    log_format: |
      log_format main '$remote_addr [$time_local] '
                      '"$request" $status;
`, `f.yaml:6: input "web": log_format: the ' opened here is not closed, in "…te_addr [$time_local] '\n                ⟨here⟩'\"$request\" $status;\n"`},
		{"unknown escape", `
  - name: web
    path: /a
    log_format: |
      log_format j escape=jsn
          '{"s":"$status"}';
`, `f.yaml:5: input "web": log_format: escape=jsn is not one of nginx's escape= values (default, json, none), in "log_format j ⟨here⟩escape=jsn\n    '{\"s\":\"$status\"}';\n"`},
		{"log_format_escape contradicting escape=", `
  - name: web
    path: /a
    log_format_escape: default
    log_format: "log_format j escape=json '{\"s\":\"$status\"}';"
`, `f.yaml:5: input "web": log_format: log_format_escape: default contradicts the directive's escape=json, which is what nginx writes its lines with; drop log_format_escape:, in "log_format j ⟨here⟩escape=json '{\"s\":\"$status\"}';"`},
		{"two directives", `
  - name: web
    path: /a
    log_format: |
      log_format a '$status';
      log_format b '$uri';
`, `f.yaml:6: input "web": log_format: text after the directive's ';': give one log_format directive, in "log_format a '$status';\n⟨here⟩log_format b '$uri';\n"`},
		{"a format error in the second piece", `
  - {name: web, path: /a, log_format: "log_format a '$status ' '${uri';"}
`, `f.yaml:2: input "web": log_format: the closing } of "${uri" is missing, in "log_format a '$status ' '⟨here⟩${uri';"`},
		{"a directive without a variable", `
  - {name: web, path: /a, log_format: "log_format a 'x';"}
`, `f.yaml:2: input "web": log_format: the format has no variable, so there is nothing to capture, in "log_format a '⟨here⟩x';"`},
		{"the pieces without the keyword", `
  - name: web
    path: /a
    log_format: |
      '$remote_addr [$time_local] '
      '"$request" $status'
`, `f.yaml:5: input "web": log_format: the format has a line break, which no line of a log has`},
		{"a directive after a comment, wrong", `
  - name: web
    path: /a
    log_format: |
      # nginx.conf
      log_format main '$remote_addr [$time_local] '
                      '"$request" $status;
`, `f.yaml:7: input "web": log_format: the ' opened here is not closed`},
		{"the access_log directive", `
  - {name: web, path: /a, log_format: "access_log /var/log/nginx/access.log main;"}
`, `f.yaml:2: input "web": log_format: this is nginx's access_log directive, which names the format its log is written in (access_log PATH NAME): give the log_format directive of that name, in "⟨here⟩access_log /var/log/nginx/access.log mai…"`},
		{"the access_log directive with a variable", `
  - {name: web, path: /a, log_format: "access_log /var/log/nginx/access.log main if=$loggable;"}
`, `f.yaml:2: input "web": log_format: this is nginx's access_log directive, which names the format its log is written in (access_log PATH NAME): give the log_format directive of that name, in "⟨here⟩access_log /var/log/nginx/access.log mai…"`},
		{"the access_log directive among candidates", `
  - {name: web, path: /a, log_format: [combined, "access_log /var/log/nginx/access.log main;"]}
`, `f.yaml:2: input "web": log_format: this is nginx's access_log directive`},
		{"Apache's LogFormat directive", `
  - {name: web, path: /a, apache_log_format: 'LogFormat "%h %l %u %t \"%r\" %>s %b" common'}
`, `f.yaml:2: input "web": apache_log_format: this is Apache's LogFormat directive, which names a format: give only its format string, the text between its quotes, in "⟨here⟩LogFormat \"%h %l %u %t \\\"%r\\\" %>s %b\" co…"`},
		{"Apache's LogFormat directive among candidates", `
  - {name: web, path: /a, log_format: [combined, 'LogFormat "%h %l %u %t \"%r\" %>s %b" common']}
`, `f.yaml:2: input "web": log_format: this is Apache's LogFormat directive`},
		{"Apache's CustomLog directive with its format", `
  - {name: web, path: /a, apache_log_format: 'CustomLog logs/access_log "%h %l %u %t \"%r\" %>s %b"'}
`, `f.yaml:2: input "web": apache_log_format: this is Apache's CustomLog directive, which names the log file and its format: give only its format string, the text between its quotes (or the LogFormat of the nickname it names), in "⟨here⟩CustomLog logs/access_log \"%h %l %u %t \\…"`},
		{"Apache's CustomLog directive among candidates", `
  - {name: web, path: /a, log_format: [combined, 'CustomLog "|/usr/bin/rotatelogs /var/log/access.%Y 86400" "%h %>s"']}
`, `f.yaml:2: input "web": log_format: this is Apache's CustomLog directive`},
		{"only space", `
  - name: web
    path: /a
    log_format: |2+

`, `f.yaml:4: input "web": log_format: is empty; give a preset (combined, combined_request_time, combined_upstream_time, main, main_request_time, main_upstream_time, upstreaminfo) or the format string as the server's configuration has it`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte("inputs:"+c.inputs+"rules: [{name: r, match: x}]\n"), "f.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error:\n%v\nwant it to hold:\n%s", err, c.want)
			}
		})
	}
}

// TestExampleJSONDirective: example-rules-json.yaml's input may give the log_format
// directive its comment shows, pasted as it is in a YAML block, instead of format: json.
func TestExampleJSONDirective(t *testing.T) {
	data, err := os.ReadFile("../example-rules-json.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var directive []string
	for _, l := range strings.Split(string(data), "\n") {
		l, ok := strings.CutPrefix(l, "#   ")
		if ok && (strings.HasPrefix(l, "log_format ") || len(directive) > 0 && !strings.HasSuffix(directive[len(directive)-1], ";")) {
			directive = append(directive, "      "+l)
		}
	}
	if len(directive) == 0 {
		t.Fatal("example-rules-json.yaml's comment shows no log_format directive")
	}
	pasted := strings.Replace(string(data), "    format: json\n", "    log_format: |\n"+strings.Join(directive, "\n")+"\n", 1)
	c, err := Parse([]byte(pasted), "example-rules-json.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, pasted)
	}
	f := c.Inputs[0].LogFormat
	if f == nil || f.Directive != "json" || f.Escape != logformat.EscapeJSON || !f.JSON() || len(f.Fields) != 12 || c.Inputs[0].Format != FormatJSON {
		t.Errorf("the pasted directive reads as %+v", f)
	}
	plain := mustParseFile(t, "../example-rules-json.yaml")
	for i, r := range c.Rules {
		if p := plain.Rules[i]; r.Name != p.Name || len(r.Fields) != len(p.Fields) {
			t.Errorf("rule %s reads %d fields, %d with format: json", r.Name, len(r.Fields), len(p.Fields))
		}
	}
}
