// Package configwatch reloads the exporter when its rule file changes on disk. It is the
// Kubernetes ConfigMap pattern: the kubelet replaces a mounted ConfigMap by swapping a
// symlinked directory next to the file, so the directory is watched, not the file, and a
// change is recognised by the file's content, not by which event reported it. No reload
// endpoint has to be reachable from the network for it.
package configwatch

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Options say how a Watcher reacts to changes.
type Options struct {
	// Reload applies the file's new content (the pipeline re-reads and swaps the rules)
	// and logs its outcome, as it does for SIGHUP.
	Reload func()
	// Settle is how long the directory must stay quiet after an event before the file is
	// read: an editor or the kubelet changes it in several steps, and reading in the
	// middle would load (and refuse) a half-written file.
	Settle time.Duration
	// Poll is how long after the last check the file is read again even without events:
	// inotify may be unavailable (its limits reached) or miss a change on some filesystems.
	// A poll that reads a half-written file loads (or refuses) it, and the event of the
	// rest of the write reloads the complete file after Settle.
	Poll time.Duration
	// After is the clock: time.After in the program, a fake in tests.
	After func(time.Duration) <-chan time.Time
	// Logger receives the outcome of each reload and watch errors.
	Logger *slog.Logger
}

// Watcher remembers the digest of the content last loaded.
type Watcher struct {
	path string
	last [sha256.Size]byte
}

// New reads path's current content as the one loaded. Call it before the configuration
// is loaded: a change in between then reloads once more, rather than going unnoticed.
func New(path string) (*Watcher, error) {
	sum, err := digest(path)
	if err != nil {
		return nil, err
	}
	return &Watcher{path: path, last: sum}, nil
}

func digest(path string) ([sha256.Size]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(b), nil
}

// Run watches until ctx is done. It returns an error only when opts are unusable; a
// directory that cannot be watched leaves the poll running.
func (w *Watcher) Run(ctx context.Context, opts Options) error {
	if opts.Reload == nil || opts.After == nil || opts.Logger == nil || opts.Settle <= 0 || opts.Poll <= 0 {
		return fmt.Errorf("configwatch: Reload, After, Logger, Settle and Poll are required")
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	fw, err := fsnotify.NewWatcher()
	if err == nil {
		err = fw.Add(filepath.Dir(w.path))
	}
	if err != nil {
		opts.Logger.Warn("cannot watch the rule file's directory; checking it by polling only", "path", w.path, "poll", opts.Poll, "err", err)
	} else {
		events, errs = fw.Events, fw.Errors
	}
	if fw != nil {
		defer fw.Close()
	}

	poll := opts.After(opts.Poll)
	var settle <-chan time.Time // nil while no event waits
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-events:
			// Every event restarts the quiet period; which file it names does not matter,
			// since the kubelet's swap touches only the hidden ..data entries.
			settle = opts.After(opts.Settle)
		case err := <-errs:
			opts.Logger.Warn("watching the rule file", "path", w.path, "err", err)
		case <-settle:
			settle = nil
			w.check(opts)
			poll = opts.After(opts.Poll)
		case <-poll:
			w.check(opts)
			poll = opts.After(opts.Poll)
		}
	}
}

// check reloads when the content differs from the last one seen. A refused reload is not
// retried until the content changes again: the same bad file would only be refused again.
func (w *Watcher) check(opts Options) {
	sum, err := digest(w.path)
	if err != nil {
		opts.Logger.Warn("cannot read the rule file; the running configuration stays", "path", w.path, "err", err)
		return
	}
	if sum == w.last {
		return
	}
	w.last = sum
	opts.Logger.Info("the rule file changed on disk; reloading", "path", w.path)
	opts.Reload()
}
