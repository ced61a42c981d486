package pipeline

import (
	"errors"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/follow"
)

// inputKey identifies an input across reloads: an input whose key is unchanged keeps its
// follower (and so its read offsets).
type inputKey struct {
	name, path string
	startAt    config.StartAt
}

func keyOf(in config.Input) inputKey {
	return inputKey{name: in.Name, path: in.Path, startAt: in.StartAt}
}

// input is one followed input. gen and sink are touched only by the follower's goroutine:
// it picks up a new generation at the first line after a reload.
type input struct {
	name     string // for rules' inputs: restriction
	label    string // for self-metrics: the name, or the path when unnamed
	follower *follow.Follower
	gen      *generation
	sink     *exporter.Sink
}

// syncInputs starts the inputs of cfg that are not running and stops those cfg no longer
// names. It keeps going past an input that fails to start and returns every failure.
func (p *Pipeline) syncInputs(cfg *config.Config) error {
	wanted := map[inputKey]bool{}
	var errs []error
	for _, ci := range cfg.Inputs {
		k := keyOf(ci)
		wanted[k] = true
		if _, running := p.inputs[k]; running {
			continue
		}
		in, err := p.startInput(ci)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.inputs[k] = in
	}
	p.stopInputs(wanted)
	return errors.Join(errs...)
}

// stopInputs stops every running input whose key keep does not hold (all when keep is nil).
func (p *Pipeline) stopInputs(keep map[inputKey]bool) {
	for k, in := range p.inputs {
		if !keep[k] {
			in.follower.Stop()
			delete(p.inputs, k)
		}
	}
}

func (p *Pipeline) startInput(ci config.Input) (*input, error) {
	in := &input{name: ci.Name, label: ci.Name}
	if in.label == "" {
		in.label = ci.Path
	}
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
// parser into its Set, at the processing time of its arrival.
func (in *input) handle(p *Pipeline) follow.Handler {
	return func(_ string, line []byte) {
		if g := p.gen.Load(); g != in.gen {
			in.gen, in.sink = g, g.set.NewSink()
		}
		in.sink.SetNow(p.clock.second())
		in.gen.parser.Parse(in.name, line, in.sink)
	}
}
