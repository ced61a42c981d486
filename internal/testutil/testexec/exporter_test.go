package testexec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
)

// TestExporter starts the built exporter on a log of three lines, through each way the
// tests and the benchmark use it, and checks what the helper reports when it fails.
func TestExporter(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the exporter")
	}
	bin := BuildExporter(t, false)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	if err := os.WriteFile(logPath, []byte("GET 200\nGET 500\nPOST 500\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "rules.yaml")
	rules := fmt.Sprintf("inputs: [{path: %s, start_at: beginning}]\nrules: [{name: errors, match: ' 5'}]\n", logPath)
	if err := os.WriteFile(config, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	const user, password = "prometheus", "s3cret"
	hash, err := bcrypt.GenerateFromPassword([]byte(password), 4)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(webConfig, fmt.Appendf(nil, "basic_auth_users:\n  %s: %s\n", user, hash), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("scrape and wait", func(t *testing.T) {
		e := StartExporter(t, bin, "--config.file="+config)
		if !strings.HasPrefix(e.Addr(), "127.0.0.1:") || e.URL() != "http://"+e.Addr() {
			t.Errorf("address %q, URL %q", e.Addr(), e.URL())
		}
		m := e.WaitLines(t, 3)
		metrictest.Check(t, m, []metrictest.Sample{{Family: "errors_total", Want: 2}})
		if err := metrictest.Match(m, []metrictest.Sample{{Family: "errors_total", Want: 3}}); err == nil || !strings.Contains(err.Error(), "errors_total") {
			t.Errorf("Match of a wrong value: %v", err)
		}
		before := time.Now().Unix()
		if _, at := e.ScrapeAt(t); at < before || at > time.Now().Unix() {
			t.Errorf("ScrapeAt's second %d is not within the call", at)
		}
		if got := string(e.Get(t, "/-/healthy")); got != "Healthy.\n" {
			t.Errorf("/-/healthy answered %q", got)
		}
		e.WaitLogged(t, `"msg":"Listening on"`)
	})

	t.Run("basic auth", func(t *testing.T) {
		e := StartExporterWith(t, ServeOptions{User: user, Password: password}, bin, "--config.file="+config, "--web.config.file="+webConfig)
		e.WaitLines(t, 3)
	})

	failures := []struct {
		name    string
		o       ServeOptions
		args    []string
		wantErr []string
	}{
		{"exits before listening", ServeOptions{}, []string{"--config.file=" + filepath.Join(dir, "missing.yaml")},
			[]string{"exited (exit status 1) before listening", "end of its log:", "missing.yaml"}},
		{"never ready", ServeOptions{Timeout: time.Second}, []string{"--config.file=" + config, "--web.config.file=" + webConfig},
			[]string{"/-/ready did not answer 200 in time: 401 Unauthorized", `"msg":"Listening on"`}},
	}
	for _, c := range failures {
		t.Run(c.name, func(t *testing.T) {
			s, err := Serve(t.TempDir(), bin, c.o, c.args...)
			if err == nil {
				_ = s.Kill()
				t.Fatal("Serve succeeded")
			}
			for _, want := range c.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}

	t.Run("wait times out", func(t *testing.T) {
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			e := StartExporterWith(r, ServeOptions{Timeout: 300 * time.Millisecond}, bin, "--config.file="+config)
			e.WaitFor(r, "the moon is full", func(metrictest.Families) bool { return false })
			t.Error("WaitFor returned")
		}()
		<-done
		if want := "after 300ms: no scrape where the moon is full"; !strings.Contains(strings.Join(r.errors, "\n"), want) {
			t.Errorf("errors %q, want %q", r.errors, want)
		}
		for _, f := range r.cleanups {
			f() // stops the exporter, and with the test failed shows its log
		}
		if logs := strings.Join(r.logs, "\n"); !strings.Contains(logs, "end of logwindow_exporter.out:") {
			t.Errorf("no log shown after the failure:\n%s", logs)
		}
	})
}
