package parser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-logfmt/logfmt"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// field is one capture as a test expects it: absent, or present with its text.
type field struct {
	v  string
	ok bool
}

func present(v string) field { return field{v, true} }

func (f field) String() string {
	if !f.ok {
		return "absent"
	}
	return fmt.Sprintf("%q", f.v)
}

var absent = field{}

// extractAll runs x over line and returns each slot's capture; none when the line is
// malformed, since caps then mean nothing.
func extractAll(x extractor, nslots int, line string) ([]field, bool) {
	s := &scratch{}
	caps := make([]int, 2*(nslots+1))
	src, ok := x.extract([]byte(line), caps, s)
	if !ok {
		return nil, false
	}
	out := make([]field, nslots)
	for k := 1; k <= nslots; k++ {
		if caps[2*k] >= 0 {
			out[k-1] = present(string(capture(&src, caps, k)))
		}
	}
	return out, ok
}

func TestExtractJSON(t *testing.T) {
	paths := [][]string{{"status"}, {"http", "route"}, {"http"}, {"tags"}, {"ok"}, {"none"}, {"msg"}}
	x := newJSONExtractor(paths)
	for _, tc := range []struct {
		name, line string
		want       []field // per path; nil when malformed
	}{
		{"flat and nested", `{"status":502,"http":{"route":"/api","method":"GET"},"tags":["a",{"b":1}],"ok":true,"none":null,"msg":"x"}`,
			[]field{present("502"), present("/api"), present(`{"route":"/api","method":"GET"}`), present(`["a",{"b":1}]`), present("true"), present(""), present("x")}},
		{"missing fields", `{"other": 1}`, []field{absent, absent, absent, absent, absent, absent, absent}},
		{"escapes decoded", `{"msg":"a\"b\\c\/d\n\u00e9\ud83d\ude00\ud800x"}`, []field{absent, absent, absent, absent, absent, absent, present("a\"b\\c/d\né😀\uFFFDx")}},
		{"escaped key", `{"st\u0061tus":"200"}`, []field{present("200"), absent, absent, absent, absent, absent, absent}},
		{"last duplicate wins, nested too", `{"status":1,"http":{"route":"/a"},"status":2,"http":{"x":0}}`,
			[]field{present("2"), absent, present(`{"x":0}`), absent, absent, absent, absent}},
		{"prefix not an object", `{"http":"plain"}`, []field{absent, absent, present("plain"), absent, absent, absent, absent}},
		{"whitespace", " {\t\"status\" :\r\n 200 } \n", []field{present("200"), absent, absent, absent, absent, absent, absent}},
		{"decoded and in-place values together", `{"status":"2\u0030","msg":"plain","ok":"x\ty","status":"200"}`,
			[]field{present("200"), absent, absent, absent, present("x\ty"), absent, present("plain")}},
		{"multibyte characters kept", `{"msg":"café 東京, longer than a word","status":"é"}`,
			[]field{present("é"), absent, absent, absent, absent, absent, present("café 東京, longer than a word")}},
		{"multibyte characters before escapes", `{"msg":"café \"x\"\tz","status":"東\u4eac"}`,
			[]field{present("東京"), absent, absent, absent, absent, absent, present("café \"x\"\tz")}},
		{"multibyte character before a final escaped backslash", `{"msg":"é\\"}`,
			[]field{absent, absent, absent, absent, absent, absent, present(`é\`)}},
		{"invalid UTF-8 after a multibyte character and an escape", "{\"msg\":\"é\\u0041\xff\"}",
			[]field{absent, absent, absent, absent, absent, absent, present("éA\uFFFD")}},
		{"invalid UTF-8 replaced", "{\"msg\":\"abcdefgh\xffijklmnop\"}", []field{absent, absent, absent, absent, absent, absent, present("abcdefgh�ijklmnop")}},
		{"numbers as written", `{"status":-1.5e+3}`, []field{present("-1.5e+3"), absent, absent, absent, absent, absent, absent}},
		{"empty object", `{}`, []field{absent, absent, absent, absent, absent, absent, absent}},
		{"not an object", `[1,2]`, nil},
		{"scalar", `"status"`, nil},
		{"trailing garbage", `{"status":1} x`, nil},
		{"two documents", `{}{}`, nil},
		{"unterminated", `{"status":1`, nil},
		{"bad number", `{"status":01}`, nil},
		{"bad escape", `{"msg":"\x"}`, nil},
		{"raw control character", "{\"msg\":\"a\tb\"}", nil},
		{"trailing comma", `{"status":1,}`, nil},
		{"bad literal", `{"ok":tru}`, nil},
		{"bad nested", `{"tags":[1,]}`, nil},
		{"plain text", `127.0.0.1 - - [24/Nov/2026:05:28:09 +0000] "GET / HTTP/1.1" 200`, nil},
		{"empty", ``, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := extractAll(x, len(paths), tc.line)
			if ok != (tc.want != nil) {
				t.Fatalf("ok = %v for %q", ok, tc.line)
			}
			if ok && !slices.Equal(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestExtractJSONStopsAtEveryOffset puts each byte that ends a string's plain run (a quote,
// a backslash, a control character, a multibyte character's first byte) at every offset
// of a long string, so that the word-at-a-time scan is seen to stop exactly there.
func TestExtractJSONStopsAtEveryOffset(t *testing.T) {
	x := newJSONExtractor([][]string{{"msg"}})
	const plain = "abcdefghijklmnopqrstuvwxyz012345"
	for _, tc := range []struct {
		name, raw, decoded string // raw as written inside the quotes; "" decoded: malformed
	}{
		{"escaped quote", `\"`, `"`},
		{"escaped backslash", `\\`, `\`},
		{"control character", "\x01", ""},
		{"multibyte character", "é", "é"},
		{"closing quote", `","more":"x`, ""}, // ends msg early: its value is the prefix
	} {
		for at := 0; at <= len(plain); at++ {
			line := `{"msg":"` + plain[:at] + tc.raw + plain[at:] + `"}`
			got, ok := extractAll(x, 1, line)
			switch {
			case tc.name == "closing quote":
				if want := present(plain[:at]); !ok || got[0] != want {
					t.Fatalf("%s at %d: got %v %v, want %v", tc.name, at, got, ok, want)
				}
			case tc.decoded == "":
				if ok {
					t.Fatalf("%s at %d: %q read as well-formed", tc.name, at, line)
				}
			default:
				if want := present(plain[:at] + tc.decoded + plain[at:]); !ok || got[0] != want {
					t.Fatalf("%s at %d: got %v %v, want %v", tc.name, at, got, ok, want)
				}
			}
		}
	}
}

func TestExtractLogfmt(t *testing.T) {
	keys := []string{"level", "msg", "http.route", "flag", "empty"}
	x := newLogfmtExtractor(keys)
	for _, tc := range []struct {
		name, line string
		want       []field
	}{
		{"bare and quoted", `ts=2024-03-01T12:00:00Z level=error msg="upstream \"timed\" out\n" http.route=/api flag empty=`,
			[]field{present("error"), present("upstream \"timed\" out\n"), present("/api"), present(""), present("")}},
		{"quoted without escapes kept raw", "msg=\"a\tb\"", []field{absent, present("a\tb"), absent, absent, absent}},
		{"decoded, unused and in-place values together", `msg="a\"b" other="x\n" level=warn msg="c\\d" flag="e" level="\u00e9"`,
			[]field{present("é"), present(`c\d`), absent, present("e"), absent}},
		{"last duplicate wins", `level=info level=warn`, []field{present("warn"), absent, absent, absent, absent}},
		{"no space after quote", `msg="x"level=debug`, []field{present("debug"), present("x"), absent, absent, absent}},
		{"plain words are keys", `hello world`, []field{absent, absent, absent, absent, absent}},
		{"empty", ``, []field{absent, absent, absent, absent, absent}},
		{"unterminated quote", `msg="abc`, nil},
		{"equals in bare value", `level=a=b`, nil},
		{"quote in bare value", `level=a"b`, nil},
		{"quote in key", `le"vel=1`, nil},
		{"missing key", `=x`, nil},
		{"bad escape", `msg="\q"`, nil},
		{"control character with an escape", "msg=\"\\n\tx\"", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := extractAll(x, len(keys), tc.line)
			if ok != (tc.want != nil) {
				t.Fatalf("ok = %v for %q", ok, tc.line)
			}
			if ok && !slices.Equal(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// fuzzJSONPaths are the fields FuzzExtractJSON reads: flat, nested, a prefix of another,
// and keys that need decoding or hold non-ASCII.
var fuzzJSONPaths = [][]string{{"a"}, {"b", "c"}, {"b"}, {"b", "d", "e"}, {"é"}, {`k"q`}, {"\ufffd"}}

// FuzzExtractJSON holds the JSON extractor to encoding/json: the same lines are valid
// (one object), and every field has the value encoding/json decodes (a string decoded, a
// number or boolean as its text, null empty, an object or array as its raw text), or is
// absent in both. Seeds: testdata/fuzz/FuzzExtractJSON.
func FuzzExtractJSON(f *testing.F) {
	x := newJSONExtractor(fuzzJSONPaths)
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := extractAll(x, len(fuzzJSONPaths), string(line))
		var top map[string]json.RawMessage
		refOK := json.Valid(line) && json.Unmarshal(line, &top) == nil && top != nil
		if ok != refOK {
			t.Fatalf("extract ok = %v, encoding/json ok = %v for %q", ok, refOK, line)
		}
		if !ok {
			return
		}
		for i, path := range fuzzJSONPaths {
			if want := jsonReference(t, top, path); got[i] != want {
				t.Errorf("%q: got %v, encoding/json %v (line %q)", strings.Join(path, "."), got[i], want, line)
			}
		}
	})
}

func jsonReference(t *testing.T, obj map[string]json.RawMessage, path []string) field {
	raw, ok := obj[path[0]]
	if !ok {
		return absent
	}
	if len(path) > 1 {
		var sub map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &sub) != nil {
			return absent
		}
		return jsonReference(t, sub, path[1:])
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return present(s)
	case 'n':
		return present("")
	}
	return present(string(raw))
}

var fuzzLogfmtKeys = []string{"a", "b.c", "level", "é", "k"}

// FuzzExtractLogfmt holds the logfmt extractor to github.com/go-logfmt/logfmt's decoder:
// the same lines are malformed, and every key has the value the decoder gives (the last,
// when repeated; empty without one), or is absent in both. Seeds:
// testdata/fuzz/FuzzExtractLogfmt.
func FuzzExtractLogfmt(f *testing.F) {
	x := newLogfmtExtractor(fuzzLogfmtKeys)
	f.Fuzz(func(t *testing.T, line []byte) {
		// The decoder splits its input into lines; the exporter hands over one at a time.
		if bytes.ContainsAny(line, "\r\n") || len(line) > 60000 {
			return
		}
		got, ok := extractAll(x, len(fuzzLogfmtKeys), string(line))
		want := map[string]string{}
		dec := logfmt.NewDecoder(bytes.NewReader(line))
		for dec.ScanRecord() {
			for dec.ScanKeyval() {
				want[string(dec.Key())] = string(dec.Value())
			}
		}
		if refOK := dec.Err() == nil; ok != refOK {
			t.Fatalf("extract ok = %v, go-logfmt error %v for %q", ok, dec.Err(), line)
		}
		if !ok {
			return
		}
		for i, k := range fuzzLogfmtKeys {
			v, has := want[k]
			if w := (field{v, has}); got[i] != w {
				t.Errorf("%q: got %v, go-logfmt %v (line %q)", k, got[i], w, line)
			}
		}
	})
}

func TestFieldsRules(t *testing.T) {
	c := mustParse(t, `
inputs:
  - {name: app, path: /a.log, format: json}
  - {name: kv, path: /b.log, format: logfmt}
rules:
  - name: app_requests
    fields: {status: status, route: http.route, took: took_ms}
    labels: {route: '${route}', status: '${status}'}
    where_not: {route: '^/health'}
    inputs: [app]
  - name: app_took
    fields: {took: took_ms, status: status}
    value: took
    where: {status: '^5'}
    inputs: [app]
  - name: kv_lines
    fields: {level: level, route: http.route}
    labels: {level: '${level}', route: '${route}'}
    where_not: {level: '^debug$'}
    inputs: [kv]
  - name: any_text
    match: 'status'
`)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		input, line string
		ok          bool
		want        []string
	}{
		{"app", `{"status":502,"http":{"route":"/api"},"took_ms":12.5}`, true,
			[]string{"app_requests{route=/api,status=502} 1 t=0/false", "app_took{} 12.5 t=0/false", "any_text{} 1 t=0/false"}},
		{"app", `{"status":200,"http":{"route":"/health"}}`, true, []string{"any_text{} 1 t=0/false"}},
		{"app", `{"http":{"route":"/x"},"took_ms":null,"status":"503"}`, true,
			[]string{"app_requests{route=/x,status=503} 1 t=0/false", "app_took drop no_value", "any_text{} 1 t=0/false"}},
		{"app", `status: not json`, false, []string{"any_text{} 1 t=0/false"}},
		{"kv", `level=info http.route="/a b" msg=x`, true, []string{"kv_lines{level=info,route=/a b} 1 t=0/false"}},
		{"kv", `level=debug`, true, nil},
		{"kv", `level="unterminated`, false, nil},
		{"other", `{"status":1}`, true, []string{"any_text{} 1 t=0/false"}},
	} {
		t.Run(tc.input+" "+tc.line, func(t *testing.T) {
			r := &recorder{t: t, rules: c.Rules}
			if ok := p.Parse(tc.input, []byte(tc.line), r); ok != tc.ok {
				t.Errorf("Parse = %v, want %v", ok, tc.ok)
			}
			var got []string
			for _, rec := range r.take() {
				got = append(got, rec.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestWhereNot(t *testing.T) {
	c := mustParse(t, `
rules:
  - name: w
    match: '^(?P<s>[0-9]+) (?P<p>[^ ]+)$'
    where: {s: '^5'}
    where_not: {p: '^/health', s: '^503$'}
`)
	tests := []struct {
		line string
		want bool
	}{
		{"500 /api", true},
		{"500 /healthz", false},
		{"503 /api", false},
		{"404 /api", false},
	}
	line := func(i int) string { return tests[i].line }
	parseOnEachMatcher(t, c.Rules, "", len(tests), line, line, func(t *testing.T, i int, got []record) {
		if matched := len(got) == 1; matched != tests[i].want {
			t.Errorf("matched = %v (%v), want %v", matched, got, tests[i].want)
		}
	})
}

func TestFieldsParseDoesNotAllocate(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector makes sync.Pool drop buffers on purpose")
	}
	c := mustParse(t, `
inputs: [{name: app, path: /a.log, format: json}]
rules:
  - name: r
    fields: {status: status, route: http.route, msg: msg}
    labels: {route: '${route}', status: '${status}', msg: '${msg}'}
    inputs: [app]
`)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(`{"status":200,"http":{"route":"/api","x":[1,2,{"y":"z"}]},"msg":"esc\u00e9aped \"q\""}`)
	sink := &nopSink{}
	allocs := testing.AllocsPerRun(1000, func() { p.Parse("app", line, sink) })
	if events, _ := sink.reset(); events == 0 || allocs != 0 {
		t.Errorf("%v allocs per line over %d events, want 0", allocs, events)
	}
}

// A rule timed by cri_time takes the time of the line's wrapper, not of its message.
func TestWrapperTime(t *testing.T) {
	c := mustParse(t, `
inputs: [{name: pod, path: /var/log/containers/*.log, wrapper: cri}]
rules:
  - name: lines
    match: 'status=(?P<status>[0-9]+)'
    labels: {status: '${status}'}
    timestamp: {capture: cri_time, layout: '2006-01-02T15:04:05Z07:00'}
    inputs: [pod]
`)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		time string
		want string
	}{
		{"2024-03-01T12:00:00.123456789Z", "lines{status=500} 1 t=1709294400/true"},
		{"2024-03-01T13:00:00+01:00", "lines{status=500} 1 t=1709294400/true"},
		{"yesterday", "lines drop bad_timestamp"},
	} {
		r := &recorder{t: t, rules: c.Rules}
		p.ParseWrapped("pod", []byte("GET / status=500"), []byte(tc.time), r)
		if got := r.take(); len(got) != 1 || got[0].String() != tc.want {
			t.Errorf("%s: got %v, want %s", tc.time, got, tc.want)
		}
	}
}

// A rule timed by cri_time reads the time as every runtime writes it: containerd's
// RFC 3339 with its nanoseconds trimmed of zeros (none at all on a whole second) and Z or
// the node's offset, CRI-O's (conmon's) nine digits and an offset always, +00:00 in UTC;
// with no layout given, or a layout that reads RFC 3339.
func TestWrapperTimeAsRuntimesWriteIt(t *testing.T) {
	for _, layout := range []string{"", ", layout: '2006-01-02T15:04:05Z07:00'", ", layout: '2006-01-02T15:04:05.999999999Z07:00'"} {
		c := mustParse(t, `
inputs: [{name: pod, path: /var/log/pods/*/*/*.log, wrapper: cri}]
rules:
  - {name: lines, match: 'GET', inputs: [pod], timestamp: {capture: cri_time`+layout+`}}
`)
		p, err := New(c.Rules)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []string{
			"2024-03-01T12:00:00.123456789Z",
			"2024-03-01T12:00:00.1234Z",
			"2024-03-01T12:00:00Z",
			"2024-03-01T13:00:00.5+01:00",
			"2024-03-01T12:00:00.120000000+00:00",
			"2024-03-01T06:30:00.000000000-05:30",
		} {
			r := &recorder{t: t, rules: c.Rules}
			p.ParseWrapped("pod", []byte("GET /"), []byte(at), r)
			if got := r.take(); len(got) != 1 || got[0].String() != "lines{} 1 t=1709294400/true" {
				t.Errorf("layout %q, time %s: got %v", layout, at, got)
			}
		}
	}
}
