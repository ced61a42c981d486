package pipeline

import (
	"errors"
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input/cri"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/scrape"
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
	opts.setDefaults()
	gen, err := newGeneration(cfg, nil, opts)
	if err != nil {
		return err
	}
	read := inputsOf(cfg, files, opts.Logger)
	now := newClock(opts.Now).second()
	if hasEventTime(cfg) {
		newest := &newestTime{}
		if _, err := replayFiles(gen.parser, read, opts, newest); err != nil {
			return err
		}
		if newest.seen {
			now = newest.time
		}
	}
	sink := gen.set.NewSink()
	sink.SetNow(now, now)
	counts, err := replayFiles(gen.parser, read, opts, sink)
	if err != nil {
		return err
	}
	c := scrape.NewCollector(scrape.Options{
		Set:   func() *store.Set { return gen.set },
		Now:   func() int64 { return now },
		Wall:  func() int64 { return now },
		Start: now,
	})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if err := c.WriteText(w, reg); err != nil {
		return err
	}
	var errs []error
	for i, f := range read {
		errs = append(errs, f.unread(cfg, "replay", counts[i].lines, counts[i].received > 0))
	}
	return errors.Join(errs...)
}

// replaySink is a sink that tells how many events and drops it was given.
type replaySink interface {
	parser.Sink
	Received() uint64
}

// fileCount is what a replay made of one file: its lines, and the events and drops of
// rules that matched them.
type fileCount struct {
	lines    int
	received uint64
}

func replayFiles(p *parser.Parser, files []fileInput, opts Options, sink replaySink) ([]fileCount, error) {
	ps := p.NewSession()
	counts := make([]fileCount, len(files))
	for i, file := range files {
		ci := file.input
		in := &stream{}
		if ci.Wrapper == config.WrapperCRI {
			in.cri = cri.New(maxLineBytes(opts))
		}
		o := follow.Options{Path: file.file, MaxLineBytes: opts.MaxLineBytes, Logger: opts.Logger}
		in.joinOptions(&o)
		paths := newPathValues(ci, p)
		ps.SetPath(nil) // none of the previous file's
		before := sink.Received()
		_, err := follow.ReadToEnd(o,
			func(path string, line []byte) {
				counts[i].lines++
				if paths != nil {
					paths.set(ps, file.pathOf(path))
				}
				if msg, wrapperTime, ok := in.unwrap(path, line); ok {
					ps.ParseWrapped(ci.Name, msg, wrapperTime, sink)
				}
			})
		if err != nil {
			return nil, fmt.Errorf("replay %s: %w", file.file, err)
		}
		counts[i].received = sink.Received() - before
	}
	return counts, nil
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
	time     int64
	seen     bool
	received uint64
}

func (n *newestTime) Event(e *parser.Event) {
	n.received++
	if e.HasTime && (!n.seen || e.Time > n.time) {
		n.time, n.seen = e.Time, true
	}
}

func (n *newestTime) Drop(int, parser.DropReason) { n.received++ }

// Received is how many events and drops n was given.
func (n *newestTime) Received() uint64 { return n.received }
