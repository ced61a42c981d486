package pipeline

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/input/cri"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/input/syslog"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/parser"
)

// stream is one input of the config running: a followed path or a syslog socket. It is identified across reloads
// by its source alone (config.Input.Source; config refuses two inputs with one source): a
// reload that renames it or changes its start_at keeps its follower and read offsets (or
// its bound socket), so no line is read twice or skipped, and start_at applies only when a
// path is first followed.
type stream struct {
	source string
	label  string // for self-metrics: the name, or the source when unnamed; guarded by Pipeline.mu
	// running is the follower of a path or the listener on a socket.
	running input.Input
	// bound is what the input's reading goroutine writes to: the generation it picked up
	// at the first line after a reload. A reload clears it, so that an input that receives
	// no line does not keep the previous generation (its parser and stores) alive.
	bound atomic.Pointer[binding]
	// malformed counts lines the parser found not to be of the input's format, or not
	// CRI lines on a cri input; unmatched the lines of the input's format that no rule
	// matched.
	malformed, unmatched atomic.Uint64
	// cri joins the partial lines of a wrapper: cri input (nil otherwise); used by the
	// follower's goroutine only. tooLong counts joined messages past the line cap.
	cri     *cri.Joiner
	tooLong atomic.Uint64
	// hold charges the memory bound (store.Set.Hold) with what the joiner's partial
	// messages take, held what it was charged so far: a running input's (nil in a replay),
	// used by its reading goroutine, and by stopInputs once it stopped.
	hold func(n int64)
	held int64
	// chunked: a follower reads the clock once per chunk it reads (follow.Options.Chunk)
	// into processing and wall, used by the reading goroutine only; a socket input reads
	// it per datagram.
	chunked          bool
	processing, wall int64
	// deal is the dealer of the glob's directories that this follower shares with the
	// input's other shards (nil with one follower).
	deal *dealer
}

// binding is an input's view of one generation.
type binding struct {
	gen *generation
	// parse is gen's parser with buffers of the input's own: its lines come from one
	// goroutine.
	parse *parser.Session
	sink  *store.Sink
	name  string // the input's name in gen's config, for rules' inputs: restriction
	// paths gives parse the path captures of each line's file; nil when none is read.
	paths *pathValues
}

// unwrap returns what the parser is to read of a line: for a cri input, the message
// (joined from its parts) and its time; ok is false while a message is incomplete or when
// the line cannot be read, which is counted.
func (in *stream) unwrap(path string, line []byte) (msg, wrapperTime []byte, ok bool) {
	if in.cri == nil {
		return line, nil, true
	}
	msg, wrapperTime, r := in.cri.Feed(path, line)
	in.chargeHeld()
	switch r {
	case cri.Malformed:
		in.malformed.Add(1)
	case cri.TooLong:
		in.tooLong.Add(1)
	}
	return msg, wrapperTime, r == cri.Complete
}

// joinOptions has the follower tell a cri input's joiner of the lines it skips for their
// length, so that the rest of their message goes with them, and of the files it is done
// with, so that their partial messages are forgotten.
func (in *stream) joinOptions(o *follow.Options) {
	if in.cri != nil {
		o.TooLong = func(path string, head []byte) {
			in.cri.Dropped(path, head)
			in.chargeHeld()
		}
		o.Closed = func(path string) {
			in.cri.Release(path)
			in.chargeHeld()
		}
	}
}

// chargeHeld charges hold with what the joiner's partial messages grew or shrank by since
// the last call: two loads a line when they did not change.
func (in *stream) chargeHeld() {
	if in.hold == nil {
		return
	}
	if n := in.cri.HeldBytes(); n != in.held {
		in.hold(n - in.held)
		in.held = n
	}
}

func labelOf(ci config.Input) string {
	if ci.Name != "" {
		return ci.Name
	}
	return ci.Source()
}

// inputName is the name cfg gives the input reading source.
func (g *generation) inputName(source string) string {
	return g.input(source).Name
}

// input is cfg's input reading source (a zero Input when there is none).
func (g *generation) input(source string) config.Input {
	for _, ci := range g.cfg.Inputs {
		if ci.Source() == source {
			return ci
		}
	}
	return config.Input{}
}

// stats is the input's snapshot with what the pipeline counts of it.
func (in *stream) stats() selfmetric.InputStats {
	st := in.running.Stats()
	st.TooLong += in.tooLong.Load()
	st.MalformedLines = in.malformed.Load()
	st.Unmatched = in.unmatched.Load()
	return selfmetric.InputStats{Input: in.label, Stats: st}
}

// syncInputs starts the inputs of cfg that are not running and stops those cfg no longer
// names. It keeps going past an input that fails to start and returns every failure.
func (p *Pipeline) syncInputs(cfg *config.Config) error {
	wanted := map[string]bool{}
	var errs []error
	for _, ci := range cfg.Inputs {
		deal := p.dealerOf(ci)
		for shard := range max(ci.Shards, 1) {
			key := streamKey(ci, shard)
			wanted[key] = true
			if in, running := p.inputs[key]; running {
				in.label = labelOf(ci)
				continue
			}
			in, err := p.startInput(ci, shard, deal)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			p.inputs[key] = in
		}
	}
	p.stopInputs(wanted)
	return errors.Join(errs...)
}

// streamKey identifies the stream of an input's shard across reloads: its source, and for
// a glob shared by several followers the shard and their number (a reload that changes
// the number starts the input's followers anew, as one that changes its path does).
func streamKey(ci config.Input, shard int) string {
	if ci.Shards <= 1 {
		return ci.Source()
	}
	return fmt.Sprintf("%s#%d/%d", ci.Source(), shard, ci.Shards)
}

// dealerOf is the dealer the followers of ci's shards share: a running shard's, so that
// one restarted beside it is dealt the same directories, else a new one (nil with one
// follower).
func (p *Pipeline) dealerOf(ci config.Input) *dealer {
	if ci.Shards <= 1 {
		return nil
	}
	for shard := range ci.Shards {
		if in, running := p.inputs[streamKey(ci, shard)]; running {
			return in.deal
		}
	}
	return newDealer(ci.Shards, p.opts.Now)
}

// stopInputs stops every running input whose source keep does not hold (all when keep is
// nil).
func (p *Pipeline) stopInputs(keep map[string]bool) {
	for k, in := range p.inputs {
		if !keep[k] {
			in.running.Stop()
			if in.hold != nil {
				in.hold(-in.held) // its partial messages go with it
			}
			delete(p.inputs, k)
		}
	}
}

func (p *Pipeline) startInput(ci config.Input, shard int, deal *dealer) (*stream, error) {
	in := &stream{source: ci.Source(), label: labelOf(ci), deal: deal}
	if ci.Wrapper == config.WrapperCRI {
		in.cri = cri.New(maxLineBytes(p.opts))
		in.hold = func(n int64) { p.gen.Load().set.Hold(n) }
	}
	if ci.Syslog != "" {
		l, err := syslog.Listen(syslog.Options{
			Network:      ci.Socket.Network,
			Addr:         ci.Socket.Addr,
			SocketMode:   ci.SocketMode,
			MaxLineBytes: p.opts.MaxLineBytes,
			Logger:       p.inputLogger(ci),
		}, in.handle(p))
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", in.label, err)
		}
		in.running = l
		return in, nil
	}
	opts := p.followOptions(ci)
	opts.Backfill = p.warmStart(ci)
	if deal != nil {
		opts.Select = func(path string) bool { return deal.owns(path, shard) }
	}
	in.joinOptions(&opts)
	in.chunked = true
	opts.Chunk = func() { in.processing, in.wall = p.clock.read() }
	f, err := follow.Start(opts, in.handle(p))
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", in.label, err)
	}
	in.running = f
	return in, nil
}

func (p *Pipeline) followOptions(ci config.Input) follow.Options {
	return follow.Options{
		Path:          ci.Path,
		FromBeginning: ci.StartAt == config.StartAtBeginning,
		MaxLineBytes:  p.opts.MaxLineBytes,
		RotationGrace: p.opts.RotationGrace,
		PollInterval:  p.opts.PollInterval,
		Logger:        p.inputLogger(ci),
	}
}

// inputLogger is the logger of an input's lines: input is its name, as in the input label
// of its metrics and in rules' inputs:, or its path or socket when it has none. The file
// a follower's line is about is its path attribute; a named syslog input's lines also
// carry its socket, which they do not say otherwise.
func (p *Pipeline) inputLogger(ci config.Input) *slog.Logger {
	if ci.Syslog != "" && ci.Name != "" {
		return p.opts.Logger.With("input", ci.Name, "socket", ci.Syslog)
	}
	return p.opts.Logger.With("input", labelOf(ci))
}

// handle returns the follower's handler: every line goes through the current generation's
// parser into its Set, with the processing and wall-clock seconds of its arrival (one
// clock reading per chunk read from a file, or per datagram) as now for processing-time
// and event-time rules.
func (in *stream) handle(p *Pipeline) input.Handler {
	return func(path string, line []byte) {
		msg, wrapperTime, ok := in.unwrap(path, line)
		if !ok {
			return
		}
		g := p.gen.Load()
		b := in.bound.Load()
		if b == nil || b.gen != g {
			ci := g.input(in.source)
			b = &binding{gen: g, parse: g.parser.NewSession(), sink: g.set.NewSink(), name: ci.Name, paths: newPathValues(ci, g.parser)}
			in.bound.Store(b)
		}
		if b.paths != nil {
			b.paths.set(b.parse, path)
		}
		if in.chunked {
			b.sink.SetNow(in.processing, in.wall)
		} else {
			b.sink.SetNow(p.clock.read())
		}
		// A line no rule matched gives the sink no event and no drop: that is how unmatched
		// lines are counted without a second pass.
		received := b.sink.Received()
		switch {
		case !b.parse.ParseWrapped(b.name, msg, wrapperTime, b.sink):
			in.malformed.Add(1)
		case b.sink.Received() == received:
			in.unmatched.Add(1)
		}
		// A reload between the Load of the generation and the Store of the binding would
		// leave the old generation bound after the reload cleared it: let it go.
		if p.gen.Load() != g {
			in.bound.CompareAndSwap(b, nil)
		}
	}
}

// release drops the input's binding to a generation that is no longer current; the next
// line binds the current one.
func (in *stream) release() { in.bound.Store(nil) }

// MissingInputs words a warning for every file input of cfg whose path matches no file
// now: such an input is followed all the same (the file may appear later), but a mistyped
// path would otherwise give a healthy exporter with forever empty panels.
func MissingInputs(cfg *config.Config) []string {
	var out []string
	for _, ci := range cfg.Inputs {
		if ci.Path == "" {
			continue // a socket
		}
		if matches, err := filepath.Glob(ci.Path); err == nil && len(matches) > 0 {
			continue
		}
		out = append(out, fmt.Sprintf("input %q: path %q matches no file; it is followed once one appears, and logwindow_input_files{input=%q} is 0 until then", labelOf(ci), ci.Path, labelOf(ci)))
	}
	return out
}

// maxLineBytes is the line cap of opts, which also caps a joined CRI message.
func maxLineBytes(opts Options) int {
	if opts.MaxLineBytes > 0 {
		return opts.MaxLineBytes
	}
	return follow.DefaultMaxLineBytes
}
