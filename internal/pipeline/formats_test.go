package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input/cri/critest"
)

// accessRecord is one request as nginx knows it, before any log format.
type accessRecord struct {
	at                             time.Time
	method, uri, status            string
	bytes                          int
	requestTime, upstream, referer string
	userAgent                      string
}

// randomRecords are n requests over two hours, with the shapes that make formats differ:
// quotes in the user agent, retried upstreams, requests without upstream.
func randomRecords(n int, seed uint64) []accessRecord {
	r := rand.New(rand.NewPCG(seed, 1))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	start := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	out := make([]accessRecord, n)
	for i := range out {
		t := func() string { return fmt.Sprintf("%.3f", r.Float64()*2) }
		upstream := pick("-", "u1", "u2", "u3")
		switch upstream {
		case "u1":
			upstream = t()
		case "u2":
			upstream = t() + ", " + t()
		case "u3":
			upstream = t() + " : " + t()
		}
		out[i] = accessRecord{
			at:          start.Add(time.Duration(i) * 2 * time.Hour / time.Duration(n)),
			method:      pick("GET", "GET", "POST", "PUT", "DELETE", "HEAD"),
			uri:         pick("/", "/api/v1/cart", "/index.html?q=1", "/static/app.js"),
			status:      pick("200", "200", "200", "201", "204", "301", "304", "400", "404", "499", "500", "502", "503"),
			bytes:       r.IntN(5000),
			requestTime: t(),
			upstream:    upstream,
			referer:     pick("-", "https://example.com/"),
			userAgent:   pick("Mozilla/5.0 (X11; Linux x86_64)", `curl "quoted" = agent`, "-"),
		}
	}
	return out
}

// text is the record in example-rules.yaml's main format, escaped as nginx's escape=default.
func (a accessRecord) text() string {
	esc := func(s string) string { return strings.ReplaceAll(s, `"`, `\x22`) }
	return fmt.Sprintf(`10.0.0.1 - - [%s] "%s %s HTTP/1.1" %s %d "%s" "%s" %s %s`,
		a.at.Format("02/Jan/2006:15:04:05 -0700"), a.method, a.uri, a.status, a.bytes, esc(a.referer), esc(a.userAgent), a.requestTime, a.upstream)
}

// fields are the record's fields as example-rules-json.yaml's log_format writes them.
func (a accessRecord) fields() [][2]string {
	first := a.upstream
	if i := strings.IndexAny(first, ", "); i >= 0 {
		first = first[:i]
	}
	return [][2]string{
		{"time_local", a.at.Format("02/Jan/2006:15:04:05 -0700")},
		{"remote_addr", "10.0.0.1"},
		{"request_method", a.method},
		{"request_uri", a.uri},
		{"request_path", strings.SplitN(a.uri, "?", 2)[0]},
		{"status", a.status},
		{"status_class", a.status[:1]},
		{"body_bytes_sent", fmt.Sprint(a.bytes)},
		{"request_time", a.requestTime},
		{"upstream_response_time", first},
		{"http_referer", a.referer},
		{"http_user_agent", a.userAgent},
	}
}

func quoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (a accessRecord) json() string {
	var parts []string
	for _, f := range a.fields() {
		parts = append(parts, quoted(f[0])+":"+quoted(f[1]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func (a accessRecord) logfmt() string {
	var parts []string
	for _, f := range a.fields() {
		parts = append(parts, f[0]+"="+quoted(f[1]))
	}
	return strings.Join(parts, " ")
}

// The same requests written as text, JSON and logfmt give identical metrics through the
// example rules (example-rules.yaml for text, example-rules-json.yaml for both others).
func TestFormatsGiveIdenticalMetrics(t *testing.T) {
	const n = 3000
	records := randomRecords(n, 14)
	dir := t.TempDir()
	type variant struct {
		name, rules string
		line        func(accessRecord) string
		edit        func(string) string
	}
	variants := []variant{
		{"text", "../../example-rules.yaml", accessRecord.text, func(s string) string { return s }},
		{"json", "../../example-rules-json.yaml", accessRecord.json, func(s string) string { return s }},
		{"logfmt", "../../example-rules-json.yaml", accessRecord.logfmt, func(s string) string {
			return strings.Replace(s, "format: json", "format: logfmt", 1)
		}},
	}
	outputs := map[string]string{}
	for _, v := range variants {
		log := filepath.Join(dir, v.name+".log")
		var b strings.Builder
		for _, r := range records {
			b.WriteString(v.line(r) + "\n")
		}
		if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		text, err := os.ReadFile(v.rules)
		if err != nil {
			t.Fatal(err)
		}
		rules := v.edit(strings.Replace(string(text), "path: /var/log/nginx/access.log", "path: "+log, 1))
		cfg, err := config.Parse([]byte(rules), v.rules)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := Replay(cfg, []string{log}, Options{Now: time.Now}, &out); err != nil {
			t.Fatal(err)
		}
		outputs[v.name] = out.String()
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(outputs["text"]))
	if err != nil {
		t.Fatal(err)
	}
	var requests, upstream float64
	for _, m := range fams["nginx_http_requests_total"].GetMetric() {
		requests += m.GetCounter().GetValue()
	}
	for _, m := range fams["logwindow_rule_matched_lines_total"].GetMetric() {
		if m.GetLabel()[0].GetValue() == "nginx_http_upstream_response_time_seconds" {
			upstream = m.GetCounter().GetValue()
		}
	}
	if requests != n || upstream == 0 {
		t.Fatalf("text: %v requests counted of %d, %v with an upstream time", requests, n, upstream)
	}
	for _, v := range variants[1:] {
		if outputs[v.name] != outputs["text"] {
			t.Errorf("%s gives other metrics than text:\n%s", v.name, lineDiff(outputs["text"], outputs[v.name]))
		}
	}
}

// lineDiff lists the lines only one of a and b has.
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var out []string
	for l := range ma {
		if !mb[l] {
			out = append(out, "- "+l)
		}
	}
	for l := range mb {
		if !ma[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// Kubernetes container logs: the same requests as CRI lines, whole (F) or cut at random
// points into partial (P) lines with stdout and stderr parts interleaved, give exactly the
// metrics of the plain log.
func TestCRIWrappedGiveIdenticalMetrics(t *testing.T) {
	const n = 2000
	records := randomRecords(n, 17)
	r := rand.New(rand.NewPCG(17, 3))
	dir := t.TempDir()
	cri := func(at time.Time, stream, tag, msg string) string {
		return critest.Line(at.Format(time.RFC3339Nano), stream, tag, msg) + "\n"
	}
	var plain, whole, split strings.Builder
	var pendingErr []string // stderr parts waiting, written between stdout parts
	for i, rec := range records {
		line := rec.text()
		plain.WriteString(line + "\n")
		whole.WriteString(cri(rec.at, "stdout", "F", line))
		for _, part := range critest.Split(r, rec.at.Format(time.RFC3339Nano), "stdout", line) {
			split.WriteString(part + "\n")
			if len(pendingErr) > 0 {
				split.WriteString(pendingErr[0])
				pendingErr = pendingErr[1:]
			}
		}
		// A stderr message in two parts that the rules do not match, its parts between
		// stdout's.
		if i%7 == 0 {
			pendingErr = append(pendingErr, cri(rec.at, "stderr", "P", "worker "), cri(rec.at, "stderr", "F", "warning"))
		}
	}
	for _, p := range pendingErr {
		split.WriteString(p)
	}
	example, err := os.ReadFile("../../example-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{}
	for name, content := range map[string]string{"plain": plain.String(), "whole": whole.String(), "split": split.String()} {
		log := filepath.Join(dir, name+".log")
		if err := os.WriteFile(log, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		input := "path: " + log
		if name != "plain" {
			input += "\n    wrapper: cri"
		}
		cfg, err := config.Parse([]byte(strings.Replace(string(example), "path: /var/log/nginx/access.log", input, 1)), "example-rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := Replay(cfg, []string{log}, Options{Now: time.Now}, &out); err != nil {
			t.Fatal(err)
		}
		outputs[name] = out.String()
	}
	if !strings.Contains(outputs["plain"], fmt.Sprintf(`logwindow_rule_matched_lines_total{rule="nginx_http_requests"} %d`, n)) {
		t.Fatalf("the plain log did not count its %d requests:\n%s", n, outputs["plain"])
	}
	for _, name := range []string{"whole", "split"} {
		if outputs[name] != outputs["plain"] {
			t.Errorf("CRI %s gives other metrics than the plain log:\n%s", name, lineDiff(outputs["plain"], outputs[name]))
		}
	}
}

// The line tester names an input without a name by its path: a line pasted for it is read
// by its own formats, not by those of every input without a name, which share the name
// "" (a line of another's format would be counted as that input never counts it).
func TestExplainUnnamedInputBySource(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log"), filepath.Join(dir, "c.log")
	for _, f := range []string{a, b, c} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := startRules(t, fmt.Appendf(nil, `
inputs:
  - {path: '%s', log_format: '$remote_addr $http_host'}
  - {path: '%s', log_format: '$http_host [$remote_addr]'}
  - {path: '%s', log_format: ['$remote_addr $http_host', '$http_host [$remote_addr]']}
rules:
  - {name: requests, labels: {host: '${http_host}'}}
`, a, b, c), Options{Now: time.Now})
	for _, tc := range []struct {
		input, line, host string // host: "" for a line the input does not count
	}{
		{a, "h1 x", "x"},
		{b, "h1 x", ""},
		{b, "h1 [x]", "h1"},
		{a, "h1 [x]", "[x]"},
		// c's candidates both fit: the tie goes to the first.
		{c, "h1 [x]", "[x]"},
	} {
		l := p.Explain(tc.input, []byte(tc.line))
		got := ""
		if l.Counted {
			got = l.Rules[0].Labels[0].Value
		}
		if got != tc.host || l.Input != tc.input {
			t.Errorf("Explain(%s, %q): input %q, counted with host %q; want %q", filepath.Base(tc.input), tc.line, l.Input, got, tc.host)
		}
	}
}
