package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
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
	if testing.Short() && !testexec.Required {
		t.Skip("-short: the end-to-end test runs nginx and the built exporter")
	}
	tools := testexec.LookTools(t, "Debian: apt-get install nginx prometheus", "nginx")
	dir := t.TempDir()
	// Built without the race detector: a unix datagram socket queues only
	// net.unix.max_dgram_qlen (10) datagrams, and an exporter slowed down several times by
	// it on a loaded machine falls that far behind nginx, which then loses lines on its
	// side (its error log says "send() to syslog failed"). The race detector runs over the
	// same code in the syslog and pipeline packages' tests.
	bin := testexec.BuildExporter(t, false)
	sock := filepath.Join(dir, "nginx.sock")
	syslogPort := testexec.FreeUDPPort(t)

	// The exporter first: nginx connects its syslog socket at its first log line.
	example := string(repoFile(t, "example-rules.yaml"))
	// Both inputs keep the example's log format, which the rules read.
	at := strings.Index(example, "    log_format: ")
	if at < 0 {
		t.Fatal("example-rules.yaml has no log_format")
	}
	format, _, _ := strings.Cut(example[at:], "\n")
	rules := strings.Replace(example, "    path: /var/log/nginx/access.log\n    start_at: end\n",
		fmt.Sprintf("    syslog: unixgram://%s\n%s\n  - name: burst\n    syslog: udp://127.0.0.1:%d\n", sock, format, syslogPort), 1)
	if rules == example {
		t.Fatal("example-rules.yaml no longer has the input this test replaces")
	}
	config := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(config, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	exporter := testexec.StartExporter(t, bin, "--config.file="+config)
	waitSamples := func(wants ...metrictest.Sample) {
		t.Helper()
		exporter.WaitCheck(t, func(m metrictest.Families) error { return metrictest.Match(m, wants) })
	}
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
				waitSamples(metrictest.Sample{Family: "logwindow_input_datagrams_total", Labels: nginxInput, Want: float64(s.requests)})
			}
		}
		want := []metrictest.Sample{
			{Family: "logwindow_input_datagrams_total", Labels: nginxInput, Want: float64(s.requests)},
			{Family: "logwindow_input_malformed_datagrams_total", Labels: nginxInput, Want: 0},
			{Family: "logwindow_input_dropped_datagrams_total", Labels: metrictest.WithLabel(nginxInput, "reason", "queue"), Want: 0},
		}
		for status, n := range s.byStatus {
			want = append(want, metrictest.Sample{Family: "nginx_http_requests_total", Labels: requestLabels(status), Want: n})
		}
		if lost := nginxSendFailures(t, ngx.errorLog); lost > 0 {
			t.Fatalf("nginx could not send %d access log lines: the exporter fell more than net.unix.max_dgram_qlen datagrams behind", lost)
		}
		waitSamples(want...)
		t.Logf("%d requests counted exactly: %v", s.requests, s.byStatus)
	})

	t.Run("burst past the socket buffer", func(t *testing.T) {
		ok := requestLabels("200")
		before := metrictest.Value(exporter.Scrape(t), "nginx_http_requests_total", ok)
		if err := exporter.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		sendParallel(t, client, ngx.udpBase, burst)
		if err := exporter.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		burstInput := map[string]string{"input": "burst"}
		var received, dropped float64
		// No datagram follows the burst: the drops after the last one the kernel queued
		// show all the same.
		exporter.WaitCheck(t, func(m metrictest.Families) error {
			received = metrictest.Value(m, "logwindow_input_datagrams_total", burstInput)
			dropped = metrictest.Value(m, "logwindow_input_dropped_datagrams_total", metrictest.WithLabel(burstInput, "reason", "receive_buffer"))
			counted := metrictest.Value(m, "nginx_http_requests_total", ok) - before
			if dropped > 0 && received+dropped == burst && counted == received {
				return nil
			}
			return fmt.Errorf("received %v + dropped %v, counted %v more (want received + dropped = %d, dropped > 0, every received one counted)",
				received, dropped, counted, burst)
		})
		t.Logf("a burst of %d requests while the exporter was stopped: %v received and counted, %v dropped by the kernel and reported",
			burst, received, dropped)
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

// nginxInput are the labels of the input nginx logs to through the unix socket.
var nginxInput = map[string]string{"input": "nginx"}

// requestLabels are the labels of nginx_http_requests_total for the test's GET requests.
func requestLabels(status string) map[string]string {
	return map[string]string{"method": "GET", "status": status, "status_class": status[:1] + "xx"}
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
	format := nginxLogFormat(t)
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
	testexec.WaitHTTP(t, p, n.unixBase+"/healthz")
	testexec.WaitHTTP(t, p, n.udpBase+"/healthz")
	return n
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
