package logformat

import (
	"fmt"
	"slices"
	"strings"
)

// NginxPresets are the formats log_format: may name instead of giving the string.
var NginxPresets = map[string]string{
	// nginx's built-in format.
	"combined": `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`,
	// The format of the nginx.conf that nginx's and the distributions' packages install.
	"main": `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$http_x_forwarded_for"`,
	// The ingress-nginx controller's default (its log-format-upstream setting).
	"upstreaminfo": `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_length $request_time [$proxy_upstream_name] [$proxy_alternative_upstream_name] $upstream_addr $upstream_response_length $upstream_response_time $upstream_status $req_id`,
	// combined and main with the timings many deployments add after them.
	"combined_request_time":  `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time`,
	"combined_upstream_time": `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time $upstream_response_time`,
	"main_request_time":      `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$http_x_forwarded_for" $request_time`,
	"main_upstream_time":     `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$http_x_forwarded_for" $request_time $upstream_response_time`,
}

// nginxBuiltins are the variables nginx's log module writes itself, unescaped and never
// as "-" (ngx_http_log_vars); every other variable goes through the format's escaping.
var nginxBuiltins = []string{"pipe", "time_local", "time_iso8601", "msec", "request_time", "status", "bytes_sent", "body_bytes_sent", "request_length"}

// nginxLists are the upstream variables nginx writes as one value per upstream tried.
var nginxLists = []string{"upstream_addr", "upstream_bytes_received", "upstream_bytes_sent", "upstream_connect_time",
	"upstream_header_time", "upstream_queue_time", "upstream_response_length", "upstream_response_time", "upstream_status"}

// ParseNginx compiles an nginx log format: a preset's name, or the format string as nginx reads
// it (the quoted pieces of the log_format line joined), with the escaping of its escape=
// parameter. With escape=json, a format that is one JSON object ({...}) is a template
// whose lines are read as JSON.
func ParseNginx(text string, esc Escape) (*Format, error) {
	f := &Format{Server: Nginx, Text: text, Escape: esc}
	if preset, ok := NginxPresets[text]; ok {
		f.Preset, f.Text = text, preset
	}
	if err := checkText(f.Text); err != nil {
		return nil, err
	}
	if esc == EscapeJSON && isTemplate(f.Text) {
		if err := jsonTemplate(f); err != nil {
			return nil, err
		}
	} else {
		toks, err := nginxTokens(f.Text)
		if err != nil {
			return nil, err
		}
		if err := compileText(f, toks); err != nil {
			return nil, err
		}
	}
	derive(f, "request", "status")
	return f, nil
}

// isTemplate reports whether a format is one JSON object, which escape=json makes a
// template whose lines are read as JSON.
func isTemplate(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}")
}

// nginxTokens splits a format string the way nginx's log module does: $name or ${name}
// (letters, digits, _) is a variable, anything else up to the next $ is text.
func nginxTokens(text string) ([]token, error) {
	var toks []token
	for i := 0; i < len(text); {
		if text[i] != '$' {
			j := strings.IndexByte(text[i+1:], '$')
			if j < 0 {
				j = len(text)
			} else {
				j += i + 1
			}
			toks = append(toks, token{lit: text[i:j], at: i})
			i = j
			continue
		}
		v, n, err := nginxVariable(text[i:])
		if err != nil {
			err.Offset += i
			return nil, err
		}
		toks = append(toks, token{v: v, at: i})
		i += n
	}
	return toks, nil
}

// nginxVariable reads the variable at the start of s ($name or ${name}) and its length.
func nginxVariable(s string) (*variable, int, *Error) {
	if !strings.HasPrefix(s, "$") {
		// A JSON template's member whose text is not one variable.
		return nil, 0, &Error{0, "not a variable"}
	}
	braced := strings.HasPrefix(s, "${")
	start := 1
	if braced {
		start = 2
	}
	end := start
	for end < len(s) && isNameByte(s[end]) {
		end++
	}
	written := s[start:end]
	// nginx looks a variable up whatever its case and keeps its name lowercased
	// (ngx_http_get_variable_index), so $Status is $status and the capture is named so.
	name := strings.ToLower(written)
	n := end
	if braced {
		if end >= len(s) || s[end] != '}' {
			return nil, 0, &Error{0, fmt.Sprintf("the closing } of %q is missing", s[:end])}
		}
		n++
	}
	if name == "" {
		return nil, 0, &Error{0, "a $ must start a variable ($name or ${name}); nginx has no way to write a literal $ in a log format"}
	}
	// The log module finds its own variables by their exact name; another case is read
	// through the variables as any other, escaped.
	v := &variable{name: name, key: name, text: s[:n], escaped: !slices.Contains(nginxBuiltins, written),
		list: slices.Contains(nginxLists, name)}
	switch name {
	case "time_local":
		v.spaces = 1 // 01/Mar/2024:12:00:00 +0000
	case "date_local", "date_gmt":
		// The SSI module's, written by its default timefmt ("%A, %d-%b-%Y %H:%M:%S %Z"),
		// whose numbers are padded with zeros: Monday, 30-Nov-2026 08:54:44 UTC.
		v.spaces = 3
	case "http_x_forwarded_for", "proxy_add_x_forwarded_for":
		v.joined = true
	case "remote_user", "uri", "document_uri", "request":
		v.words = true
	}
	return v, n, nil
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}
