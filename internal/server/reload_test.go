package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/pipeline"
)

// TestReloadWithAnInputThatCannotStart reloads a file that adds a rule and a syslog input
// whose address is taken. The new rules are in force, the input is not: the reload is
// reported as failed, so that the operator looks, but what POST /-/reload answers, the
// log and the status page say so, rather than that the previous configuration keeps
// running.
func TestReloadWithAnInputThatCannotStart(t *testing.T) {
	taken, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	e := startExporter(t, true)
	text := fmt.Sprintf(e2eRules, e.logPath)
	text = strings.Replace(text, "inputs:\n", "inputs:\n  - name: sys\n    syslog: udp://"+taken.LocalAddr().String()+"\n", 1)
	text += `  - name: http_requests_by_method
    match: '%{REQ}'
    labels: {method: '${method}'}
`
	e.writeConfig(text)

	resp, err := http.Post(e.url+"/-/reload", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "in force") || !strings.Contains(string(body), "address already in use") {
		t.Errorf("POST /-/reload: HTTP %d %q; want 400 saying the new configuration is in force but the input did not start", resp.StatusCode, body)
	}
	e.request(1, "GET", "/a", 200, 1)
	if _, ok := e.scrape()["http_requests_by_method_total"]; !ok {
		t.Fatal("the new rule is not exported: the test's premise, that the reload applied the rules, does not hold")
	}

	resp, err = http.Get(e.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(page, []byte("previous config keeps running")) || !bytes.Contains(page, []byte("in force")) || !bytes.Contains(page, []byte("last success")) {
		t.Errorf("the status page says of the reload:\n%s", reloadLines(page))
	}
	// The inputs not started are tried again with no reload: the page says when.
	retry := "tried again at " + e.clock.Now().Add(pipeline.FirstInputRetry).UTC().Format(time.RFC3339)
	if !bytes.Contains(page, []byte(retry)) || bytes.Contains(page, []byte("until a reload starts them")) {
		t.Errorf("the status page says of the inputs not running:\n%s\nwant %q", notRunningLines(page), retry)
	}

	var logged bytes.Buffer
	_ = Reload(e.p, slog.New(slog.NewTextHandler(&logged, nil)))
	if strings.Contains(logged.String(), "previous configuration keeps running") || strings.Count(logged.String(), "in force") != 1 {
		t.Errorf("the log says of the reload: %s", logged.String())
	}
	// It says when the inputs are tried again: the pipeline's wait, not a copy of it.
	if want := "retry_in=" + pipeline.FirstInputRetry.String(); !strings.Contains(logged.String(), want) {
		t.Errorf("the log says of the reload: %s; want %s", logged.String(), want)
	}

	// Once the address is free, the next reload starts the input.
	taken.Close()
	if err := Reload(e.p, slog.New(slog.DiscardHandler)); err != nil {
		t.Errorf("reload once the address is free: %v", err)
	}
}

// notRunningLines are the lines of a status page that speak of inputs not running.
func notRunningLines(page []byte) string {
	var out []string
	for line := range strings.SplitSeq(string(page), "\n") {
		if strings.Contains(line, "not running") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// reloadLines are the lines of a status page that speak of the reload.
func reloadLines(page []byte) string {
	var out []string
	for line := range strings.SplitSeq(string(page), "\n") {
		if strings.Contains(line, "reload") || strings.Contains(line, "config") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestInputNotRunningOutlivesARefusedReload: a reload puts in force a config whose syslog
// input cannot bind its address, then a reload of a broken file is refused. The config in
// force still lacks that input, and the status page and logwindow_input_running say so,
// whatever later reloads were refused; a reload that starts it clears both. Readiness is
// not withdrawn: the exporter serves what runs.
func TestInputNotRunningOutlivesARefusedReload(t *testing.T) {
	taken, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	e := startExporter(t, true)
	withSys := strings.Replace(fmt.Sprintf(e2eRules, e.logPath), "inputs:\n", "inputs:\n  - name: sys\n    syslog: udp://"+taken.LocalAddr().String()+"\n", 1)

	running := func() map[string]float64 {
		t.Helper()
		out := map[string]float64{}
		f := e.scrape()["logwindow_input_running"]
		if f == nil {
			return out
		}
		for _, m := range f.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
		return out
	}
	notRunning := func() string {
		t.Helper()
		resp, err := http.Get(e.url + "/")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`(?s)<pre class="bad" id="inputs-not-running">(.*?)</pre>`).FindSubmatch(page)
		if m == nil {
			return ""
		}
		return string(m[1])
	}

	e.writeConfig(withSys)
	if e.post("/-/reload") != http.StatusBadRequest {
		t.Fatal("the reload with an input on a taken address was not reported as failed: the test's premise does not hold")
	}
	e.writeConfig("inputs: [")
	if e.post("/-/reload") != http.StatusBadRequest {
		t.Fatal("the reload of a broken file was not refused")
	}
	if got := running(); got["sys"] != 0 || got["web"] != 1 || len(got) != 2 {
		t.Errorf("after a refused reload, logwindow_input_running = %v; want sys 0, web 1", got)
	}
	if got := notRunning(); !strings.Contains(got, "sys") || !strings.Contains(got, "address already in use") || strings.Contains(got, "web") {
		t.Errorf("after a refused reload, the status page's inputs not running: %q; want sys, with why", got)
	}
	if code := e.get("/-/ready"); code != http.StatusOK {
		t.Errorf("/-/ready: HTTP %d, want 200", code)
	}

	taken.Close()
	e.writeConfig(withSys)
	if code := e.post("/-/reload"); code != http.StatusOK {
		t.Fatalf("reload once the address is free: HTTP %d", code)
	}
	if got := running(); got["sys"] != 1 || got["web"] != 1 {
		t.Errorf("once sys started, logwindow_input_running = %v; want sys 1, web 1", got)
	}
	if got := notRunning(); got != "" {
		t.Errorf("once sys started, the status page still lists inputs not running: %q", got)
	}
}
