package configwatch

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
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

// guard bounds every wait, so that a broken watcher fails the test instead of hanging it.
const guard = 10 * time.Second

// waitAsked waits until the watcher asks for a timer of duration d.
func (c *fakeClock) waitAsked(t *testing.T, d time.Duration) {
	t.Helper()
	timeout := time.After(guard)
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
}

func start(t *testing.T, path string) *harness {
	t.Helper()
	h := &harness{clock: newFakeClock(), path: path, reloads: make(chan string, 10)}
	w, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, Options{
			Reload: func() {
				b, err := os.ReadFile(path)
				if err != nil {
					b = []byte("read error: " + err.Error())
				}
				h.reloads <- string(b)
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
	timeout := time.After(guard)
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

// settleAndReload is settle for a change that must reload.
func (h *harness) settleAndReload(t *testing.T) string {
	t.Helper()
	got, ok := h.settle(t)
	if !ok {
		t.Fatal("no reload after the directory settled")
	}
	return got
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(t, dir)
			h := start(t, filepath.Join(dir, "rules.yaml"))
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

// TestPollFindsChange: the poll reloads a change on its own, and the events of that
// change do not reload it a second time.
func TestPollFindsChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	write(t, path, "v1")
	h := start(t, path)
	write(t, path, "v2")
	h.clock.waitAsked(t, settle) // the event is in, its quiet period has not passed
	if got, ok := h.fire(t, poll); !ok || got != "v2" {
		t.Fatalf("poll: reloaded %v, read %q; want a reload of v2", ok, got)
	}
	if got, ok := h.fire(t, settle); ok {
		t.Fatalf("the settled events of the change polled already reloaded %q again", got)
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
