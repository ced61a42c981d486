package testexec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
)

// DefaultTimeout bounds the start of a program and every wait on it: generous for a
// loaded CI machine, where a passing test takes a fraction of it.
const DefaultTimeout = 30 * time.Second

// poll is how often a wait looks again.
const poll = 50 * time.Millisecond

// ServeOptions are how Serve runs the exporter, beyond its flags.
type ServeOptions struct {
	// Env is added to the exporter's environment (the benchmark sets GOMAXPROCS).
	Env []string
	// User and Password go with every request the helper sends, readiness included, for
	// an exporter whose --web.config.file asks for basic auth.
	User, Password string
	// Timeout bounds the start and every wait; DefaultTimeout when zero.
	Timeout time.Duration
	// Under is a command line the exporter runs under, its path and flags before the
	// exporter's own (the benchmark counts instructions under valgrind): the process is
	// still the exporter's, as a tool that execs in place keeps its pid.
	Under []string
}

// Exporter is the exporter binary serving HTTP on a loopback port. Serve starts it for
// the benchmark, StartExporter for a test. The methods that take a testing.TB fail it
// instead of returning an error; they take it at each call, not at the start, so that a
// subtest fails itself, not its parent.
type Exporter struct {
	*Proc
	addr   string
	opts   ServeOptions
	client *http.Client
}

// Serve starts bin with args, logging in JSON to dir/logwindow_exporter.out, on a port of
// 127.0.0.1 the kernel picks, and returns once it answers /-/ready with 200. The address
// comes from the log's "Listening on" line, so no other program can take the port
// between its choice and the bind; args must not set --web.listen-address or
// --log.format. On an error the exporter is killed, and the error holds the end of its
// log.
func Serve(dir, bin string, o ServeOptions, args ...string) (*Exporter, error) {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	argv := slices.Concat(o.Under, []string{bin, "--web.listen-address=127.0.0.1:0", "--log.format=json"}, args)
	p, err := launch(dir, "logwindow_exporter", argv, o.Env)
	if err != nil {
		return nil, err
	}
	e := &Exporter{Proc: p, opts: o, client: &http.Client{Timeout: o.Timeout}}
	if err := e.waitReady(); err != nil {
		_ = p.Kill()
		return nil, fmt.Errorf("%s: %w\nend of its log:\n%s", strings.Join(argv, " "), err, Tail(p.Output, 40))
	}
	return e, nil
}

// waitReady waits for the "Listening on" line of the log, then for /-/ready to answer 200.
func (e *Exporter) waitReady() error {
	deadline := time.Now().Add(e.opts.Timeout)
	for {
		e.addr = listening(e.Output)
		if e.addr != "" {
			break
		}
		if gone, err := e.Exited(); gone {
			return fmt.Errorf("exited (%v) before listening", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening after %v", e.opts.Timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return e.waitOK(e.URL()+"/-/ready", func() (*http.Response, error) { return e.do("/-/ready", nil) }, deadline)
}

// listening returns the address of the first "Listening on" line of a JSON log, or "".
// A last line without its newline may be half written, so it is left for the next look.
func listening(logPath string) string {
	data, _ := os.ReadFile(logPath)
	for {
		line, rest, ok := bytes.Cut(data, []byte("\n"))
		if !ok {
			return ""
		}
		var entry struct{ Msg, Address string }
		if json.Unmarshal(line, &entry) == nil && entry.Msg == "Listening on" {
			return entry.Address
		}
		data = rest
	}
}

// Addr is the address the exporter listens on, host:port.
func (e *Exporter) Addr() string {
	return e.addr
}

// URL is the exporter's base URL, without a trailing slash.
func (e *Exporter) URL() string {
	return "http://" + e.addr
}

// Log is what the exporter logged so far.
func (e *Exporter) Log() string {
	data, err := os.ReadFile(e.Output)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// do sends a GET of path with the header's fields (nil for none) and the credentials of
// the options.
func (e *Exporter) do(path string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, e.URL()+path, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if e.opts.User != "" {
		req.SetBasicAuth(e.opts.User, e.opts.Password)
	}
	return e.client.Do(req)
}

// Fetch sends a GET of path with the header's fields (nil for none) and returns the body
// of its answer, decoded when it came gzipped because the transport asked for it: an
// answer other than 200 is an error.
func (e *Exporter) Fetch(path string, header http.Header) ([]byte, error) {
	resp, err := e.do(path, header)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return body, err
}

// scrape fetches /metrics and parses it.
func (e *Exporter) scrape() (metrictest.Families, error) {
	body, err := e.Fetch("/metrics", nil)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(bytes.NewReader(body))
}

// WaitHTTP waits until url answers 200 while p runs, for at most timeout: how a test
// knows nginx or Prometheus is up.
func (p *Proc) WaitHTTP(url string, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	return p.waitOK(url, func() (*http.Response, error) { return client.Get(url) }, time.Now().Add(timeout))
}

// waitOK calls get until it answers 200, failing when p exits first or deadline passes.
func (p *Proc) waitOK(url string, get func() (*http.Response, error), deadline time.Time) error {
	for {
		var last string
		resp, err := get()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if gone, err := p.Exited(); gone {
			return fmt.Errorf("%s exited (%v) before %s answered", p.Name, err, url)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 in time: %s", url, last)
		}
		time.Sleep(poll)
	}
}

// WaitHTTP is Proc.WaitHTTP within DefaultTimeout, failing tb with the end of p's output.
func WaitHTTP(tb testing.TB, p *Proc, url string) {
	tb.Helper()
	if err := p.WaitHTTP(url, DefaultTimeout); err != nil {
		tb.Fatalf("%v\nend of %s's output:\n%s", err, p.Name, Tail(p.Output, 40))
	}
}

// StartExporter starts the exporter binary bin (see BuildExporter) with args for tb, as
// Serve does, and returns it ready. The test's cleanup stops it, failing the test when it
// does not exit cleanly after SIGTERM (a race found, with a -race build), and shows the
// end of its log when the test failed.
func StartExporter(tb testing.TB, bin string, args ...string) *Exporter {
	tb.Helper()
	return StartExporterWith(tb, ServeOptions{}, bin, args...)
}

// StartExporterWith is StartExporter with options: the credentials of a web config.
func StartExporterWith(tb testing.TB, o ServeOptions, bin string, args ...string) *Exporter {
	tb.Helper()
	e, err := Serve(tb.TempDir(), bin, o, args...)
	if err != nil {
		tb.Fatal(err)
	}
	stopAtCleanup(tb, e.Proc)
	return e
}

// Get returns the body of a GET of path, which must answer 200.
func (e *Exporter) Get(tb testing.TB, path string) []byte {
	tb.Helper()
	body, err := e.Fetch(path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// Scrape fetches and parses /metrics.
func (e *Exporter) Scrape(tb testing.TB) metrictest.Families {
	tb.Helper()
	m, err := e.scrape()
	if err != nil {
		tb.Fatalf("scrape: %v", err)
	}
	return m
}

// ScrapeAt is a scrape taken within one second of the test's clock, and that second:
// with event-time rules the windows are evaluated at the process's now, which this pins
// down.
func (e *Exporter) ScrapeAt(tb testing.TB) (metrictest.Families, int64) {
	tb.Helper()
	for {
		before := time.Now().Unix()
		m := e.Scrape(tb)
		if time.Now().Unix() == before {
			return m, before
		}
	}
}

// WaitCheck scrapes until check returns nil, and returns that scrape. The test fails
// with check's last error when that takes longer than the timeout.
func (e *Exporter) WaitCheck(tb testing.TB, check func(metrictest.Families) error) metrictest.Families {
	tb.Helper()
	for deadline := time.Now().Add(e.opts.Timeout); ; time.Sleep(poll) {
		m := e.Scrape(tb)
		err := check(m)
		if err == nil {
			return m
		}
		if time.Now().After(deadline) {
			tb.Fatalf("after %v: %v", e.opts.Timeout, err)
		}
	}
}

// WaitFor scrapes until cond holds, and returns that scrape; what says what cond is in
// the failure.
func (e *Exporter) WaitFor(tb testing.TB, what string, cond func(metrictest.Families) bool) metrictest.Families {
	tb.Helper()
	return e.WaitCheck(tb, func(m metrictest.Families) error {
		if cond(m) {
			return nil
		}
		return errors.New("no scrape where " + what)
	})
}

// WaitLines scrapes until the inputs have read n lines in all.
func (e *Exporter) WaitLines(tb testing.TB, n float64) metrictest.Families {
	tb.Helper()
	return e.WaitCheck(tb, func(m metrictest.Families) error {
		if got := metrictest.Sum(m, "logwindow_input_lines_total"); got != n {
			return fmt.Errorf("read %v lines, want %v", got, n)
		}
		return nil
	})
}

// WaitLogged waits until the exporter's log holds s.
func (e *Exporter) WaitLogged(tb testing.TB, s string) {
	tb.Helper()
	for deadline := time.Now().Add(e.opts.Timeout); !strings.Contains(e.Log(), s); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("after %v, the log does not hold %s", e.opts.Timeout, s)
		}
	}
}
