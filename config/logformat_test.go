package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config/logformat"
)

func TestRulesOnALogFormat(t *testing.T) {
	c, err := Parse([]byte(`
inputs:
  - {name: web, path: /a, log_format: combined}
  - {name: json, path: /b, log_format: '{"t":"$msec","r":"$request","s":$status}', log_format_escape: json}
  - {name: iso, path: /c, log_format: '$time_iso8601 $status'}
rules:
  - name: requests
    inputs: [web]
    labels: {method: '${request_method}', class: '${status_class}'}
    where: {uri: '^/api'}
    value: body_bytes_sent
    timestamp: {capture: time_local}
  - name: own_regex
    inputs: [web]
    match: '" (?P<code>[0-9]+) '
    labels: {code: '${code}'}
  - name: again
    inputs: [web]
  - name: from_json
    inputs: [json]
    labels: {uri: '${uri}'}
    timestamp: {capture: msec}
  - name: fields_too
    inputs: [json]
    fields: {s: s}
  - name: iso
    inputs: [iso]
    timestamp: {capture: time_iso8601}
  - name: layout_given
    inputs: [iso]
    timestamp: {capture: time_iso8601, layout: '2006-01-02T15:04:05Z07:00'}
`), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rule := func(name string) *Rule {
		i := slices.IndexFunc(c.Rules, func(r *Rule) bool { return r.Name == name })
		return c.Rules[i]
	}
	r := rule("requests")
	if r.LogFormat == nil || r.LogFormat.Preset != "combined" || r.Match != "" || r.Expanded != r.LogFormat.Regex {
		t.Fatalf("requests: format %+v, match %q, expanded %q", r.LogFormat, r.Match, r.Expanded)
	}
	if rule("again").Regexp != r.Regexp {
		t.Error("two rules of one format compiled its regex twice")
	}
	n := r.Regexp.NumSubexp()
	if r.Read() != n || r.Captures() != n+len(r.Derived) || len(r.Derived) != 5 {
		t.Fatalf("captures: read %d, all %d, derived %v (regex groups %d)", r.Read(), r.Captures(), r.Derived, n)
	}
	request := r.Regexp.SubexpIndex("request")
	for _, d := range r.Derived {
		want := request
		if d.Name == "status_class" {
			want = r.Regexp.SubexpIndex("status")
		}
		if d.From != want {
			t.Errorf("derived %s from capture %d, want %d", d.Name, d.From, want)
		}
	}
	// Derived captures are numbered after the groups, in the format's order.
	derivedIndex := func(r *Rule, name string) int {
		return r.Read() + 1 + slices.IndexFunc(r.Derived, func(d Derived) bool { return d.Name == name })
	}
	if got := r.Labels[0].Template[0].Capture; got != derivedIndex(r, "status_class") {
		t.Errorf("label class reads capture %d, want status_class at %d", got, derivedIndex(r, "status_class"))
	}
	if got := r.Where[0].Capture; got != derivedIndex(r, "uri") {
		t.Errorf("where uri reads capture %d, want %d", got, derivedIndex(r, "uri"))
	}
	if ts := r.Timestamp; ts.Layout != logformat.LayoutTimeLocal || ts.Unix {
		t.Errorf("time_local: layout %q unix %v", ts.Layout, ts.Unix)
	}
	if o := rule("own_regex"); o.LogFormat != nil || o.Match == "" || o.Regexp.SubexpIndex("code") != 1 {
		t.Errorf("a rule with match: on a format input reads its own regex: %+v", o)
	}
	j := rule("from_json")
	if j.Regexp != nil || j.Format != FormatJSON || len(j.Fields) != 3 || j.Fields[0].Capture != "msec" {
		t.Fatalf("JSON template rule: regexp %v format %v fields %+v", j.Regexp, j.Format, j.Fields)
	}
	if got := j.Labels[0].Template[0].Capture; got != derivedIndex(j, "uri") {
		t.Errorf("JSON label uri reads capture %d, want %d", got, derivedIndex(j, "uri"))
	}
	if ts := j.Timestamp; !ts.Unix || ts.Layout != "" {
		t.Errorf("msec: layout %q unix %v", ts.Layout, ts.Unix)
	}
	if f := rule("fields_too"); f.Format != FormatJSON || f.LogFormat != nil {
		t.Errorf("a fields rule on a JSON template input: format %v, log format %v", f.Format, f.LogFormat)
	}
	if c.Inputs[1].Format != FormatJSON || c.Inputs[0].Format != FormatText {
		t.Errorf("input formats %v %v", c.Inputs[0].Format, c.Inputs[1].Format)
	}
	if ts := rule("iso").Timestamp; ts.Layout != logformat.LayoutISO8601 {
		t.Errorf("time_iso8601: layout %q", ts.Layout)
	}
	if ts := rule("layout_given").Timestamp; ts.Layout != "2006-01-02T15:04:05Z07:00" {
		t.Errorf("a layout given is kept: %q", ts.Layout)
	}
}

// TestLogFormatEscapeFingerprint: the same regex with another escaping reads other
// values, so the rule's windows cannot be kept across the change.
func TestLogFormatEscapeFingerprint(t *testing.T) {
	a, b := fingerprintOf(t, fingerprintLogFormat("default")), fingerprintOf(t, fingerprintLogFormat("none"))
	if a == b {
		t.Error("escape=default and escape=none give one fingerprint")
	}
}

// A format under the length cap whose regex Go's regexp refuses (too deeply nested) is a
// problem of its input, named by file, line and key, and not a panic; the rule reading it
// gets no second message of its own.
func TestLogFormatRegexRefusedAtLoad(t *testing.T) {
	for _, c := range []struct {
		key, variable string
	}{
		{"log_format", "$v%d"},
		{"apache_log_format", "%%{X%d}i"},
	} {
		t.Run(c.key, func(t *testing.T) {
			vars := make([]string, 500)
			for i := range vars {
				vars[i] = fmt.Sprintf(c.variable, i)
			}
			path := filepath.Join(t.TempDir(), "rules.yaml")
			text := fmt.Sprintf("inputs:\n  - name: x\n    path: /a\n    %s: '%s'\nrules:\n  - name: r\n    help: h\n", c.key, strings.Join(vars, " "))
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(path)
			want := path + `:4: input "x": ` + c.key + `: the format ends with 499 variables each after a space`
			if cfg != nil || err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Load: %v; want one problem starting %q", err, want)
			}
		})
	}
}

// TestLogFormatRefusedUnnamedInput: the rules reading an input without a name, whose log
// format is refused, get no message of their own either: they were told to give their
// inputs a log format, as the input was named by its path only after its format was read.
func TestLogFormatRefusedUnnamedInput(t *testing.T) {
	for _, c := range []struct{ name, input string }{
		{"path", "path: /a.log"},
		{"syslog", "syslog: 'udp://127.0.0.1:5140'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			vars := make([]string, 500)
			for i := range vars {
				vars[i] = fmt.Sprintf("$v%d", i)
			}
			text := "inputs:\n  - " + c.input + "\n    log_format: '" + strings.Join(vars, " ") + "'\nrules:\n  - name: r\n    labels: {a: '${v1}'}\n"
			_, err := Parse([]byte(text), "rules.yaml")
			if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "rules.yaml:3: input #1: log_format: ") {
				t.Errorf("got %v, want only the problem of the log format", err)
			}
		})
	}
}

// TestPastedFormatWarnings: a format string that reads as a log_format directive's
// arguments after its keyword, as nginx's configuration reader splits them (quoted strings,
// perhaps the format's name and escape= before them, perhaps the ';' after them), is warned
// of at the format's line, where --config.check without --sample said OK and every line went
// unmatched. nginx writes a quote or a ';' of a format literally, so a format that only has
// some (a quoted field, a piece that is not quoted, a double-quoted run with no other sign)
// is not warned of: a warning that is sometimes wrong is one users learn to ignore.
func TestPastedFormatWarnings(t *testing.T) {
	const combined = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent`
	const prefix = `c.yaml:1: warning: input "web": log_format: the format is `
	for _, c := range []struct {
		name, format string
		list         bool   // given as the second of a list of candidates
		want         string // "" for no warning
	}{
		{"the format", combined, false, ""},
		{"the directive", `log_format main '` + combined + `';`, false, ""},
		{"a ';' inside", `$status;$request_time`, false, ""},
		{"a ';' at the end of a piece not quoted", combined + `;`, false, ""},
		{"quoted fields", `"$a" "$status"`, false, ""},
		{"quoted fields as combined's tail", `"$status" "$http_user_agent"`, false, ""},
		{"a single-quoted field, then a variable", `'$remote_user' $status`, false, ""},
		{"a word, a double-quoted field, then a variable", `upstream "$request" $status`, false, ""},
		{"a word and a double-quoted field", `upstream "$status"`, false, ""},
		{"a quote glued to text", `'$remote_user'x $status`, false, ""},
		{"an unclosed quote", `'$remote_user $status`, false, ""},
		{"a quoted field, then text with a ';'", `"$request" $status;`, false, ""},
		{"a JSON template", `{"s":"$status"}`, false, ""},
		{"a comment's #", `# '$status'`, false, ""},
		{"a ';' inside the last quotes", `"$status;"`, false, ""},

		{"in its quotes", `'` + combined + `'`, false,
			prefix + `in nginx.conf's quotes ('...'), as a log_format directive's arguments: pasted from there, it fits no line nginx writes; give the directive whole (log_format NAME '...';), or only the text between its quotes`},
		{"in its quotes, with the ;", `'` + combined + `';`, false,
			prefix + `in nginx.conf's quotes ('...') and ends with the directive's ';', as a log_format directive's arguments: pasted from there`},
		{"the pieces of a directive on one line", `'$remote_addr [$time_local] ' '$status';`, false,
			prefix + `in nginx.conf's quotes ('...') and ends with the directive's ';'`},
		{"the pieces without the ;", `'$remote_addr [$time_local] ' '"$request" $status'`, false,
			prefix + `in nginx.conf's quotes ('...'), as`},
		{"double-quoted pieces with the ;", `"$remote_addr [$time_local] " "$status";`, false,
			prefix + `in nginx.conf's quotes ("...") and ends with the directive's ';'`},
		{"the other quote inside a piece", `'$remote_addr "$request"' "'$status'";`, false,
			prefix + `in nginx.conf's quotes ('...') and ends with the directive's ';'`},
		{"the directive without its keyword", `main '` + combined + `';`, false,
			prefix + `in nginx.conf's quotes ('...') after the format's name (main) and ends with the directive's ';'`},
		{"the name and pieces without the ;", `main '` + combined + `'`, false,
			prefix + `in nginx.conf's quotes ('...') after the format's name (main), as`},
		{"the name and escape=", `main escape=json '{"s":"$status"}';`, false,
			prefix + `in nginx.conf's quotes ('...') after the format's name (main) and ends with the directive's ';'`},
		{"space before the ;", `'$status' ;`, false,
			prefix + `in nginx.conf's quotes ('...') and ends with the directive's ';'`},
		{"the name and a double-quoted string with quotes not escaped", `main "` + combined + `"`, false, ""},
		{"the name and a double-quoted string of several fields", `main "$remote_addr [$time_local] $status"`, false,
			prefix + `in nginx.conf's quotes ("...") after the format's name (main), as`},
		{"double-quoted, its quotes escaped", `"$remote_addr \"$request\" $status"`, false,
			prefix + `in nginx.conf's quotes ("...") with its own quotes escaped (\"), as a log_format directive's arguments: pasted from there, it fits no line nginx writes; give the directive whole (log_format NAME "...";), or only the text between its quotes, each \" made "`},
		{"the name and a double-quoted string with escaped quotes", `main "` + strings.ReplaceAll(combined, `"`, `\"`) + `"`, false,
			prefix + `in nginx.conf's quotes ("...") after the format's name (main) with its own quotes escaped (\"), as`},
		{"among candidates", `'` + combined + `';`, true,
			prefix + `in nginx.conf's quotes ('...') and ends with the directive's ';'`},
	} {
		t.Run(c.name, func(t *testing.T) {
			format := strconv.Quote(c.format)
			if c.list {
				format = "[combined, " + format + "]"
			}
			text := fmt.Sprintf("inputs: [{name: web, path: /a, log_format: %s}]\nrules:\n  - {name: r, labels: {s: '${status}'}}\n", format)
			parseWarned(t, "c.yaml", text, c.want)
		})
	}
}

// TestApachePastedWarnings: an Apache format given with httpd.conf's quotes around it
// (its own quotes escaped inside, perhaps the nickname after it), as LogFormat's
// arguments are, fits no line Apache writes and is warned of at its line; a format with
// quoted fields, written as Apache writes them, is not.
func TestApachePastedWarnings(t *testing.T) {
	const common = `%h %l %u %t \"%r\" %>s %b`
	const prefix = `c.yaml:1: warning: input "web": apache_log_format: the format is in httpd.conf's quotes ("...")`
	for _, c := range []struct{ name, format, want string }{
		{"the format", `%h %l %u %t "%r" %>s %b`, ""},
		{"the format, its quotes escaped", common, ""},
		{"a quoted field first", `"%r" %>s`, ""},
		{"quoted fields only", `"%r" "%>s"`, ""},
		{"in its quotes", `"` + common + `"`, prefix + `, as LogFormat's format: pasted from there, it fits no line Apache writes; give only the text between its quotes`},
		{"in its quotes with the nickname", `"` + common + `" common`, prefix + ` with the format's nickname after them (common), as LogFormat's format`},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := fmt.Sprintf("inputs: [{name: web, path: /a, apache_log_format: %s}]\nrules:\n  - {name: r, labels: {s: '${s}'}}\n", strconv.Quote(c.format))
			parseWarned(t, "c.yaml", text, c.want)
		})
	}
}

// TestApacheClashWarnings: a directive that writes another value than an earlier one of
// its capture's name (strftime formats that differ in case) is read but not captured,
// and warned of by its offset, at its line, as one format and as a candidate; directives
// named apart (the original and the final status), or written twice alike, are not.
func TestApacheClashWarnings(t *testing.T) {
	const clash = `warning: input "web": %s: %%{%%D}t at byte 10 names the capture t__d, as %%{%%d}t before it does, though it writes another value: ` +
		`it is read but not captured, and a rule reading t__d reads %%{%%d}t; in "%%h %%{%%d}t ⟨here⟩%%{%%D}t %%>s"`
	for _, c := range []struct{ name, input, want string }{
		{"original and final status", `apache_log_format: '%h %s %>s'`, ""},
		{"a directive twice", `apache_log_format: '%h %>s %h'`, ""},
		{"a clash", `apache_log_format: '%h %{%d}t %{%D}t %>s'`, "c.yaml:4: " + fmt.Sprintf(clash, "apache_log_format")},
		{"a clash in a block", "apache_log_format: |\n      %h %{%d}t %{%D}t %>s", "c.yaml:5: " + fmt.Sprintf(clash, "apache_log_format")},
		{"a clash of a candidate", `log_format: [combined, '%h %{%d}t %{%D}t %>s']`, "c.yaml:4: " + fmt.Sprintf(clash, "log_format")},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := fmt.Sprintf("inputs:\n  - name: web\n    path: /a\n    %s\nrules:\n  - {name: r, labels: {h: '${h}'}}\n", c.input)
			parseWarned(t, "c.yaml", text, c.want)
		})
	}
}

// TestPresetMistakes: a preset given where it is not one (a candidate's name as the one
// format, auto in a list, Apache's prefix under apache_log_format) is an error that says
// where it is one, as the user who wrote it took it for a preset.
func TestPresetMistakes(t *testing.T) {
	for _, c := range []struct{ name, input, want string }{
		{"json alone", "log_format: json",
			`c.yaml:1: input "web": log_format: "json" is not a preset (combined, combined_request_time, combined_upstream_time, main, main_request_time, main_upstream_time, upstreaminfo), nor a format string (which has variables); ` +
				`json is a candidate: give it in a list (log_format: [json]), or read the JSON lines by fields: (format: json)`},
		{"an Apache candidate alone", "log_format: apache_combined",
			`c.yaml:1: input "web": log_format: "apache_combined" is not a preset (combined, combined_request_time, combined_upstream_time, main, main_request_time, main_upstream_time, upstreaminfo), nor a format string (which has variables); ` +
				`apache_combined is a candidate: give it in a list (log_format: [apache_combined]), or as the one format apache_log_format: combined`},
		{"Apache's prefix", "apache_log_format: apache_common",
			`c.yaml:1: input "web": apache_log_format: "apache_common" is not a preset (combined, common), nor a format string (which has variables); write common`},
		{"auto in a list", "log_format: [combined, auto]",
			`c.yaml:1: input "web": log_format: "auto" is not a preset (upstreaminfo, main_upstream_time, main_request_time, main, combined_upstream_time, combined_request_time, combined, json, apache_combined, apache_common), nor a format string (which has variables); ` +
				`auto is a list of candidates itself: give log_format: auto, not in a list`},
		{"auto in capitals", "log_format: Auto",
			`c.yaml:1: input "web": log_format: "Auto" is not a preset (combined, combined_request_time, combined_upstream_time, main, main_request_time, main_upstream_time, upstreaminfo), nor a format string (which has variables); ` +
				`write auto in lower case, as log_format: auto alone (the candidates told apart by their lines)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte("inputs: [{name: web, path: /a, "+c.input+"}]\nrules:\n  - {name: r, inputs: [web]}\n"), "c.yaml")
			if err == nil || err.Error() != c.want {
				t.Errorf("got:\n%v\nwant:\n%s", err, c.want)
			}
		})
	}
}

// TestMixedFormatsHint: a rule without match: over inputs of different formats is told
// to name those of one format, and one that names them already to keep those of one, not
// to do what it did.
func TestMixedFormatsHint(t *testing.T) {
	const inputs = "inputs:\n  - {name: web, path: /a, log_format: combined}\n  - {name: api, path: /b, log_format: main}\n"
	for _, c := range []struct{ name, rule, want string }{
		{"every input", "{name: r}", `(name those of one format with inputs: [...])`},
		{"its inputs named", "{name: r, inputs: [web, api]}", `(its inputs: names both; keep those of one format, or give the rule a match: regex)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(inputs+"rules:\n  - "+c.rule+"\n"), "c.yaml")
			want := `c.yaml:5: rule "r": match: is missing, and inputs "web" and "api" have different log formats: a rule without match: reads inputs of one format ` + c.want
			if err == nil || err.Error() != want {
				t.Errorf("error:\n%v\nwant:\n%s", err, want)
			}
		})
	}
}

// TestApacheEpochTimes: Apache's times in seconds since the epoch are read with no layout,
// as nginx's $msec is; its milliseconds and microseconds, which no layout reads, are
// refused naming the directive and what to log instead, not asked for a layout.
func TestApacheEpochTimes(t *testing.T) {
	for _, c := range []struct {
		directive, capture, err string
	}{
		{"%{sec}t", "t_sec", ""},
		{"%{end:sec}t", "t_end_sec", ""},
		{"%{%s}t", "t__s", ""},
		{"%{msec}t", "t_msec", `timestamp: %{msec}t is no time a layout reads`},
		{"%{begin:usec_frac}t", "t_begin_usec_frac", `timestamp: %{begin:usec_frac}t is no time a layout reads`},
	} {
		t.Run(c.directive, func(t *testing.T) {
			text := fmt.Sprintf("inputs:\n  - path: /a\n    apache_log_format: '%%h %s %%>s'\nrules:\n  - name: r\n    timestamp: {capture: %s}\n", c.directive, c.capture)
			cfg, err := Parse([]byte(text), "rules.yaml")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "%{sec}t") {
					t.Fatalf("error %v, want one saying %q and naming %%{sec}t", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ts := cfg.Rules[0].Timestamp; !ts.Unix || ts.Layout != "" {
				t.Errorf("timestamp %+v, want seconds since the epoch", ts)
			}
		})
	}
}

// TestApacheDurationUnits: a value rule whose name says seconds over an Apache duration
// of smaller units is warned of, as its numbers would be a thousand or a million times
// the seconds; over one in seconds, or under a name without the unit, it is not.
func TestApacheDurationUnits(t *testing.T) {
	const warning = `c.yaml:7: warning: rule "%s": value: %s is %s, which Apache writes in %s, but the rule's name says seconds: ` +
		`its sums, means, quantiles and buckets are in %[4]s, as the exporter sums a value as logged; ` +
		`name the rule for what it sums without the unit, or log %%T (whole seconds)`
	for _, c := range []struct{ name, value, want string }{
		{"http_request_duration_seconds", "D", fmt.Sprintf(warning, "http_request_duration_seconds", "D", "%D", "microseconds")},
		{"http_request_duration_seconds", "T_ms", fmt.Sprintf(warning, "http_request_duration_seconds", "T_ms", "%{ms}T", "milliseconds")},
		{"http_request_duration_seconds", "T_us", fmt.Sprintf(warning, "http_request_duration_seconds", "T_us", "%{US}T", "microseconds")},
		{"http_first_byte_seconds", "FB", fmt.Sprintf(warning, "http_first_byte_seconds", "FB", "%^FB", "microseconds")},
		{"http_request_duration_seconds", "T", ""},
		{"http_request_duration_seconds", "T_s", ""},
		{"http_request_duration", "D", ""},
		{"http_response_size_bytes", "b", ""},
	} {
		t.Run(c.name+"/"+c.value, func(t *testing.T) {
			const format = `'%%h %%>s %%b %%D %%T %%{ms}T %%{US}T %%{s}T %%^FB'`
			text := fmt.Sprintf("inputs:\n  - name: web\n    path: /a\n    apache_log_format: "+format+"\nrules:\n  - name: %s\n    value: %s\n", c.name, c.value)
			parseWarned(t, "c.yaml", text, c.want)
			// Among candidates, where another format has no such capture.
			text = fmt.Sprintf("inputs:\n  - name: web\n    path: /a\n    log_format: [combined, "+format+"]\nrules:\n  - name: %s\n    value: %s\n", c.name, c.value)
			parseWarned(t, "c.yaml", text, c.want)
		})
	}
}
