package logformat

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/parser/fastmatch"
)

// FuzzLogFormat compiles any text as an nginx format (with each escaping) and as an Apache
// one: it must not panic, the work must stay proportional to the text (the regex a bounded
// multiple of it), and a format that compiles must give a regex of the usual log shape:
// one fastmatch runs, agreeing with regexp on the line given, with one uniquely named
// group per capture; or a JSON template with at least one field.
func FuzzLogFormat(f *testing.F) {
	for _, p := range []string{"combined", "main", "upstreaminfo", "common"} {
		f.Add(p, uint8(0), false, "")
	}
	f.Add(NginxPresets["upstreaminfo"], uint8(0), false, `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "ua" 90 0.002 [a] [b] 10.1.0.5:8080, 10.1.0.6:80 1, 2 0.001, 0.002 502, 200 x`)
	f.Add(`$remote_addr "$http_user_agent" ${status}x$msec`, uint8(1), false, `1.2.3.4 "a \"b\" \u0001" 200x1.5`)
	f.Add(`{"t":"$time_iso8601","r":{"s":$status,"a":["$uri"]},"m":"$a $b"}`, uint8(1), false, "")
	f.Add(`%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" %{ms}T %U%q %{X}^ti`, uint8(0), true, `::1 - - [x] "GET / HTTP/1.1" 200 - "-" 5 /a?b c`)
	// Directives of one letter named apart (the original and the final request, a
	// condition), one written twice, and a clash.
	f.Add(`%h %s %>s %!200,304s %<U %>U %{%d}t %{%D}t %h`, uint8(0), true, `::1 302 200 - /a /b 05 11/05/24 ::1`)
	f.Add("$a$b", uint8(2), false, "")
	f.Add("${a", uint8(0), false, "")
	f.Add("%{a", uint8(0), true, "")
	f.Fuzz(func(t *testing.T, text string, escape uint8, apache bool, line string) {
		var fm *Format
		var err error
		if apache {
			ApachePasted(strings.TrimSpace(text)) // any text: no panic
			fm, err = ParseApache(text)
		} else {
			fm, err = ParseNginx(text, []Escape{EscapeDefault, EscapeJSON, EscapeNone, EscapeEither}[escape%4])
		}
		if err != nil {
			var fe *Error
			if !errors.As(err, &fe) || fe.Offset < 0 || fe.Offset > max(len(text), maxFormat) {
				t.Fatalf("error %v is not an *Error at a byte of the text", err)
			}
			return
		}
		names := fm.Names()
		slices.Sort(names)
		if len(slices.Compact(names)) != len(fm.Names()) {
			t.Fatalf("capture names repeat: %v", fm.Names())
		}
		if fm.JSON() {
			if len(fm.Fields) == 0 {
				t.Fatal("a JSON template without a field compiled")
			}
			checkTemplateLine(t, fm)
			return
		}
		// Each byte of text adds a bounded piece of regex: a literal byte at most 4 bytes
		// quoted, a variable its name and a value's regex.
		if len(fm.Regex) > 64*len(fm.Text)+64 {
			t.Fatalf("a format of %d bytes gave a regex of %d", len(fm.Text), len(fm.Regex))
		}
		re, err := regexp.Compile(fm.Regex)
		if err != nil {
			t.Fatalf("regex %s: %v", fm.Regex, err)
		}
		if re.NumSubexp() != len(fm.Captures) {
			t.Fatalf("regex %s has %d groups for %d captures", fm.Regex, re.NumSubexp(), len(fm.Captures))
		}
		for k, c := range fm.Captures {
			if re.SubexpNames()[k+1] != c.Name {
				t.Fatalf("group %d is %q, capture %q", k+1, re.SubexpNames()[k+1], c.Name)
			}
		}
		m, err := fastmatch.Compile(fm.Regex)
		if errors.Is(err, fastmatch.ErrUnsupported) && len(fm.Captures) > 100 {
			return // past fastmatch's program size: regexp runs it, correctly
		}
		if err != nil {
			t.Fatalf("fastmatch does not run %s: %v", fm.Regex, err)
		}
		caps := make([]int, 2*(re.NumSubexp()+1))
		got := m.Match([]byte(line), caps)
		want := re.FindStringSubmatchIndex(line)
		if got != (want != nil) || got && !slices.Equal(caps, want) {
			t.Fatalf("regex %s on %q: fastmatch %v %v, regexp %v", fm.Regex, line, got, caps, want)
		}
	})
}

// nginxVar is a variable of a format as nginx reads it, for writing lines.
var nginxVar = regexp.MustCompile(`\$(?:\{[A-Za-z0-9_]*\}|[A-Za-z0-9_]+)`)

// checkTemplateLine holds a JSON template to encoding/json: the line nginx writes with
// each variable's value a number of its own (a string in quotes, a number out of them) is
// JSON, and each field's path leads encoding/json to its variable's value there.
func checkTemplateLine(t *testing.T, fm *Format) {
	values := map[string]int{}
	line := nginxVar.ReplaceAllStringFunc(fm.Text, func(v string) string {
		name := strings.ToLower(strings.Trim(v, "${}"))
		if _, ok := values[name]; !ok {
			values[name] = len(values) + 1
		}
		return strconv.Itoa(values[name])
	})
	var doc any
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		t.Fatalf("template %q compiled, but nginx writes %q, which encoding/json refuses: %v", fm.Text, line, err)
	}
	for _, fl := range fm.Fields {
		v := doc
		for _, key := range fl.Path {
			obj, _ := v.(map[string]any)
			v = obj[key]
		}
		if want := values[fl.Name]; v != strconv.Itoa(want) && v != float64(want) {
			t.Errorf("template %q, line %q: encoding/json finds %v at %q, the field of %s (%d)", fm.Text, line, v, fl.Path, fl.Var, want)
		}
	}
}

// FuzzNginxDirective reads any text as the value of log_format: it must not panic, and an
// error points at a byte of the value. And a format string quoted into a directive the way
// nginx.conf would have it, split into two pieces each in its own quotes (not within a
// variable, whose name nginx reads in one string), must read as the format string itself
// with the directive's escape=.
func FuzzNginxDirective(f *testing.F) {
	f.Add(mainDirective, uint8(0), false, NginxPresets["main"], uint16(30), false)
	f.Add("log_format j escape=json '{\"s\":$status,'\n  \"\\\"u\\\":\\\"$uri\\\"}\";", uint8(1), true, `{"s":"$status","a":"$http_user_agent"}`, uint16(8), true)
	f.Add("log_format a '$status' # c\n;", uint8(0), false, `$status \"'\\ $uri`, uint16(9), false)
	f.Add("log_format a \"$status", uint8(2), false, "$status ", uint16(3), true)
	f.Add("log_format x ${a} '{' ;#", uint8(3), true, "${a", uint16(1), false)
	f.Fuzz(func(t *testing.T, value string, escape uint8, declared bool, text string, split uint16, double bool) {
		esc := Escape(escape % 3)
		if _, err := ParseNginxValue(value, esc, declared); err != nil {
			var fe *Error
			if !errors.As(err, &fe) || fe.Offset < 0 || fe.Offset > len(value) {
				t.Fatalf("value %q: error %v is not an *Error at a byte of the value", value, err)
			}
		}
		PastedArguments(strings.TrimSpace(value)) // any text: no panic
		at := int(split) % (len(text) + 1)
		toks, err := nginxTokens(text)
		if err != nil {
			at = 0
		}
		for _, tok := range toks {
			if tok.v != nil && tok.at < at && at < tok.at+len(tok.v.text) {
				at = tok.at
			}
		}
		directive := fmt.Sprintf("log_format f escape=%s %s %s;", esc, nginxQuote(text[:at], double), nginxQuote(text[at:], !double))
		// The directive's arguments, pasted without its keyword, are taken for pasted.
		if p, ok := PastedArguments(strings.TrimPrefix(directive, "log_format ")); !ok || p.Name != "f" || !p.Semicolon {
			t.Fatalf("%s without its keyword: %+v, %v; want pasted, named f, with its ';'", directive, p, ok)
		}
		want, wantErr := ParseNginx(text, esc)
		got, err := ParseNginxValue(directive, esc, true)
		switch {
		case (err == nil) != (wantErr == nil):
			t.Fatalf("%s: %v; the format string alone: %v", directive, err, wantErr)
		case err != nil:
			if err.(*Error).Msg != wantErr.(*Error).Msg {
				t.Fatalf("%s: %v; the format string alone: %v", directive, err, wantErr)
			}
		case got.Text != text || got.Directive != "f" || got.Regex != want.Regex || len(got.Fields) != len(want.Fields):
			t.Fatalf("%s: read as %q (name %q), regex %s; want %q, %s", directive, got.Text, got.Directive, got.Regex, text, want.Regex)
		}
	})
}

// nginxQuote writes s as an nginx.conf string in single or double quotes.
func nginxQuote(s string, double bool) string {
	q := `'`
	if double {
		q = `"`
	}
	return q + strings.NewReplacer(`\`, `\\`, q, `\`+q).Replace(s) + q
}
