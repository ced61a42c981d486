package logformat

import (
	"errors"
	"strings"
	"testing"
)

// mainDirective is the log_format of the nginx.conf nginx's packages install, with the
// timings the generator writes, as it is in that file: three pieces over three lines.
const mainDirective = `log_format  main  '$remote_addr - $remote_user [$time_local] "$request" '
                  '$status $body_bytes_sent "$http_referer" '
                  '"$http_user_agent" $request_time $upstream_response_time';
`

func TestParseNginxValue(t *testing.T) {
	mainText := NginxPresets["combined"] + ` $request_time $upstream_response_time`
	for _, c := range []struct {
		name     string
		value    string
		esc      Escape
		declared bool
		// want: the format string, the directive's name, the escaping, a JSON template.
		text, dname string
		wantEsc     Escape
		json        bool
	}{
		{"directive", mainDirective, 0, false, mainText, "main", EscapeDefault, false},
		{"directive, log_format_escape agrees", mainDirective, EscapeDefault, true, mainText, "main", EscapeDefault, false},
		{"directive without ;, comments, tabs", "\tlog_format main # the packages' format\n\t'$remote_addr - $remote_user [$time_local] \"$request\" '\n" +
			"  '$status $body_bytes_sent \"$http_referer\" ' # referer\n  '\"$http_user_agent\" $request_time $upstream_response_time'\n", 0, false, mainText, "main", EscapeDefault, false},
		{"directive after a comment", "# the access log, as nginx.conf has it\n  # (main)\n" + mainDirective, 0, false, mainText, "main", EscapeDefault, false},
		{"double quotes and nginx's escapes", `log_format q "\"$request\"\t$status" '\'$uri\' \$x \\ \r';`, 0, false, "\"$request\"\t$status'$uri' \\$x \\ \r", "q", EscapeDefault, false},
		{"unquoted pieces", `log_format bare $status ' ' ${request_time}ms;`, 0, false, "$status ${request_time}ms", "bare", EscapeDefault, false},
		{"escape=json template", "log_format json escape=json\n  '{\"status\":\"$status\",'\n  '\"ua\":\"$http_user_agent\"}';\n", 0, false,
			`{"status":"$status","ua":"$http_user_agent"}`, "json", EscapeJSON, true},
		{"quoted escape=", `log_format n 'escape=none' '$status';`, EscapeNone, true, "$status", "n", EscapeNone, false},
		{"a space the quotes keep", `log_format sp '$status ';`, 0, false, "$status ", "sp", EscapeDefault, false},
		{"format string, a block's newline", "$remote_addr $status\n", 0, false, "$remote_addr $status", "", EscapeDefault, false},
		{"format string, declared", "  $remote_addr $status  ", EscapeJSON, true, "$remote_addr $status", "", EscapeJSON, false},
		{"JSON template, undeclared: read as text, both escapings", `{"status":"$status"}` + "\n", 0, false, `{"status":"$status"}`, "", EscapeEither, false},
		{"preset, a block's newline", "combined\n", 0, false, NginxPresets["combined"], "", EscapeDefault, false},
		{"a variable named log_format", "$log_format $status", 0, false, "$log_format $status", "", EscapeDefault, false},
		// nginx reads each string's variables apart: a name ends with its string, and the
		// format string says so in braces.
		{"a variable ending its string", "log_format s '$remote_addr $status'\n  '_$request_time' ' $status' '_x';",
			0, false, "$remote_addr ${status}_$request_time ${status}_x", "s", EscapeDefault, false},
		{"a variable ending its string, then text", `log_format s '$status' ' x';`, 0, false, "$status x", "s", EscapeDefault, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseNginxValue(c.value, c.esc, c.declared)
			if err != nil {
				t.Fatal(err)
			}
			if f.Text != c.text || f.Directive != c.dname || f.Escape != c.wantEsc || f.JSON() != c.json {
				t.Errorf("text %q name %q escape %s json %v; want %q %q %s %v", f.Text, f.Directive, f.Escape, f.JSON(), c.text, c.dname, c.wantEsc, c.json)
			}
			if c.dname != "" && f.Describe() != c.dname {
				t.Errorf("described as %q, want the directive's name", f.Describe())
			}
		})
	}
}

func TestParseNginxValueErrors(t *testing.T) {
	for _, c := range []struct {
		name     string
		value    string
		esc      Escape
		declared bool
		// at is the text the error points at (it starts there), msg a part of its message.
		at, msg string
	}{
		{"unclosed quote", "log_format main '$status '\n  '\"$request\";", 0, false, `'"$request";`, "' opened here is not closed"},
		{"quote glued to a piece", "log_format main '$status\n  '$request';", 0, false, `$request';`, "after a closing '"},
		{"unknown escape", "log_format main escape=html '$status';", 0, false, "escape=html", "escape=html is not one of nginx's escape= values (default, json, none)"},
		{"no format string", "log_format main escape=json;", 0, false, ";", "has no format string"},
		{"no format string, no ;", "log_format main\n", 0, false, "\n", "has no format string"},
		{"no name", "log_format ;", 0, false, " ;", "has no name"},
		{"second directive after a comment", "# first\nlog_format a '$status';\nlog_format b '$uri';", 0, false, "log_format b", "text after the directive's ';'"},
		{"second directive", "log_format a '$status';\nlog_format b '$uri';", 0, false, "log_format b", "text after the directive's ';'"},
		{"second directive, the first without its ;", "log_format a '$remote_addr $status'\nlog_format b '$status';", 0, false, "log_format b", "the ';' ending the first is missing"},
		{"access_log after it", "log_format a '$status'; access_log /x a;", 0, false, "access_log", "text after"},
		{"a block", "log_format a '$status' {", 0, false, "{", "no block"},
		{"text glued to a quote", "log_format a '$status'x;", 0, false, "x;", "after a closing '"},
		{"combined", "log_format combined '$status';", 0, false, "combined", "nginx's own format"},
		{"contradicting log_format_escape", "log_format j escape=json '{\"s\":\"$status\"}';", EscapeDefault, true, "escape=json", "log_format_escape: default contradicts the directive's escape=json"},
		{"log_format_escape against nginx's default", "log_format j '$status';", EscapeJSON, true, "'$status'", "escape=default (nginx's when the directive has no escape=)"},
		{"format error mapped into the directive", "log_format a '$status '\n  '$ x';", 0, false, "$ x'", "a $ must start a variable"},
		{"format error after an escape", `log_format a "\"$status\" ${x";`, 0, false, `${x";`, "closing }"},
		{"a line break escaped", `log_format a '$status\n$uri';`, 0, false, `\n$uri`, "the format has a line break"},
		{"format string error past leading space", "\n  $status $", 0, false, "$", "a $ must start a variable"},
		{"a $ ending its string", `log_format a '$status $' 'uri';`, 0, false, `$' 'uri'`, "a $ must start a variable"},
		{"a brace closed in the next string", `log_format a '$status ${uri' '}';`, 0, false, `${uri'`, "closing }"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseNginxValue(c.value, c.esc, c.declared)
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v, want an *Error", err)
			}
			if !strings.HasPrefix(c.value[fe.Offset:], c.at) || !strings.Contains(fe.Msg, c.msg) {
				t.Errorf("error %q at %q; want %q at %q", fe.Msg, c.value[fe.Offset:], c.msg, c.at)
			}
		})
	}
}
