package e2e

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/deploy"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// burst is sent while the exporter is stopped (SIGSTOP): many times what a default UDP
// receive buffer (net.core.rmem_default, 208 KiB) holds of nginx's datagrams.
const burst = 3000

// A real nginx sends its access log as syslog to the exporter, no file involved: every
// request is counted exactly through example-rules.yaml, and a burst larger than the
// socket buffer, sent while the exporter cannot read, shows in the drop counter: received
// plus dropped is every datagram nginx sent. On exit the exporter removes its socket.
func TestNginxSyslog(t *testing.T) {
	if testing.Short() && !required {
		t.Skip("-short: the end-to-end test runs nginx and the built exporter")
	}
	tools := lookTools(t, "nginx")
	dir := t.TempDir()
	// Built without the race detector: a unix datagram socket queues only
	// net.unix.max_dgram_qlen (10) datagrams, and an exporter slowed down several times by
	// it on a loaded machine falls that far behind nginx, which then loses lines on its
	// side (its error log says "send() to syslog failed"). The race detector runs over the
	// same code in the syslog and pipeline packages' tests.
	bin := testexec.BuildExporter(t, false)
	sock := filepath.Join(dir, "nginx.sock")
	syslogPort := freeUDPPort(t)

	// The exporter first: nginx connects its syslog socket at its first log line.
	example, err := os.ReadFile("../example-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules := strings.Replace(string(example), "    path: /var/log/nginx/access.log\n    start_at: end\n",
		fmt.Sprintf("    syslog: unixgram://%s\n  - name: burst\n    syslog: udp://127.0.0.1:%d\n", sock, syslogPort), 1)
	if rules == string(example) {
		t.Fatal("example-rules.yaml no longer has the input this test replaces")
	}
	config := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(config, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testexec.FreePort(t))
	exporter := testexec.StartTest(t, dir, "logwindow_exporter", []string{bin, "--config.file=" + config, "--web.listen-address=" + addr})
	waitHTTP(t, exporter, "http://"+addr+"/-/ready", startTimeout)
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket %s: %v, %v", sock, fi, err)
	}

	ngx := startSyslogNginx(t, tools["nginx"], dir, sock, syslogPort)
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()

	t.Run("every request counted", func(t *testing.T) {
		// A unix datagram socket queues only net.unix.max_dgram_qlen (10) datagrams, and
		// nginx drops a line it cannot send (README says so): the requests go in rounds
		// smaller than that queue, each waited for, so that a machine busy with other
		// tests cannot make the exporter fall that far behind.
		const pace = 5
		s := newSent()
		for _, b := range []batch{
			{path: "/", status: 200, n: 60},
			{path: "/missing", status: 404, n: 7},
			{path: "/boom", status: 500, n: 5},
		} {
			for left := b.n; left > 0; left -= pace {
				s.send(t, client, ngx.unixBase, []batch{{path: b.path, status: b.status, n: min(pace, left)}})
				waitMetrics(t, addr, map[string]float64{`logwindow_input_datagrams_total{input="nginx"}`: float64(s.requests)})
			}
		}
		want := map[string]float64{}
		for status, n := range s.byStatus {
			want[fmt.Sprintf(`nginx_http_requests_total{method="GET",status="%s",status_class="%cxx"}`, status, status[0])] = n
		}
		want[`logwindow_input_datagrams_total{input="nginx"}`] = float64(s.requests)
		want[`logwindow_input_malformed_datagrams_total{input="nginx"}`] = 0
		want[`logwindow_input_dropped_datagrams_total{input="nginx",reason="queue"}`] = 0
		if lost := nginxSendFailures(t, ngx.errorLog); lost > 0 {
			t.Fatalf("nginx could not send %d access log lines: the exporter fell more than net.unix.max_dgram_qlen datagrams behind", lost)
		}
		waitMetrics(t, addr, want)
		t.Logf("%d requests counted exactly: %v", s.requests, s.byStatus)
	})

	t.Run("burst past the socket buffer", func(t *testing.T) {
		before := scrapeMetrics(t, addr)
		requests200 := before[`nginx_http_requests_total{method="GET",status="200",status_class="2xx"}`]
		if err := exporter.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		sendParallel(t, client, ngx.udpBase, burst)
		if err := exporter.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		// The kernel's count travels with the next datagram queued after the drops, so
		// single requests follow until one arrives with the socket drained.
		const (
			received = `logwindow_input_datagrams_total{input="burst"}`
			dropped  = `logwindow_input_dropped_datagrams_total{input="burst",reason="receive_buffer"}`
			counted  = `nginx_http_requests_total{method="GET",status="200",status_class="2xx"}`
		)
		sent := burst
		var m map[string]float64
		for deadline := time.Now().Add(convergeTimeout); ; {
			sendParallel(t, client, ngx.udpBase, 1)
			sent++
			time.Sleep(100 * time.Millisecond)
			m = scrapeMetrics(t, addr)
			if m[dropped] > 0 && m[received]+m[dropped] == float64(sent) && m[counted] == requests200+m[received] {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %d requests: received %v + dropped %v, counted %v more (want received + dropped = %d, dropped > 0, every received one counted)",
					sent, m[received], m[dropped], m[counted]-requests200, sent)
			}
		}
		t.Logf("%d requests (a burst of %d while the exporter was stopped): %v received and counted, %v dropped by the kernel and reported",
			sent, burst, m[received], m[dropped])
	})

	t.Run("socket removed on exit", func(t *testing.T) {
		if err := exporter.Stop(testexec.StopTimeout); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(sock); !os.IsNotExist(err) {
			t.Errorf("socket still there after SIGTERM: %v", err)
		}
	})
}

type syslogNginx struct {
	unixBase, udpBase string
	errorLog          string
}

// nginxSendFailures counts the access log lines nginx reported it could not send.
func nginxSendFailures(t *testing.T, errorLog string) int {
	t.Helper()
	data, err := os.ReadFile(errorLog)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("send() to syslog failed"))
}

func startSyslogNginx(t *testing.T, bin, dir, sock string, syslogPort int) *syslogNginx {
	t.Helper()
	format, err := deploy.NginxLogFormat()
	if err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(dir, "nginx")
	if err := os.Mkdir(prefix, 0o755); err != nil {
		t.Fatal(err)
	}
	conf, errorLog := filepath.Join(prefix, "nginx.conf"), filepath.Join(prefix, "error.log")
	user := ""
	if os.Geteuid() == 0 {
		user = "root"
	}
	unixPort, udpPort := testexec.FreePort(t), testexec.FreePort(t)
	render(t, "nginx-syslog.conf.tmpl", conf, map[string]any{
		"User": user, "Dir": prefix, "ErrorLog": errorLog, "LogFormat": format,
		"UnixPort": unixPort, "UDPPort": udpPort, "Socket": sock, "SyslogPort": syslogPort,
	})
	p := testexec.StartTest(t, dir, "nginx", []string{bin, "-p", prefix, "-c", conf, "-e", errorLog, "-g", "daemon off;"}, errorLog)
	n := &syslogNginx{unixBase: fmt.Sprintf("http://127.0.0.1:%d", unixPort), udpBase: fmt.Sprintf("http://127.0.0.1:%d", udpPort), errorLog: errorLog}
	waitHTTP(t, p, n.unixBase+"/healthz", startTimeout)
	waitHTTP(t, p, n.udpBase+"/healthz", startTimeout)
	return n
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// sendParallel sends n GET / requests from a few clients at once, each answered 200.
func sendParallel(t *testing.T, client *http.Client, base string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	for range 8 {
		wg.Go(func() {
			for range work {
				resp, err := client.Get(base + "/")
				if err != nil {
					errs <- err
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("GET /: %s", resp.Status)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// scrapeMetrics returns every counter and gauge sample of the exporter by its text form,
// name{labels} with labels sorted.
func scrapeMetrics(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(get(t, "http://"+addr+"/metrics")))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			out[sampleName(name, m)] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out
}

func sampleName(name string, m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return name
	}
	var pairs []string
	for _, l := range m.GetLabel() {
		pairs = append(pairs, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// waitMetrics scrapes until every wanted sample has its value, and fails at the timeout.
func waitMetrics(t *testing.T, addr string, want map[string]float64) {
	t.Helper()
	for deadline := time.Now().Add(convergeTimeout); ; {
		got := scrapeMetrics(t, addr)
		missing := []string{}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				missing = append(missing, fmt.Sprintf("%s = %v (have %v, %v)", k, v, g, ok))
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", convergeTimeout, strings.Join(missing, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
