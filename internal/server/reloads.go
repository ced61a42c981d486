package server

import "sync"

// reloader runs the reloads SIGHUP, POST /-/reload and the rule file's watch ask for, one
// at a time, those asked for while one runs sharing the next. A reload reads and
// compiles the whole rule file, a second or more of a core for thousands of rules:
// twenty requests at once (a sidecar, a script and the watch each reacting to one
// change, or any client that reaches the endpoint) reloaded it twenty times in turn,
// where two read every change. Each is told the outcome of a reload begun after it was
// asked for, which read the file as it was then.
type reloader struct {
	reload func() error
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

func newReloader(reload func() error) *reloader {
	return &reloader{reload: reload, running: make(chan struct{}, 1)}
}

// Reload reloads, or waits for the reload that runs next, and returns its error.
func (r *reloader) Reload() error {
	r.mu.Lock()
	if run := r.next; run != nil {
		r.mu.Unlock()
		<-run.done
		return run.err
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
	run.err = r.reload()
	return run.err
}
