package pipeline

import (
	"bytes"
	"maps"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/input/follow"
)

// A read's lines parsed as one span by the reading goroutine (parseBlock, offered by the
// follower's Block) count as the same lines handed on one by one do: the same series, the
// same counts of lines read, unmatched and malformed. The test hands the lines on itself,
// as a follower would, to two inputs of the same rules: syslog inputs, which no socket
// feeds, in the state parseBlock asks of a file's (no CRI, path captures or candidates).
func TestParseBlockIsHandle(t *testing.T) {
	const rules = `
inputs: [{name: sock, syslog: 'unixgram://%s', log_format: '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time $upstream_response_time'}]
rules:
  - {name: requests, labels: {method: '${request_method}', status: '${status}'}}
  - {name: errors, where: {status: '^5'}, labels: {path: '${uri}'}}
  - {name: bytes, value: body_bytes_sent, labels: {class: '${status_class}'}}
  - {name: times, value: request_time}
`
	block := []byte(`127.0.0.1 - - [24/Nov/2026:05:28:09 +0000] "GET /a HTTP/1.1" 200 2 "-" "ua" 0.001 -
127.0.0.1 - - [24/Nov/2026:05:28:09 +0000] "POST /b?x=1 HTTP/1.1" 502 17 "-" "ua" 0.002` + "\r" + `
127.0.0.1 - - [24/Nov/2026:05:28:09 +0000] "GET /b HTTP/1.1" 200 5 "-" "ua" 0.003 0.001, 0.002

not a line of the format
10.0.0.2 - bob [24/Nov/2026:05:28:09 +0000] "GET /a HTTP/1.1" 503 - "https://x/" "ua \x22q\x22" 0.010 0.009 : 0.001
127.0.0.1 - - [24/Nov/2026:05:28:09 +0000] "\x16\x03\x01" 400 0 "-" "-" 0.000 -
`)
	blocked, _, _, _ := startSyslog(t, rules)
	oneByOne, _, _, _ := startSyslog(t, rules)
	for _, tc := range []struct {
		p     *Pipeline
		block bool
	}{{blocked, true}, {oneByOne, false}} {
		var in *stream
		for _, s := range tc.p.inputs {
			in = s
		}
		in.processing, in.wall = tc.p.clock.read()
		if tc.block {
			if n := in.parseBlock(tc.p, "", block); n != 7 {
				t.Fatalf("%d lines taken as one span, want the block's 7", n)
			}
		} else {
			handle := in.handle(tc.p)
			for line := range bytes.Lines(block) {
				handle("", follow.TrimCR(line[:len(line)-1]))
			}
		}
		in.flush()
	}
	got, want := gatherPipeline(t, blocked), gatherPipeline(t, oneByOne)
	for k, v := range map[string]float64{
		`requests_total{method="GET",status="200"}`: 2, `errors_total{path="/a"}`: 1,
		`times_window_events{window="1m"}`: 5, `logwindow_input_lines_total{input="sock"}`: 7,
	} {
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
}
