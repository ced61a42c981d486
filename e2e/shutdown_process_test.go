package e2e

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// TestShutdownWithSilentConnections: connections that sent nothing (a port scan, a TCP
// health check, a scraper stalled before its request) and one kept alive after a scrape do
// not make the exit on SIGTERM a failure: the exporter closes those that sent nothing at
// once, gives requests in flight its 5 s grace, and exits 0. Before, a connection that had
// sent nothing held the shutdown to its 5 s deadline, and the exporter exited 1.
func TestShutdownWithSilentConnections(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "rules.yaml")
	rules := "inputs:\n  - {name: web, path: '" + filepath.Join(dir, "access.log") + "', log_format: combined}\n" +
		"rules:\n  - {name: requests, labels: {status: '${status}'}}\n"
	if err := os.WriteFile(cfg, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	e := testexec.StartExporter(t, bin, "--config.file="+cfg)
	e.Get(t, "/metrics") // leaves a kept-alive connection
	var silent []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", e.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	began := time.Now()
	if err := e.Stop(testexec.StopTimeout); err != nil {
		t.Fatalf("with %d silent connections open: %v\n%s", len(silent), err, testexec.Tail(e.Log(), 5))
	}
	if took := e.Ended().Sub(began); took >= 5*time.Second {
		t.Errorf("exited %v after SIGTERM: the silent connections held it to its grace", took)
	}
	t.Logf("exited 0 %v after SIGTERM with %d silent connections open", e.Ended().Sub(began).Round(time.Millisecond), len(silent))
}
