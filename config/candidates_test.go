package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config/logformat"
)

// A rule over inputs with candidate formats is compiled against each candidate that gives
// every capture it reads, its capture numbers and time layout those of the candidate.
func TestRulesOnCandidates(t *testing.T) {
	c, err := Parse([]byte(`
inputs:
  - {name: pods, path: '/var/log/pods/*/*.log', log_format: auto, path_captures: '^/var/log/pods/(?P<pod>[^/]+)/'}
  - {name: apps, path: /b, log_format: [combined_request_time, '{"s":"$status","rt":"$request_time"}', '$time_iso8601 $status']}
rules:
  - name: requests
    inputs: [pods]
    labels: {pod: '${pod}', status: '${status}', method: '${request_method}'}
  - name: request_seconds
    value: request_time
    labels: {status: '${status}'}
  - name: timed
    inputs: [apps]
    timestamp: {capture: time_iso8601}
  - name: custom_key
    inputs: [pods]
    labels: {tenant: '${tenant}', pod: '${pod}'}
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Inputs[0].LogFormats); n != len(logformat.Auto) {
		t.Fatalf("auto gives %d candidates, want %d", n, len(logformat.Auto))
	}
	applies := func(r *Rule) string {
		var out []string
		for k, v := range r.Variants {
			if v != nil {
				out = append(out, r.Candidates[k].Describe())
			}
		}
		return strings.Join(out, " ")
	}
	tests := []struct {
		rule, want string
	}{
		{"requests", "upstreaminfo main_upstream_time main_request_time main combined_upstream_time combined_request_time combined json"},
		{"request_seconds", `upstreaminfo main_upstream_time main_request_time combined_upstream_time combined_request_time json {"s":"$status","rt":"$request_time"}`},
		{"timed", "$time_iso8601 $status"},
		{"custom_key", "json"},
	}
	for i, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			r := c.Rules[i]
			if got := applies(r); got != tt.want {
				t.Errorf("applies to %q, want %q", got, tt.want)
			}
			for k, v := range r.Variants {
				if v == nil {
					continue
				}
				if v.LogFormat == nil || v.Candidates != nil || v.Regexp == nil && v.Fields == nil {
					t.Fatalf("variant for %s is not compiled against it", r.Candidates[k].Describe())
				}
				for _, l := range v.Labels {
					name := v.CaptureName(l.Template[0].Capture)
					if want := r.CaptureName(r.Labels[slicesIndex(r.Labels, l.Name)].Template[0].Capture); name != want {
						t.Errorf("%s: label %s reads %q, want %q", r.Candidates[k].Describe(), l.Name, name, want)
					}
				}
			}
		})
	}
	if v := c.Rules[1].Variants[0]; !v.ValueList && v.CaptureName(v.ValueCapture) != "request_time" {
		t.Errorf("upstreaminfo variant reads %q", v.CaptureName(v.ValueCapture))
	}
	if ts := c.Rules[2].Variants[2].Timestamp; ts.Layout != logformat.LayoutISO8601 {
		t.Errorf("time layout %q, want the ISO one", ts.Layout)
	}
}

func slicesIndex(ls []Label, name string) int {
	for i, l := range ls {
		if l.Name == name {
			return i
		}
	}
	return -1
}

// A capture that no candidate of an input the rule reads gives is refused at its line,
// naming the rule, the capture and the input; so are a bad list and a bad candidate.
func TestCandidatesRefused(t *testing.T) {
	tests := []struct {
		name, yaml, want string
		// not is what the errors must not say: a consequence of an error they report.
		not string
	}{
		{"capture no candidate gives", `
inputs:
  - {name: web, path: /a, log_format: [combined, main]}
rules:
  - name: latency
    value: request_time
`, `c.yaml:6: rule "latency": capture "request_time" is given by no log format of input "web", which the rule reads (its candidates: combined, main)`, ""},
		{"of one of two inputs", `
inputs:
  - {name: web, path: /a, log_format: [combined, upstreaminfo]}
  - {name: old, path: /b, log_format: combined}
rules:
  - name: latency
    labels: {upstream: '${upstream_addr}'}
`, `c.yaml:7: rule "latency": capture "upstream_addr" is given by no log format of input "old"`, ""},
		{"a time no candidate has", `
inputs:
  - {name: web, path: /a, log_format: [combined, json]}
rules:
  - name: timed
    timestamp: {capture: status}
`, `c.yaml:6: rule "timed": time capture "status" is given by no log format of input "web"`, ""},
		{"unknown preset", `
inputs:
  - {name: web, path: /a, log_format: [combined, mian]}
rules: [{name: r}]
`, `c.yaml:3: input "web": log_format: "mian" is not a preset`, ""},
		{"empty list", `
inputs:
  - {name: web, path: /a, log_format: []}
rules: [{name: r, match: x}]
`, `c.yaml:3: input "web": log_format: the list of candidates is empty`, ""},
		{"same format twice", `
inputs:
  - {name: web, path: /a, log_format: [combined, '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"']}
rules: [{name: r}]
`, `c.yaml:3: input "web": log_format: "$remote_addr`, ""},
		{"a candidate that does not compile", `
inputs:
  - {name: web, path: /a, log_format: [combined, '$remote_addr$remote_user']}
rules: [{name: r}]
`, `c.yaml:3: input "web": log_format: $remote_user follows $remote_addr with no text between them`, ""},
		{"a directive that does not compile, at its line in the list", `
inputs:
  - name: web
    path: /a
    log_format:
      - combined
      - |
        log_format x '$remote_addr - $remote_user [$time_local] '
                     '"$request" $status$body_bytes_sent';
rules:
  - name: latency
    value: request_time
`, `c.yaml:9: input "web": log_format: $body_bytes_sent follows $status`, `capture "request_time" is given by no log format`},
		{"a refused format next to candidates", `
inputs:
  - {name: web, path: /a, log_format: [combined, main]}
  - {name: old, path: /b, log_format: '$status$body_bytes_sent'}
rules: [{name: r, labels: {s: '${status}'}}]
`, `c.yaml:4: input "old": log_format: $body_bytes_sent follows $status`, `has no log format`},
		{"a format of the same lines as another", `
inputs:
  - name: web
    path: /a
    log_format: [main, '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" "$http_x_real_ip"']
rules: [{name: real, labels: {ip: '${http_x_real_ip}'}}]
`, `c.yaml:5: input "web": log_format: "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\" \"$http_x_real_ip\"" fits the same lines as candidate #1 (main)`,
			`capture "http_x_real_ip" is given by no log format`},
		{"auto under a tag of a tool", `
inputs:
  - {name: web, path: /a, log_format: !ENV auto}
rules: [{name: r}]
`, `c.yaml:3: input "web": log_format: tag !ENV: a rule file's values are plain YAML`, ""},
		{"an initial value its template cannot give, its captures named", `
inputs:
  - {name: web, path: '/var/log/pods/*/*.log', log_format: auto, path_captures: '^/var/log/pods/(?P<pod>[^/]+)/'}
rules:
  - name: codes
    labels: {code: 'http_${status}', pod: 'pod/${pod}'}
    initial: [{code: '500', pod: pod/a}]
`, `c.yaml:7: rule "codes": initial #1: code: "500" is no value the label's template 'http_${status}' gives`, ""},
		{"a path capture named too", `
inputs:
  - {name: web, path: '/var/log/pods/*/*.log', log_format: auto, path_captures: '^/var/log/pods/(?P<pod>[^/]+)/'}
rules:
  - name: codes
    labels: {code: 'http_${status}', pod: 'pod/${pod}'}
    initial: [{code: http_500, pod: a}]
`, `c.yaml:7: rule "codes": initial #1: pod: "a" is no value the label's template 'pod/${pod}' gives`, ""},
		{"escape with a list", `
inputs:
  - {name: web, path: /a, log_format: auto, log_format_escape: json}
rules: [{name: r}]
`, `c.yaml:3: input "web": log_format_escape: applies to one format string`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "c.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
			if err != nil && tt.not != "" && strings.Contains(err.Error(), tt.not) {
				t.Errorf("error %v, want none with %q", err, tt.not)
			}
		})
	}
}

// A capture that among a rule's candidates only a JSON object gives (with auto: a name
// mistyped) loads, as a JSON line may have any member, and is warned of at the rule's
// line with the name it may have meant; a list of json alone warns of nothing. So is a
// JSON template's variable without quotes that nginx may write as no JSON value, at the
// line of the format.
func TestFormatWarnings(t *testing.T) {
	for _, c := range []struct {
		name, formats, capture string
		want                   []string
	}{
		{"a typo with auto", "auto", "stauts", []string{`c.yaml:3: warning: rule "r": capture "stauts" is given by none of the log formats it reads (upstreaminfo, ` +
			`main_upstream_time, main_request_time, main, combined_upstream_time, combined_request_time, combined, apache_combined, apache_common) ` +
			`but json, which gives it from a JSON line with a member "stauts" (did you mean "status"?): the rule applies to no other line`}},
		{"a member of the JSON lines", "[combined, json]", "trace_id", []string{`c.yaml:3: warning: rule "r": capture "trace_id" is given by none of the log formats it reads (combined) but json`}},
		{"a variable of a format", "auto", "upstream_addr", nil},
		{"derived", "auto", "status_class", nil},
		{"json alone", "[json]", "trace_id", nil},
		{"a template's variable without quotes", `"log_format j escape=json '{\"s\":$status,\"t\":$request_time,\"up\":$upstream_addr,\"u\":\"$remote_user\"}';"`, "status",
			[]string{`c.yaml:1: warning: input "web": log_format: the JSON template has $upstream_addr without quotes, which nginx writes as it is`}},
		{"so among candidates", `[combined, "log_format j escape=json '{\"s\":$status,\"t\":$time_iso8601,\"l\":[${request_length}, $host]}';"]`, "status",
			[]string{`c.yaml:1: warning: input "web": log_format: the JSON template has $time_iso8601, $host without quotes`}},
		{"a template read as text", `[combined, '{"s":$status,"t":$time_iso8601}']`, "status", nil},
		{"numbers only", `{log_format: '{"s":$status,"t":$request_time,"n":$bytes_sent}', log_format_escape: json}`, "status", nil},
		// Files are counted by their format's name (logwindow_input_file_format), which
		// would not tell such candidates' files apart.
		{"a directive named as a preset", `[main, "log_format main '$remote_addr $status $request_time';"]`, "status",
			[]string{`c.yaml:1: warning: input "web": log_format: candidate #2 is named "main", as candidate #1 is`}},
		{"two directives of one name", `["log_format main '$remote_addr $status';", "log_format main '$remote_addr $status $request_time';"]`, "status",
			[]string{`c.yaml:1: warning: input "web": log_format: candidate #2 is named "main", as candidate #1 is`}},
		{"directives of their own names", `["log_format main '$remote_addr $status';", "log_format timed '$remote_addr $status $request_time';"]`, "status", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			input := fmt.Sprintf("{name: web, path: /a, log_format: %s}", c.formats)
			if strings.HasPrefix(c.formats, "{") {
				input = "{name: web, path: /a, <<: " + c.formats + "}"
			}
			cfg, err := Parse([]byte(fmt.Sprintf("inputs: [%s]\nrules:\n  - name: r\n    labels: {v: '${%s}'}\n", input, c.capture)), "c.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got := Warnings(cfg)
			if len(got) != len(c.want) {
				t.Fatalf("warnings %q, want %q", got, c.want)
			}
			for i, want := range c.want {
				if !strings.HasPrefix(got[i], want) {
					t.Errorf("warning %q, want one starting %q", got[i], want)
				}
			}
		})
	}
}
