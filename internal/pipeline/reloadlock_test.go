package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

// TestReloadLoadsWithoutTheLock: a reload reads and checks the rule file before it takes
// the lock that every scrape (the reload and input self-metrics), /-/ready and the status
// page wait on: a file of thousands of rules takes seconds to load, and those waited for
// all of it, a scrape past its timeout, though the file was then refused and nothing
// changed. The reload is held in its load until the looks at the pipeline are done, so
// had they waited on it they would never be.
func TestReloadLoadsWithoutTheLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	writeRules(t, path, "rules:\n  - {name: r, match: x}\n")
	p := startRuleFile(t, path)

	// A mistake at the end: loaded whole, then refused.
	writeRules(t, path, "rules:\n  - {name: r, match: x}\n  - {name: other, match: y}\n  - {name: bad, match: '('}\n")
	loading, loaded := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(loaded) })
	t.Cleanup(release) // before the pipeline stops, had the test failed with the load held
	p.parseAgain = func(data []byte, path string) (*config.Config, error) {
		close(loading)
		<-loaded
		return config.Parse(data, path)
	}
	reloaded := make(chan error, 1)
	go func() { reloaded <- p.ReloadFile() }()
	<-loading

	looksAtOnce(t, p, "load the rule file")
	release()
	if err := <-reloaded; err == nil {
		t.Error("the reload of the bad file applied")
	}
	if rules := p.Config().Rules; len(rules) != 1 || rules[0].Name != "r" {
		t.Errorf("the refused reload changed the rules: %d", len(rules))
	}
}

// TestReloadBuildsWithoutTheLock: a reload builds its generation (the rules' parser and
// stores: half a second for 5,000 rules) before it takes the lock that every scrape,
// /-/ready and the status page wait on, so that readiness answers at once from what is
// serving. The reload is held in its build until the looks at the pipeline are done, so
// had they waited on it they would never be; then it applies.
func TestReloadBuildsWithoutTheLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	writeRules(t, path, "rules:\n  - {name: r, match: x}\n")
	p := startRuleFile(t, path)
	writeRules(t, path, "rules:\n  - {name: r, match: x}\n  - {name: other, match: y}\n")
	building, built := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(built) })
	t.Cleanup(release) // before the pipeline stops, had the test failed with the build held
	p.buildAgain = func(cfg *config.Config, prev *generation, opts Options) (*generation, error) {
		close(building)
		<-built
		return newGeneration(cfg, prev, opts)
	}
	reloaded := make(chan error, 1)
	go func() { reloaded <- p.ReloadFile() }()
	<-building

	if !looksAtOnce(t, p, "build its generation") {
		t.Error("not ready while a reload builds; want ready, as the rules serving are")
	}
	release()
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if rules := p.Config().Rules; len(rules) != 2 {
		t.Errorf("%d rules in force after the reload; want 2", len(rules))
	}
}

// TestReloadListsWithoutTheLock: a reload words what it warns of (the inputs' paths that
// match no file, files two inputs read) before it takes the lock that every scrape,
// /-/ready and the status page wait on: that lists and stats the inputs' files, and over
// 5,000 pod files it held the lock a second, each scrape waiting all of it. The reload is
// held in its warnings until the looks at the pipeline are done, so had they waited on it
// they would never be; then it applies, and logs them.
func TestReloadListsWithoutTheLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	writeRules(t, path, "rules:\n  - {name: r, match: x}\n")
	logs := &syncbuf.Buffer{}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cfg, Options{Now: time.Now, PollInterval: time.Hour, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	missing := filepath.Join(dir, "pods", "*", "*.log")
	writeRules(t, path, fmt.Sprintf("inputs: [{path: %s}]\nrules:\n  - {name: r, match: x}\n", missing))
	listing, listed := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(listed) })
	t.Cleanup(release) // before the pipeline stops, had the test failed with the listing held
	p.startWarnings = func(cfg *config.Config, seriesMaxBytes int64) []string {
		close(listing)
		<-listed
		return StartWarnings(cfg, seriesMaxBytes)
	}
	reloaded := make(chan error, 1)
	go func() { reloaded <- p.ReloadFile() }()
	<-listing

	looksAtOnce(t, p, "list the inputs' files")
	release()
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if ins := p.Config().Inputs; len(ins) != 1 {
		t.Errorf("%d inputs in force after the reload; want 1", len(ins))
	}
	if !strings.Contains(logs.String(), "matches no file") {
		t.Errorf("the reload did not log that %s matches no file; logged:\n%s", missing, logs)
	}
}

// TestReloadsApplyInOrder: two reloads at once (SIGHUP and the watch of the file) apply
// the file in the order they read it, the later one last: a reload still loading an
// older content, read before the file was saved again, must not put it in force after
// the reload that read the new one. The first reload is held in its load once it read
// the file; the file is saved again and a second reload made, and the first goes on
// once the second waits for it, or has done without waiting.
func TestReloadsApplyInOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	save := func(text string) {
		t.Helper()
		tmp := filepath.Join(dir, "rules.yaml.tmp")
		writeRules(t, tmp, text)
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	save("rules:\n  - {name: start, match: x}\n")
	p := startRuleFile(t, path)

	save("rules:\n  - {name: old, match: x}\n")
	read, loaded := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(loaded) })
	t.Cleanup(release)
	var loads atomic.Int32
	p.parseAgain = func(data []byte, path string) (*config.Config, error) {
		cfg, err := config.Parse(data, path)
		if loads.Add(1) == 1 {
			close(read)
			<-loaded
		}
		return cfg, err
	}
	first := make(chan error, 1)
	go func() { first <- p.ReloadFile() }()
	<-read // the first has read the old file, and is loading it
	save("rules:\n  - {name: new, match: x}\n")
	second := make(chan error, 1)
	go func() { second <- p.ReloadFile() }()
	if !await.Until(t, func() bool { return len(second) > 0 || waitsOnLockIn("pipeline.(*Pipeline).ReloadFile") }) {
		t.Fatal("the second reload neither waits for the first nor returns")
	}
	release()
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if rules := p.Config().Rules; len(rules) != 1 || rules[0].Name != "new" {
		t.Errorf("in force after both reloads: %d rules, the first %q; want the file saved last, rule new", len(rules), rules[0].Name)
	}
}

// looksAtOnce looks at p as a scrape (the reload and input self-metrics), /-/ready and
// the status page do while a reload is held in what it does, and fails t if they wait on
// it: held until they are done, it would never let them be. It returns whether p is ready.
func looksAtOnce(t *testing.T, p *Pipeline, what string) bool {
	t.Helper()
	looked := make(chan bool, 1)
	go func() {
		_ = p.ReloadError()
		_ = p.inputStats()
		_ = p.reloadStats()
		looked <- p.Ready()
	}()
	ready, ok := await.Receive(t, looked)
	if !ok {
		t.Fatalf("a look at the pipeline waits for the reload to %s", what)
	}
	return ready
}

// waitsOnLockIn reports whether a goroutine is blocked locking a sync.Mutex in the
// function fn (as a stack trace names it, its package's last element first): its stack's
// frame below the lock's is fn's.
func waitsOnLockIn(fn string) bool {
	for _, g := range await.Stacks() {
		lines := bytes.Split(g, []byte("\n"))
		if !bytes.Contains(lines[0], []byte("[sync.Mutex.Lock")) {
			continue
		}
		for i, l := range lines[:max(len(lines)-2, 0)] {
			if bytes.HasPrefix(l, []byte("sync.(*Mutex).Lock(")) && bytes.Contains(lines[i+2], []byte("/"+fn+"(")) {
				return true
			}
		}
	}
	return false
}

// writeRules writes a rule file's text to path.
func writeRules(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startRuleFile starts a pipeline of the rule file at path, stopped at the test's end.
func startRuleFile(t *testing.T, path string) *Pipeline {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cfg, Options{Now: time.Now, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// TestReloadOpensNewInputsWithoutTheLock: a reload that adds an input has its follower
// list, stat and open the input's files in its own goroutine, not under the lock that
// every scrape, /-/ready and the status page wait on: over a new glob of 5,000 pod files
// that held them one to two seconds. The new follower is held as it logs the first file
// it follows until the looks at the pipeline are done, so had they waited on it they
// would never be. The reload still returns once its new input's files are positioned, as
// before: a line written after it is read, and none written before (start_at: end).
func TestReloadOpensNewInputsWithoutTheLock(t *testing.T) {
	dir := t.TempDir()
	var logs []string
	for _, pod := range []string{"ns_web-1_u1", "ns_web-2_u2"} {
		log := filepath.Join(dir, "pods", pod, "0.log")
		if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
			t.Fatal(err)
		}
		writeRules(t, log, "x before the reload\n")
		logs = append(logs, log)
	}
	p, reloaded, release := reloadHeld(t, dir, Options{Now: time.Now, PollInterval: 10 * time.Millisecond})

	if !looksAtOnce(t, p, "list and open its new input's files") {
		t.Error("not ready while a reload opens its new input's files; want ready, as what serves is")
	}
	select {
	case err := <-reloaded:
		t.Fatalf("the reload returned (%v) before its new input's files were opened", err)
	default:
	}
	release()
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	for _, log := range logs {
		appendTo(t, log, "x after the reload\n")
	}
	waitRead(t, p, 2)
}

// TestSnapshotWaitsForNewInputsOutsideTheCut: a snapshot taken while a reload's new
// follower lists and opens its files waits for it, as its positions are not known before,
// but not under the cut, which every input's reading takes for each read: they would all
// stall for as long (one to two seconds over a new glob of 5,000 files).
func TestSnapshotWaitsForNewInputsOutsideTheCut(t *testing.T) {
	dir := t.TempDir()
	podBeforeReload(t, dir)
	p, reloaded, release := reloadHeld(t, dir, Options{Now: time.Now, PollInterval: time.Hour, StoragePath: filepath.Join(dir, "state")})

	snapped := make(chan error, 1)
	go func() { snapped <- p.Snapshot() }()
	if !await.Until(t, func() bool { return len(snapped) > 0 || snapshotWaits() }) {
		t.Fatal("the snapshot neither returns nor waits for the new follower")
	}
	if p.cut.TryRLock() {
		p.cut.RUnlock()
	} else {
		t.Error("the snapshot waits for the new follower's first scan under the cut, which holds every input's reading")
	}
	release()
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if err, _ := await.Receive(t, snapped); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotWaitsForNewInputsWithoutTheLock: a snapshot taken while a reload's new
// follower lists and opens its files waits for it without the lock that every scrape,
// /-/ready and the status page wait on: under it they all stalled for as long (one to two
// seconds over a new glob of 5,000 files). The follower is held until the looks at the
// pipeline are done, so had they waited on it they would never be. The snapshot's cut is
// still taken once the follower has its positions: a restart from it reads on from there,
// the line written after it counted once.
func TestSnapshotWaitsForNewInputsWithoutTheLock(t *testing.T) {
	dir := t.TempDir()
	log := podBeforeReload(t, dir)
	state := filepath.Join(dir, "state")
	p, reloaded, release := reloadHeld(t, dir, Options{Now: time.Now, PollInterval: 10 * time.Millisecond, StoragePath: state})

	snapped := make(chan error, 1)
	go func() { snapped <- p.Snapshot() }()
	if !await.Until(t, func() bool { return len(snapped) > 0 || snapshotWaits() }) {
		t.Fatal("the snapshot neither returns nor waits for the new follower")
	}
	looksAtOnce(t, p, "list and open its new input's files, which a snapshot waits for")
	release()
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if err, _ := await.Receive(t, snapped); err != nil {
		t.Fatal(err)
	}
	kept, err := os.ReadFile(filepath.Join(state, storage.FileName))
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.Config()
	kill(t, p, state, kept)

	appendTo(t, log, "x while down\n")
	again, err := Start(cfg, Options{Now: time.Now, PollInterval: 10 * time.Millisecond, StoragePath: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(again.Stop)
	waitTotal(t, again, "the line written after the snapshot, once", "lines_total", 1)
}

// podBeforeReload writes a pod's log under dir/pods, which reloadHeld's input reads, of
// a line written before the reload, and returns its path.
func podBeforeReload(t *testing.T, dir string) string {
	t.Helper()
	log := filepath.Join(dir, "pods", "ns_web-1_u1", "0.log")
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		t.Fatal(err)
	}
	writeRules(t, log, "x before the reload\n")
	return log
}

// snapshotWaits reports whether a goroutine waits in Snapshot on a channel: for a
// follower's first scan.
func snapshotWaits() bool {
	return slices.ContainsFunc(await.Stacks(), func(g []byte) bool {
		return bytes.Contains(g, []byte("[chan receive")) && bytes.Contains(g, []byte("/pipeline.(*Pipeline).Snapshot("))
	})
}

// reloadHeld starts a pipeline of opts without inputs and reloads it, in a goroutine
// whose result reloaded gives, with an input of the logs under dir/pods; it returns once
// the reload's new follower is held as it logs the first file it follows, until release.
func reloadHeld(t *testing.T, dir string, opts Options) (p *Pipeline, reloaded chan error, release func()) {
	t.Helper()
	held := &holdLog{next: slog.DiscardHandler, hold: &hold{msg: "following file", holding: make(chan struct{}), until: make(chan struct{})}}
	opts.Logger = slog.New(held)
	p = startRules(t, []byte("rules: [{name: lines, match: x}]\n"), opts)
	release = sync.OnceFunc(func() { close(held.hold.until) })
	t.Cleanup(release) // before the pipeline stops, had the test failed with the follower held
	cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{path: %s}]\nrules: [{name: lines, match: x}]\n", filepath.Join(dir, "pods", "*", "*.log")), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reloaded = make(chan error, 1)
	go func() { reloaded <- p.Reload(cfg) }()
	<-held.hold.holding
	return p, reloaded, release
}

// holdLog is a log handler that holds the goroutine that logs hold.msg until hold.until
// is closed, having closed hold.holding at the first: a test holds a follower in its scan
// so.
type holdLog struct {
	next slog.Handler
	hold *hold
}

// hold is what holdLog holds, shared by the handlers its WithAttrs and WithGroup make.
type hold struct {
	msg            string
	once           sync.Once
	holding, until chan struct{}
}

func (h *holdLog) Enabled(ctx context.Context, l slog.Level) bool { return true }

func (h *holdLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.hold.msg {
		h.hold.once.Do(func() { close(h.hold.holding) })
		<-h.hold.until
	}
	return h.next.Handle(ctx, r)
}

func (h *holdLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &holdLog{next: h.next.WithAttrs(as), hold: h.hold}
}

func (h *holdLog) WithGroup(name string) slog.Handler {
	return &holdLog{next: h.next.WithGroup(name), hold: h.hold}
}
