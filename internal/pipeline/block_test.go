package pipeline

import (
	"bytes"
	"maps"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/input/follow"
)

// A read's lines parsed as one span by the reading goroutine (parseBlock, offered by the
// follower's Block) count as the same lines handed on one by one do: the same series, the
// same counts of lines read, unmatched and malformed, and of lines that fitted a group of
// rules and did not (warnUnreadable's). The test hands the lines on itself, as a follower
// would, to two inputs of the same rules: syslog inputs, which no socket feeds, in the
// state parseBlock asks of a file's (no CRI, path captures or candidates). Lines handed on
// one by one after the span (a read with a line too long in it is not offered as one) go
// to the binding that parsed the span, which must have counted what its sink was given.
func TestParseBlockIsHandle(t *testing.T) {
	for _, tc := range []struct {
		name, rules string
		block       string
		after       string
		want        map[string]float64
	}{{
		name: "log format",
		rules: `
inputs: [{name: sock, syslog: 'unixgram://%s', log_format: '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time $upstream_response_time'}]
rules:
  - {name: requests, labels: {method: '${request_method}', status: '${status}'}}
  - {name: errors, where: {status: '^5'}, labels: {path: '${uri}'}}
  - {name: bytes, value: body_bytes_sent, labels: {class: '${status_class}'}}
  - {name: times, value: request_time}
`,
		block: `127.0.0.1 - - [24/Nov/2026:05:28:09 +0000] "GET /a HTTP/1.1" 200 2 "-" "ua" 0.001 -
127.0.0.1 - - [24/Nov/2026:05:28:09 +0000] "POST /b?x=1 HTTP/1.1" 502 17 "-" "ua" 0.002` + "\r" + `
127.0.0.1 - - [24/Nov/2026:05:28:09 +0000] "GET /b HTTP/1.1" 200 5 "-" "ua" 0.003 0.001, 0.002

not a line of the format
10.0.0.2 - bob [24/Nov/2026:05:28:09 +0000] "GET /a HTTP/1.1" 503 - "https://x/" "ua \x22q\x22" 0.010 0.009 : 0.001
127.0.0.1 - - [24/Nov/2026:05:28:09 +0000] "\x16\x03\x01" 400 0 "-" "-" 0.000 -
`,
		after: "neither\n",
		want: map[string]float64{
			`requests_total{method="GET",status="200"}`: 2, `errors_total{path="/a"}`: 1,
			`times_window_events{window="1m"}`: 5, `logwindow_input_lines_total{input="sock"}`: 8,
			`logwindow_input_unmatched_lines_total{input="sock"}`: 3, "fit": 5, "unfit": 3,
		},
	}, {
		// Every outcome of a line: given to a rule (an event, or a drop of its value),
		// fitted but filtered out by every rule, malformed (a line its fields rules cannot
		// read, though a regex rule matched it), fitting nothing.
		name: "json",
		rules: `
inputs: [{name: sock, syslog: 'unixgram://%s', format: json}]
rules:
  - {name: levels, fields: {level: level}, where: {level: '^error$'}, inputs: [sock]}
  - {name: ids, match: 'id=(?P<id>\S+)', value: id}
`,
		block: `{"level":"error"}
{"level":"info"}
id=7` + "\r" + `
nothing
{"level":"info","m":"id=x"}

{"level":"error","m":"id=3"}
`,
		after: "{\"level\":\"info\"}\nid=2\n{\"level\":\"error\"}\n",
		want: map[string]float64{
			`levels_total{}`: 3, `ids_total{}`: 9, `logwindow_input_lines_total{input="sock"}`: 10,
			`logwindow_input_unmatched_lines_total{input="sock"}`: 2,
			`logwindow_input_malformed_lines_total{input="sock"}`: 4, "fit": 6, "unfit": 0,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			blocked, _, _, _ := startSyslog(t, tc.rules)
			oneByOne, _, _, _ := startSyslog(t, tc.rules)
			counts := map[*Pipeline]map[string]float64{}
			for _, p := range []*Pipeline{blocked, oneByOne} {
				var in *stream
				for _, s := range p.inputs {
					in = s
				}
				in.processing, in.wall = p.clock.read()
				handle := in.handle(p)
				lines := []byte(tc.block + tc.after)
				if p == blocked {
					if !in.parseBlock(p, "", []byte(tc.block)) {
						t.Fatal("the block's lines not taken as one span")
					}
					lines = []byte(tc.after)
				}
				for line := range bytes.Lines(lines) {
					handle("", follow.TrimCR(line[:len(line)-1]))
				}
				in.flush()
				got := gatherPipeline(t, p)
				// Not metrics: what warnUnreadable reads, beside them.
				got["fit"], got["unfit"] = float64(in.fit.Load()), float64(in.unfit.Load())
				counts[p] = got
			}
			got, want := counts[blocked], counts[oneByOne]
			for k, v := range tc.want {
				if want[k] != v {
					t.Errorf("%s = %v handed on one by one, want %v", k, want[k], v)
				}
			}
			if !maps.Equal(got, want) {
				for k, v := range want {
					if got[k] != v {
						t.Errorf("%s = %v parsed as one span, %v one by one", k, got[k], v)
					}
				}
				for k, v := range got {
					if _, ok := want[k]; !ok {
						t.Errorf("%s = %v parsed as one span only", k, v)
					}
				}
			}
		})
	}
}

// A read that finds every batch of the workers queued (none free) the reading goroutine
// parses itself as one span (parseBlock), as on one core, rather than have its lines
// handed on one by one: the follower's Block takes them, and they count as read and as
// what they made once the read is done.
func TestBlockWithNoBatchFree(t *testing.T) {
	p, _, _, _ := startSyslog(t, `
inputs: [{name: sock, syslog: 'unixgram://%s'}]
rules: [{name: requests, match: '^GET (?P<path>\S+)$', labels: {path: '${path}'}}]
`)
	var in *stream
	for _, s := range p.inputs {
		in = s
	}
	// A pool of no worker whose batches are all dealt: none is free.
	w := &pool{dealt: make(chan *batch), free: make(chan *batch)}
	in.pool.Store(w)
	defer in.pool.Store(nil)
	in.processing, in.wall = p.clock.read()
	lines := []byte("GET /a\nGET /b\r\nPUT /c\nGET /a\n")
	if !(batchHold{p: p, in: in}).Block("", lines) {
		t.Fatal("Block did not take the read's lines")
	}
	if w.cur != nil || !w.inline {
		t.Fatalf("a batch was filled (%v), or the read is not the reading goroutine's (%v)", w.cur != nil, w.inline)
	}
	in.flush()
	got := gatherPipeline(t, p)
	for k, v := range map[string]float64{
		`requests_total{path="/a"}`: 2, `requests_total{path="/b"}`: 1,
		`logwindow_input_lines_total{input="sock"}`: 4, `logwindow_input_unmatched_lines_total{input="sock"}`: 1,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
