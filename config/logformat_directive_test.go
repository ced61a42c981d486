package config

import (
	"strings"
	"testing"
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
		{"only space", `
  - name: web
    path: /a
    log_format: |2+

`, `f.yaml:4: input "web": log_format: is empty; give a preset (combined, main, upstreaminfo) or the format string as the server's configuration has it`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte("inputs:"+c.inputs+"rules: [{name: r, match: x}]\n"), "f.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error:\n%v\nwant it to hold:\n%s", err, c.want)
			}
		})
	}
}
