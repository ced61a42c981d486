package server

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/logwindow/logwindow_exporter/internal/pipeline"
)

// reloader runs the reloads SIGHUP, POST /-/reload and the rule file's watch ask for, one
// at a time, those asked for while one runs sharing the next. A reload reads and
// compiles the whole rule file, a second or more of a core for thousands of rules:
// twenty requests at once (a sidecar, a script and the watch each reacting to one
// change, or any client that reaches the endpoint) reloaded it twenty times in turn,
// where two read every change. Each is told the outcome of a reload begun after it was
// asked for, which read the file as it was then. A reload that panics is a failed one,
// a *pipeline.ReloadPanic, logged to logger (see Reload).
type reloader struct {
	reload func() error
	logger *slog.Logger
	// running holds a value while a reload runs.
	running chan struct{}

	mu sync.Mutex
	// next is the reload that runs once the one running ends, which those asked for
	// meanwhile wait for; nil when none is asked for.
	next *reloadRun
}

// reloadRun is a reload, done once it ran, with its outcome.
type reloadRun struct {
	done chan struct{}
	err  error
}

func newReloader(reload func() error, logger *slog.Logger) *reloader {
	return &reloader{reload: reload, logger: logger, running: make(chan struct{}, 1)}
}

// Reload reloads, or waits for the reload that runs next, and returns its error. One that
// waits stops when ctx ends, with ctx's error, and the reload runs all the same: a POST
// /-/reload whose client went away held its connection, and its place among the
// requests in a reload, until a reload that may hang (a rule file on a hung file system)
// ended. The one that runs the reload goes on.
func (r *reloader) Reload(ctx context.Context) error {
	r.mu.Lock()
	if run := r.next; run != nil {
		r.mu.Unlock()
		select {
		case <-run.done:
			return run.err
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	run := &reloadRun{done: make(chan struct{})}
	r.next = run
	r.mu.Unlock()
	r.running <- struct{}{}
	defer func() { <-r.running }()
	r.mu.Lock()
	r.next = nil // asked for from now on, a reload reads what this one may not
	r.mu.Unlock()
	defer close(run.done)
	run.err = r.run()
	return run.err
}

// run runs the reload, a panic (a bug) made its error and logged: else the waiters were
// told it succeeded, and the panic went on to end the process when SIGHUP or the rule
// file's watch asked for it. The pipeline makes a panic in its load or build of the rule
// file an error itself (nothing changed); one this catches may have come after the new
// rules were put in force.
func (r *reloader) run() (err error) {
	defer func() {
		if v := recover(); v != nil {
			p := &pipeline.ReloadPanic{Value: v, Stack: debug.Stack()}
			r.logger.Error("reload failed: it panicked; the new rules may be in force with inputs not all running, until a reload that succeeds", "err", p, "stack", string(p.Stack))
			err = p
		}
	}()
	return r.reload()
}
