package pipeline

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/input/syslog/syslogtest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
	"github.com/logwindow/logwindow_exporter/parser"
)

const syslogRules = `
inputs:
  - name: sock
    syslog: unixgram://%s
  - name: udp
    syslog: udp://%s
rules:
  - name: requests
    match: '" (?P<status>[0-9]{3}) '
    labels: {status: '${status}'}
`

// sample returns the value of the sample of family name whose labels include want, or -1.
func sample(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				if !hasLabel(m, k, v) {
					continue next
				}
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	return -1
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// waitSample waits until the sample reaches want, failing the test if it has not by
// await.Deadline: datagrams are parsed on the listener's goroutine.
func waitSample(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string, want float64) {
	t.Helper()
	var got float64
	if !await.Until(t, func() bool { got = sample(t, reg, name, labels); return got == want }) {
		t.Fatalf("%s%v = %v, want %v", name, labels, got, want)
	}
}

func freeUDP(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

// Lines sent as syslog datagrams to a unix socket and to a UDP port reach the rules
// through the parser, headers stripped, and the socket counters are exported per input.
// A reload keeps the bound socket; removing the input stops it and removes its file.
func TestSyslogInputs(t *testing.T) {
	dir := t.TempDir()
	sock, udp := filepath.Join(dir, "nginx.sock"), freeUDP(t)
	text := fmt.Sprintf(syslogRules, sock, udp)
	cfg, err := config.Parse([]byte(text), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cfg, Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if !p.Ready() {
		t.Error("not ready once the sockets are bound")
	}
	self := prometheus.NewPedanticRegistry()
	coll := p.Collector()
	self.MustRegister(coll)
	reg := metrictest.Scraped(exporter.Handler(coll, self, nil))

	line := `127.0.0.1 - - [24/Nov/2026:05:28:09 +0000] "GET / HTTP/1.1" %d 2 "-" "ua" 0.000 -`
	syslogtest.Send(t, "unixgram", sock,
		"<190>Nov 24 05:28:09 vm nginx: "+fmt.Sprintf(line, 200),
		"<190>Nov 24 05:28:09 nginx: "+fmt.Sprintf(line, 200),
		fmt.Sprintf(line, 502)) // not syslog: taken whole
	syslogtest.Send(t, "udp", udp, "<190>Nov 24 05:28:09 vm nginx: "+fmt.Sprintf(line, 404))
	waitSample(t, reg, "requests_total", map[string]string{"status": "200"}, 2)
	waitSample(t, reg, "requests_total", map[string]string{"status": "502"}, 1)
	waitSample(t, reg, "requests_total", map[string]string{"status": "404"}, 1)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"logwindow_input_datagrams_total", map[string]string{"input": "sock"}, 3},
		{"logwindow_input_malformed_datagrams_total", map[string]string{"input": "sock"}, 1},
		{"logwindow_input_dropped_datagrams_total", map[string]string{"input": "sock", "reason": "queue"}, 0},
		{"logwindow_input_dropped_datagrams_total", map[string]string{"input": "udp", "reason": "receive_buffer"}, 0},
		{"logwindow_input_datagrams_total", map[string]string{"input": "udp"}, 1},
		{"logwindow_input_lines_total", map[string]string{"input": "sock"}, 3},
	} {
		// The events are written before a batch's lines count as read, and the lines
		// before the malformed datagrams among them.
		waitSample(t, reg, c.name, c.labels, c.want)
	}

	before, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	renamed, err := config.Parse([]byte(fmt.Sprintf(syslogRules, sock, udp)+"    help: renamed rule text\n"), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(renamed); err != nil {
		t.Fatal(err)
	}
	if after, err := os.Lstat(sock); err != nil || !os.SameFile(before, after) {
		t.Errorf("a reload rebound the socket: %v", err)
	}
	syslogtest.Send(t, "unixgram", sock, "<190>Nov 24 05:28:09 vm nginx: "+fmt.Sprintf(line, 200))
	waitSample(t, reg, "requests_total", map[string]string{"status": "200"}, 3)

	udpOnly, err := config.Parse([]byte(fmt.Sprintf("inputs: [{name: udp, syslog: 'udp://%s'}]\nrules: [{name: requests, match: x}]\n", udp)), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(udpOnly); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket of a removed input is still there: %v", err)
	}
}

// A syslog input's lines are placed at the injected clock's time, read once per batch of
// datagrams: a datagram sent after the clock moved two minutes on counts in the hour's
// window and no longer the minute's, whatever the time of the machine.
func TestSyslogClock(t *testing.T) {
	p, clock, sock, _ := startSyslog(t, `
inputs: [{name: sock, syslog: 'unixgram://%s'}]
rules:
  - {name: requests, match: '" (?P<status>[0-9]{3}) ', labels: {status: '${status}'}, windows: [1m, 1h]}
`)
	self := prometheus.NewPedanticRegistry()
	coll := p.Collector()
	self.MustRegister(coll)
	reg := metrictest.Scraped(exporter.Handler(coll, self, nil))
	line := `<190>Nov 24 05:28:09 vm nginx: 127.0.0.1 - - [24/Nov/2026:05:28:09 +0000] "GET / HTTP/1.1" 200 2 "-" "ua" 0.000 -`
	syslogtest.Send(t, "unixgram", sock, line)
	waitSample(t, reg, "requests_total", map[string]string{"status": "200"}, 1)
	clock.Add(2 * time.Minute)
	syslogtest.Send(t, "unixgram", sock, line, line)
	waitSample(t, reg, "requests_total", map[string]string{"status": "200"}, 3)
	for window, want := range map[string]float64{"1m": 2, "1h": 3} {
		if got := sample(t, reg, "requests_window", map[string]string{"status": "200", "window": window}); got != want {
			t.Errorf("requests_window{window=%q} = %v, want %v", window, got, want)
		}
	}
}

// An input's sink holds the events of a batch of datagrams until the batch ends
// (Options.BatchEnd). A reload within a batch gives the datagrams after it the new
// generation's sink: the old sink is written then, not dropped with its binding, and
// nothing is written twice. The test hands the input's lines on itself, as its listener
// would, with no datagram sent.
func TestSyslogHeldAcrossReload(t *testing.T) {
	p, _, _, rules := startSyslog(t, `
inputs: [{name: sock, syslog: 'unixgram://%s'}]
rules:
  - {name: requests, match: '" (?P<status>[0-9]{3}) ', labels: {status: '${status}'}}
`)
	var in *stream
	for _, s := range p.inputs {
		in = s
	}
	line := []byte(`127.0.0.1 - - [24/Nov/2026:05:28:09 +0000] "GET / HTTP/1.1" 200 2 "-" "ua" 0.000 -`)
	handle := in.handle(p)
	in.processing, in.wall = p.clock.read() // Options.Batch
	handle("", line)
	handle("", line)
	if got := gatherPipeline(t, p)[`requests_total{status="200"}`]; got != 0 {
		t.Errorf("%v requests counted while the batch is under way, want them held", got)
	}
	again, err := config.Parse(rules, "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(again); err != nil {
		t.Fatal(err)
	}
	handle("", line)
	in.flush() // Options.BatchEnd
	if got := gatherPipeline(t, p)[`requests_total{status="200"}`]; got != 3 {
		t.Errorf("%v requests counted, want 3", got)
	}
}

// startSyslog starts a pipeline of the rules of text, whose %s is replaced by a new
// unixgram socket's path, on a test clock; it stops when the test ends. It returns the
// socket's path and the rules it parsed.
func startSyslog(t *testing.T, text string) (*Pipeline, *testclock.Clock, string, []byte) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "nginx.sock")
	rules := []byte(fmt.Sprintf(text, sock))
	cfg, err := config.Parse(rules, "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clock := testclock.New(time.Date(2026, 11, 24, 5, 28, 9, 0, time.UTC))
	p, err := Start(cfg, Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, clock, sock, rules
}

// A reload that gives a syslog input candidate formats, or takes them back, starts it
// anew: its socket is bound again and the datagrams after it are read the new way, each
// counted once.
func TestSyslogReloadChangesHowLinesAreRead(t *testing.T) {
	const rules = "inputs: [{name: sock, syslog: 'unixgram://%s'%s}]\nrules: [{name: requests, labels: {status: '${status}'}}]\n"
	const datagram = `<190>Nov 24 05:28:09 vm nginx: 10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`
	p, _, sock, _ := startSyslog(t, fmt.Sprintf(rules, "%s", ", log_format: combined"))
	syslogtest.Send(t, "unixgram", sock, datagram)
	waitTotal(t, p, "before the reloads", "requests_total{", 1)
	for _, format := range []string{"auto", "combined"} {
		t.Run(format, func(t *testing.T) {
			cfg, err := config.Parse([]byte(fmt.Sprintf(rules, sock, ", log_format: "+format)), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Reload(cfg); err != nil {
				t.Fatal(err)
			}
			// A rule whose format changed starts its series anew.
			before := sumOf(gatherPipeline(t, p), "requests_total{")
			syslogtest.Send(t, "unixgram", sock, datagram)
			waitTotal(t, p, "after the reload", "requests_total{", before+1)
		})
	}
}

// A reload that moves a syslog input to another address for the same socket (a UDP
// port from one interface to all of them, a socket path spelled otherwise) binds the new
// one after the old one let go of it: bound while the old still held it, it would fail,
// and the reload would leave the input not running at all.
func TestSyslogReloadMovesAddress(t *testing.T) {
	const rules = "inputs: [{name: sock, syslog: '%s'}]\nrules: [{name: requests, match: '\" (?P<status>[0-9]{3}) '}]\n"
	const datagram = `<190>Nov 24 05:28:09 vm nginx: 10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`
	dir := t.TempDir()
	port := freeUDP(t)
	_, p, _ := net.SplitHostPort(port)
	for _, tc := range []struct {
		name, from, to  string
		network, sendTo string
	}{
		{"udp to all interfaces", "udp://" + port, "udp://0.0.0.0:" + p, "udp", port},
		{"unix path spelled otherwise", "unixgram://" + dir + "/nginx.sock", "unixgram://" + dir + "/./nginx.sock", "unixgram", filepath.Join(dir, "nginx.sock")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(fmt.Sprintf(rules, tc.from)), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			pl, err := Start(cfg, Options{Now: testclock.New(time.Date(2026, 11, 24, 5, 28, 9, 0, time.UTC)).Now})
			if err != nil {
				t.Fatal(err)
			}
			defer pl.Stop()
			moved, err := config.Parse([]byte(fmt.Sprintf(rules, tc.to)), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if err := pl.Reload(moved); err != nil {
				t.Fatalf("reload: %v", err)
			}
			syslogtest.Send(t, tc.network, tc.sendTo, datagram)
			waitTotal(t, pl, "after the reload", "requests_total{", 1)
		})
	}
}

// A reload that changes a unix socket's socket_mode binds it again with that mode (the
// mode is set only as the socket is made): the operator who opens the socket to nginx's
// group and reloads must not find it as it was. The socket receives after each reload.
func TestSyslogReloadSocketMode(t *testing.T) {
	const rules = "inputs: [{name: sock, syslog: 'unixgram://%s'%s}]\nrules: [{name: requests, match: '\" (?P<status>[0-9]{3}) '}]\n"
	const datagram = `<190>Nov 24 05:28:09 vm nginx: 10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`
	p, _, sock, _ := startSyslog(t, fmt.Sprintf(rules, "%s", ""))
	for i, tc := range []struct {
		name, mode string
		want       os.FileMode
	}{
		{"default written out", ", socket_mode: '0660'", 0o660},
		{"opened to all", ", socket_mode: '0666'", 0o666},
		{"owner only", ", socket_mode: '0600'", 0o600},
		{"back to the default", "", 0o660},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(fmt.Sprintf(rules, sock, tc.mode)), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Reload(cfg); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(sock)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tc.want {
				t.Errorf("mode = %v, want %v", fi.Mode().Perm(), tc.want)
			}
			syslogtest.Send(t, "unixgram", sock, datagram)
			waitTotal(t, p, "after the reload", "requests_total{", float64(i+1))
		})
	}
}

// The line tester explains a datagram pasted for a syslog input as the input reads it:
// its message, the header stripped; a message pasted alone, as the input takes a datagram
// without a header, whole. For a file input the line is read as it is.
func TestExplainPastedDatagram(t *testing.T) {
	p, _, _, _ := startSyslog(t, `
inputs: [{name: sock, syslog: 'unixgram://%s'}, {name: plain, path: '/nonexistent/access.log'}]
rules:
  - {name: anchored, match: '^10\.0\.0\.1 '}
`)
	const message = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5`
	for _, tc := range []struct {
		name, input, line, text string
		counted                 bool
	}{
		{"rfc 3164", "sock", "<190>Nov 24 05:28:09 vm nginx: " + message, message, true},
		{"rfc 3164 with pid, no hostname", "sock", "<190>Nov 24 05:28:09 nginx[12]: " + message + "\n", message, true},
		{"rfc 5424", "sock", "<190>1 2024-03-01T12:00:00Z vm nginx - - - " + message, message, true},
		{"a message alone", "sock", message, message, true},
		{"a datagram for a file input", "plain", "<190>Nov 24 05:28:09 vm nginx: " + message, "<190>Nov 24 05:28:09 vm nginx: " + message, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := p.Explain(tc.input, []byte(tc.line))
			if l.Text != tc.text || l.Counted != tc.counted {
				t.Errorf("Explain(%q, %q): text %q, counted %v; want %q, %v", tc.input, tc.line, l.Text, l.Counted, tc.text, tc.counted)
			}
		})
	}
}

// A syslog input of candidate formats whose senders send fewer than MaxHeld datagrams,
// none of a candidate's format, then go quiet has them settled as a quiet file's are:
// counted under "(none)", their lines as unmatched, once no datagram came for heldQuiet,
// not held until the input stops. Before then they wait for one of a format.
func TestSyslogShortLogOfNoFormatSettles(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "nginx.sock")
	cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: sock, syslog: 'unixgram://%s', log_format: auto}]\nrules: [{name: requests, labels: {status: '${status}'}}]\n", sock), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clock := testclock.New(time.Date(2026, 11, 24, 5, 28, 9, 0, time.UTC))
	p, err := Start(cfg, Options{Now: clock.Now, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	const plain = `<190>Nov 24 05:28:09 vm app: 12:00:00 INFO served / in 5ms`
	syslogtest.Send(t, "unixgram", sock, plain, plain, plain)
	waitTotal(t, p, "received", "logwindow_input_lines_total", 3)
	clock.Add(heldQuiet - time.Second)
	time.Sleep(100 * time.Millisecond) // a settling due now would be done by then: ticks are 10 ms apart
	if st := p.inputStats(); len(st) != 1 || st[0].Unmatched != 0 || st[0].Formats[parser.NoFormat] != 0 {
		t.Fatalf("before the quiet period: input stats %+v, want the datagrams held, uncounted", st)
	}
	clock.Add(time.Second)
	waitTotal(t, p, "settled", "logwindow_input_unmatched_lines_total", 3)
	if st := p.inputStats(); len(st) != 1 || st[0].Formats[parser.NoFormat] != 1 {
		t.Errorf("settled: input stats %+v, want the input's lines of no format", st)
	}
}

// A syslog input of candidate formats holds datagrams while its format is chosen. A
// graceful stop parses them, as a file's held lines are parsed when its reader lets go of
// it, so that the shutdown's snapshot has them: they were counted as read, and a restart
// would not read them again.
func TestSyslogHeldParsedAtStop(t *testing.T) {
	sock, dir := filepath.Join(t.TempDir(), "nginx.sock"), t.TempDir()
	cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: sock, syslog: 'unixgram://%s', log_format: auto}]\nrules: [{name: served, match: 'served '}]\n", sock), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	start := func() *Pipeline {
		clock := testclock.New(time.Date(2026, 11, 24, 5, 28, 9, 0, time.UTC))
		p, err := Start(cfg, Options{Now: clock.Now, PollInterval: 10 * time.Millisecond, StoragePath: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		return p
	}
	p := start()
	const plain = `<190>Nov 24 05:28:09 vm app: 12:00:00 INFO served / in 5ms`
	syslogtest.Send(t, "unixgram", sock, plain, plain, plain)
	waitTotal(t, p, "received", "logwindow_input_lines_total", 3)
	if got := gatherPipeline(t, p)["served_total{}"]; got != 0 {
		t.Fatalf("served_total %v before the stop, want the datagrams held", got)
	}
	p.Stop()
	if got := gatherPipeline(t, p)["served_total{}"]; got != 3 {
		t.Errorf("served_total %v once stopped, want the 3 held datagrams", got)
	}
	if got := gatherPipeline(t, start())["served_total{}"]; got != 3 {
		t.Errorf("served_total %v after the restart, want the 3 held datagrams", got)
	}
}

// The line tester gives a line pasted for an input the captures the input gives it of its
// own: the hostname and tag of a datagram's syslog header, the stream of a CRI line. A
// rule that reads them explains the line as the input counts it, not as a line with
// them unset (no host, and filtered out by a where on the tag).
func TestExplainPastedLineCaptures(t *testing.T) {
	pods := filepath.Join(t.TempDir(), "0.log")
	p, _, _, _ := startSyslog(t, `
inputs: [{name: sock, syslog: 'unixgram://%s'}, {name: pods, path: '`+pods+`', wrapper: cri}]
rules:
  - {name: nginx, match: '^(?P<m>.*)$', inputs: [sock], where: {syslog_tag: nginx}, labels: {host: '${syslog_hostname}'}}
  - {name: errors, match: '^(?P<m>.*)$', inputs: [pods], where: {stream: stderr}, labels: {stream: '${stream}'}}
`)
	for _, tc := range []struct {
		name, input, line string
		counted           bool
		label             string
	}{
		{"rfc 3164", "sock", "<190>Nov 24 05:28:09 vm nginx: GET /", true, "host=vm"},
		{"rfc 5424", "sock", "<190>1 2024-03-01T12:00:00Z vm nginx - - - GET /", true, "host=vm"},
		{"another tag", "sock", "<190>Nov 24 05:28:09 vm app: GET /", false, ""},
		{"a message alone", "sock", "GET /", false, ""},
		{"a CRI line of stderr", "pods", "2024-03-01T12:00:00Z stderr F GET /", true, "stream=stderr"},
		{"a CRI line of stdout", "pods", "2024-03-01T12:00:00Z stdout F GET /", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := p.Explain(tc.input, []byte(tc.line))
			var label string
			for _, r := range l.Rules {
				for _, lb := range r.Labels {
					label = lb.Name + "=" + lb.Value
				}
			}
			if l.Counted != tc.counted || label != tc.label {
				t.Errorf("Explain(%q, %q): counted %v with %q; want %v with %q (%+v)", tc.input, tc.line, l.Counted, label, tc.counted, tc.label, l.Rules)
			}
		})
	}
}
