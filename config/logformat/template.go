package logformat

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// jsonTemplate reads an escape=json format that is a JSON object template: each member
// whose value is one variable, quoted ("$status") or not ($status), is a field captured
// under the variable's name. Members whose value mixes text and variables are read as
// JSON but not captured; a variable in two members is captured from the first.
func jsonTemplate(f *Format) error {
	p := &template{s: f.Text, f: f}
	p.ws()
	if err := p.object(nil); err != nil {
		return err
	}
	p.ws()
	if p.i != len(p.s) {
		return &Error{p.i, "text after the JSON object's closing }"}
	}
	if len(f.Fields) == 0 {
		return &Error{0, `the JSON template has no member whose value is one variable ("key":"$variable")`}
	}
	return nil
}

// jsonNumbers are the variables nginx always writes as a number: those of its log module
// that are (never "-", never empty), and a connection's.
var jsonNumbers = []string{"status", "request_time", "body_bytes_sent", "bytes_sent", "request_length", "msec",
	"connection", "connection_requests", "pid"}

// template is the state of reading a JSON template.
type template struct {
	s string
	i int
	f *Format
}

func (p *template) ws() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *template) errorf(format string, args ...any) error {
	return &Error{p.i, fmt.Sprintf(format, args...)}
}

// object reads the object at p.i, whose members are under the keys path. A key is the
// JSON string's value, escapes decoded, since that is what a reader of the lines finds.
func (p *template) object(path []string) error {
	p.i++ // '{'
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return nil
	}
	var keys []string
	for {
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return p.errorf(`expected a member's key in quotes`)
		}
		keyAt := p.i
		raw, err := p.str()
		if err != nil {
			return err
		}
		if strings.Contains(raw, "$") {
			return &Error{keyAt, fmt.Sprintf("the key %q holds a variable: lines would have it replaced, so no field can be found by it", raw)}
		}
		var key string
		// str has checked it is a JSON string.
		_ = json.Unmarshal([]byte(p.s[keyAt:p.i]), &key)
		if slices.Contains(keys, key) {
			// Readers of the lines (encoding/json, jq) keep the last member of a key and
			// never see the first; encoding/json/v2 refuses the line.
			return &Error{keyAt, fmt.Sprintf("the key %q is in the object twice: a JSON reader keeps only its last member", key)}
		}
		keys = append(keys, key)
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return p.errorf("expected ':' after the key %q", key)
		}
		p.i++
		p.ws()
		if err := p.value(append(slices.Clip(path), key)); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.s) {
			return p.errorf("the object is not closed with }")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return nil
		default:
			return p.errorf("expected ',' or '}' after a member")
		}
	}
}

// value reads the value at p.i, of the member at path (nil inside an array: not captured).
func (p *template) value(path []string) error {
	if p.i >= len(p.s) {
		return p.errorf("expected a value")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(path)
	case c == '[':
		return p.array()
	case c == '"':
		at := p.i
		text, err := p.str()
		if err != nil {
			return err
		}
		if v, n, err := nginxVariable(text); err == nil && n == len(text) {
			p.field(path, v)
		} else if strings.Contains(text, "$") {
			if _, err := nginxTokens(text); err != nil {
				err.(*Error).Offset += at + 1
				return err
			}
		}
		return nil
	case c == '$':
		v, n, err := nginxVariable(p.s[p.i:])
		if err != nil {
			err.Offset += p.i
			return err
		}
		p.i += n
		p.field(path, v)
		if !slices.Contains(jsonNumbers, v.name) && !slices.Contains(p.f.Unquoted, v.text) {
			p.f.Unquoted = append(p.f.Unquoted, v.text)
		}
		return nil
	}
	// A number, true, false or null: up to where the member ends.
	start := p.i
	for p.i < len(p.s) && strings.IndexByte(",}] \t\r\n", p.s[p.i]) < 0 {
		p.i++
	}
	if p.i == start {
		return p.errorf("expected a value")
	}
	if lit := p.s[start:p.i]; !json.Valid([]byte(lit)) {
		return &Error{start, fmt.Sprintf("%q is not a JSON value: a value out of quotes is one variable ($status) or a number, true, false or null", lit)}
	}
	return nil
}

// array reads the array at p.i; variables in it are not captured.
func (p *template) array() error {
	p.i++ // '['
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return nil
	}
	for {
		p.ws()
		if err := p.value(nil); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.s) {
			return p.errorf("the array is not closed with ]")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return nil
		default:
			return p.errorf("expected ',' or ']' in an array")
		}
	}
}

// str reads the string at p.i and returns its text between the quotes, as written: nginx
// writes a template's text as it is, so a value is a variable only when written as one
// ("\u0024status" is the text "$status" to a reader, not a variable). A string nginx would
// write that no JSON reader reads (a bad escape, a raw control character) is an error: no
// line would be JSON.
func (p *template) str() (string, error) {
	start := p.i + 1
	for p.i = start; p.i < len(p.s); p.i++ {
		switch p.s[p.i] {
		case '\\':
			p.i++
		case '"':
			text := p.s[start:p.i]
			p.i++
			if !json.Valid([]byte(p.s[start-1 : p.i])) {
				return "", &Error{start - 1, fmt.Sprintf("the string \"%s\" is not a JSON string (a bad escape or a control character): no line written with it would be JSON", text)}
			}
			return text, nil
		}
	}
	return "", &Error{start - 1, "the string is not closed with \""}
}

// field captures the variable v as the value at path.
func (p *template) field(path []string, v *variable) {
	if path == nil || slices.ContainsFunc(p.f.Fields, func(f Field) bool { return f.Name == v.name || slices.Equal(f.Path, path) }) {
		return
	}
	p.f.Fields = append(p.f.Fields, Field{Name: v.name, Var: v.text, Path: path})
}
