package parser

import (
	"bytes"
	"os"
	"slices"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
)

// A Session keeps one scratch across lines where Parse takes one from the pool per line:
// it must report exactly what a fresh scratch reports for each line (nothing of the lines
// before may leak into it) and what Parse reports, with Parse calls on the same Parser in
// between, for regex and fields rules, on malformed lines too.
func TestSessionParsesAsParse(t *testing.T) {
	sample, err := os.ReadFile("../examples/access.log")
	if err != nil {
		t.Fatal(err)
	}
	json := [][]byte{
		[]byte(`{"time_local":"01/Mar/2024:12:00:00 +0000","remote_addr":"10.0.0.1","request_method":"GET","request_uri":"/a?b=1","request_path":"/a","status":"200","status_class":"2","body_bytes_sent":"612","request_time":"0.010","upstream_response_time":"0.009","http_user_agent":"curl/8"}`),
		[]byte(`{"time_local":"01/Mar/2024:12:00:01 +0000","remote_addr":"10.0.0.2","request_method":"POST","request_uri":"/b\u00e9","request_path":"/b\u00e9","status":"502","status_class":"5","body_bytes_sent":"4","request_time":"1.5","upstream_response_time":"-","http_user_agent":"x\"y"}`),
		[]byte(`not json at all`),
		[]byte(`{"time_local":"bad time","status":"abc","request_time":"-"}`),
	}
	// Rules of one group that render the same labels and read the same time, so what a
	// scratch remembers of one line's match would be used for the next if it leaked.
	shared := t.TempDir() + "/shared.yaml"
	if err := os.WriteFile(shared, []byte(`
inputs: [{name: app, path: /var/log/app.log}]
rules:
  - {name: first, match: '^(?P<a>\S*) \[(?P<t>[^\]]*)\]', labels: {x: '${a}'}, timestamp: {capture: t, layout: '02/Jan/2006:15:04:05 -0700'}}
  - {name: second, match: '^(?P<a>\S*) \[(?P<t>[^\]]*)\]', labels: {x: '${a}'}, timestamp: {capture: t, layout: '02/Jan/2006:15:04:05 -0700'}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, rules string
		lines       [][]byte
	}{
		{"text", "../example-rules.yaml", bytes.Split(bytes.TrimSuffix(sample, []byte("\n")), []byte("\n"))},
		{"json", "../example-rules-json.yaml", json},
		{"shared", shared, [][]byte{
			[]byte("u1 [01/Mar/2024:12:00:00 +0000]"), []byte("u2 [01/Mar/2024:12:00:01 +0000]"), []byte("u2 [not a time]"),
			[]byte("\xff [01/Mar/2024:12:00:02 +0000]"), []byte("u3 [01/Mar/2024:12:00:02 +0000]"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Load(tc.rules)
			if err != nil {
				t.Fatal(err)
			}
			p, err := New(c.Rules)
			if err != nil {
				t.Fatal(err)
			}
			input := c.Inputs[0].Name
			s := p.NewSession()
			fresh, pooled, kept := &fullSink{rules: c.Rules}, &fullSink{rules: c.Rules}, &fullSink{rules: c.Rules}
			reported := 0
			for i, line := range tc.lines {
				_, wantOK := p.parse(p.scratch.New().(*scratch), p.base.groups, false, input, line, nil, fresh)
				pooledOK := p.ParseWrapped(input, line, nil, pooled)
				gotOK := s.ParseWrapped(input, line, nil, kept)
				if gotOK != wantOK || !slices.Equal(kept.got, fresh.got) {
					t.Fatalf("line %d %q: session %v %q, fresh scratch %v %q", i+1, line, gotOK, kept.got, wantOK, fresh.got)
				}
				if pooledOK != wantOK || !slices.Equal(pooled.got, fresh.got) {
					t.Fatalf("line %d %q: Parse %v %q, fresh scratch %v %q", i+1, line, pooledOK, pooled.got, wantOK, fresh.got)
				}
				if len(fresh.got) > 0 {
					reported++
				}
				fresh.got, pooled.got, kept.got = fresh.got[:0], pooled.got[:0], kept.got[:0]
			}
			if reported < len(tc.lines)/2 {
				t.Errorf("rules report %d of %d lines; the test compares too little", reported, len(tc.lines))
			}
		})
	}
}

func TestSessionDoesNotAllocate(t *testing.T) {
	p, err := New(loadExample(t).Rules)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(`23.124.205.19 - - [01/Mar/2024:12:00:01 +0000] "GET /api/v1/cart HTTP/1.1" 502 4 "-" "Mozilla/5.0" 0.5 0.004, 0.041`)
	s, sink := p.NewSession(), &nopSink{}
	if allocs := testing.AllocsPerRun(1000, func() { s.ParseWrapped("nginx", line, nil, sink) }); allocs != 0 {
		t.Errorf("%v allocs per line, want 0", allocs)
	}
	if events, _ := sink.reset(); events == 0 {
		t.Error("no event: the test measures nothing")
	}
}
