package explain

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/parser"
)

// TestDisplay: text reaches a terminal or page as it is only when it is valid UTF-8
// without control characters; else Go-quoted.
func TestDisplay(t *testing.T) {
	cases := []struct {
		in, want string
		escaped  bool
	}{
		{"GET / 200", "GET / 200", false},
		{"héllo <b>", "héllo <b>", false},
		{"a\xffb", `"a\xffb"`, true},
		{"a\x1b[31mred", `"a\x1b[31mred"`, true},
		{"tab\there", `"tab\there"`, true},
		{"", "", false},
	}
	for _, c := range cases {
		got, esc := display([]byte(c.in))
		if got != c.want || esc != c.escaped {
			t.Errorf("display(%q) = %q, %v; want %q, %v", c.in, got, esc, c.want, c.escaped)
		}
	}
}

// TestWrite renders one explained line in both formats: the JSON decodes back to the same
// Line, the text names each rule's outcome, and an unknown format is an error.
func TestWrite(t *testing.T) {
	cfg, err := config.Parse([]byte(`
global: {windows: [1m], max_series_per_rule: 1}
rules:
  - name: requests
    match: '^(?P<method>[A-Z]+) (?P<status>\d+)$'
    labels: {method: '${method}'}
  - name: errors
    match: '^(?P<method>[A-Z]+) (?P<status>\d+)$'
    where: {status: '^5'}
`), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := parser.New(cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
	set, err := store.NewSet(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := set.NewSink()
	sink.SetNow(1000, 1000)
	x := New(cfg.Rules, p, sink)
	lines := []Line{x.Explain("", []byte("GET 200"), true), x.Explain("", []byte("PUT 200"), false), x.Explain("", []byte("GET 2x"), false)}

	var js bytes.Buffer
	if err := Write(&js, "json", lines); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&js)
	for i := range lines {
		var back Line
		if err := dec.Decode(&back); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(back)
		b, _ := json.Marshal(lines[i])
		if !bytes.Equal(a, b) {
			t.Errorf("line %d does not survive JSON:\n%s\n%s", i, a, b)
		}
	}

	var text bytes.Buffer
	if err := Write(&text, "text", lines); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`  + requests{method="GET"}: placed at 1970-01-01T00:16:40Z` + "\n",
		`  - errors: where status: "200" does not match ^5`,
		// The budget of one label set is taken by GET, which was fed; PUT would fold.
		`  + requests{method="PUT"}: placed at 1970-01-01T00:16:40Z; FOLDED into the __overflow__ series`,
		"line: GET 2x\n  UNMATCHED: no rule matches this line\n  - requests: regex does not match\n",
		`      then at byte 5 expects [0-9] or end of line ($), but the line has "x" (inside capture status)`,
		"  - errors: regex does not match (the same as requests's)\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if err := Write(&text, "xml", lines); err == nil || !strings.Contains(err.Error(), "text, json") {
		t.Errorf("unknown format: %v", err)
	}
}
