package config

import (
	"slices"
	"strings"
	"testing"
)

// streams: names the CRI streams a cri input reads; by default both.
func TestStreams(t *testing.T) {
	for _, tc := range []struct {
		name, streams  string
		want           Streams
		stdout, stderr bool
		text           string
	}{
		{"default", "", 0, true, true, "[stdout, stderr]"},
		{"stdout", ", streams: [stdout]", StreamStdout, true, false, "[stdout]"},
		{"stderr", ", streams: [stderr]", StreamStderr, false, true, "[stderr]"},
		{"both", ", streams: [stderr, stdout]", StreamStdout | StreamStderr, true, true, "[stdout, stderr]"},
		{"twice", ", streams: [stdout, stdout]", StreamStdout, true, false, "[stdout]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte("inputs: [{path: /a, wrapper: cri"+tc.streams+"}]\nrules: [{name: a, match: x}]\n"), "in.yaml")
			if err != nil {
				t.Fatal(err)
			}
			s := c.Inputs[0].Streams
			if s != tc.want || s.Reads([]byte("stdout")) != tc.stdout || s.Reads([]byte("stderr")) != tc.stderr || s.String() != tc.text {
				t.Errorf("streams %v (%b): stdout %v, stderr %v; want %b, %v, %v", s, s, s.Reads([]byte("stdout")), s.Reads([]byte("stderr")), tc.want, tc.stdout, tc.stderr)
			}
			if tc.want != 0 && s.Reads([]byte("stdin")) {
				t.Error("a stream of another name is read")
			}
		})
	}
}

// Every mistake with streams: and the captures inputs give is a load error at its line.
func TestStreamsAndInputCapturesRefused(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"streams without cri", `
inputs: [{path: /a, streams: [stdout]}]
rules: [{name: a, match: x}]`, `bad.yaml:2: input #1: streams: applies to a wrapper: cri input`},
		{"streams of a socket", `
inputs: [{syslog: 'udp://127.0.0.1:5140', streams: [stdout]}]
rules: [{name: a, match: x}]`, `streams: applies to a wrapper: cri input`},
		{"unknown stream", `
inputs: [{path: /a, wrapper: cri, streams: [stdout, sterr]}]
rules: [{name: a, match: x}]`, `bad.yaml:2: input #1: streams: "sterr" is not a stream of a container (have: stdout, stderr)`},
		{"empty", `
inputs: [{path: /a, wrapper: cri, streams: []}]
rules: [{name: a, match: x}]`, `streams: is empty`},
		{"not a list", `
inputs: [{path: /a, wrapper: cri, streams: stdout}]
rules: [{name: a, match: x}]`, `streams: must be a list`},
		{"stream as a path capture", `
inputs: [{path: /a, wrapper: cri, path_captures: '^/(?P<stream>a)'}]
rules: [{name: a, match: x}]`, `path_captures: stream is the stream of a CRI line`},
		{"stream of a file without cri", `
inputs: [{name: f, path: /a}, {name: c, path: /b, wrapper: cri}]
rules: [{name: a, match: x, labels: {stream: '${stream}'}}]`, `rule "a": capture "stream" is a path capture of another input, but not of input "f"`},
		{"stream with no cri input", `
inputs: [{path: /a}]
rules: [{name: a, match: x, labels: {stream: '${stream}'}}]`, `capture "stream" is not in the match regex`},
		{"workload without a pod", `
inputs: [{path: /p/*.log, path_captures: '/(?P<podname>[^/]+)\.log$'}]
rules: [{name: a, match: x, labels: {w: '${workload}'}}]`, `capture "workload" is not in the match regex`},
		{"syslog captures of a file", `
inputs: [{name: f, path: /a}, {name: s, syslog: 'udp://127.0.0.1:5140'}]
rules: [{name: a, match: x, labels: {host: '${syslog_hostname}'}}]`, `capture "syslog_hostname" is a path capture of another input, but not of input "f"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text), "bad.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// An input gives its lines the captures of its kind: a cri input the stream, one whose
// path captures have a pod the workload unless they have a workload of their own, a
// syslog input the header's hostname and tag; a capture of the line itself of the same
// name takes precedence over them.
func TestInputCaptures(t *testing.T) {
	c, err := Parse([]byte(`
inputs:
  - {name: pods, path: '/p/*/*.log', wrapper: cri, path_captures: '^/p/(?P<pod>[^/]+)/'}
  - {name: own, path: '/o/*/*/*.log', path_captures: '^/o/(?P<pod>[^/]+)/(?P<workload>[^/]+)/'}
  - {name: s, syslog: 'udp://127.0.0.1:5140'}
  - {name: plain, path: /a}
rules:
  - {name: a, match: '(?P<stream>\S+)', labels: {s: '${stream}', w: '${workload}'}, inputs: [pods]}
`), "in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]string{{"stream", "workload"}, nil, {"syslog_hostname", "syslog_tag"}, nil} {
		if got := c.Inputs[i].InputCaptureNames(); !slices.Equal(got, want) {
			t.Errorf("input %s: captures %v, want %v", c.Inputs[i].Label(), got, want)
		}
	}
	if r := c.Rules[0]; !slices.Equal(r.PathCaptures, []string{"workload"}) {
		t.Errorf("rule reads %v of its input, want [workload]: its own stream group takes precedence", r.PathCaptures)
	}
}
