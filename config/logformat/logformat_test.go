package logformat

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestPresets(t *testing.T) {
	for _, c := range []struct {
		name   string
		apache bool
		vars   string // the captures, derived last
	}{
		{"combined", false, "remote_addr remote_user time_local request status body_bytes_sent http_referer http_user_agent request_method request_uri uri server_protocol status_class"},
		{"main", false, "remote_addr remote_user time_local request status body_bytes_sent http_referer http_user_agent http_x_forwarded_for request_method request_uri uri server_protocol status_class"},
		{"upstreaminfo", false, "remote_addr remote_user time_local request status body_bytes_sent http_referer http_user_agent request_length request_time proxy_upstream_name proxy_alternative_upstream_name upstream_addr upstream_response_length upstream_response_time upstream_status req_id request_method request_uri uri server_protocol status_class"},
		{"common", true, "h l u t r s b request_method request_uri uri server_protocol status_class"},
		{"combined", true, "h l u t r s b i_referer i_user_agent request_method request_uri uri server_protocol status_class"},
	} {
		f, err := ParseNginx(c.name, EscapeDefault)
		if c.apache {
			f, err = ParseApache(c.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(f.Names(), " "); got != c.vars || f.Preset != c.name || f.Describe() != c.name {
			t.Errorf("%s (apache %v): captures %s, preset %q", c.name, c.apache, got, f.Preset)
		}
	}
	// The main preset is combined and one field more, as the distributions' nginx.conf.
	if NginxPresets["main"] != NginxPresets["combined"]+` "$http_x_forwarded_for"` {
		t.Error("main is not combined + the forwarded-for header")
	}
}

func TestTimeCaptures(t *testing.T) {
	n, _ := ParseNginx(`[$time_local] $time_iso8601 $msec $status`, EscapeDefault)
	a, _ := ParseApache(`%t %{%s}t %>s %{sec}t %{begin:sec}t %{end:sec}t %{msec}t`)
	for _, c := range []struct {
		f       *Format
		capture string
		layout  string
		unix    bool
		ok      bool
	}{
		{n, "time_local", LayoutTimeLocal, false, true},
		{n, "time_iso8601", LayoutISO8601, false, true},
		{n, "msec", "", true, true},
		{n, "status", "", false, false},
		{n, "status_class", "", false, false},
		{n, "nope", "", false, false},
		{a, "t", "[" + LayoutTimeLocal + "]", false, true},
		// Seconds since the epoch: Apache's own sec and glibc's %s.
		{a, "t__s", "", true, true},
		{a, "t_sec", "", true, true},
		{a, "t_begin_sec", "", true, true},
		{a, "t_end_sec", "", true, true},
		{a, "t_msec", "", false, false},
	} {
		layout, unix, ok := c.f.Time(c.capture)
		if layout != c.layout || unix != c.unix || ok != c.ok {
			t.Errorf("%s: %q %v %v, want %q %v %v", c.capture, layout, unix, ok, c.layout, c.unix, c.ok)
		}
	}
}

func TestFormatErrors(t *testing.T) {
	for _, c := range []struct {
		text   string
		esc    Escape
		apache bool
		offset int
		msg    string
	}{
		{`$a$b`, EscapeDefault, false, 2, "$b follows $a with no text between them"},
		{`x $ y`, EscapeDefault, false, 2, "a $ must start a variable"},
		{`x ${a y`, EscapeDefault, false, 2, `the closing } of "${a" is missing`},
		{`just text`, EscapeDefault, false, 0, "the format has no variable"},
		{`{"a" "$b"}`, EscapeJSON, false, 5, `expected ':' after the key "a"`},
		{`{"a":"x $b"}`, EscapeJSON, false, 0, "no member whose value is one variable"},
		{`{"$k":"$b"}`, EscapeJSON, false, 1, `the key "$k" holds a variable`},
		{`%h %Z`, 0, true, 4, "%Z is not a directive"},
		{`%{X`, 0, true, 1, "the closing } of the directive's argument is missing"},
		{`%h %^ZZ`, 0, true, 4, "%^ZZ is not a directive of mod_log_config or mod_logio"},
		{`%h %^F`, 0, true, 4, "%^F is not a directive"},
		{"$a\xff", EscapeDefault, false, 2, "not valid UTF-8"},
		// The quoted pieces of a directive without its keyword: no line holds a line break.
		{"'$remote_addr '\n'$status'", EscapeDefault, false, 15, "the format has a line break"},
		{"%h\n%>s", 0, true, 2, "the format has a line break"},
		{"{\"a\":\"$a\",\n \"b\":\"$b\"}", EscapeJSON, false, 0, ""},
		// Under the length cap, but each optional variable at the end nests the regex.
		{strings.Repeat("$v ", 499) + "$v", EscapeDefault, false, 2, "ends with 499 variables each after a space"},
		{strings.Repeat("%h ", 499) + "%h", 0, true, 2, "nests its regex deeper than Go's regexp allows"},
		{strings.Repeat("$v ", 300) + "$v", EscapeDefault, false, 0, ""},
	} {
		var err error
		if c.apache {
			_, err = ParseApache(c.text)
		} else {
			_, err = ParseNginx(c.text, c.esc)
		}
		if c.msg == "" {
			if err != nil {
				t.Errorf("%.20q…: %v, want it to compile", c.text, err)
			}
			continue
		}
		fe, ok := err.(*Error)
		if !ok || fe.Offset != c.offset || !strings.Contains(fe.Msg, c.msg) {
			t.Errorf("%q: %v, want at byte %d: %s", c.text, err, c.offset, c.msg)
		}
	}
}

// An Apache format given in a YAML block (apache_log_format: |) ends with the block's line
// break, which is not the format's: its lines fit it, as a log_format:'s do.
func TestApacheBlock(t *testing.T) {
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`
	for _, c := range []struct{ text, line string }{
		{"%h %>s\n", "10.0.0.1 200"},
		{"%h %>s\r\n", "10.0.0.1 200"},
		{"combined\n", combined},
		// Space around a nickname, as around an nginx preset's name, is no part of it.
		{"combined ", combined},
		{" combined", combined},
	} {
		t.Run(c.text, func(t *testing.T) {
			f, err := ParseApache(c.text)
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(f.Regex).MatchString(c.line) {
				t.Errorf("regex %q does not match %q", f.Regex, c.line)
			}
		})
	}
}

func TestJSONTemplate(t *testing.T) {
	f, err := ParseNginx(` {"time": "$time_iso8601", "http": {"status": $status, "req": "${request}"},
		"list": ["$uri", 1], "mixed": "$host:$server_port", "n": null, "again": "$status", "x": -1.5e3} `, EscapeJSON)
	if err != nil {
		t.Fatal(err)
	}
	want := []Field{{"time_iso8601", "$time_iso8601", []string{"time"}}, {"status", "$status", []string{"http", "status"}}, {"request", "${request}", []string{"http", "req"}}}
	if !slices.EqualFunc(f.Fields, want, func(a, b Field) bool { return a.Name == b.Name && a.Var == b.Var && slices.Equal(a.Path, b.Path) }) || !f.JSON() {
		t.Errorf("fields %+v", f.Fields)
	}
	if f.Unquoted != nil {
		t.Errorf("unquoted %q, want none: $status is a number", f.Unquoted)
	}
	// Unquoted, what nginx may write as no JSON value: nothing, "-", a list, text.
	if f, err := ParseNginx(`{"s":$status,"u":$upstream_addr,"t":[$time_local,$upstream_addr]}`, EscapeJSON); err != nil {
		t.Error(err)
	} else if !slices.Equal(f.Unquoted, []string{"$upstream_addr", "$time_local"}) {
		t.Errorf("unquoted %q, want $upstream_addr and $time_local", f.Unquoted)
	}
	// Not one object: a text format, with escape=json.
	if f, err := ParseNginx(`{$status} x`, EscapeJSON); err != nil || f.JSON() {
		t.Errorf("a text format starting with {: %v %v", f, err)
	}
	// With another escaping a template is read as text: its values are not JSON strings.
	if f, err := ParseNginx(`{"s":"$status"}`, EscapeDefault); err != nil || f.JSON() || f.Regex == "" {
		t.Errorf("a template with escape=default: %v %v", f, err)
	}
}

// Two candidates fit the same lines when only their variables' names differ, which choose
// cannot tell apart; a literal where the other has a variable, a number where the other
// has text, or another escaping tells them apart. No two of auto's candidates are alike.
func TestSameLines(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{`$remote_addr "$http_referer" $status`, `$remote_addr "$http_x_real_ip" $status`, true},
		{`$remote_addr "$http_referer" $status`, `$remote_addr "$http_referer" $request_time`, true},
		{`$remote_addr "$http_referer" $status`, `$remote_addr "$http_referer" $http_x`, false},
		{`$remote_addr - $status`, `$remote_addr $remote_user $status`, false},
		{`$remote_addr $status`, `$remote_addr $status $request_time`, false},
		{"combined", "apache_combined", false},
		{`$remote_addr "$http_referer" $status`, "log_format n escape=none '$remote_addr \"$http_referer\" $status';", false},
		{`{"s":"$status"}`, `{"t":"$status"}`, false},
	} {
		t.Run(c.a+" "+c.b, func(t *testing.T) {
			a, err := ParseCandidate(c.a)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ParseCandidate(c.b)
			if err != nil {
				t.Fatal(err)
			}
			if a.SameLines(b) != c.same || b.SameLines(a) != c.same {
				t.Errorf("same lines %v, %v; want %v", a.SameLines(b), b.SameLines(a), c.same)
			}
		})
	}
	for i, a := range Auto {
		for _, b := range Auto[i+1:] {
			fa, _ := ParseCandidate(a)
			fb, _ := ParseCandidate(b)
			if fa.SameLines(fb) {
				t.Errorf("auto's %s and %s fit the same lines", a, b)
			}
		}
	}
}

// A candidate's name is read without the whitespace around it, as a format string is: a
// quoted ' json' is the json candidate, not a format no line fits.
func TestCandidateNamesTrimmed(t *testing.T) {
	for _, c := range []struct{ text, preset string }{
		{" json", JSONObject},
		{"json\n", JSONObject},
		{" apache_combined ", "apache_combined"},
		{"\tcombined ", "combined"},
	} {
		t.Run(c.preset, func(t *testing.T) {
			f, err := ParseCandidate(c.text)
			if err != nil {
				t.Fatalf("ParseCandidate(%q): %v", c.text, err)
			}
			if f.Preset != c.preset {
				t.Errorf("ParseCandidate(%q) is preset %q, want %q", c.text, f.Preset, c.preset)
			}
		})
	}
}

// nginx looks variables up whatever their case (ngx_http_get_variable_index compares
// names with ngx_strncasecmp and keeps them lowercased), so $Status is $status: the
// capture has the lowercased name, and what derives from it and reads its time does too.
// Only the log module's own variables are looked up by their exact name; written
// otherwise they are read as any other variable, escaped.
func TestVariableCase(t *testing.T) {
	for _, c := range []struct {
		text string
		esc  Escape
		want string
	}{
		{`$Remote_Addr - $REMOTE_USER [$Time_Local] "$Request" $Status $body_bytes_sent "$HTTP_User_Agent"`, EscapeDefault,
			"remote_addr remote_user time_local request status body_bytes_sent http_user_agent request_method request_uri uri server_protocol status_class"},
		{`${Status} ${status}`, EscapeDefault, "status status_class"},
		{`{"s":$Status,"r":"$Request","t":"$Time_ISO8601"}`, EscapeJSON, "status request time_iso8601 request_method request_uri uri server_protocol status_class"},
	} {
		f, err := ParseNginx(c.text, c.esc)
		if err != nil {
			t.Errorf("%s: %v", c.text, err)
			continue
		}
		if got := strings.Join(f.Names(), " "); got != c.want {
			t.Errorf("%s: captures %s, want %s", c.text, got, c.want)
		}
	}
	f, err := ParseNginx(`[$Time_Local] $Status $status`, EscapeDefault)
	if err != nil {
		t.Fatal(err)
	}
	if layout, _, ok := f.Time("time_local"); !ok || layout != LayoutTimeLocal {
		t.Errorf("time_local: %q %v", layout, ok)
	}
	if f.Var("status") != "$Status" || !f.Captures[1].Escaped {
		t.Errorf("status: %+v, want $Status escaped (nginx reads it as a variable, not the log module's own)", f.Captures[1])
	}
	if f, err := ParseNginx(`{"s":$Status}`, EscapeJSON); err != nil || f.Unquoted != nil {
		t.Errorf("$Status in a template: %v, unquoted %q; want a number", err, f.Unquoted)
	}
}

// TestApacheNames: each Apache directive that writes a value of its own is a capture of
// its own. Where two would share a name, the one of the original request of an internal
// redirect has _original after it (the final one keeps the name, so s and its
// status_class are the final status, as of common and combined, whichever comes first),
// and one with a condition has the condition after it where the directive is there with
// another or none; where none would keep the name, the first does, as before. A directive written twice alike (its argument a header's, a note's or a
// variable's name in another case, or a condition of its statuses in another order) writes
// one value, captured once as an nginx variable is; two of one name that write different
// values are clashes, the second read but not captured.
func TestApacheNames(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       string // the captures, derived last
		clashes    string // Var@At>Name, space-separated
	}{
		{"status alone", `%h %s`, "h s status_class", ""},
		{"final status alone", `%h %>s`, "h s status_class", ""},
		{"original status alone", `%h %<s`, "h s status_class", ""},
		{"status and final status", `%h %s %>s`, "h s_original s status_class", ""},
		{"final status first", `%>s %s %h`, "s s_original h status_class", ""},
		{"status, < and >", `%<s %>s`, "s_original s status_class", ""},
		{"the original status twice", `%s %<s %>s`, "s_original s status_class", ""},
		{"path", `%h %<U %>U`, "h U_original U", ""},
		{"path of the default request", `%h %U %>U`, "h U_original U", ""},
		{"duration", `%h %T %>T`, "h T_original T", ""},
		{"duration in ms beside microseconds", `%h %{ms}T %D`, "h T_ms D", ""},
		{"microseconds, log id and handler", `%D %>D %L %>L %R %>R`, "D_original D L_original L R_original R", ""},
		{"the last of < and > says", `%<>s %><s`, "s s_original status_class", ""},
		{"request lines", `%h "%r" "%>r" %>s`, "h r_original r s request_method request_uri uri server_protocol status_class", ""},
		{"host of the original request", `%h %<h %>s`, "h h_original s status_class", ""},
		{"a condition beside none", `%h %s %!200,304s`, "h s s_not_200_304 status_class", ""},
		{"a condition's statuses in order, each once", `%s %!304,0200,304,99,00s`, "s s_not_0_99_200_304 status_class", ""},
		{"two conditions: the first keeps the name", `%200s %404s %200s`, "s s_404 status_class", ""},
		{"a condition of the final request beside the original", `%s %!200>s`, "s s_not_200 status_class", ""},
		{"two conditions of a header", `%h %400,501{User-agent}i %!400,501{User-agent}i`, "h i_user_agent i_user_agent_not_400_501", ""},
		{"a condition and the request", `%h %200s %>s`, "h s_original_200 s status_class", ""},
		{"a condition of a header", `%{User-agent}i %400,501{User-agent}i`, "i_user_agent i_user_agent_400_501", ""},
		{"a negation without statuses is none", `%!s %s`, "s status_class", ""},
		{"negated twice", `%!!200s %200s`, "s status_class", ""},
		{"size with a condition, same statuses", `%200b %>s %200b`, "b s status_class", ""},
		{"the same directive twice", `%h %>s %h`, "h s status_class", ""},
		{"a header in another case", `%{Referer}i %{referer}i`, "i_referer", ""},
		{"names Apache looks up whatever their case", `%{A}e %{a}e %{A}n %{a}n %{A}o %{a}o %{A}^ti %{a}^ti %{A}^to %{a}^to`, "e_a n_a o_a ti_a to_a", ""},
		{"keywords Apache reads whatever their case", `%{A}C %{a}C %{MS}T %{ms}T %{Local}p %{local}p %{TID}P %{tid}P`, "C_a T_ms p_local P_tid", ""},
		{"the client's address and the peer's", `%{c}a %{C}a`, "a_c", "%{C}a@6>a_c"},
		{"strftime formats of one name", `%h %{%d}t %{%D}t`, "h t__d", "%{%D}t@10>t__d"},
		{"headers of one name", `%{X-Foo}i %{X_Foo}i %h`, "i_x_foo h", "%{X_Foo}i@10>i_x_foo"},
		{"a name made that an argument has", `%s %>s %{original}s`, "s_original s status_class", "%{original}s@7>s_original"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseApache(c.text)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(f.Names(), " "); got != c.want {
				t.Errorf("captures %s, want %s", got, c.want)
			}
			var clashes []string
			for _, cl := range f.Clashes {
				if c.text[cl.At:cl.At+len(cl.Var)] != cl.Var || f.Var(cl.Name) != cl.Of {
					t.Errorf("clash %+v: not the directive at its offset, or not the capture's", cl)
				}
				clashes = append(clashes, fmt.Sprintf("%s@%d>%s", cl.Var, cl.At, cl.Name))
			}
			if got := strings.Join(clashes, " "); got != c.clashes {
				t.Errorf("clashes %q, want %q", got, c.clashes)
			}
			if i := slices.IndexFunc(f.Derived, func(d Derived) bool { return d.Kind == StatusClass }); i >= 0 && f.Derived[i].From != "s" {
				t.Errorf("status_class from %s, want s", f.Derived[i].From)
			}
		})
	}
}

// TestApacheFormatEscapes: a format's backslashes are read as mod_log_config reads them
// (\\, \n, \r, \t; any other kept, the character after it read as any other), and \" as
// httpd.conf's quotes have it: its lines fit.
func TestApacheFormatEscapes(t *testing.T) {
	for _, c := range []struct{ name, text, line, status string }{
		{"quotes", `%h \"%r\" %>s`, `::1 "GET / HTTP/1.1" 200`, "200"},
		{"a tab", `%h\t%>s`, "::1\t200", "200"},
		{"a backslash", `%h \\ %>s`, `::1 \ 200`, "200"},
		{"a backslash kept", `%h \[%>s\]`, `::1 \[200\]`, "200"},
		{"a backslash before a directive", `%h \%>s`, `::1 \200`, "200"},
		{"a backslash at the end", `%h %>s\`, `::1 200\`, "200"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseApache(c.text)
			if err != nil {
				t.Fatal(err)
			}
			re := regexp.MustCompile(f.Regex)
			m := re.FindStringSubmatch(c.line)
			if m == nil || m[re.SubexpIndex("s")] != c.status {
				t.Errorf("regex %q reads %q as %q, want s %q", f.Regex, c.line, m, c.status)
			}
		})
	}
}

// TestApacheModules: the directives of mod_ssl (%{VAR}x, %{version}c, in httpd's default
// ssl_request_log format) and mod_logio (%^FB) are read: mod_ssl writes its values as they
// are, mod_logio its time to the first byte as a number.
func TestApacheModules(t *testing.T) {
	for _, c := range []struct {
		name, text, line string
		want             map[string]string
	}{
		{"ssl_request_log", `%t %h %{SSL_PROTOCOL}x %{SSL_CIPHER}x \"%r\" %b`,
			`[01/Mar/2024:12:00:00 +0000] 10.0.0.1 TLSv1.3 TLS_AES_256_GCM_SHA384 "GET / HTTP/1.1" 5`,
			map[string]string{"x_ssl_protocol": "TLSv1.3", "x_ssl_cipher": "TLS_AES_256_GCM_SHA384", "b": "5"}},
		{"mod_ssl's c", `%h %{version}c %>s`, `10.0.0.1 TLSv1.2 200`, map[string]string{"c_version": "TLSv1.2", "s": "200"}},
		{"time to the first byte", `%h %^FB %>s`, `10.0.0.1 1234 200`, map[string]string{"FB": "1234", "s": "200"}},
		{"a trailer beside it", `%h %{X}^ti %^FB`, `10.0.0.1 a 17`, map[string]string{"ti_x": "a", "FB": "17"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseApache(c.text)
			if err != nil {
				t.Fatal(err)
			}
			re := regexp.MustCompile(f.Regex)
			m := re.FindStringSubmatch(c.line)
			if m == nil {
				t.Fatalf("regex %q does not match %q", f.Regex, c.line)
			}
			for name, want := range c.want {
				if got := m[re.SubexpIndex(name)]; got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

// TestApacheNumeric: a directive that writes a number is numeric whatever its capture is
// named (the original request's, a condition's, a unit's), as the lines of candidates are
// told apart by.
func TestApacheNumeric(t *testing.T) {
	f, err := ParseApache(`%h %s %>s %!200s %{ms}T %D %{X}i %{X}^ti %b %^FB %{SSL_CIPHER}x`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"h": false, "s_original": true, "s": true, "s_original_not_200": true, "T_ms": true, "D": true,
		"i_x": false, "ti_x": false, "b": true, "status_class": false, "FB": true, "x_ssl_cipher": false}
	for name, numeric := range want {
		if got := f.Numeric(name); got != numeric {
			t.Errorf("%s: numeric %v, want %v", name, got, numeric)
		}
	}
}

// TestWords: the values a client writes with spaces out of quotes (a user name, a path
// decoded) may hold them, the first such value of a format alone, and only where no value
// before it could end elsewhere and it is captured; the regex of a misfit reads them as
// one word.
func TestWords(t *testing.T) {
	for _, c := range []struct {
		name, text string
		apache     bool
		words      []string // the captures of the values of words
	}{
		{"combined", NginxPresets["combined"], false, []string{"remote_user"}},
		{"Apache common", ApachePresets["common"], true, []string{"u"}},
		{"a path", `$remote_addr $request_method $uri $status`, false, []string{"uri"}},
		{"a document path", `$remote_addr $document_uri $status`, false, []string{"document_uri"}},
		{"an Apache path", `%h %m %U %>s`, true, []string{"U"}},
		{"a request line out of quotes", `$remote_addr $request $status`, false, []string{"request"}},
		{"an Apache request line out of quotes", `%h %r %>s %b`, true, []string{"r"}},
		{"a request line before other text", `%h %r@%>s %b`, true, nil},
		{"in quotes", `$remote_addr "$remote_user" $status`, false, nil},
		{"at the end", `$remote_addr $remote_user`, false, nil},
		{"the first of two", `$remote_user $uri $status`, false, []string{"remote_user"}},
		{"after X-Forwarded-For", `%{X-Forwarded-For}i %l %u %t "%r" %>s %b`, true, nil},
		{"read again", `$remote_addr $status $remote_user $remote_user $request_time`, false, []string{"remote_user"}},
		// Formats read by their regex (Undecided), which would search every end of a user.
		{"before a value after a value", `%h %l %u %t "%m %U%q %H" %>s %b`, true, nil},
		{"before a time padded with a space", `%h %l %u %t "%r" %>s %b %{%e/%b/%Y}t`, true, nil},
		{"before an escaped value stopping at a backslash", `$remote_addr $remote_user $http_x\$status`, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f *Format
			var err error
			if c.apache {
				f, err = ParseApache(c.text)
			} else {
				f, err = ParseNginx(c.text, EscapeDefault)
			}
			if err != nil {
				t.Fatal(err)
			}
			var words []string
			for _, p := range f.Pieces {
				if p.Words {
					words = append(words, f.Captures[p.Group-1].Name)
				}
			}
			if !slices.Equal(words, c.words) {
				t.Fatalf("values of words %q, want %q", words, c.words)
			}
			if misfit := f.MisfitRegex(); (misfit != f.Regex) != (len(c.words) > 0) || strings.Contains(misfit, `(?:[^ ]* )*?`) {
				t.Errorf("regex %s, misfit's %s", f.Regex, misfit)
			}
		})
	}
}
