package pipeline

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
)

// A reload that arrives during shutdown (a SIGHUP racing SIGTERM) must not start followers
// again after Stop.
func TestReloadAfterStopRefused(t *testing.T) {
	cfg, err := config.Parse([]byte("inputs: [{path: "+filepath.Join(t.TempDir(), "a.log")+"}]\nrules: [{name: lines, match: x}]\n"), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cfg, Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
	if err := p.Reload(cfg); !errors.Is(err, errStopped) {
		t.Errorf("Reload after Stop = %v, want errStopped", err)
	}
	if err := p.ReloadFile(); !errors.Is(err, errStopped) {
		t.Errorf("ReloadFile after Stop = %v, want errStopped", err)
	}
	if n := len(p.inputs); n != 0 {
		t.Errorf("%d inputs running after Stop and a reload", n)
	}
}
