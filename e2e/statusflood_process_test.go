package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// TestStatusPageFlood asks for the status page 400 times at once while the exporter
// follows 500 files (a series per file in every gather of the registry): the pages within
// --web.max-requests are served, the others wait or get 503, which the log counts; the
// process's peak RSS grows by at most statusFloodGrowth. Before the page was bounded, each
// of the 400 gathered the registry and held its page at once: +135 MB.
func TestStatusPageFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 500 files and 400 requests on the built exporter")
	}
	const (
		files    = 500
		requests = 400
		// statusFloodGrowth: one gather at a time, 10 pages in flight (--web.max-requests)
		// of some 100 KB each, 400 connections' buffers and goroutines. Measured: +13 MB,
		// 25 pages served and 375 answered 503 in 0.4 s; before, +135 MB, all 400 served
		// in 3 s.
		statusFloodGrowth = 48 << 20
	)
	bin := testexec.BuildExporter(t, false) // RSS is measured: no race detector
	dir := t.TempDir()
	for i := range files {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("app-%03d.log", i)), []byte("GET /x\n"), 0o644)
	}
	cfgPath := filepath.Join(t.TempDir(), "rules.yaml")
	writeFile(t, cfgPath, fmt.Appendf(nil, slowClientRules, filepath.Join(dir, "*.log")), 0o644)
	p := testexec.StartExporter(t, bin, "--config.file="+cfgPath)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: requests}}
	t.Cleanup(client.CloseIdleConnections) // before the exporter is stopped, which waits for them
	page := func() (int, error) {
		code, _, err := fetchAll(client, p.URL()+"/", "", "identity")
		return code, err
	}
	for range 3 { // the buffers a page reuses are made
		if code, err := page(); err != nil || code != http.StatusOK {
			t.Fatalf("GET /: HTTP %d, %v", code, err)
		}
	}
	if body := string(p.Get(t, "/")); !strings.Contains(body, fmt.Sprintf("app-%03d.log", files-1)) {
		t.Fatalf("the page does not list the %d files followed", files)
	}
	mem := watchMemory(t, p.Cmd.Process.Pid)
	var (
		mu     sync.Mutex
		codes  = map[int]int{}
		errs   []error
		wg     sync.WaitGroup
		start  = make(chan struct{})
		began  = time.Now()
		served time.Duration
	)
	for range requests {
		wg.Go(func() {
			<-start
			code, err := page()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			codes[code]++
			if code == http.StatusOK {
				served = max(served, time.Since(began))
			}
		})
	}
	close(start)
	wg.Wait()
	t.Logf("%d pages asked for at once: HTTP status counts %v, %d errors, in %v (last page served after %v)",
		requests, codes, len(errs), time.Since(began).Round(time.Millisecond), served.Round(time.Millisecond))
	for _, err := range errs {
		t.Errorf("GET /: %v", err)
	}
	if codes[http.StatusOK] == 0 {
		t.Errorf("no page served")
	}
	if codes[http.StatusOK]+codes[http.StatusServiceUnavailable] != requests {
		t.Errorf("answers other than 200 and 503: %v", codes)
	}
	if codes[http.StatusServiceUnavailable] > 0 && !strings.Contains(p.Log(), "answered 503") {
		t.Errorf("%d pages answered 503, not in the log", codes[http.StatusServiceUnavailable])
	}
	mem.check(t, mem.before+statusFloodGrowth)
	if code, err := page(); err != nil || code != http.StatusOK {
		t.Errorf("GET / after the flood: HTTP %d, %v", code, err)
	}
}
