package parser

import (
	"slices"
	"strings"
	"testing"
)

// pathRules read the path captures of a pod log's path in every place a capture can be
// read, from a regex group and from a fields group, beside captures of the line.
const pathRules = `
inputs:
  - name: pods
    path: /var/log/pods/*_*_*/*/*.log
    path_captures: '^/var/log/pods/(?P<namespace>[^_]+)_(?P<pod>[^_]+)_[^/]+/(?P<container>[^/]+)/(?P<restart>[0-9]+)\.log$'
  - name: json
    path: /var/log/json/*/*.log
    format: json
    path_captures: '^/var/log/json/(?P<pod>[^/]+)/'
rules:
  - name: by_pod
    match: '^(?P<status>\d{3}) (?P<bytes>\d+)$'
    labels: {pod: '${namespace}/${pod}', status: '${status}'}
    where: {container: '^nginx$'}
    inputs: [pods]
  - name: restarts
    match: '^(?P<status>\d{3}) (?P<bytes>\d+)$'
    value: restart
    labels: {pod: '${namespace}/${pod}'}
    inputs: [pods]
  - name: same_regex_no_path
    match: '^(?P<status>\d{3}) (?P<bytes>\d+)$'
    labels: {status: '${status}'}
    inputs: [pods]
  - name: json_by_pod
    fields: {status: status}
    labels: {pod: '${pod}', status: '${status}'}
    distinct: '${pod}'
    inputs: [json]
`

// The values SetPath gives are captures of every line after it, in labels, filters,
// values and items, until the next SetPath; a rule that reads none is as before, and
// without SetPath (or with a value not set) they read as empty.
func TestPathCaptures(t *testing.T) {
	c := mustParse(t, pathRules)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.PathCaptures(); !slices.Equal(got, []string{"container", "namespace", "pod", "restart"}) {
		t.Fatalf("PathCaptures() = %v", got)
	}
	values := func(container, namespace, pod, restart string) [][]byte {
		return [][]byte{[]byte(container), []byte(namespace), []byte(pod), []byte(restart)}
	}
	s := p.NewSession()
	sink := &fullSink{rules: c.Rules}
	parse := func(input, line string) {
		s.ParseWrapped(input, []byte(line), nil, sink)
	}
	s.SetPath(values("nginx", "web", "front-1", "0"))
	parse("pods", "200 512")
	s.SetPath(values("nginx", "shop", "cart-7", "2"))
	parse("pods", "503 0")
	s.SetPath(values("sidecar", "shop", "cart-7", "0"))
	parse("pods", "200 1")
	s.SetPath([][]byte{nil, []byte("shop")}) // container did not take part; pod and restart not given
	parse("pods", "404 3")
	s.SetPath([][]byte{nil, nil, []byte("api-3")})
	parse("json", `{"status":"200"}`)
	want := []string{
		`by_pod key="web/front-1\xff200" labels=["web/front-1" "200"] items=[] 1 t=0/false`,
		`restarts key="web/front-1" labels=["web/front-1"] items=[] 0 t=0/false`,
		`same_regex_no_path key="200" labels=["200"] items=[] 1 t=0/false`,
		`by_pod key="shop/cart-7\xff503" labels=["shop/cart-7" "503"] items=[] 1 t=0/false`,
		`restarts key="shop/cart-7" labels=["shop/cart-7"] items=[] 2 t=0/false`,
		`same_regex_no_path key="503" labels=["503"] items=[] 1 t=0/false`,
		`restarts key="shop/cart-7" labels=["shop/cart-7"] items=[] 0 t=0/false`,
		`same_regex_no_path key="200" labels=["200"] items=[] 1 t=0/false`,
		`restarts drop no_value`,
		`same_regex_no_path key="404" labels=["404"] items=[] 1 t=0/false`,
		`json_by_pod key="api-3\xff200" labels=["api-3" "200"] items=["api-3"] 1 t=0/false`,
	}
	if !slices.Equal(sink.got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(sink.got, "\n"), strings.Join(want, "\n"))
	}

	// Parse has no file: its path captures are empty.
	sink.got = nil
	p.Parse("pods", []byte("200 1"), sink)
	if want := `restarts drop no_value`; !slices.Contains(sink.got, want) {
		t.Errorf("Parse without a path: %q, want %q among them", sink.got, want)
	}

	// Explain shows them after the line's, not taking part.
	x := p.Explain("pods", []byte("200 1"))
	var names []string
	for _, cp := range x.Rules[0].Captures {
		names = append(names, cp.Name)
		if cp.Name == "pod" && cp.Matched {
			t.Errorf("pod taken part in Explain, which has no file: %+v", cp)
		}
	}
	if want := []string{"status", "bytes", "namespace", "pod", "container"}; !slices.Equal(names, want) {
		t.Errorf("Explain's captures %v, want %v", names, want)
	}
}

// Rules of one fields group render their own labels from their own fields, even where
// their templates, in each rule's numbering of its captures, are equal: ${a} of one rule
// and ${b} of the other are both capture 1, but of different fields. (They shared the
// first rule's rendering, so the second counted under the first's values.)
func TestFieldsRulesRenderTheirOwnFields(t *testing.T) {
	c := mustParse(t, `
inputs: [{name: j, path: /a, format: json}]
rules:
  - {name: a, fields: {a: x}, labels: {v: '${a}'}, distinct: '${a}', inputs: [j]}
  - {name: b, fields: {b: y}, labels: {v: '${b}'}, distinct: '${b}', inputs: [j]}
`)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	sink := &fullSink{rules: c.Rules}
	p.Parse("j", []byte(`{"x":"1","y":"2"}`), sink)
	want := []string{
		`a key="1" labels=["1"] items=["1"] 1 t=0/false`,
		`b key="2" labels=["2"] items=["2"] 1 t=0/false`,
	}
	if !slices.Equal(sink.got, want) {
		t.Errorf("got %q, want %q", sink.got, want)
	}
}
