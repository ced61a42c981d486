// Package configwatch reloads the exporter when its rule file changes on disk. It is the
// Kubernetes ConfigMap pattern: the kubelet replaces a mounted ConfigMap by swapping a
// symlinked directory next to the file, so the directory is watched, not the file, and a
// change is recognised by the file's content, not by which event reported it. Only the
// events of the entries the file depends on delay the reload, though: a log written
// beside the file all the time must not postpone it for as long as it is written. No
// reload endpoint has to be reachable from the network for it.
package configwatch

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/logwindow/logwindow_exporter/config"
)

// Options say how a Watcher reacts to changes.
type Options struct {
	// Reload applies the file's new content (the pipeline re-reads and swaps the rules)
	// and logs and reports its outcome, as it does for SIGHUP. Inputs it leaves not
	// started are the pipeline's to try again, as after any reload. It returns what it
	// read of the file, which the watcher takes as the content loaded: the file may have
	// been saved again between the watcher's read and the reload's, and a content the
	// reload never parsed, taken as loaded, would leave a later save back to it unloaded
	// (a reload that read the file cut short in the middle of a save, refused, with the
	// save's end taken as loaded, stayed a failed reload), or a content loaded for one
	// never seen loaded again.
	Reload func() config.Read
	// Settle is how long the directory must stay quiet after an event of an entry the
	// file depends on (dependsOn) before the file is read: an editor or the kubelet
	// changes it in several steps, and reading in the middle would load (and refuse) a
	// half-written file.
	Settle time.Duration
	// Poll is how long after the last check the file is read again even without events:
	// inotify may be unavailable (its limits reached) or miss a change on some filesystems.
	// A change a poll finds is reloaded once a read Settle later finds the same: a poll
	// may read the file in the middle of a save that truncates it and then writes it, and
	// without events to wait for, a half-written file would be loaded and refused, a
	// failed reload reported for a file that is fine. A change that has not read the same
	// twice by the next poll is reloaded as that poll reads it: a file rewritten more
	// often than Settle is reloaded once a Poll, not never.
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
	// unreadable: the file could not be read at the last check, and the reload that
	// reported it was made.
	unreadable bool
	// held: a check found the file empty or missing and did not reload it (apply); a
	// poll's check after it reloads it if it still is either. Any other reading clears it.
	held bool
	// entries are those of the directory the file depends on (dependsOn), found again
	// after each event of one of them and at each check.
	entries map[string]bool
	// rewatch, when set (Run), watches the file's directory at each check if nothing
	// watches it.
	rewatch func()
}

// New reads path's current content as the one loaded. Call it before the configuration
// is loaded: a change in between then reloads once more, rather than going unnoticed.
func New(path string) (*Watcher, error) {
	sum, _, err := digest(path)
	if err != nil {
		return nil, err
	}
	return &Watcher{path: path, last: sum}, nil
}

// digest reads the file as a load does: a FIFO or a device put in its place is refused,
// not waited on or read without end. empty tells a file of no bytes.
func digest(path string) (sum [sha256.Size]byte, empty bool, err error) {
	b, err := config.ReadFile(path)
	if err != nil {
		return [sha256.Size]byte{}, false, err
	}
	return sha256.Sum256(b), len(b) == 0, nil
}

// Run watches until ctx is done. It returns an error only when opts are unusable; a
// directory that cannot be watched leaves the poll running.
func (w *Watcher) Run(ctx context.Context, opts Options) error {
	if opts.Reload == nil || opts.After == nil || opts.Logger == nil || opts.Settle <= 0 || opts.Poll <= 0 {
		return fmt.Errorf("configwatch: Reload, After, Logger, Settle and Poll are required")
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		opts.Logger.Warn("cannot watch the rule file's directory; checking it by polling only", "path", w.path, "poll", opts.Poll, "err", err)
		return w.loop(ctx, opts, nil, nil)
	}
	defer fw.Close()
	dir := filepath.Dir(w.path)
	if err := fw.Add(dir); err != nil {
		opts.Logger.Warn("cannot watch the rule file's directory; checking it by polling until it can be", "path", w.path, "poll", opts.Poll, "err", err)
	}
	w.rewatch = func() {
		// A directory removed or renamed takes its watch along: the one at its path
		// again (a deploy that replaces it whole) is watched once a check finds it.
		if len(fw.WatchList()) == 0 && fw.Add(dir) == nil {
			opts.Logger.Info("watching the rule file's directory", "path", w.path)
		}
	}
	return w.loop(ctx, opts, fw.Events, fw.Errors)
}

// loop is Run's, on the events and errors of a watch of the file's directory (nil: none).
func (w *Watcher) loop(ctx context.Context, opts Options, events <-chan fsnotify.Event, errs <-chan error) error {
	dir := filepath.Dir(w.path)
	w.entries = dependsOn(w.path)
	poll := opts.After(opts.Poll)
	var settle <-chan time.Time // nil while no event waits
	// confirm is set while a change a poll found waits for its second read; pending is
	// what that poll read.
	var confirm <-chan time.Time
	var pending reading
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-events:
			if !w.concerns(dir, ev.Name) {
				continue
			}
			// The event may have moved a symlink the file is reached through.
			w.entries = dependsOn(w.path)
			settle = opts.After(opts.Settle)
		case err := <-errs:
			opts.Logger.Warn("watching the rule file", "path", w.path, "err", err)
		case <-settle:
			// While a change a poll found waits for its second read, a read that finds it
			// the same after the events' quiet period is that read.
			r := w.read()
			second := confirm != nil && r.same(pending)
			settle, confirm = nil, nil
			w.apply(opts, r, second)
			poll = opts.After(opts.Poll)
		case <-poll:
			switch r := w.read(); {
			case confirm != nil:
				// The change the last poll found has not read the same twice since: a file
				// rewritten without end is reloaded as read, once a poll, not never.
				confirm = nil
				w.apply(opts, r, true)
			case w.changed(r):
				pending, confirm = r, opts.After(opts.Settle)
			}
			poll = opts.After(opts.Poll)
		case <-confirm:
			confirm = nil
			r := w.read()
			if w.changed(r) && !r.same(pending) {
				// Still being written: read again once it has stayed the same.
				pending, confirm = r, opts.After(opts.Settle)
				continue
			}
			w.apply(opts, r, true)
			poll = opts.After(opts.Poll)
		}
	}
}

// concerns says whether an event of name, an entry of dir or dir itself, may have
// changed the file: one of the entries it depends on; one whose name begins with "..",
// as the kubelet's "..data", "..data_tmp" and "..<timestamp>" of its swap do (a
// ConfigMap's keys cannot); or the directory itself (removed or renamed). The event of
// another file only says that that file was written.
func (w *Watcher) concerns(dir, name string) bool {
	if filepath.Dir(name) != dir {
		return true
	}
	base := filepath.Base(name)
	return w.entries[base] || strings.HasPrefix(base, "..")
}

// maxHops bounds the symlinks dependsOn follows, as the kernel's bound (ELOOP) does.
const maxHops = 40

// dependsOn returns the entries of path's directory that path's content depends on: its
// own, and each one a symlink on its way resolves through (`ln -sf` retargets it; its
// target may be written in place beside it; the kubelet's ..data is one), which the
// directory's events name rather than the file. A symlink that points out of the
// directory is followed, but what happens out there makes no event here: the poll sees it.
func dependsOn(path string) map[string]bool {
	entries := map[string]bool{filepath.Base(path): true}
	// A symlink's absolute target is told to be in the directory of a relative path
	// (--config.file=rules.yaml) only against the directory's absolute path.
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	dir := filepath.Dir(path)
	add := func(dir, p string) {
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return // out of the directory
		}
		first, _, _ := strings.Cut(rel, string(filepath.Separator))
		entries[first] = true
	}
	p := path
	for range maxHops {
		target, err := os.Readlink(p)
		if err != nil {
			break // the file itself, or nothing there (yet)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = target
		add(dir, p)
	}
	// A symlinked directory on the way (the kubelet's ..data to its ..<timestamp>) has the
	// file in an entry of its own.
	if file, err := filepath.EvalSymlinks(path); err == nil {
		if realDir, err := filepath.EvalSymlinks(dir); err == nil {
			add(realDir, file)
		}
	}
	return entries
}

// reading is what a check read of the file: the digest of its content (and whether it
// has none), or why it could not be read.
type reading struct {
	sum   [sha256.Size]byte
	empty bool
	err   error
}

// vacant says whether r found no file or no content: what a save leaves for a moment
// (truncated before it writes, removed before it creates), and no rule file is. Other
// errors (a FIFO or a directory in its place, permissions) are no step of a save.
func (r reading) vacant() bool {
	return r.empty || errors.Is(r.err, fs.ErrNotExist)
}

// same says whether two readings found the same: the same content, or no content.
func (r reading) same(o reading) bool {
	if r.err != nil || o.err != nil {
		return r.err != nil && o.err != nil
	}
	return r.sum == o.sum
}

// read reads the file as a check does.
func (w *Watcher) read() reading {
	// Before the read: a change made after it is an event.
	if w.rewatch != nil {
		w.rewatch()
	}
	// A symlink out of the directory may have been retargeted, which makes no event here.
	w.entries = dependsOn(w.path)
	sum, empty, err := digest(w.path)
	r := reading{sum, empty, err}
	w.held = w.held && r.vacant()
	return r
}

// changed says whether apply would reload r: content other than the last loaded, or a
// file that cannot be read where the last check read it.
func (w *Watcher) changed(r reading) bool {
	if r.err != nil {
		return !w.unreadable
	}
	return w.unreadable || r.sum != w.last
}

// apply reloads when r differs from the content last seen. A refused reload is not
// retried until the content changes again: the same bad file would only be refused again.
//
// A file that cannot be read (removed, a FIFO put in its place, its permissions changed)
// is reloaded once (a removed one only if it is still missing at the next poll, below),
// which fails as a reload by SIGHUP would, and is reported the same way: logged as an
// error naming the file, and logwindow_config_last_reload_successful 0; the running
// configuration stays. Later checks that find it unreadable still say nothing
// more, and the first that reads it reloads it, the content last loaded too, which ends
// the failure reported.
//
// An empty or missing file is not reloaded at the first check that finds it, nor at the
// check of another event meanwhile (a chmod of the truncated file, the creation of an
// empty one), but at a later poll's check (polled) that still finds it so: a save that
// truncates the file and writes it a while later (generator > rules.yaml: the shell
// truncates it before the generator has written a byte), or removes it and creates it
// again (tar extracting over it, kubectl cp), leaves it so for longer than Settle, and
// reloading it then reports a failed reload for a file that is fine a moment later. No
// rule file is empty or missing, so the wait costs only the report of one that stays so,
// a poll later; a file that has content is reloaded as it is read, and one that cannot
// be read for another cause is reported at once.
func (w *Watcher) apply(opts Options, r reading, polled bool) {
	if !w.changed(r) {
		return
	}
	if r.vacant() && (!w.held || !polled) {
		if w.held {
			return // said at the check that held it
		}
		w.held = true
		what := "empty, as a save that truncates it leaves it until it writes"
		if !r.empty {
			what = "missing, as a save that removes it leaves it until it creates it again"
		}
		opts.Logger.Info("the rule file is "+what+"; reloading it if it still is at the next poll", "path", w.path, "poll", opts.Poll)
		return
	}
	if r.err != nil {
		opts.Logger.Info("the rule file cannot be read; reloading it to report that", "path", w.path, "err", r.err)
	} else {
		opts.Logger.Info("the rule file changed on disk; reloading", "path", w.path)
	}
	loaded := opts.Reload()
	if loaded.OK != (r.err == nil) || loaded.Sum != r.sum {
		opts.Logger.Info("the rule file changed again between the watch's read and the reload's: the content the reload read is the one taken as loaded", "path", w.path)
	}
	w.unreadable, w.last = !loaded.OK, loaded.Sum
}
