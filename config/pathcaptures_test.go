package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// podsInputs are a node's pod logs read through path captures, and another file without.
const podsInputs = `
inputs:
  - name: pods
    path: /var/log/pods/*_*_*/nginx/*.log
    wrapper: cri
    path_captures: '^/var/log/pods/(?P<namespace>[^_]+)_(?P<pod>[^_]+)_[^/]+/(?P<container>[^/]+)/'
  - name: local
    path: /var/log/nginx/access.log
`

// Path captures are indexed after the line's captures, in the order the rule first names
// them, in labels, where, items and the value alike.
func TestPathCaptures(t *testing.T) {
	c, err := Parse([]byte(podsInputs+`
rules:
  - name: pod_requests
    match: '" (?P<status>\d{3}) (?P<bytes>\d+)'
    labels: {pod: '${namespace}/${pod}', status: '${status}'}
    where: {container: '^nginx$'}
    distinct: '${pod}'
    inputs: [pods]
  - name: local_requests
    match: '" (?P<status>\d{3}) '
    labels: {status: '${status}'}
`), "paths.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Inputs[0].PathCaptureNames(); !slices.Equal(got, []string{"namespace", "pod", "container", "stream", "workload"}) {
		t.Errorf("pods input: path captures %v", got)
	}
	if c.Inputs[1].File.PathCaptures != nil {
		t.Errorf("local input: path captures %v, want none", c.Inputs[1].File.PathCaptures)
	}
	r := c.Rules[0]
	if !slices.Equal(r.PathCaptures, []string{"namespace", "pod", "container"}) {
		t.Errorf("PathCaptures = %v", r.PathCaptures)
	}
	// Two groups in the regex: the path captures are 3, 4 and 5.
	wantPod := Template{{Capture: 3}, {Literal: "/", Capture: -1}, {Capture: 4}}
	if !reflect.DeepEqual(r.Labels[0].Template, wantPod) {
		t.Errorf("pod label %+v, want %+v", r.Labels[0].Template, wantPod)
	}
	if r.Where[0].Capture != 5 || r.Items[0].Template[0].Capture != 4 {
		t.Errorf("where reads %d, distinct %d: want 5 and 4", r.Where[0].Capture, r.Items[0].Template[0].Capture)
	}
	if c.Rules[1].PathCaptures != nil {
		t.Errorf("a rule naming no path capture has %v", c.Rules[1].PathCaptures)
	}
}

// Every mistake with path captures is a load error naming the input or rule.
func TestPathCapturesRefused(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"socket", `
inputs: [{name: s, syslog: 'udp://127.0.0.1:5140', path_captures: '(?P<x>.)'}]
rules: [{name: a, match: x}]`, `input "s": path_captures: applies to file inputs (path:), not to a syslog input`},
		{"no named group", `
inputs: [{path: /a, path_captures: '^/(a)'}]
rules: [{name: a, match: x}]`, `path_captures: the regex has no named group`},
		{"invalid", `
inputs: [{path: /a, path_captures: '(?P<x>'}]
rules: [{name: a, match: x}]`, `path_captures: invalid regex`},
		{"twice", `
inputs: [{path: /a, path_captures: '(?P<x>a)(?P<x>b)'}]
rules: [{name: a, match: x}]`, `path_captures: capture "x" is defined twice`},
		{"cri_time", `
inputs: [{path: /a, wrapper: cri, path_captures: '(?P<cri_time>a)'}]
rules: [{name: a, match: x}]`, `path_captures: cri_time is the time of a CRI line`},
		{"clash with the regex", podsInputs + `
rules: [{name: a, match: '(?P<pod>\S+)', labels: {pod: '${pod}'}, inputs: [pods]}]`,
			`rule "a": capture "pod" is both a group of the match regex and a path capture of input "pods"`},
		{"clash with a log format", `
inputs: [{name: web, path: /a, log_format: combined, path_captures: '^/(?P<status>a)'}]
rules: [{name: a, labels: {s: '${status}'}}]`,
			`rule "a": capture "status" is both a variable of the log format "combined" and a path capture of input "web"`},
		{"clash with candidate formats", `
inputs: [{name: web, path: /a, log_format: auto, path_captures: '^/(?P<status>a)'}]
rules: [{name: a, labels: {s: '${status}'}}]`,
			`rule "a": capture "status" is both a capture of the candidate log formats and a path capture of input "web"`},
		{"clash with fields", `
inputs: [{name: j, path: /a, format: json, path_captures: '^/(?P<pod>a)'}]
rules: [{name: a, fields: {pod: kubernetes.pod}, labels: {pod: '${pod}'}, inputs: [j]}]`,
			`rule "a": capture "pod" is both a capture of fields and a path capture of input "j"`},
		{"an input without it", podsInputs + `
rules: [{name: a, match: x, labels: {pod: '${pod}'}}]`,
			`rule "a": capture "pod" is a path capture of another input, but not of input "local", which the rule reads; restrict the rule`},
		{"an unnamed input without it", `
inputs: [{name: pods, path: /p/*/0.log, path_captures: '^/p/(?P<pod>[^/]+)/'}, {path: /a}]
rules: [{name: a, match: x, labels: {pod: '${pod}'}}]`,
			`capture "pod" is a path capture of another input, but not of input "/a", which the rule reads; name the inputs`},
		{"unknown, listed", podsInputs + `
rules: [{name: a, match: '(?P<status>\d+)', labels: {pod: '${pods}'}, inputs: [pods]}]`,
			`capture "pods" is not in the match regex (did you mean "pod"?) (have: status, namespace, pod, container, stream, workload)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text), "bad.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// Which path capture an index stands for is part of a rule's identity: ${node} and ${zone}
// are both the first path capture, index 2, yet not the same label.
func TestFingerprintPathCaptureNames(t *testing.T) {
	const in = "inputs: [{path: /a, path_captures: '^/(?P<node>[a-z])(?P<zone>[a-z])'}]\n"
	node := fingerprintOf(t, in+"rules: [{name: r, match: '(?P<s>x)', labels: {where: '${node}'}}]")
	zone := fingerprintOf(t, in+"rules: [{name: r, match: '(?P<s>x)', labels: {where: '${zone}'}}]")
	if node == zone {
		t.Error("a rule labelled by ${node} and one by ${zone} have one fingerprint")
	}
}
