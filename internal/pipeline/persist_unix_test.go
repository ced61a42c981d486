//go:build unix

package pipeline

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

// A FIFO where the storage directory should be does not hold the start: every open of
// it, as a directory to lock, read and set the snapshot aside in, fails at once (an open
// for reading alone would wait for a writer), and the exporter starts empty.
func TestStorageDirectoryFIFO(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(dir, 0o600); err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	cfg, o := storedOn(t, strings.ReplaceAll(persistRules, "LOG", filepath.Join(t.TempDir(), "access.log")), dir, &out, Options{SnapshotInterval: time.Hour})
	started := make(chan *Pipeline, 1)
	go func() {
		p, err := Start(cfg, o)
		if err != nil {
			t.Error(err)
		}
		started <- p
	}()
	p, ok := await.Receive(t, started)
	if !ok {
		t.Fatalf("Start still waiting:\n%s", out.String())
	}
	if p == nil {
		return
	}
	defer p.Stop()
	if s := p.StorageStats(); s.RestoreFailures != 1 {
		t.Errorf("storage stats %+v, want the snapshot not restored", s)
	}
	if err := p.Snapshot(); err == nil {
		t.Error("a snapshot into a FIFO succeeded")
	}
}
