package pipeline

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/input/syslog"
)

// The pipeline has a constructor for every kind of input the loader makes, and none
// besides; a config with an input of each kind starts the reader of that kind for each of
// its shards, ready once started.
func TestInputKindsBuild(t *testing.T) {
	if got, want := slices.Sorted(maps.Keys(inputKinds)), slices.Sorted(slices.Values(config.InputKinds())); !slices.Equal(got, want) {
		t.Fatalf("the pipeline runs kinds %v, the loader makes %v", got, want)
	}
	dir := t.TempDir()
	p := startRules(t, fmt.Appendf(nil, `
inputs:
  - {name: pods, path: '%[1]s/*/*.log', shards: 2}
  - {name: one, path: '%[1]s/one.log'}
  - {name: sock, syslog: 'unixgram://%[1]s/in.sock'}
rules: [{name: a, match: x}]
`, dir), Options{Now: time.Now})
	for _, want := range []struct {
		key     string
		kind    string
		running reflect.Type
	}{
		{dir + "/*/*.log#0/2", config.KindFile, reflect.TypeFor[*follow.Follower]()},
		{dir + "/*/*.log#1/2", config.KindFile, reflect.TypeFor[*follow.Follower]()},
		{dir + "/one.log", config.KindFile, reflect.TypeFor[*follow.Follower]()},
		{"unixgram://" + dir + "/in.sock", config.KindSyslog, reflect.TypeFor[*syslog.Listener]()},
	} {
		t.Run(want.kind+strings.TrimPrefix(want.key, "unixgram://"+dir)+strings.TrimPrefix(want.key, dir), func(t *testing.T) {
			in, ok := p.inputs[want.key]
			switch {
			case !ok:
				t.Fatalf("no stream %q among %v", want.key, slices.Sorted(maps.Keys(p.inputs)))
			case reflect.TypeOf(in.running) != want.running:
				t.Errorf("runs a %v, want a %v", reflect.TypeOf(in.running), want.running)
			case !in.running.Ready():
				t.Error("not ready once started")
			}
		})
	}
	if len(p.inputs) != 4 {
		t.Errorf("%d streams, want 4: %v", len(p.inputs), slices.Sorted(maps.Keys(p.inputs)))
	}
	if _, err := p.startInput(config.Input{Name: "none"}, 0, nil); err == nil || !strings.Contains(err.Error(), `input none: the pipeline runs no input of kind ""`) {
		t.Errorf("an input of no kind: %v", err)
	}
}
