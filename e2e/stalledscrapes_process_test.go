package e2e

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// stalledScrapeRules rank every path of the log: a top rule as wide as the config allows
// people to write, whose scrape is hundreds of MB.
const stalledScrapeRules = `
global: {windows: [5m]}
inputs: [{name: web, path: %s, start_at: beginning}]
rules:
  - name: hot_paths
    match: '^GET (?P<path>\S+)$'
    labels: {path: '${path}'}
    top: {label: path, k: %d}
`

// protoAccept is the Accept header of a scraper that asks for the delimited protobuf
// format (native histograms).
const protoAccept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

// memoryLimited writes a shell wrapper of bin that runs it under ulimit -v of limit bytes
// (its address space: Go reserves more than it uses, so the limit is calibrated against
// the process's VmPeak, not its RSS), and returns its path. exec keeps the pid.
func memoryLimited(t *testing.T, bin string, limit int64) string {
	t.Helper()
	wrapper := filepath.Join(t.TempDir(), "limited")
	writeFile(t, wrapper, fmt.Appendf(nil, "#!/bin/sh\nulimit -v %d || exit 1\nexec '%s' \"$@\"\n", limit>>10, bin), 0o755)
	return wrapper
}

// memoryWatch follows a process's memory from a starting point: its RSS then, and its
// peak RSS since (VmHWM, reset by writing 5 to clear_refs).
type memoryWatch struct {
	pid    int
	before int64
}

func watchMemory(t *testing.T, pid int) *memoryWatch {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("resetting the peak RSS: %v", err)
	}
	return &memoryWatch{pid: pid, before: procStatusBytes(t, pid, "VmRSS")}
}

// check logs the RSS before and the peak since, with the peak of the address space
// (VmPeak, what ulimit -v bounds), and fails t when the peak RSS is over bound.
func (m *memoryWatch) check(t *testing.T, bound int64) {
	t.Helper()
	peak, vpeak := procStatusBytes(t, m.pid, "VmHWM"), procStatusBytes(t, m.pid, "VmPeak")
	t.Logf("RSS %d MB before, peak %d MB (%+d MB), bound %d MB; address space peak %d MB",
		m.before>>20, peak>>20, (peak-m.before)>>20, bound>>20, vpeak>>20)
	if peak > bound {
		t.Errorf("peak RSS %d MB, over the bound of %d MB", peak>>20, bound>>20)
	}
}

// holdUnread opens n connections to addr per request in requests, sends the request on
// each, and never reads the reply; close closes them all.
func holdUnread(t *testing.T, addr string, n int, requests ...string) (close func()) {
	t.Helper()
	dialer := stallingDialer()
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	for range n {
		for _, req := range requests {
			wg.Go(func() {
				c, err := dialer.Dial("tcp", addr)
				if err != nil {
					t.Errorf("dial: %v", err)
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
				_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
				_, _ = io.WriteString(c, req) // the server may close first: that is what is tested
			})
		}
	}
	wg.Wait()
	return func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}
}

// fetchAll sends a GET of url with accept and encoding and reads the whole reply,
// returning its status and how many bytes came (as sent: gzipped when asked for).
func fetchAll(client *http.Client, url, accept, encoding string) (int, int64, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	// Set by hand, the transport leaves the body as it came.
	req.Header.Set("Accept-Encoding", encoding)
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, n, err
}

// TestStalledScrapes runs a top rule of k=50,000 over 50,000 paths of 1 KB (a scrape of
// 52 MB of text, 28 MB gzipped) under a memory limit, and holds 32 scrapes unread, in the
// text and the protobuf formats, gzipped or not, with --web.max-requests at its default
// (10): the process must stay alive, answer a scraper that reads once they are gone, and
// its peak RSS stay within 2 × --series.max-bytes and an allowance per scrape in flight.
// Before, a scrape of this rule took minutes of CPU (sketch.Top sorted by insertion), and
// each stalled scrape held its whole output.
func TestStalledScrapes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 50 MB log and scrapes of 52 MB on the built exporter")
	}
	const (
		paths    = 50000
		pathLen  = 1000
		perKind  = 8
		holdFor  = 8 * time.Second
		maxBytes = 128 << 20
		// memoryLimit is the address space the process may take (ulimit -v): Go reserves
		// far more than it uses (VmPeak 1.9 GB idle with this store, 2.5 to 2.7 GB through
		// the attack), so 4 GiB lets it run and still stops a process that grows by GBs.
		memoryLimit = 4 << 30
		// perScrape is what a scrape in flight holds beyond the store: the rule it writes,
		// here the top rule's window summary merged from its slots and its 50,000 items of
		// 1 KB copied out of it (internal/scrape's reader), some 100 MB, less the chunk and
		// the compressor. At most --web.max-requests (10) are in flight, and a stalled one
		// gives way to a scrape that waits; an ended one's is garbage until the next
		// collection. Measured peak: 730 to 839 MB (+530 to +643 MB over the RSS before).
		perScrape   = 96 << 20
		maxRequests = 10
		allowance   = maxRequests * perScrape
	)
	bin := testexec.BuildExporter(t, false) // RSS is measured: no race detector
	dir := t.TempDir()
	logPath, cfgPath := filepath.Join(dir, "access.log"), filepath.Join(dir, "rules.yaml")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	rnd := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, pathLen/2)
	for range paths {
		for i := range raw {
			raw[i] = byte(rnd.Uint32()) // random, so that gzip does not shrink the scrape
		}
		fmt.Fprintf(w, "GET /%s\n", hex.EncodeToString(raw))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfgPath, fmt.Appendf(nil, stalledScrapeRules, logPath, paths), 0o644)

	p := testexec.StartExporter(t, memoryLimited(t, bin, memoryLimit),
		"--config.file="+cfgPath, fmt.Sprintf("--series.max-bytes=%dMiB", maxBytes>>20))
	pid := p.Cmd.Process.Pid
	client := &http.Client{Timeout: time.Minute}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		m, err := scrapeFamilies(client, p.URL()+"/metrics?name[]=logwindow_input_lines_total&name[]=logwindow_series_bytes")
		if err != nil {
			t.Fatal(err)
		}
		if got := metrictest.Sum(m, "logwindow_input_lines_total"); got == paths {
			t.Logf("%d paths read, series of %.0f MB counted against --series.max-bytes=%d MB",
				paths, metrictest.Sum(m, "logwindow_series_bytes")/(1<<20), maxBytes>>20)
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("read %v lines, want %v", got, paths)
		}
	}
	sizes := map[string]int64{}
	for _, accept := range []string{"", protoAccept} {
		for _, enc := range []string{"identity", "gzip"} {
			code, n, err := fetchAll(client, p.URL()+"/metrics", accept, enc)
			if err != nil || code != http.StatusOK {
				t.Fatalf("scrape (Accept %q, %s): HTTP %d, %v", accept, enc, code, err)
			}
			sizes[fmt.Sprintf("%q/%s", accept, enc)] = n
		}
	}
	t.Logf("scrapes, as sent: %v", sizes)

	mem := watchMemory(t, pid)
	stop := make(chan struct{})
	var (
		answered int
		failed   []string
	)
	scraped := make(chan struct{})
	go func() {
		defer close(scraped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			code, _, err := fetchAll(client, p.URL()+"/metrics", "", "gzip")
			if err != nil || code != http.StatusOK {
				failed = append(failed, fmt.Sprintf("HTTP %d, %v", code, err))
				continue
			}
			answered++
		}
	}()
	addr := strings.TrimPrefix(p.URL(), "http://")
	release := holdUnread(t, addr, perKind,
		"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: "+protoAccept+"\r\nAccept-Encoding: identity\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: "+protoAccept+"\r\nAccept-Encoding: gzip\r\n\r\n",
	)
	select {
	case <-p.Done():
	case <-time.After(holdFor):
	}
	release()
	close(stop)
	<-scraped
	if gone, err := p.Exited(); gone {
		t.Fatalf("the exporter died under %d stalled scrapes: %v\n%s", 4*perKind, err, testexec.Tail(p.Output, 20))
	}
	// Scrapes of a rule this large are CPU-bound: while the stalled ones are still reading
	// it, before their writes block, a scraper may wait in vain and get 503 (counted in
	// the log).
	t.Logf("%d stalled scrapes held %v; a reading scraper meanwhile: %d answered, %d failed %v", 4*perKind, holdFor, answered, len(failed), failed)
	began := time.Now()
	if code, _, err := fetchAll(client, p.URL()+"/metrics", "", "gzip"); err != nil || code != http.StatusOK {
		t.Errorf("scrape after the attack: HTTP %d, %v", code, err)
	}
	t.Logf("a scrape after the attack answered in %v", time.Since(began).Round(time.Millisecond))
	mem.check(t, 2*maxBytes+allowance)
}

// scrapeFamilies fetches url and parses it as the text format.
func scrapeFamilies(client *http.Client, url string) (metrictest.Families, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}
