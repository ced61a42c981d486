package pipeline

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
)

// podFormats write a record as the pods of a tree log it: each in a format of auto's.
var podFormats = map[string]func(accessRecord) string{
	"combined": func(a accessRecord) string { return a.combined() },
	"main":     func(a accessRecord) string { return a.combined() + ` "198.51.100.1, 10.0.0.2"` },
	"upstreaminfo": func(a accessRecord) string {
		return fmt.Sprintf(`%s 512 %s [default-web-80] [] 10.1.0.5:8080 %d %s %s 5e1f8a2c9b`, a.combined(), a.requestTime, a.bytes, a.upstream, a.status)
	},
	"combined_request_time": func(a accessRecord) string { return a.combined() + " " + a.requestTime },
	"json": func(a accessRecord) string {
		b, _ := json.Marshal(map[string]string{"status": a.status, "request_time": a.requestTime,
			"request": a.method + " " + a.uri + " HTTP/1.1"})
		return string(b)
	},
	"json_untimed": func(a accessRecord) string {
		b, _ := json.Marshal(map[string]string{"status": a.status, "request": a.method + " " + a.uri + " HTTP/1.1"})
		return string(b)
	},
}

// timed are the pods whose format has $request_time.
var timed = map[string]bool{"upstreaminfo": true, "combined_request_time": true, "json": true}

// combined is the record in nginx's combined format.
func (a accessRecord) combined() string {
	esc := func(s string) string { return strings.ReplaceAll(s, `"`, `\x22`) }
	return fmt.Sprintf(`10.0.0.1 - - [%s] "%s %s HTTP/1.1" %s %d "%s" "%s"`,
		a.at.Format("02/Jan/2006:15:04:05 -0700"), a.method, a.uri, a.status, a.bytes, esc(a.referer), esc(a.userAgent))
}

// One input with log_format: auto over a tree of pods' logs, each pod in another format,
// counts every pod's requests by status exactly, their request time where the format has
// it (and no latency series where it does not), with no line unmatched.
func TestAutoFormatPerFile(t *testing.T) {
	const n = 300
	dir := t.TempDir()
	wantStatus := map[string]float64{}
	wantTime, wantSum := map[string]float64{}, map[string]float64{}
	total := uint64(0)
	for pod, write := range podFormats {
		var b strings.Builder
		for _, rec := range randomRecords(n, uint64(len(pod))) {
			b.WriteString(write(rec) + "\n")
			wantStatus[fmt.Sprintf(`http_requests_total{pod=%q,status=%q}`, pod, rec.status)]++
			if timed[pod] {
				wantTime[pod]++
				v, _ := strconv.ParseFloat(rec.requestTime, 64)
				wantSum[pod] += v
			}
			total++
		}
		if err := os.MkdirAll(filepath.Join(dir, pod), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, pod, "0.log"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse([]byte(`
inputs:
  - name: pods
    path: `+dir+`/*/*.log
    log_format: auto
    start_at: beginning
    path_captures: '/(?P<pod>[^/]+)/0\.log$'
rules:
  - name: http_requests
    labels: {pod: '${pod}', status: '${status}'}
  - name: http_request_duration_seconds
    labels: {pod: '${pod}'}
    value: request_time
`), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2024, 3, 1, 14, 0, 0, 0, time.UTC)
	p, err := Start(cfg, Options{Now: func() time.Time { return now }, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	st := waitRead(t, p, total)
	if st.Unmatched != 0 || st.MalformedLines != 0 {
		t.Errorf("%d lines unmatched, %d malformed, want none", st.Unmatched, st.MalformedLines)
	}
	wantFormats := map[string]int{}
	for pod := range podFormats {
		wantFormats[strings.TrimSuffix(pod, "_untimed")]++
	}
	if !maps.Equal(st.Formats, wantFormats) {
		t.Errorf("files per format %v, want %v", st.Formats, wantFormats)
	}
	got := gatherPipeline(t, p)
	for key, want := range wantStatus {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	for pod := range podFormats {
		events := got[fmt.Sprintf(`http_request_duration_seconds_window_events{pod=%q,window="24h"}`, pod)]
		sum := got[fmt.Sprintf(`http_request_duration_seconds_window{pod=%q,window="24h"}`, pod)]
		if events != wantTime[pod] || math.Abs(sum-wantSum[pod]) > 1e-6 {
			t.Errorf("%s: %v request times summing to %v, want %v summing to %v", pod, events, sum, wantTime[pod], wantSum[pod])
		}
	}
	// A pod whose format lacks $request_time has no latency series, and that is no drop.
	if drops := got[`logwindow_rule_dropped_lines_total{reason="no_value",rule="http_request_duration_seconds"}`]; drops != 0 {
		t.Errorf("%v lines dropped for no value, want none", drops)
	}
}

// Lines held while a file's format is chosen survive a reload: they are parsed when the
// format is chosen, by the new generation, and counted once.
func TestAutoFormatHeldAcrossReload(t *testing.T) {
	rules := "inputs: [{name: pods, path: LOG, log_format: auto}]\nrules: [{name: http_requests, labels: {status: '${status}'}}]\n"
	p, log := startFile(t, rules)
	appendTo(t, log, "starting\nlistening on :80\n")
	if st := waitRead(t, p, 2); st.Unmatched != 0 || len(st.Formats) != 0 {
		t.Fatalf("%d unmatched and formats %v while no line fits a candidate, want none", st.Unmatched, st.Formats)
	}
	cfg, err := config.Parse([]byte(strings.ReplaceAll(rules, "LOG", log)), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	appendTo(t, log, `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 503 5 "-" "curl"`+"\n")
	st := waitRead(t, p, 3)
	if st.Unmatched != 2 || st.Formats["combined"] != 1 {
		t.Errorf("%d unmatched, formats %v; want the 2 held lines unmatched and a combined file", st.Unmatched, st.Formats)
	}
	if got := gatherPipeline(t, p)[`http_requests_total{status="503"}`]; got != 1 {
		t.Errorf("%v requests counted, want 1", got)
	}
}

// A line held while its file's format is chosen is parsed with its own captures, not with
// those of the line that has it parsed: the CRI stream of each, here a stderr line held
// until the stdout line after it chose the format.
func TestAutoFormatHeldLineKeepsItsCaptures(t *testing.T) {
	p, log := startFile(t, "inputs: [{path: LOG, wrapper: cri, log_format: auto}]\n"+
		"rules: [{name: starts, match: '^x', labels: {stream: '${stream}'}}, {name: requests, labels: {status: '${status}'}}]\n")
	appendTo(t, log, "2024-03-01T12:00:00Z stderr F xstarting\n"+
		`2024-03-01T12:00:01Z stdout F 10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`+"\n")
	got := waitTotal(t, p, "the request", `requests_total{status="200"}`, 1)
	if got[`starts_total{stream="stderr"}`] != 1 || got[`starts_total{stream="stdout"}`] != 0 {
		t.Errorf(`starts_total{stream="stderr"} %v, {stream="stdout"} %v; want 1 and 0`, got[`starts_total{stream="stderr"}`], got[`starts_total{stream="stdout"}`])
	}
}

// A line held across a reload keeps its own captures too, though the reload's parser
// parses it: taken by name, as the captures the rules read, and their order, may have
// changed (here a path capture that sorts before stream).
func TestAutoFormatHeldLineKeepsItsCapturesAcrossReload(t *testing.T) {
	const input = `inputs: [{path: LOG, wrapper: cri, log_format: auto, path_captures: '/(?P<dir>[^/]+)/[^/]+$'}]` + "\n"
	const requests = "{name: requests, labels: {status: '${status}'}}"
	before := input + "rules: [{name: starts, match: '^x', labels: {stream: '${stream}'}}, " + requests + "]\n"
	for _, tc := range []struct{ name, after string }{
		{"same rules", before},
		{"a path capture read", input + "rules: [{name: starts, match: '^x', labels: {dir: '${dir}', stream: '${stream}'}}, " + requests + "]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, log := startFile(t, before)
			appendTo(t, log, "2024-03-01T12:00:00Z stderr F xstarting\n")
			waitRead(t, p, 1) // held: its format is not chosen yet
			cfg, err := config.Parse([]byte(strings.ReplaceAll(tc.after, "LOG", log)), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Reload(cfg); err != nil {
				t.Fatal(err)
			}
			appendTo(t, log, `2024-03-01T12:00:01Z stdout F 10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`+"\n")
			got := waitTotal(t, p, "the request", `requests_total{status="200"}`, 1)
			byStream := map[string]float64{}
			for k, v := range got {
				for _, stream := range []string{"stderr", "stdout"} {
					if strings.HasPrefix(k, "starts_total{") && strings.Contains(k, `stream="`+stream+`"`) {
						byStream[stream] += v
					}
				}
			}
			if byStream["stderr"] != 1 || byStream["stdout"] != 0 {
				t.Errorf(`starts_total of stream="stderr" %v, of stream="stdout" %v; want 1 and 0`, byStream["stderr"], byStream["stdout"])
			}
		})
	}
}

// Lines of an Apache log in the combined format, as mod_log_config writes them: with no
// escape (which nginx's combined fits as well), with its \" and \xhh, the same cut short,
// and one of its error log.
const (
	apachePlain   = `203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8.5.0"`
	apacheQuoted  = `203.0.113.7 - - [01/Mar/2024:12:00:01 +0000] "GET /caf\xc3\xa9 HTTP/1.1" 404 - "-" "Mozilla/5.0 \"compatible\" bot"`
	apacheCut     = `203.0.113.7 - - [01/Mar/2024:12:00:02 +0000] "GET / HTTP/1.1" 500 12 "-" "Mozilla/5.0 \"compat`
	apacheGarbage = `[Fri Mar 01 12:00:03 2024] [error] AH00124: request exceeded the limit`
)

// apacheRules read an input of auto by nginx's name of the status and by Apache's.
const apacheRules = `
inputs: [{name: web, path: 'LOG', log_format: auto}]
rules:
  - {name: requests, labels: {status: '${status}'}}
  - {name: apache_requests, labels: {status: '${s}'}}
`

// An Apache log under auto whose first lines hold no escape is read as nginx's combined,
// which they fit as Apache's does; its later lines with Apache's \" are read by
// apache_combined as they come, none unmatched, and a line held meanwhile is parsed first.
func TestAutoFormatApacheEscapesCounted(t *testing.T) {
	p, log := startFile(t, apacheRules)
	appendTo(t, log, strings.Join([]string{apachePlain, apachePlain, apacheGarbage, apacheQuoted, apachePlain, apacheQuoted}, "\n")+"\n")
	waitRead(t, p, 6)
	got := waitTotal(t, p, "the requests", "apache_requests_total", 2)
	st := p.inputStats()[0]
	if got[`requests_total{status="200"}`] != 3 || got[`apache_requests_total{status="404"}`] != 2 {
		t.Errorf(`requests_total{status="200"} %v, apache_requests_total{status="404"} %v; want 3 and 2`, got[`requests_total{status="200"}`], got[`apache_requests_total{status="404"}`])
	}
	if st.Unmatched != 1 || !maps.Equal(st.Formats, map[string]int{"combined": 1}) {
		t.Errorf("%d lines unmatched, files per format %v; want the error log's line, and a combined file", st.Unmatched, st.Formats)
	}
}

// --explain has an Apache log's line with Apache's \" read by apache_combined, which
// counts it, though the file is read as nginx's combined, and names apache_combined as
// the format a line of neither (cut short) fits the farthest, as the replay counts them.
func TestExplainApacheEscapesUnderAuto(t *testing.T) {
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, []byte(strings.Join([]string{apachePlain, apachePlain, apacheQuoted, apacheCut, apacheGarbage, apachePlain}, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(strings.ReplaceAll(apacheRules, "LOG", log)), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var summary strings.Builder
	lines, err := explainAll(cfg, log, 10, Options{Now: time.Now, Summary: &summary})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := explain.Write(&text, "text", lines); err != nil {
		t.Fatal(err)
	}
	byLine := strings.Split(text.String(), "\nline ")
	for _, tc := range []struct {
		line int
		want []string
	}{
		{1, []string{`+ requests{status="200"}`, "apache_requests: does not apply to the line's log format, combined, which has no s"}},
		{3, []string{`+ apache_requests{status="404"}`, "requests: does not apply to the line's log format, apache_combined, which has no status"}},
		{4, []string{"UNMATCHED", "it fits apache_combined the farthest", "in %{User-agent}i or the text after it", "but the line has the end of the line"}},
		{6, []string{`+ requests{status="200"}`}},
	} {
		t.Run(fmt.Sprint("line ", tc.line), func(t *testing.T) {
			if len(byLine) != 6 {
				t.Fatalf("%d lines explained, want 6:\n%s", len(byLine), text.String())
			}
			got := byLine[tc.line-1]
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("explained without %q:\n%s", want, got)
				}
			}
		})
	}
	// The first misfit fits no format: it is not said to be of one no rule applies to.
	if want := "input web: 4 of 6 lines fit (first misfit at line 4: the line fits none of the log formats "; !strings.HasPrefix(summary.String(), want) ||
		!strings.Contains(summary.String(), "; apache_combined, which it fits the farthest, at byte 94, in %{User-agent}i") {
		t.Errorf("summary %q, want %q... with apache_combined the farthest", summary.String(), want)
	}
}
