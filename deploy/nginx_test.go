package deploy

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/deploytest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// localNginxConf rewrites the example's nginx.conf to run here: the pod's volumes become
// directories under dir and nginx listens on a loopback port. Nothing else changes, so what
// nginx accepts and logs here is what it accepts and logs in the pod.
func localNginxConf(t *testing.T, dir string, port int) (conf, accessLog string) {
	t.Helper()
	m := render(t, "overlays/file")
	d := m.deployments["nginx"]
	if d == nil {
		t.Fatal("no Deployment nginx")
	}
	ngx := nginxContainer(t, d)
	confPath, _ := flagValue(ngx.Command, "-c")
	text, _ := m.configMapFile(t, &d.Spec.Template.Spec, ngx, confPath)
	targets, _, err := deploytest.NginxAccessLogs(text)
	if err != nil {
		t.Fatal(err)
	}
	logFile := targets[0]
	var pairs []string
	for _, vm := range ngx.VolumeMounts {
		if vm.ReadOnly {
			continue
		}
		local := filepath.Join(dir, vm.Name)
		if err := os.MkdirAll(local, 0o755); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, strings.TrimSuffix(vm.MountPath, "/")+"/", local+"/")
	}
	// One pass, so that a local directory (itself under /tmp) is not rewritten again.
	r := strings.NewReplacer(pairs...)
	text, logFile = r.Replace(text), r.Replace(logFile)
	if n := strings.Count(text, "listen 8080;"); n != 1 {
		t.Fatalf("nginx.conf has %d \"listen 8080;\", want one", n)
	}
	text = strings.Replace(text, "listen 8080;", fmt.Sprintf("listen 127.0.0.1:%d;", port), 1)
	conf = filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf, logFile
}

func TestNginxConfigValid(t *testing.T) {
	nginx := testexec.LookTools(t, "Debian: apt-get install nginx", "nginx")["nginx"]
	dir := t.TempDir()
	conf, _ := localNginxConf(t, dir, testexec.FreePort(t))
	runTool(t, dir, nginx, "-t", "-q", "-e", "stderr", "-p", dir, "-c", conf)
}

// runNginx serves the example's nginx.conf on a loopback port, sends it requests, stops
// it, and returns the lines it logged, as the exporter would read them.
func runNginx(t *testing.T, paths []string) []string {
	t.Helper()
	nginx := testexec.LookTools(t, "Debian: apt-get install nginx", "nginx")["nginx"]
	dir := t.TempDir()
	port := testexec.FreePort(t)
	conf, accessLog := localNginxConf(t, dir, port)
	p, err := testexec.Launch(dir, "nginx", []string{nginx, "-e", "stderr", "-p", dir, "-c", conf, "-g", "daemon off;"})
	if err != nil {
		t.Fatal(err)
	}
	// Graceful: the workers flush and exit. Called again, it only waits on the exited nginx.
	stop := func() {
		_ = p.Cmd.Process.Signal(syscall.SIGQUIT)
		_ = p.Wait()
	}
	defer stop()

	client := &http.Client{Timeout: 5 * time.Second}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	testexec.WaitHTTP(t, p, base+"/healthz")
	for _, p := range paths {
		getN(t, client, base+p, 1)
	}
	stop()
	data, err := os.ReadFile(accessLog)
	if err != nil {
		t.Fatalf("%v\n%s", err, testexec.Tail(p.Output, 40))
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func TestNginxLogsToTheFile(t *testing.T) {
	lines := runNginx(t, []string{"/", "/missing?q=1"})
	// The probe path is not logged; the two requests are, with the timing fields.
	if len(lines) != 2 {
		t.Fatalf("logged %d lines, want 2:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for i, want := range []string{`"GET / HTTP/1.1" 200 `, `"GET /missing?q=1 HTTP/1.1" 404 `} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d %q does not hold %q", i, lines[i], want)
		}
		if !strings.HasSuffix(lines[i], " -") {
			t.Errorf("line %d %q does not end with the $upstream_response_time of a static file, -", i, lines[i])
		}
	}
}
