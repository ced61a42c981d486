package parser

import (
	"bytes"
	"os"
	"reflect"
	"slices"
	"strings"
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

// spanSink is a recorder that counts what it is given, as the store's sink does.
type spanSink struct {
	recorder
	received uint64
}

func (k *spanSink) Event(e *Event)                { k.received++; k.recorder.Event(e) }
func (k *spanSink) Drop(rule int, why DropReason) { k.received++; k.recorder.Drop(rule, why) }
func (k *spanSink) Received() uint64              { return k.received }

// ParseSpan gives the sink what ParseFile gives it line by line, and counts what the lines'
// LineDone would have been told, each line told apart by the sink's count as the pipeline
// tells it: malformed, given to some rule, fitted but matched by no rule, fitting none.
// Every outcome occurs, of lines of regex rules, of a JSON input (with a regex rule too:
// a line its fields rules cannot read is malformed whatever the regex made of it) and of
// an input of one log format read by a rule reading candidates; a "\r" before a newline
// is not the line's. A Session of candidate formats parses nothing of a span.
func TestParseSpanIsParseFile(t *testing.T) {
	cfg := mustParse(t, `
inputs:
  - {name: web, path: /a}
  - {name: app, path: /b, format: json}
  - {name: nginx, path: /c, log_format: combined}
  - {name: pods, path: /d, log_format: [combined, json]}
  - {name: mixed, path: /e, format: json}
rules:
  - {name: errors, match: 'status=(?P<s>\d+)', where: {s: '^5'}, inputs: [web]}
  - {name: slow, match: 'took=(?P<t>\S+)', value: t, inputs: [web]}
  - {name: levels, fields: {level: level}, where: {level: '^error$'}, inputs: [app]}
  - {name: statuses, labels: {status: '${status}'}, where: {status: '^[45]'}, inputs: [nginx, pods]}
  - {name: mixedlevels, fields: {level: level}, where: {level: '^error$'}, inputs: [mixed]}
  - {name: ids, match: 'id=(?P<id>\d+)', inputs: [mixed]}
`)
	p := newOfInputs(t, cfg)
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" %s 5 "-" "curl"`
	for _, tc := range []struct {
		input string
		span  string
		want  Span
	}{
		{"web", "status=503\nstatus=200\r\ntook=bad\ntook=0.5\n\nnothing here\r\n", Span{Lines: 6, Matched: 3, Fitted: 1, Unfitted: 2}},
		{"app", "{\"level\":\"error\"}\r\n{\"level\":\"info\"}\nnot json\n{\"level\":\"error\"}\n", Span{Lines: 4, Malformed: 1, Matched: 2, Fitted: 1}},
		// A line its fields rules cannot read is malformed, though a regex rule matched it.
		{"mixed", "id=7\n{\"level\":\"error\"}\n{\"level\":\"info\"}\nnothing\n{\"level\":\"info\",\"m\":\"id=8\"}\n", Span{Lines: 5, Malformed: 2, Matched: 2, Fitted: 1}},
		{"nginx", strings.ReplaceAll(combined, "%s", "404") + "\n" + strings.ReplaceAll(combined, "%s", "200") + "\r\nstatus=503\n", Span{Lines: 3, Matched: 1, Fitted: 1, Unfitted: 1}},
	} {
		t.Run(tc.input, func(t *testing.T) {
			var in config.Input
			for _, i := range cfg.Inputs {
				if i.Name == tc.input {
					in = i
				}
			}
			spanned, oneByOne := p.NewSession(), p.NewSession()
			spanned.SetFormat(in.Name, in.LogFormat)
			oneByOne.SetFormat(in.Name, in.LogFormat)
			if in.LogFormat != nil && spanned.one == nil {
				t.Fatalf("input %s: no rule reading candidates reads it", in.Name)
			}
			a, b := &spanSink{recorder: recorder{t: t, rules: cfg.Rules}}, &spanSink{recorder: recorder{t: t, rules: cfg.Rules}}
			got := spanned.ParseSpan(in.Name, []byte(tc.span), a)
			if got != tc.want {
				t.Errorf("ParseSpan = %+v, want %+v", got, tc.want)
			}
			if want := parseOneByOne(oneByOne, in.Name, []byte(tc.span), b); got != want {
				t.Errorf("ParseSpan = %+v, ParseFile line by line told %+v", got, want)
			}
			if ga, gb := a.take(), b.take(); !slices.Equal(ga, gb) {
				t.Errorf("ParseSpan gave the sink\n%v\nParseFile line by line\n%v", ga, gb)
			}
		})
	}
	// A Session of candidate formats may hold lines while a file's format is chosen: it
	// parses none of the span, which then goes to ParseFile line by line.
	t.Run("candidates", func(t *testing.T) {
		s := p.NewSession()
		s.SetFormats(cfg.Inputs[3].LogFormats, NewFiles())
		sink := &spanSink{recorder: recorder{t: t, rules: cfg.Rules}}
		if got := s.ParseSpan("pods", []byte(strings.ReplaceAll(combined, "%s", "404")+"\n"), sink); got != (Span{}) {
			t.Errorf("ParseSpan = %+v of a Session of candidate formats, want none", got)
		}
		if got := sink.take(); len(got) > 0 {
			t.Errorf("ParseSpan of a Session of candidate formats gave the sink %v", got)
		}
	})
}

// parseOneByOne parses span's lines with ParseFile, one by one, and counts what their
// LineDone is told as the pipeline counts it: a line that changed the sink's count was
// given to some rule.
func parseOneByOne(s *Session, input string, span []byte, sink *spanSink) Span {
	var sp Span
	for line := range bytes.Lines(span) {
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		before := sink.Received()
		s.ParseFile("f", input, line, nil, sink, func(wellFormed, fitted bool) {
			sp.Lines++
			switch {
			case !wellFormed:
				sp.Malformed++
			case sink.Received() != before:
				sp.Matched++
			case fitted:
				sp.Fitted++
			default:
				sp.Unfitted++
			}
		})
	}
	return sp
}

// FuzzParseSpan: a span of any lines (ended by a newline) gives the sink and the counts
// what its lines parsed one by one give, with the example's rules and the fuzz rules.
func FuzzParseSpan(f *testing.F) {
	rules := exampleAndFuzzRules(f)
	p, err := New(rules)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("23.124.205.19 - - [01/Mar/2024:12:00:00 +0000] \"GET /api/v1/cart HTTP/1.1\" 200 460 \"-\" \"Mozilla/5.0\" 0.022 0.019\r\n\nstatus=503 path=/a took=12.5ms\n"))
	f.Add([]byte("status=404 path= took=-ms\r\r\n\r\nx"))
	f.Fuzz(func(t *testing.T, span []byte) {
		if len(span) > 0 && span[len(span)-1] != '\n' {
			span = append(span, '\n')
		}
		a, b := &spanSink{recorder: recorder{t: t, rules: rules}}, &spanSink{recorder: recorder{t: t, rules: rules}}
		got := p.NewSession().ParseSpan("nginx", span, a)
		if want := parseOneByOne(p.NewSession(), "nginx", span, b); got != want {
			t.Fatalf("span %q: ParseSpan = %+v, one by one %+v", span, got, want)
		}
		if !reflect.DeepEqual(a.got, b.got) {
			t.Fatalf("span %q: ParseSpan gave the sink\n%v\none by one\n%v", span, a.got, b.got)
		}
	})
}
