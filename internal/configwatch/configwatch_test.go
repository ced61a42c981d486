package configwatch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

const (
	settle = time.Second
	poll   = time.Minute
)

// fakeClock hands out timers that fire only when the test says so.
type fakeClock struct {
	mu      sync.Mutex
	pending map[time.Duration][]chan time.Time
	asked   chan time.Duration // one value per After call
}

func newFakeClock() *fakeClock {
	return &fakeClock{pending: map[time.Duration][]chan time.Time{}, asked: make(chan time.Duration, 1000)}
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	c.pending[d] = append(c.pending[d], ch)
	c.mu.Unlock()
	c.asked <- d
	return ch
}

// fire fires every timer of duration d handed out so far; the watcher waits on the newest.
func (c *fakeClock) fire(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.pending[d] {
		ch <- time.Time{}
	}
	c.pending[d] = nil
}

// fireOldest fires the first timer of duration d handed out and not fired yet alone.
func (c *fakeClock) fireOldest(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending[d]) > 0 {
		c.pending[d][0] <- time.Time{}
		c.pending[d] = c.pending[d][1:]
	}
}

// waitAsked waits until the watcher asks for a timer of duration d.
func (c *fakeClock) waitAsked(t *testing.T, d time.Duration) {
	t.Helper()
	timeout := await.After(t) // a broken watcher fails the test instead of hanging it
	for {
		select {
		case got := <-c.asked:
			if got == d {
				return
			}
		case <-timeout:
			t.Fatalf("the watcher never asked for a %v timer", d)
		}
	}
}

// harness runs a Watcher on one file with a fake clock and records what each reload read.
type harness struct {
	clock   *fakeClock
	path    string
	reloads chan string
	// between, when set, runs in each reload before it reads the file: a save that lands
	// between the watcher's read and the reload's.
	between atomic.Pointer[func()]
}

func start(t *testing.T, path string) *harness {
	t.Helper()
	return startRun(t, path, (*Watcher).Run)
}

// startRun is start with run in Run's place: a test that hands the watcher the events
// itself runs its loop.
func startRun(t *testing.T, path string, run func(*Watcher, context.Context, Options) error) *harness {
	t.Helper()
	h := &harness{clock: newFakeClock(), path: path, reloads: make(chan string, 10)}
	w, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(w, ctx, Options{
			Reload: func() config.Read {
				if between := h.between.Load(); between != nil {
					(*between)()
				}
				b, err := config.ReadFile(path) // as the reload does: a FIFO is refused, not waited on
				if err != nil {
					b = []byte("read error: " + err.Error())
				}
				_, read, _ := config.ReadAgain(path)
				h.reloads <- string(b)
				return read
			},
			Settle: settle,
			Poll:   poll,
			After:  h.clock.After,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	h.clock.waitAsked(t, poll) // running: the first poll timer is set
	return h
}

// settle waits for the event of a change, checks that nothing was reloaded before the
// directory settled, lets it settle and returns what the reload read, if one happened.
// Events that arrive late restart the quiet period: their timers are fired too.
func (h *harness) settle(t *testing.T) (string, bool) {
	t.Helper()
	h.clock.waitAsked(t, settle)
	select {
	case got := <-h.reloads:
		t.Fatalf("reloaded %q before the directory settled", got)
	default:
	}
	return h.fire(t, settle)
}

// fire fires the timers of duration d and waits until the check they trigger is done
// (the watcher sets its next poll after every check, and after the reload if there is
// one); it returns what a reload read.
func (h *harness) fire(t *testing.T, d time.Duration) (string, bool) {
	t.Helper()
	// Timers asked for until now are all fired below: only later asks tell of this check.
	for len(h.clock.asked) > 0 {
		<-h.clock.asked
	}
	h.clock.fire(d)
	timeout := await.After(t) // a broken watcher fails the test instead of hanging it
	for {
		select {
		case asked := <-h.clock.asked:
			switch {
			case asked == poll:
				select {
				case got := <-h.reloads:
					return got, true
				default:
					return "", false
				}
			case d == settle:
				h.clock.fire(settle) // a late event restarted the quiet period
			}
		case <-timeout:
			t.Fatalf("no check after the %v timer fired", d)
		}
	}
}

// fireOnce is fire for a watcher that hears no events: the timers of d are fired and the
// check they trigger is waited for, but a quiet period it starts is not passed, which is
// the test's to pass or not. A poll's check ends by asking for the next poll (after a
// quiet period, if it found a change), and a quiet period's by asking for either.
func (h *harness) fireOnce(t *testing.T, d time.Duration) (string, bool) {
	t.Helper()
	for len(h.clock.asked) > 0 {
		<-h.clock.asked
	}
	h.clock.fire(d)
	timeout := await.After(t) // a broken watcher fails the test instead of hanging it
	for {
		select {
		case asked := <-h.clock.asked:
			if d == settle || asked == poll {
				select {
				case got := <-h.reloads:
					return got, true
				default:
					return "", false
				}
			}
		case <-timeout:
			t.Fatalf("no check after the %v timer fired", d)
		}
	}
}

// settleAndReload is settle for a change that must reload.
func (h *harness) settleAndReload(t *testing.T) string {
	t.Helper()
	got, ok := h.settle(t)
	if !ok {
		t.Fatal("no reload after the directory settled")
	}
	return got
}

// symlink makes link point to target, replacing what link was in one rename.
func symlink(t *testing.T, target, link string) {
	t.Helper()
	tmp := link + ".tmp"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// kubeletDir lays out a ConfigMap volume as the kubelet does: the file is a symlink
// through ..data, itself a symlink to a timestamped directory.
func kubeletDir(t *testing.T, dir, version, content string) {
	t.Helper()
	vdir := filepath.Join(dir, "..2026_"+version)
	if err := os.Mkdir(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(vdir, "rules.yaml"), content)
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(vdir), tmp); err != nil {
		t.Fatal(err)
	}
	// The swap is one rename over the old ..data.
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "rules.yaml")
	if _, err := os.Lstat(link); os.IsNotExist(err) {
		if err := os.Symlink(filepath.Join("..data", "rules.yaml"), link); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReloadOnChange(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(t *testing.T, dir string) // writes "v1" to dir/rules.yaml
		change func(t *testing.T, dir string) // makes dir/rules.yaml read "v2"
		// relative: the watcher is given the path as relative to dir, the working
		// directory (--config.file=rules.yaml).
		relative bool
	}{
		{
			name:   "written in place",
			setup:  func(t *testing.T, dir string) { write(t, filepath.Join(dir, "rules.yaml"), "v1") },
			change: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "rules.yaml"), "v2") },
		},
		{
			name:  "renamed over, as editors save",
			setup: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "rules.yaml"), "v1") },
			change: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, ".rules.yaml.swp"), "v2")
				if err := os.Rename(filepath.Join(dir, ".rules.yaml.swp"), filepath.Join(dir, "rules.yaml")); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name:   "ConfigMap volume updated by the kubelet",
			setup:  func(t *testing.T, dir string) { kubeletDir(t, dir, "v1", "v1") },
			change: func(t *testing.T, dir string) { kubeletDir(t, dir, "v2", "v2") },
		},
		{
			name: "a symlink's target written in place",
			setup: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "real.yaml"), "v1")
				symlink(t, "real.yaml", filepath.Join(dir, "rules.yaml"))
			},
			change: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "real.yaml"), "v2") },
		},
		{
			name: "a relative path, its symlink's absolute target written in place",
			setup: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "real.yaml"), "v1")
				symlink(t, filepath.Join(dir, "real.yaml"), filepath.Join(dir, "rules.yaml"))
			},
			change:   func(t *testing.T, dir string) { write(t, filepath.Join(dir, "real.yaml"), "v2") },
			relative: true,
		},
		{
			name: "a symlink retargeted, as ln -sf does",
			setup: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "v1.yaml"), "v1")
				symlink(t, "v1.yaml", filepath.Join(dir, "rules.yaml"))
			},
			change: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "v2.yaml"), "v2")
				symlink(t, "v2.yaml", filepath.Join(dir, "rules.yaml"))
			},
		},
		{
			name: "a symlink on the way retargeted",
			setup: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "v1.yaml"), "v1")
				symlink(t, "v1.yaml", filepath.Join(dir, "current.yaml"))
				symlink(t, "current.yaml", filepath.Join(dir, "rules.yaml"))
			},
			change: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "v2.yaml"), "v2")
				symlink(t, "v2.yaml", filepath.Join(dir, "current.yaml"))
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(t, dir)
			path := filepath.Join(dir, "rules.yaml")
			if c.relative {
				t.Chdir(dir)
				path = "rules.yaml"
			}
			h := start(t, path)
			c.change(t, dir)
			if got := h.settleAndReload(t); got != "v2" {
				t.Fatalf("reload read %q, want v2", got)
			}
		})
	}
}

// TestReloadOnlyOnNewContent: an event without a change of content, and a poll after a
// refused reload, do not reload; only the next new content does.
func TestReloadOnlyOnNewContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	write(t, path, "v1")
	h := start(t, path)

	write(t, path, "v1") // same bytes: events, no change
	if got, ok := h.settle(t); ok {
		t.Fatalf("rewriting the same content reloaded %q", got)
	}
	if got, ok := h.fire(t, poll); ok {
		t.Fatalf("a poll of unchanged content reloaded %q", got)
	}
	write(t, path, "bad")
	if got := h.settleAndReload(t); got != "bad" {
		t.Fatalf("reload read %q, want bad", got)
	}
	// Whatever the reload made of it, the same content is not reloaded again.
	if got, ok := h.fire(t, poll); ok {
		t.Fatalf("a poll after the reload reloaded %q again", got)
	}
	write(t, path, "v2")
	if got := h.settleAndReload(t); got != "v2" {
		t.Fatalf("reload read %q, want v2", got)
	}
}

// TestPollFindsChange: the poll finds a change on its own, with no event (inotify
// unavailable, or the poll came first), and reloads it once a read a quiet period later
// finds the same content; the events of that change do not reload it a second time.
func TestPollFindsChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	write(t, path, "v1")
	h := start(t, path)
	write(t, path, "v2")
	h.clock.waitAsked(t, settle) // the event is in, its quiet period has not passed
	if got, ok := h.fire(t, poll); ok {
		t.Fatalf("a poll reloaded %q at once, with no second read to tell a write in progress", got)
	}
	if got, ok := h.fire(t, settle); !ok || got != "v2" {
		t.Fatalf("poll, then the quiet period: reloaded %v, read %q; want a reload of v2", ok, got)
	}
	// The events' quiet period passed with the second read, or passes now: either way the
	// change is not reloaded again.
	h.clock.fire(settle)
	if got, ok := h.fire(t, poll); ok {
		t.Fatalf("the settled events of the change polled already reloaded %q again", got)
	}
}

// TestPollMidWrite: a poll that reads the file in the middle of a save that truncates it
// and then writes it (an editor saving in place, a shell's >) reloads nothing until a read
// a quiet period later finds the same content: the half-written file is not reloaded, and
// so not reported as a failed reload, while a file that stays broken, or missing for a
// poll period, still is. The watcher hears no event here, as when inotify is unavailable.
func TestPollMidWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	write(t, path, "v1")
	h := startRun(t, path, func(w *Watcher, ctx context.Context, o Options) error {
		return w.loop(ctx, o, nil, nil)
	})
	steps := []struct {
		name   string
		change func()
		fire   time.Duration
		reload string // the start of what the reload read ("read error: ..."), "" for none
	}{
		{"truncated", func() { write(t, path, "") }, poll, ""},
		{"half written", func() { write(t, path, "v") }, settle, ""},
		{"written", func() { write(t, path, "v2") }, settle, ""},
		{"read the same again", func() {}, settle, "v2"},
		{"changed again", func() { write(t, path, "v") }, poll, ""},
		{"back to the content loaded before the second read", func() { write(t, path, "v2") }, settle, ""},
		{"a poll after", func() {}, poll, ""},
		{"broken", func() { write(t, path, "bad") }, poll, ""},
		{"still broken", func() {}, settle, "bad"},
		{"removed", func() { _ = os.Remove(path) }, poll, ""},
		{"still removed", func() {}, settle, ""}, // missing, as a save leaves it: wait a poll
		{"removed at the next poll", func() {}, poll, ""},
		{"and still at its second read", func() {}, settle, "read error"},
	}
	for _, s := range steps {
		s.change()
		got, ok := h.fireOnce(t, s.fire)
		switch {
		case s.reload == "" && ok:
			t.Fatalf("%s: reloaded %q", s.name, got)
		case s.reload != "" && !ok:
			t.Fatalf("%s: no reload, want one of %q", s.name, s.reload)
		case s.reload != "" && !strings.HasPrefix(got, s.reload):
			t.Fatalf("%s: reload read %q, want %q", s.name, got, s.reload)
		}
	}
}

// TestReloadReadsAnotherSave: a save that lands between the watcher's read of the file
// and the reload's has the watcher take the content the reload read as loaded, not its
// own read. The reload that read a save cut short (refused) is followed by one of the
// save's end, which the watcher had read before it; and a save back to the content in
// force before the reload read it reloads nothing more. The watcher hears no events,
// as when inotify is unavailable: its polls alone find the changes.
func TestReloadReadsAnotherSave(t *testing.T) {
	cases := []struct {
		name string
		// between is the file's content written between the watcher's read of "v2" and
		// the reload's; after is written once the reload returned.
		between, after string
		// again is what the next check reloads, "" for none.
		again string
	}{
		{"cut short, then whole", "v", "v2", "v2"},
		{"back to the content in force", "v1", "v1", ""},
		{"saved once more", "v3", "v3", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rules.yaml")
			write(t, path, "v1")
			h := startRun(t, path, func(w *Watcher, ctx context.Context, o Options) error {
				return w.loop(ctx, o, nil, nil)
			})
			write(t, path, "v2")
			if got, ok := h.fireOnce(t, poll); ok {
				t.Fatalf("the poll that found v2 reloaded %q at once", got)
			}
			between := func() { write(t, path, tc.between) }
			h.between.Store(&between)
			if got, ok := h.fireOnce(t, settle); !ok || got != tc.between {
				t.Fatalf("the second read of v2: reloaded %v, read %q; want the reload to read %q", ok, got, tc.between)
			}
			h.between.Store(nil)
			write(t, path, tc.after)
			got, ok := h.fireOnce(t, poll)
			if ok {
				// A change found by a poll waits for its second read.
				t.Fatalf("the poll after the reload reloaded %q at once", got)
			}
			// A change the poll found is reloaded by the next poll at the latest, its
			// quiet period left to pass.
			got, ok = h.fireOnce(t, poll)
			switch {
			case tc.again == "" && ok:
				t.Fatalf("reloaded %q again: the watcher took its own read for the content loaded", got)
			case tc.again != "" && (!ok || got != tc.again):
				t.Fatalf("after the reload read %q and the file became %q: reloaded %v, read %q; want a reload of %q", tc.between, tc.after, ok, got, tc.again)
			}
		})
	}
}

// lateEventAtThePoll starts a watcher on a file of "v1" that the test hands the events,
// makes the file vacant with clear (an event of op), lets the quiet period end, hands the
// event again late (inotify delivers a close after the write the check read), and fires
// the next poll, which finds the file still what clear left (what) and waits for its
// second read: the late event's quiet period is then pending beside the second read's.
func lateEventAtThePoll(t *testing.T, what string, clear func(path string) error, op fsnotify.Op) (h *harness, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "rules.yaml")
	write(t, path, "v1")
	events := make(chan fsnotify.Event)
	h = startRun(t, path, func(w *Watcher, ctx context.Context, o Options) error {
		return w.loop(ctx, o, events, nil)
	})
	if err := clear(path); err != nil {
		t.Fatal(err)
	}
	events <- fsnotify.Event{Name: path, Op: op}
	if got, ok := h.settle(t); ok {
		t.Fatalf("the file %s: reloaded %q", what, got)
	}
	events <- fsnotify.Event{Name: path, Op: op} // late
	h.clock.waitAsked(t, settle)
	if got, ok := h.fire(t, poll); ok {
		t.Fatalf("a poll of the file still %s reloaded %q before a second read", what, got)
	}
	return h, path
}

// TestLateEventBesideTheSecondRead: a late event of a truncation restarts the quiet
// period after the check that held the empty file; the next poll finds it still empty and
// waits for its second read. The late event's quiet period ending first is that second
// read: it reads what the poll read, after a quiet period. It cleared the second read's
// timer and held the file again, so the reload waited another poll, or not, as the two
// timers fell.
func TestLateEventBesideTheSecondRead(t *testing.T) {
	h, _ := lateEventAtThePoll(t, "empty", func(path string) error { return os.WriteFile(path, nil, 0o644) }, fsnotify.Write)
	h.clock.fireOldest(settle) // the late event's, not the second read's own
	h.clock.waitAsked(t, poll)
	select {
	case got := <-h.reloads:
		if got != "" {
			t.Fatalf("the reload read %q, want the empty file", got)
		}
	default:
		t.Fatal("the file empty at the poll and read so again after a quiet period was not reloaded")
	}
}

// TestLateEventMissingThenEmpty: a save that removes the file and creates it again (tar,
// kubectl cp) leaves it missing at a poll and then empty, created but not yet written, at
// the end of a quiet period: a missing file and an empty one are not the same reading, so
// that quiet period is no second read of what the poll found and reloads nothing. The
// file still empty at the next poll and at the second read after it is reloaded.
func TestLateEventMissingThenEmpty(t *testing.T) {
	h, path := lateEventAtThePoll(t, "missing", os.Remove, fsnotify.Remove)
	write(t, path, "")
	h.clock.fireOldest(settle) // the late event's
	h.clock.waitAsked(t, poll)
	select {
	case got := <-h.reloads:
		t.Fatalf("missing at the poll, empty after the quiet period: reloaded %q", got)
	default:
	}
	if got, ok := h.fire(t, poll); ok {
		t.Fatalf("a poll of the file still empty reloaded %q before a second read", got)
	}
	if got, ok := h.fire(t, settle); !ok || got != "" {
		t.Fatalf("the file empty at a poll and at the second read after it: reload %q, %v; want the empty file reloaded", got, ok)
	}
}

// TestPollNeverSettling: a file whose content changes at every read (a generator that
// rewrites it more often than the quiet period) is not left unloaded for good: a change a
// poll found that still has not read the same twice by the next poll is reloaded as that
// poll reads it, as every poll reloaded before the second read, once a poll period, not
// never.
func TestPollNeverSettling(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	write(t, path, "v1")
	h := startRun(t, path, func(w *Watcher, ctx context.Context, o Options) error {
		return w.loop(ctx, o, nil, nil)
	})
	steps := []struct {
		content string
		fire    time.Duration
		reload  bool
	}{
		{"v2", poll, false},
		{"v3", settle, false},
		{"v4", settle, false},
		{"v5", poll, true}, // a whole poll period of changes: reloaded as read
		{"v6", poll, false},
		{"v6", settle, true}, // a change that settles is reloaded once it reads the same
	}
	for i, s := range steps {
		write(t, path, s.content)
		got, ok := h.fireOnce(t, s.fire)
		switch {
		case ok != s.reload:
			t.Fatalf("step %d (%s, %v): reloaded %v (%q), want %v", i, s.content, s.fire, ok, got, s.reload)
		case ok && got != s.content:
			t.Fatalf("step %d: reload read %q, want %q", i, got, s.content)
		}
	}
}

// TestBusyNeighbour: a file written all the time beside the rule file (a log in the same
// directory) does not postpone the reload of a change: only the events of the entries the
// rule file depends on restart the quiet period. The test hands the watcher the events of
// a watch of its own, one at a time, so that it knows which of them the watcher dealt with.
func TestBusyNeighbour(t *testing.T) {
	dir := t.TempDir()
	path, neighbour := filepath.Join(dir, "rules.yaml"), filepath.Join(dir, "app.log")
	write(t, path, "v1")
	r := newRelay(t, dir)
	h := startRun(t, path, func(w *Watcher, ctx context.Context, o Options) error {
		return w.loop(ctx, o, r.out, nil)
	})

	// Saved as editors do: written beside, then renamed over.
	write(t, path+".swp", "v2")
	if err := os.Rename(path+".swp", path); err != nil {
		t.Fatal(err)
	}
	r.until(t, path)
	h.clock.waitAsked(t, settle)
	for i := range 20 {
		write(t, neighbour, fmt.Sprintf("line %d\n", i))
	}
	last := neighbour + ".1"
	write(t, last, "")
	r.until(t, last)
	// The watcher took the event of last, so it dealt with every one before.
	for len(h.clock.asked) > 0 {
		if d := <-h.clock.asked; d == settle {
			t.Fatal("an event of another file of the directory restarted the quiet period")
		}
	}
	if got, ok := h.fire(t, settle); !ok || got != "v2" {
		t.Fatalf("after the quiet period: reloaded %v, read %q; want a reload of v2", ok, got)
	}
}

// relay hands a watcher's loop the events of a watch of a directory the test keeps.
type relay struct {
	fw *fsnotify.Watcher
	// out is unbuffered: a send returns once the loop took the event, and so was done
	// with the one before.
	out chan fsnotify.Event
}

func newRelay(t *testing.T, dir string) *relay {
	t.Helper()
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fw.Close() })
	if err := fw.Add(dir); err != nil {
		t.Fatal(err)
	}
	return &relay{fw: fw, out: make(chan fsnotify.Event)}
}

// until hands on the events up to the first one of path.
func (r *relay) until(t *testing.T, path string) {
	t.Helper()
	timeout := await.After(t) // a broken watcher fails the test instead of hanging it
	for {
		select {
		case ev := <-r.fw.Events:
			select {
			case r.out <- ev:
			case <-timeout:
				t.Fatalf("the watcher did not take the event %v", ev)
			}
			if ev.Name == path {
				return
			}
		case err := <-r.fw.Errors:
			t.Fatal(err)
		case <-timeout:
			t.Fatalf("no event of %s", path)
		}
	}
}

// TestFIFOSwappedIn: a FIFO renamed over the rule file does not block the watcher, which
// read it waiting for a writer, and so never checked the file again: the check reloads
// once, which reports that the file cannot be read, and the next file put there is
// reloaded.
func TestFIFOSwappedIn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	write(t, path, "v1")
	h := start(t, path)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fifo, path); err != nil {
		t.Fatal(err)
	}
	if got, ok := h.settle(t); !ok || !strings.Contains(got, "not a regular file") {
		t.Fatalf("a FIFO: reloaded %v, read %q; want one reload, which cannot read it", ok, got)
	}
	write(t, path+".new", "v2")
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if got := h.settleAndReload(t); got != "v2" {
		t.Fatalf("reload read %q, want v2", got)
	}
}

func TestNewNeedsTheFile(t *testing.T) {
	if _, err := New(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("New on a missing file: no error")
	}
}

func TestRunNeedsOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	write(t, path, "v1")
	w, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(context.Background(), Options{Settle: settle, Poll: poll}); err == nil {
		t.Fatal("Run without Reload, After and Logger: no error")
	}
}

// TestUnreadableReported: a rule file that cannot be read is reloaded once, so that the
// reload reports it as a failed one (logged as an error, logwindow_config_last_reload_successful
// 0) rather than a warning at every check that no metric shows; later checks that still
// cannot read it say nothing more, and the file back, with the content last loaded, is
// reloaded, which ends the failure. One that cannot be read for a cause no save makes (a
// directory in its place) is reported as the directory settles; a missing one, which a save
// that removes and creates the file leaves for a moment, once it is still missing at the
// next poll and the second read after it (TestSlowTruncateThenWrite tells why).
func TestUnreadableReported(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(path string) error
		// reload: what the reload read contains.
		reload string
		// polled: the failure is reloaded after the next poll, not as the directory settles.
		polled bool
	}{
		{"removed", os.Remove, "no such file", true},
		{"a directory in its place", func(path string) error {
			if err := os.Remove(path); err != nil {
				return err
			}
			return os.Mkdir(path, 0o755)
		}, "not a regular file", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rules.yaml")
			write(t, path, "v1")
			h := start(t, path)
			if err := c.spoil(path); err != nil {
				t.Fatal(err)
			}
			got, ok := h.settle(t)
			if c.polled {
				if ok {
					t.Fatalf("the file %s: reloaded %q as the directory settled; want it to wait for the next poll", c.name, got)
				}
				if got, ok := h.fire(t, poll); ok {
					t.Fatalf("the file %s: the poll reloaded %q before a second read", c.name, got)
				}
				got, ok = h.fire(t, settle)
			}
			if !ok || !strings.Contains(got, c.reload) {
				t.Fatalf("the file %s: reloaded %v, read %q; want one reload, which cannot read it (%s)", c.name, ok, got, c.reload)
			}
			for range 3 {
				if got, ok := h.fire(t, poll); ok {
					t.Fatalf("a poll of the file still %s reloaded again: %q", c.name, got)
				}
			}
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			write(t, path, "v1")
			if got := h.settleAndReload(t); got != "v1" {
				t.Fatalf("the file back: reload read %q, want v1", got)
			}
			if got, ok := h.fire(t, poll); ok {
				t.Fatalf("a poll after the file came back reloaded again: %q", got)
			}
		})
	}
}

// TestSlowTruncateThenWrite: a save that truncates the file and writes it more than a
// quiet period later (generator > rules.yaml, whose shell truncates the file before the
// generator has written a byte), or removes it and creates it again as late (tar
// extracting over it, kubectl cp), left it empty or missing when the directory settled,
// and that was reloaded and refused: a failed reload reported for a file that was fine a
// moment later. A file empty or missing, which no rule file is, waits for the next poll:
// the write that follows reloads as any change, and a file that stays empty or missing is
// reloaded then, and reported. The same holds for a poll that finds it so.
func TestSlowTruncateThenWrite(t *testing.T) {
	cases := []struct {
		name  string
		clear func(path string) error
		// reload: the start of what the reload of the file still cleared reads.
		reload string
	}{
		{"truncated", func(path string) error { return os.WriteFile(path, nil, 0o644) }, ""},
		{"removed", os.Remove, "read error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rules.yaml")
			write(t, path, "v1")
			h := start(t, path)
			clear := func() {
				t.Helper()
				if err := c.clear(path); err != nil {
					t.Fatal(err)
				}
			}

			clear()
			if got, ok := h.settle(t); ok {
				t.Fatalf("the file %s: reloaded %q", c.name, got)
			}
			write(t, path, "v2")
			if got := h.settleAndReload(t); got != "v2" {
				t.Fatalf("the file written after: reload read %q, want v2", got)
			}

			clear()
			if got, ok := h.settle(t); ok {
				t.Fatalf("the file %s again: reloaded %q", c.name, got)
			}
			// Still so at the next poll, and at the second read after it: reloaded, once.
			if got, ok := h.fire(t, poll); ok {
				t.Fatalf("a poll of the file still %s reloaded %q before a second read", c.name, got)
			}
			if got, ok := h.fire(t, settle); !ok || !strings.HasPrefix(got, c.reload) || (c.reload == "" && got != "") {
				t.Fatalf("the file %s for a poll period: reloaded %v, read %q; want a reload reading %q", c.name, ok, got, c.reload)
			}
			if got, ok := h.fire(t, poll); ok {
				t.Fatalf("a poll after the file still %s was reloaded reloaded it again: %q", c.name, got)
			}
			write(t, path, "v3")
			if got := h.settleAndReload(t); got != "v3" {
				t.Fatalf("the file written at last: reload read %q, want v3", got)
			}
		})
	}
}

// TestRecreatedSameContent: a file removed and created again with the content last loaded
// (kubectl cp of the same file) reloads nothing and reports nothing: the configuration
// running is the one on disk all along.
func TestRecreatedSameContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	write(t, path, "v1")
	h := start(t, path)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got, ok := h.settle(t); ok {
		t.Fatalf("the file removed: reloaded %q", got)
	}
	write(t, path, "v1")
	if got, ok := h.settle(t); ok {
		t.Fatalf("the file back with the content loaded: reloaded %q", got)
	}
	if got, ok := h.fire(t, poll); ok {
		t.Fatalf("a poll after reloaded %q", got)
	}
}

// TestEmptyFileWaitsForThePoll: an empty file is reloaded by the poll that still finds it
// so, not by the check of another event while it is empty (a chmod or a touch of the
// truncated file before its writer writes): that reloaded it, a failed reload reported
// for a file written a moment later, as the wait was meant to avoid.
func TestEmptyFileWaitsForThePoll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	write(t, path, "v1")
	h := start(t, path)

	write(t, path, "")
	if got, ok := h.settle(t); ok {
		t.Fatalf("the file truncated: reloaded %q", got)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, ok := h.settle(t); ok {
		t.Fatalf("the empty file's mode changed before the poll: reloaded %q", got)
	}
	// Still empty at the poll, and at the second read after it: reloaded.
	if got, ok := h.fire(t, poll); ok {
		t.Fatalf("a poll of the file still empty reloaded %q before a second read", got)
	}
	if got, ok := h.fire(t, settle); !ok || got != "" {
		t.Fatalf("the file empty at the poll: reloaded %v, read %q; want a reload of the empty file", ok, got)
	}

	// Removed, then created again empty, before its writer writes: held until the poll too.
	write(t, path, "v2")
	if got := h.settleAndReload(t); got != "v2" {
		t.Fatalf("the file written: reload read %q, want v2", got)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got, ok := h.settle(t); ok {
		t.Fatalf("the file removed: reloaded %q", got)
	}
	write(t, path, "")
	if got, ok := h.settle(t); ok {
		t.Fatalf("the file created again empty before the poll: reloaded %q", got)
	}
	write(t, path, "v3")
	if got := h.settleAndReload(t); got != "v3" {
		t.Fatalf("the file written at last: reload read %q, want v3", got)
	}
}

// TestDirectoryRecreated: a directory removed and made again (a deploy that replaces
// it whole, rm -rf and a copy) took its watch along, and the new one at its path was
// never watched: every later change waited for the poll, 30 s instead of a second. The
// check that finds the directory back watches it again.
func TestDirectoryRecreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.yaml")
	write(t, path, "v1")
	h := start(t, path)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if got, ok := h.settle(t); ok {
		t.Fatalf("reloaded %q for a file missing a moment", got)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, path, "v2")
	// Nothing watches the new directory yet: the poll finds it, and its change.
	if got, ok := h.fireOnce(t, poll); ok {
		t.Fatalf("a poll reloaded %q at once, with no second read", got)
	}
	if got, ok := h.fireOnce(t, settle); !ok || got != "v2" {
		t.Fatalf("the poll's second read: reloaded %v, read %q; want a reload of v2", ok, got)
	}
	write(t, path, "v3")
	if got := h.settleAndReload(t); got != "v3" {
		t.Fatalf("reload read %q, want v3", got)
	}
}
