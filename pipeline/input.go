package pipeline

import (
	"errors"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/follow"
)

// input is one followed path. An input is identified across reloads by its path alone
// (config refuses two inputs with one path): a reload that renames it or changes its
// start_at keeps its follower and read offsets, so no line is read twice or skipped, and
// start_at applies only when a path is first followed.
type input struct {
	path     string
	label    string // for self-metrics: the name, or the path when unnamed; guarded by Pipeline.mu
	follower *follow.Follower
	// Touched only by the follower's goroutine, which picks up a new generation at the
	// first line after a reload.
	gen  *generation
	sink *exporter.Sink
	name string // the input's name in gen's config, for rules' inputs: restriction
}

func labelOf(ci config.Input) string {
	if ci.Name != "" {
		return ci.Name
	}
	return ci.Path
}

// inputName is the name cfg gives the input following path.
func (g *generation) inputName(path string) string {
	for _, ci := range g.cfg.Inputs {
		if ci.Path == path {
			return ci.Name
		}
	}
	return ""
}

// syncInputs starts the inputs of cfg that are not running and stops those cfg no longer
// names. It keeps going past an input that fails to start and returns every failure.
func (p *Pipeline) syncInputs(cfg *config.Config) error {
	wanted := map[string]bool{}
	var errs []error
	for _, ci := range cfg.Inputs {
		wanted[ci.Path] = true
		if in, running := p.inputs[ci.Path]; running {
			in.label = labelOf(ci)
			continue
		}
		in, err := p.startInput(ci)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.inputs[ci.Path] = in
	}
	p.stopInputs(wanted)
	return errors.Join(errs...)
}

// stopInputs stops every running input whose path keep does not hold (all when keep is nil).
func (p *Pipeline) stopInputs(keep map[string]bool) {
	for k, in := range p.inputs {
		if !keep[k] {
			in.follower.Stop()
			delete(p.inputs, k)
		}
	}
}

func (p *Pipeline) startInput(ci config.Input) (*input, error) {
	in := &input{path: ci.Path, label: labelOf(ci)}
	f, err := follow.Start(p.followOptions(ci.Path, ci.StartAt == config.StartAtBeginning), in.handle(p))
	if err != nil {
		return nil, err
	}
	in.follower = f
	return in, nil
}

func (p *Pipeline) followOptions(path string, fromBeginning bool) follow.Options {
	return follow.Options{
		Path:          path,
		FromBeginning: fromBeginning,
		MaxLineBytes:  p.opts.MaxLineBytes,
		RotationGrace: p.opts.RotationGrace,
		PollInterval:  p.opts.PollInterval,
		Logger:        p.opts.Logger.With("input", path),
	}
}

// handle returns the follower's handler: every line goes through the current generation's
// parser into its Set, with the processing and wall-clock seconds of its arrival (one
// clock reading) as now for processing-time and event-time rules.
func (in *input) handle(p *Pipeline) follow.Handler {
	return func(_ string, line []byte) {
		if g := p.gen.Load(); g != in.gen {
			in.gen, in.sink, in.name = g, g.set.NewSink(), g.inputName(in.path)
		}
		in.sink.SetNow(p.clock.read())
		in.gen.parser.Parse(in.name, line, in.sink)
	}
}
