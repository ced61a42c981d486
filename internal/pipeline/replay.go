package pipeline

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/input/cri"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/parser"
)

// Replay reads every file to its end through cfg's rules and writes the exposition text of
// the rules' families (and the per-rule self-metrics) to w.
//
// A replay happens at one instant. Without event-time rules that is the clock's now, so
// every line lands in the current second. With event-time rules it is the newest line's
// own time, found by a first pass, so that replaying a log gives the same output every
// time and event-time windows are rebuilt exactly; processing-time rules then place every
// line at that instant too.
func Replay(cfg *config.Config, files []string, opts Options, w io.Writer) error {
	gen, err := newGeneration(cfg, nil, opts)
	if err != nil {
		return err
	}
	now := newClock(opts.Now).second()
	if hasEventTime(cfg) {
		newest := &newestTime{}
		if err := replayFiles(cfg, gen.parser, files, opts, newest); err != nil {
			return err
		}
		if newest.seen {
			now = newest.time
		}
	}
	sink := gen.set.NewSink()
	sink.SetNow(now, now)
	if err := replayFiles(cfg, gen.parser, files, opts, sink); err != nil {
		return err
	}
	c := exporter.NewCollector(exporter.CollectorOptions{
		Set:   func() *store.Set { return gen.set },
		Now:   func() int64 { return now },
		Wall:  func() int64 { return now },
		Start: now,
	})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		return err
	}
	return c.WriteText(w, families, nil)
}

func replayFiles(cfg *config.Config, p *parser.Parser, files []string, opts Options, sink parser.Sink) error {
	ps := p.NewSession()
	for _, file := range files {
		ci := inputOf(cfg, file)
		in := &stream{}
		if ci.Wrapper == config.WrapperCRI {
			in.cri = cri.New(maxLineBytes(opts))
		}
		o := follow.Options{Path: file, MaxLineBytes: opts.MaxLineBytes, Logger: opts.Logger}
		in.joinOptions(&o)
		paths := newPathValues(ci, p)
		ps.SetPath(nil) // none of the previous file's
		_, err := follow.ReadToEnd(o,
			func(path string, line []byte) {
				if paths != nil {
					paths.set(ps, path)
				}
				if msg, wrapperTime, ok := in.unwrap(path, line); ok {
					ps.ParseWrapped(ci.Name, msg, wrapperTime, sink)
				}
			})
		if err != nil {
			return fmt.Errorf("replay %s: %w", file, err)
		}
	}
	return nil
}

// inputOf gives a replayed file the first configured input whose path (or glob) names it,
// so rules restricted to that input apply and its wrapper is read; other files feed only
// the rules that take every input.
func inputOf(cfg *config.Config, file string) config.Input {
	for _, in := range cfg.Inputs {
		if ok, _ := filepath.Match(in.Path, file); ok || in.Path == file {
			return in
		}
	}
	return config.Input{}
}

func hasEventTime(cfg *config.Config) bool {
	for _, r := range cfg.Rules {
		if r.Timestamp != nil {
			return true
		}
	}
	return false
}

// newestTime is the first replay pass's sink: it only keeps the newest event time.
type newestTime struct {
	time int64
	seen bool
}

func (n *newestTime) Event(e *parser.Event) {
	if e.HasTime && (!n.seen || e.Time > n.time) {
		n.time, n.seen = e.Time, true
	}
}

func (n *newestTime) Drop(int, parser.DropReason) {}
