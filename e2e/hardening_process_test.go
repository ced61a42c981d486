package e2e

// The built binary as a process, attacked over loopback and killed.

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/logwindow/logwindow_exporter/internal/testutil/hardening"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// The exporter is killed with SIGKILL while it reads, lines keep coming, and it is
// started again. With start_at: beginning and event-time rules it reads the whole file
// again, and the windows equal a naive count of the file's lines at the instant of the
// scrape. Line times are relative to the real clock (within the last few minutes, plus a
// few too old for any window), because the process's now is its own clock.
func TestKillAndRestartRebuildsWindows(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	cfgPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfgPath, []byte(hardening.Config(t, "event-time.yaml")(logPath)), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	write := func(s string) {
		if _, err := log.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}

	// The lines of the last four minutes, out of order by up to 30 s, but none ahead of
	// the real clock; and a few lines twenty minutes old, too late for the 15m window.
	now := time.Now().Unix()
	rng := rand.New(rand.NewPCG(24, 5))
	statuses := []int{200, 200, 200, 404, 500}
	const n = 3000
	lines := make([]string, 0, n+3)
	var times []int64
	var codes []int
	add := func(at int64, status int) {
		lines = append(lines, hardening.EventLine(at, time.UTC, status)+"\n")
		times, codes = append(times, at), append(codes, status)
	}
	for i := range n {
		add(min(now-240+int64(i)*240/n+rng.Int64N(61)-30, now), statuses[rng.IntN(len(statuses))])
	}
	for range 3 {
		add(now-20*60, 500)
	}

	args := []string{"--config.file=" + cfgPath, "--input.poll-interval=50ms"}
	half := len(lines) / 2
	write(strings.Join(lines[:half], ""))
	first := testexec.StartExporter(t, bin, args...)
	first.WaitLines(t, float64(half))
	// Mid-stream: lines arrive in bursts, the last one cut in two writes, and the process
	// dies between them.
	for i := half; i < half+500; i += 50 {
		write(strings.Join(lines[i:i+50], ""))
	}
	cut := lines[half+500]
	write(cut[:len(cut)/2])
	_ = first.Kill()
	write(cut[len(cut)/2:])
	write(strings.Join(lines[half+501:], ""))

	second := testexec.StartExporter(t, bin, args...)
	second.WaitLines(t, float64(len(lines)))
	m, at := second.ScrapeAt(t)
	// Rates count the seconds observed from the oldest event placed in any series, which
	// is before the second process started.
	every := hardening.EventWindows{Longest: 900}
	for _, at0 := range times {
		every.Add(at, at0)
	}
	for _, status := range []int{200, 404, 500} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			ref := hardening.EventWindows{Longest: 900}
			for i, s := range codes {
				if s == status {
					ref.Add(at, times[i])
				}
			}
			labels := map[string]string{"status": fmt.Sprint(status)}
			if got, want := metrictest.Value(m, "http_requests_total", labels), float64(ref.Placed()+ref.Late); got != want {
				t.Errorf("total = %v, want %v", got, want)
			}
			ref.Check(t, m, "http_requests", labels, at, every.Oldest(at))
		})
	}
	if got := metrictest.Value(m, "logwindow_rule_dropped_lines_total", map[string]string{"reason": "late"}); got != 3 {
		t.Errorf("late lines = %v, want 3", got)
	}
}

// Wrong basic-auth passwords flood the exporter while Prometheus scrapes it with the
// right one. exporter-toolkit checks passwords with bcrypt, one at a time across all
// requests, and caches the outcome of 100 (user, password) pairs with random eviction; a
// flood of distinct wrong passwords evicts the right one, so some scrapes wait for a bcrypt
// check behind the flood's. The exporter checks two passwords that have not passed before
// at a time, and answers 429 to one more. Every scrape must still answer within
// Prometheus's default scrape timeout (10 s), every wrong password get 401 or 429.
func TestBasicAuthFlood(t *testing.T) {
	const (
		user     = "prometheus"
		password = "correct horse battery staple"
		// cost 6 (some 4 ms a check here) lets the flood go past the cache within a
		// second; cost 10, common in examples, is 16 times slower per check, which
		// lengthens the waits in proportion.
		cost     = 6
		flooders = 8
		wrongs   = 200 // twice the cache's 100 entries, so the right password gets evicted
		timeout  = 10 * time.Second
	)
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(webConfig, fmt.Appendf(nil, "basic_auth_users:\n  %s: %s\n", user, hash), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfgPath, []byte(hardening.Config(t, "uris.yaml")(filepath.Join(dir, "access.log"))), 0o644); err != nil {
		t.Fatal(err)
	}
	p := testexec.StartExporterWith(t, testexec.ServeOptions{User: user, Password: password}, bin, "--config.file="+cfgPath, "--web.config.file="+webConfig)
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{MaxIdleConnsPerHost: flooders + 1}}
	get := func(pass string) (int, error) {
		req, err := http.NewRequest(http.MethodGet, p.URL()+"/metrics", nil)
		if err != nil {
			return 0, err
		}
		req.SetBasicAuth(user, pass)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	if code, err := get(password); code != http.StatusOK {
		t.Fatalf("scrape before the flood: HTTP %d, %v", code, err)
	}

	ctx, stop := context.WithTimeout(context.Background(), 60*time.Second)
	defer stop()
	var sent, refused, busy atomic.Int64
	var wg sync.WaitGroup
	for g := range flooders {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil && sent.Add(1) <= wrongs; i++ {
				code, err := get(fmt.Sprintf("wrong-%d-%d", g, i))
				switch {
				case err == nil && code == http.StatusUnauthorized:
					refused.Add(1)
				case err == nil && code == http.StatusTooManyRequests:
					busy.Add(1)
				case ctx.Err() == nil:
					t.Errorf("wrong password: HTTP %d, %v", code, err)
				}
			}
		})
	}
	flooding := make(chan struct{})
	go func() {
		wg.Wait()
		close(flooding)
	}()
	var latencies []time.Duration
	for scraping := true; scraping; {
		select {
		case <-flooding:
			scraping = false
		default:
		}
		start := time.Now()
		code, err := get(password)
		latencies = append(latencies, time.Since(start))
		if code != http.StatusOK {
			t.Errorf("scrape %d during the flood: HTTP %d, %v", len(latencies), code, err)
		}
	}
	slices.Sort(latencies)
	t.Logf("%d wrong passwords refused (401), %d not checked (429) by %d goroutines; %d scrapes: median %v, max %v",
		refused.Load(), busy.Load(), flooders, len(latencies), latencies[len(latencies)/2], latencies[len(latencies)-1])
	if refused.Load()+busy.Load() != wrongs {
		t.Errorf("%d wrong passwords refused and %d not checked, want %d in all", refused.Load(), busy.Load(), wrongs)
	}
}
