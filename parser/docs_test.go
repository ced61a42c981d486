package parser

import (
	"os"
	"regexp"
	"testing"
)

// rewriteExample is the YAML block of docs/configuration.md that shows rewrite:.
var rewriteExample = regexp.MustCompile("(?s)```yaml\n(    labels: [^\n]*\n    rewrite:.*?)```")

// TestDocsRewriteExample runs the rewrites docs/configuration.md shows, as the document
// has them, on the paths it names and others: each id becomes :id, consecutive ones too.
func TestDocsRewriteExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	m := rewriteExample.FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/configuration.md has no yaml block of labels: and rewrite:")
	}
	cfg := mustParse(t, "inputs: [{name: web, path: /a, log_format: combined}]\nrules:\n  - name: routes\n"+string(m[1]))
	p, err := New(cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/users/123/456":            "/users/:id/:id",
		"/api/users/123/orders/456": "/api/users/:id/orders/:id",
		"/api/users/8412":           "/api/users/:id",
		"/a/1/2/3/b":                "/a/:id/:id/:id/b",
		"/files/123.json":           "/files/:id.json",
		"/v2/123abc":                "/v2/123abc",
		"/o/0f8fad5b-d9cb-469f-a165-70867728950e/7": "/o/:uuid/:id",
		"/h/d41d8cd98f00b204e9800998ecf8427e":       "/h/:hash",
	} {
		sink := &labelSink{}
		p.Parse("web", []byte(`1.2.3.4 - - [01/Mar/2024:12:00:00 +0000] "GET `+path+`?q=1 HTTP/1.1" 200 5 "-" "-"`), sink)
		if len(sink.events) != 1 || sink.events[0][0] != want {
			t.Errorf("%s: %v, want route %s", path, sink.events, want)
		}
	}
}
