//go:build linux || darwin

package parser

import (
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"syscall"
	"testing"
)

// mapEndRules read label sets of two and three captures, values of 0 to 8 bytes that may
// end a line or be unset, by a regex, a log format (whose status class is derived), JSON
// and logfmt: the sets renderCaptures writes a word a value.
const mapEndRules = `
inputs:
  - {name: text, path: /a.log}
  - {name: web, path: /b.log, log_format: '$remote_addr "$request" $status'}
  - {name: app, path: /c.log, format: json}
  - {name: kv, path: /d.log, format: logfmt}
rules:
  - name: text_requests
    inputs: [text]
    match: '^(?P<host>\S+) (?P<method>[A-Z]+) (?P<status>[0-9]+)(?: (?P<size>[0-9]*))?$'
    labels: {method: '${method}', status: '${status}', size: '${size}'}
  - name: web_requests
    inputs: [web]
    labels: {method: '${request_method}', status: '${status}', status_class: '${status_class}'}
  - name: app_requests
    inputs: [app]
    fields: {method: m, status: s}
    labels: {method: '${method}', status: '${status}'}
  - name: kv_requests
    inputs: [kv]
    fields: {method: method, status: status}
    labels: {method: '${method}', status: '${status}'}
`

// TestParseAtMappingEnd parses lines that end where readable memory ends: each is the last
// bytes of a mapped page whose next page may not be read, as a line at the end of a read
// buffer may be, and is given with the capacity a slice of the whole mapping has, so that
// a read past the line's length, which Go allows within that capacity, faults. Parse and
// Explain must read each label within the line (renderCaptures reads a word from a
// value's start) and find what a parser rendering every label set by render alone finds
// in the line as an ordinary slice.
func TestParseAtMappingEnd(t *testing.T) {
	page := os.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	c := mustParse(t, mapEndRules)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	if renderAlone(plain) == 0 {
		t.Fatal("no rule renders its labels a word a value")
	}
	var lines []struct{ input, line string }
	add := func(input, format string, args ...any) {
		lines = append(lines, struct{ input, line string }{input, fmt.Sprintf(format, args...)})
	}
	for _, status := range []string{"2", "20", "200", "2000000", "20000000", "200000000"} {
		for _, method := range []string{"A", "GET", "OPTIONS", "ABCDEFGH"} {
			add("text", "h %s %s", method, status)
			add("text", "h %s %s ", method, status)
			add("text", "h %s %s 1", method, status)
			add("text", "h %s 1 %s", method, status)
			add("web", `h "%s / HTTP/1.1" %s`, method, status)
			add("web", `h "%s" %s`, method, status)
			add("web", `h "/ %s" %s`, method, status)
			add("app", `{"m":"%s","s":%s}`, method, status)
			add("app", `{"s":%s,"m":"%s"}`, status, method)
			add("app", `{"s":"%s","m":"\u0041%s"}`, status, method)
			add("kv", "method=%s status=%s", method, status)
			add("kv", "status=%s method=%s", status, method)
			add("kv", `status=%s method="%s"`, status, method)
		}
	}
	for _, l := range lines {
		at := mem[page-len(l.line) : 2*page] // its capacity runs into the page that faults
		line := at[:len(l.line)]
		copy(line, l.line)
		want, got := &recorder{t: t, rules: c.Rules}, &recorder{t: t, rules: c.Rules}
		plain.Parse(l.input, []byte(l.line), want)
		func() {
			defer func() {
				if e := recover(); e != nil {
					t.Fatalf("%s line %q at the end of readable memory: %v", l.input, l.line, e)
				}
			}()
			p.Parse(l.input, line, got)
			for _, res := range p.Explain(l.input, line).Rules {
				if res.Outcome == Counted {
					got.Event(&res.Event)
				}
			}
		}()
		for _, res := range plain.Explain(l.input, []byte(l.line)).Rules {
			if res.Outcome == Counted {
				want.Event(&res.Event)
			}
		}
		if !reflect.DeepEqual(got.got, want.got) {
			t.Errorf("%s line %q at the end of readable memory:\n%v\nin a slice of its own:\n%v", l.input, l.line, got.got, want.got)
		}
		if len(want.got) == 0 {
			t.Errorf("%s line %q: no event", l.input, l.line)
		}
	}
}
