// Package pipeline wires the exporter together: it follows every input of a config, runs
// each line through the parser into the series stores, swaps configs on reload, and
// replays files one-shot.
//
// Lines flow one way (follow → parser → store.Set); the only state shared between the
// input goroutines and reloads is the current generation, swapped atomically.
package pipeline

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/scrape"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/parser"
)

// Options are the settings that do not come from the rule file.
type Options struct {
	// Now is the processing-time clock. Only forward differences between its readings are
	// used (plus the first reading as the origin), so a time.Now with its monotonic reading
	// makes processing time immune to wall-clock steps; tests inject a fake.
	Now func() time.Time
	// wall, when set, is the wall clock apart from Now, whose readings' differences are
	// then taken for the monotonic clock's: a test steps the wall clock alone with it, as
	// NTP steps the host's.
	wall   func() time.Time
	Logger *slog.Logger
	// MaxLineBytes, RotationGrace and PollInterval are passed to every follower; zero means
	// the follower's default.
	MaxLineBytes  int
	RotationGrace time.Duration
	PollInterval  time.Duration
	// BackfillBytes bounds how far back from its end a file is read at start to fill the
	// windows of event-time rules (warm start); 0 turns the warm start off.
	BackfillBytes int64
	// SeriesMaxBytes bounds the memory of all rules' series (store.SetOptions.MaxBytes);
	// 0 is no bound.
	SeriesMaxBytes int64
	// SeriesMaxBytesSource says where SeriesMaxBytes came from, for the self-metrics.
	SeriesMaxBytesSource string
	// Summary is where the one-shots (Replay, Explain, Sample) write their line per input
	// of how many of its lines fit (Fit); nil: nowhere.
	Summary io.Writer
	// StoragePath is the directory of the snapshot the state survives a restart by
	// (--storage.path); "" keeps none. SnapshotInterval is how often it is written, besides
	// at Stop (0 means DefaultSnapshotInterval).
	StoragePath      string
	SnapshotInterval time.Duration
	// StorageLockWait is how long Start waits for another process to let the storage
	// directory go (storage.WaitLock) before it starts without its snapshot; 0 means
	// DefaultStorageLockWait.
	StorageLockWait time.Duration
	// Interrupt, once closed (SIGTERM), ends that wait: Start returns an error.
	Interrupt <-chan struct{}
	// OpenFiles, when not nil, bounds the files all the followers keep open, those of the
	// inputs a reload starts too (follow.Options.Files): the server leaves the HTTP side
	// its share of the open-file limit so; nil bounds nothing.
	OpenFiles *follow.Files
}

// setDefaults gives o a logger that discards when it has none.
func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now // Sample reads no clock but a pod's workload's (workloadOf)
	}
}

// quiet is o for a one-shot's pass over its files that another pass reads again: what
// reading them has to say (a file not UTF-8, a path_captures regex that misses a path) is
// logged by the pass that counts their lines, once.
func (o Options) quiet() Options {
	o.Logger = slog.New(slog.DiscardHandler)
	return o
}

// generation is one loaded config with the parser and series state built from it. The
// parser's rule indexes are only meaningful for the Set of the same generation.
type generation struct {
	cfg    *config.Config
	parser *parser.Parser
	set    *store.Set
	// pathsMissed are the sources of the inputs whose path_captures were found not to
	// match a file's path under this config, which was logged (pathValues.miss).
	pathsMissed sync.Map
	// zonesTold are the inputs' time reads whose lines were warned of as a whole UTC
	// offset from the clock (watchZones), by source and time read.
	zonesTold sync.Map
	// readTwiceTold are the sets of inputs whose followers were warned of, after the start
	// or the reload of this config, as reading a file they found (warnReadTwice), by their
	// indexes in cfg.Inputs (inputsKey): bounded by the config, not by the files found.
	readTwiceTold sync.Map
}

// Build makes of cfg what the start makes of it, its parser and its stores, and returns
// why it could not: the rule file's load checks the rules as data, and a rule the parser
// still refused (a load and a parser that disagree) would pass --config.check and stop
// the start.
func Build(cfg *config.Config, opts Options) error {
	opts.setDefaults()
	_, err := newGeneration(cfg, nil, opts)
	return err
}

func newGeneration(cfg *config.Config, prev *generation, opts Options) (*generation, error) {
	p, err := parser.New(cfg.Rules)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.File, err)
	}
	p.SetInputs(cfg.Inputs)
	var prevSet *store.Set
	if prev != nil {
		prevSet = prev.set
	}
	set, err := store.NewSetWith(cfg, prevSet, store.SetOptions{MaxBytes: opts.SeriesMaxBytes, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.File, err)
	}
	return &generation{cfg: cfg, parser: p, set: set}, nil
}

// Pipeline follows the inputs of the current config into its series stores.
type Pipeline struct {
	opts  Options
	clock *clock
	gen   atomic.Pointer[generation]

	// expiring ends with Stop: the goroutine that expires idle series (Expire).
	expiring chan struct{}
	expired  sync.WaitGroup

	// reloading serialises reloads, their reading of the file included; it is taken
	// before mu.
	reloading sync.Mutex
	// parseAgain checks the rule file ReloadFile read (config.Parse), under reloading and
	// not under mu; a test holds a reload in it to see what waits on it.
	parseAgain func(data []byte, path string) (*config.Config, error)
	// buildAgain builds a reload's generation (newGeneration), under reloading and not
	// under mu; a test holds a reload in it to see what waits on it.
	buildAgain func(cfg *config.Config, prev *generation, opts Options) (*generation, error)
	// startWarnings words what a reload warns of its config (StartWarnings), under
	// reloading and not under mu: it lists and stats the inputs' files, a second over a
	// node of 5,000 pod files. A test holds a reload in it to see what waits on it.
	startWarnings func(cfg *config.Config, seriesMaxBytes int64) []string

	// followed are the streams of inputs as syncInputs last left them, which a follower
	// that found a file looks through for others that read it (warnReadTwice) without
	// p.mu, which Stop holds while it waits for the followers.
	followed atomic.Pointer[[]*stream]

	mu          sync.Mutex         // serialises reloads and Stop; guards the fields below
	inputs      map[string]*stream // by config.Input.Source
	starting    bool               // Start is starting the inputs: warm start applies
	begun       time.Time          // Start's first reading of Options.Now: the warm start's wait counts from it
	stopped     bool
	reloadErr   error // why the last reload failed: refused, or *InputsNotStarted until retryInputs starts them; nil when it applied
	lastSuccess time.Time
	// lastRead is what the last ReloadFile read of the rule file, whether it applied or not.
	lastRead config.Read
	// notRunning are the inputs of the config in force that did not start: set by
	// syncInputs as it applies a config, and kept while later reloads are refused.
	notRunning []NotRunning
	// retryAt is when the inputs of notRunning are next started again (retryInputs), and
	// retryWait how long it waited for that since the last try.
	retryAt   time.Time
	retryWait time.Duration

	// cut is held (read) by every follower while it hands lines on, and taken by a
	// snapshot while it records the positions and copies the series: one cut of both.
	cut sync.RWMutex
	// storage is the side of --storage.path; nil without one. resume holds the positions
	// of the snapshot restored at Start by input source, for the followers Start starts,
	// and resumeParts the CRI messages in parts their joiners were in the middle of.
	storage     *persister
	resume      map[string][]follow.Position
	resumeParts map[string][]pathParts
	// resumeTaken is when the snapshot restored was written (follow.Options.Taken),
	// resumeLeft where its followers' files closed after they left their path were read
	// up to, by input source (follow.Options.Left), resumeTruncated what the files
	// they found truncated lately held (follow.Options.Truncated), and resumeDrained the
	// positions of files read to their end after they left their path
	// (follow.Options.Drained).
	resumeTaken     time.Time
	resumeLeft      map[string][]follow.Position
	resumeTruncated map[string][]follow.Truncation
	resumeDrained   map[string][]follow.Position
	// handedOver holds, during syncInputs, the positions of the followers it stopped to
	// replace them, by input source (handOver), and handedParts the CRI messages in parts
	// their joiners were in the middle of, handedLeft the files they closed after the
	// files left their path, and handedTruncated those they found truncated lately. A
	// reload that panicked starting the followers leaves them to the next syncInputs,
	// and to the snapshots until then (panicInForce).
	handedOver      map[string][]follow.Position
	handedParts     map[string][]pathParts
	handedLeft      map[string][]follow.Position
	handedTruncated map[string][]follow.Truncation
	// vanished holds, during syncInputs, where the followers of the inputs that the
	// configuration no longer names read their files (their positions, and the files they
	// closed after the files left their path), for new inputs' followers
	// (follow.Options.Left): an input whose path changed (`access.log` made
	// `access.log*`) is a new one, which reads on where the old one stopped in the files
	// both match. At Start they are those of the snapshot restored.
	vanished []follow.Position
	// vanishedParts are the CRI messages in parts the joiners of those inputs were in the
	// middle of (with from, the input's label; at Start its path, which is all a snapshot
	// records of an input), given back with vanished to the joiners of
	// the new inputs that read their files on from where they were kept; vanishedTo is
	// the first new cri input given them, which counts those none went on with
	// (settleParts).
	vanishedParts []pathParts
	vanishedTo    *stream
	// unreadable is what warnUnreadable keeps of each input by label, and looked each
	// stream's counts at its last look, used by it alone.
	unreadable map[string]*unreadable
	looked     map[*stream]lineCounts
	// started is the processing second of Start, and restored that of the start of the
	// process whose snapshot was restored (math.MaxInt64 when none): rates count from
	// the earlier.
	started, restored int64
}

// errStopped refuses a reload that comes in (by SIGHUP or HTTP) during shutdown, which would
// otherwise start followers again after Stop.
var errStopped = errors.New("the exporter is shutting down")

// Start builds the state for cfg and starts following its inputs.
func Start(cfg *config.Config, opts Options) (*Pipeline, error) {
	opts.setDefaults()
	begun := opts.Now()
	gen, err := newGeneration(cfg, nil, opts)
	if err != nil {
		return nil, err
	}
	p := &Pipeline{opts: opts, clock: newClock(opts.Now, opts.wall, opts.Logger), parseAgain: config.Parse, buildAgain: newGeneration, startWarnings: StartWarnings, inputs: map[string]*stream{}, restored: math.MaxInt64, begun: begun}
	if opts.StoragePath != "" {
		p.storage = &persister{dir: opts.StoragePath, interval: cmp.Or(opts.SnapshotInterval, DefaultSnapshotInterval), writeFile: storage.Write, encodeAhead: (*store.Set).EncodeAhead}
		p.storage.stats.Enabled = true
		if p.resume, p.resumeParts, p.restored, err = p.restore(gen); err != nil {
			return nil, err
		}
	}
	p.started = p.clock.second()
	p.gen.Store(gen)
	p.warnConfig(p.configWarnings(cfg))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starting = true
	for source, ps := range p.resume {
		if !slices.ContainsFunc(cfg.Inputs, func(ci config.Input) bool { return ci.Source() == source }) {
			p.vanished = append(append(p.vanished, ps...), p.resumeLeft[source]...)
			for _, pp := range p.resumeParts[source] {
				pp.from = source
				p.vanishedParts = append(p.vanishedParts, pp)
			}
		}
	}
	err = p.syncInputs(cfg)
	p.starting, p.resume, p.resumeParts, p.resumeTaken, p.resumeLeft, p.resumeTruncated, p.resumeDrained = false, nil, nil, time.Time{}, nil, nil, nil
	if err != nil {
		p.stopInputs(nil)
		if p.storage != nil {
			p.storage.release()
		}
		return nil, err
	}
	p.lastSuccess = opts.Now()
	p.expiring = make(chan struct{})
	p.expired.Go(func() {
		t := time.NewTicker(expireEvery)
		defer t.Stop()
		for {
			select {
			case <-p.expiring:
				return
			case <-t.C:
				p.Expire()
				p.warnUnreadable()
				p.retryInputs()
			}
		}
	})
	if p.storage != nil {
		p.expired.Go(func() { p.snapshotEvery(p.expiring) })
	}
	return p, nil
}

// expireEvery is how often the stores release the wheels of idle series and drop kept
// counters past the TTL. Scrapes read the same either way; it only returns memory.
const expireEvery = 15 * time.Second

// Expire has the current stores release the wheels of idle series and remove kept
// counters past the counter TTL, now; a goroutine of Start calls it every expireEvery.
func (p *Pipeline) Expire() {
	processing, wall := p.clock.read()
	p.gen.Load().set.Expire(processing, wall)
}

// ReloadFile loads the config file in use again and applies it; a file that fails to load
// or build changes nothing, nor does one whose load or build panics (*ReloadPanic). The
// file is read, its generation built and its warnings worded under reloading, so of two
// reloads at once the later one applies the newer file, but not under mu, which every
// scrape, /-/ready and the status page wait on: a file of thousands of rules takes
// seconds to load, and half a second to build, and the warnings list the inputs' files.
func (p *Pipeline) ReloadFile() error {
	p.reloading.Lock()
	defer p.reloading.Unlock()
	cfg, read, err := p.load()
	p.mu.Lock()
	p.lastRead = read
	p.mu.Unlock()
	return p.apply(cfg, err)
}

// LastRead is what the last ReloadFile read of the rule file: the bytes it parsed,
// applied or refused, or that it could read none. The watch of the file records it as the
// content loaded, rather than its own read before the reload, which a save in between
// makes another content.
func (p *Pipeline) LastRead() config.Read {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastRead
}

// Reload swaps in cfg: rules whose definition did not change keep their window state,
// inputs that are no longer configured stop, new ones start.
func (p *Pipeline) Reload(cfg *config.Config) error {
	p.reloading.Lock()
	defer p.reloading.Unlock()
	return p.apply(cfg, nil)
}

// apply builds the generation of cfg, loaded with err, and puts it in force, with
// reloading held; only the look before the build and the swap hold mu. The generation in
// force changes only under reloading, so the one the build takes stores from is the one
// it replaces. The followers the reload starts list and open their files in their own
// goroutines (follow.Options.Later), which apply waits for once it let mu go: the reload
// ends with its new inputs' files positioned, as when they were opened under mu, which
// held every scrape and /-/ready for one to two seconds over a new glob of 5,000 files.
func (p *Pipeline) apply(cfg *config.Config, err error) error {
	if err == nil {
		err = p.lookBeforeBuild()
	}
	var gen *generation
	var warnings []string
	if err == nil {
		gen, warnings, err = p.build(cfg)
	}
	var started []*follow.Follower
	defer func() {
		for _, f := range started {
			<-f.Scanned()
		}
	}() // after mu is let go
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return errStopped
	}
	if err != nil {
		p.reloadErr = err
		return err
	}
	err = p.reload(gen, warnings)
	for _, in := range p.inputs {
		if f, ok := in.running.(*follow.Follower); ok {
			started = append(started, f) // those it did not start have scanned
		}
	}
	return err
}

// load reads and checks the rule file in use again, a panic doing so (a bug) made a
// *ReloadPanic error. The read is told of a content that panicked too: the watch of the
// file then tries it once, not at each of its polls.
func (p *Pipeline) load() (cfg *config.Config, read config.Read, err error) {
	defer recoverReload(&err)
	path := p.gen.Load().cfg.File
	data, read, err := config.ReadAgain(path)
	if err != nil {
		return nil, read, err
	}
	cfg, err = p.parseAgain(data, path)
	return cfg, read, err
}

// build builds the generation of cfg and words what the reload warns of it
// (configWarnings, logged once it is in force), a panic doing so (a bug) made a
// *ReloadPanic error.
func (p *Pipeline) build(cfg *config.Config) (gen *generation, warnings []string, err error) {
	defer recoverReload(&err)
	if gen, err = p.buildAgain(cfg, p.gen.Load(), p.opts); err != nil {
		return nil, nil, err
	}
	return gen, p.configWarnings(cfg), nil
}

// lookBeforeBuild tells what the rules a reload replaces made of the lines read until
// then (lookUnreadable), before the build, which drops the stores of the rules it does
// not keep: a panic doing so (a bug) is made a *ReloadPanic error that changed nothing, as
// one of the build. Looked at between the build and the swap, a panic went up uncaught,
// answered 500 by the server, but the reload outcome self-metric and the status page
// said the reload succeeded, and the stores the build had dropped stayed in use.
func (p *Pipeline) lookBeforeBuild() (err error) {
	defer recoverReload(&err)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		p.lookUnreadable()
	}
	return nil
}

// ReloadPanic is the error of a reload that panicked (a bug), with what it panicked with
// and where. A reload panicked in its load or its build (see Pipeline.ReloadFile) changed
// nothing, as a refused one: the previous configuration keeps running. Before, the panic
// ended the process when a SIGHUP or the rule file's watch asked for the reload. One that
// panicked once its rules were in force is recorded as the *InputsNotStarted of one (see
// panicInForce), and its panic goes on.
type ReloadPanic struct {
	Value any
	Stack []byte
}

// Error says that the reload panicked, and with what.
func (e *ReloadPanic) Error() string {
	return fmt.Sprintf("the reload panicked (a bug of the exporter's; please report it, with the rule file): %v", e.Value)
}

// recoverReload makes a panic of the function it is deferred in that function's error, a
// *ReloadPanic.
func recoverReload(err *error) {
	if v := recover(); v != nil {
		*err = &ReloadPanic{Value: v, Stack: debug.Stack()}
	}
}

// reload puts gen in force, with p.mu held, and logs warnings, what its config warns of.
func (p *Pipeline) reload(gen *generation, warnings []string) error {
	cfg := gen.cfg
	p.reloadUnreadable()
	p.gen.Store(gen)
	defer p.panicInForce()
	for _, in := range p.inputs {
		in.release()
	}
	p.warnConfig(warnings)
	err := p.syncInputs(cfg)
	p.retryWait, p.retryAt = 0, time.Time{}
	if err != nil {
		// The rules are in force; an input that cannot start is reported as a failed reload
		// so the operator looks, while every other input keeps running, and it is tried
		// again (retryInputs).
		p.retryWait = FirstInputRetry
		p.retryAt = p.opts.Now().Add(FirstInputRetry)
		p.reloadErr = &InputsNotStarted{Err: err}
		return p.reloadErr
	}
	p.reloadErr, p.lastSuccess = nil, p.opts.Now()
	return nil
}

// panicInForce records a panic of a reload that put its rules in force (a bug, in the
// start of the inputs most likely) as a failed reload that left inputs not started, and
// lets it go on to the server's reloader, which tells it to those who asked: else the
// reload outcome self-metric and the status page said the reload succeeded. The inputs
// it left are not tried again (retryInputs would start them alike, and panic outside any
// reload, ending the process): the next reload starts them, from where the followers it
// stopped to replace them stopped (handedOver, which the snapshots until then write as
// those inputs' positions), so that no line is lost or read twice.
func (p *Pipeline) panicInForce() {
	if v := recover(); v != nil {
		p.reloadErr = &InputsNotStarted{Err: &ReloadPanic{Value: v, Stack: debug.Stack()}}
		p.notRunning = nil
		panic(v)
	}
}

// FirstInputRetry is how long after a reload left inputs not started they are started
// again, and maxRetryWait the longest wait between two tries, each twice as long as the
// one before: an address freed a moment later (the old process of a rolling restart still
// ending) is taken within a minute, and one taken for hours is tried every few minutes,
// not logged as a failure at every look. Start's goroutine looks every expireEvery.
const (
	FirstInputRetry = 30 * time.Second
	maxRetryWait    = 5 * time.Minute
)

// retryInputs starts the inputs of the configuration in force that did not start, once
// their wait is over, whatever made the reload that left them (SIGHUP, POST /-/reload,
// the watch of the file): the configuration in force again, not the file, which may
// hold what no one asked to load yet. A refused reload since leaves them to be tried, as
// they are still not running. When the last reload is the one that left them, the
// retry that starts them all makes it successful, as a reload of the same file would.
func (p *Pipeline) retryInputs() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || len(p.notRunning) == 0 || p.opts.Now().Before(p.retryAt) {
		return
	}
	err := p.syncInputs(p.gen.Load().cfg)
	var last *InputsNotStarted
	lastLeftThem := errors.As(p.reloadErr, &last)
	if err != nil {
		if lastLeftThem {
			p.reloadErr = &InputsNotStarted{Err: err}
		}
		p.retryWait = min(2*p.retryWait, maxRetryWait)
		p.retryAt = p.opts.Now().Add(p.retryWait)
		p.opts.Logger.Error("inputs of the configuration in force still did not start; they are tried again later", "retry_in", p.retryWait, "err", err)
		return
	}
	if lastLeftThem {
		p.reloadErr, p.lastSuccess = nil, p.opts.Now()
	}
	p.retryWait, p.retryAt = 0, time.Time{}
	p.opts.Logger.Info("the inputs that had not started are running")
}

// InputsNotStarted is the error of a reload that put the new configuration in force but
// for inputs that could not start (a socket whose address is taken). It counts as a
// failed reload, so that the operator looks; but unlike a refused one, the previous
// configuration no longer runs, and what reports it must not say it does.
type InputsNotStarted struct{ Err error }

// Error says that the configuration is in force, then why the inputs did not start.
func (e *InputsNotStarted) Error() string {
	return "the new configuration is in force, but inputs did not start: " + e.Err.Error()
}

// Unwrap returns why the inputs did not start.
func (e *InputsNotStarted) Unwrap() error { return e.Err }

// configWarnings are what --config.check warns of cfg, StartWarnings and
// config.Warnings, which the start and every reload that applies log (warnConfig): an
// exporter started or reloaded without the check must say it as loudly.
func (p *Pipeline) configWarnings(cfg *config.Config) []string {
	return append(p.startWarnings(cfg, p.opts.SeriesMaxBytes), config.Warnings(cfg)...)
}

// warnConfig logs warnings, configWarnings of the config put in force.
func (p *Pipeline) warnConfig(warnings []string) {
	for _, w := range warnings {
		p.opts.Logger.Warn(w)
	}
}

// StartWarnings are what the start warns of cfg besides the rule file's own warnings
// (config.Warnings), which it can tell only of the machine and the flags: the inputs'
// paths that match no file (MissingInputs), files two inputs read for one rule
// (ReadTwice), and a series budget past the memory bound seriesMaxBytes
// (store.BudgetsPastBound).
func StartWarnings(cfg *config.Config, seriesMaxBytes int64) []string {
	return slices.Concat(MissingInputs(cfg), ReadTwice(cfg), store.BudgetsPastBound(cfg, seriesMaxBytes))
}

// Ready reports whether every input has opened and positioned the files that exist, or
// bound its socket.
func (p *Pipeline) Ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inputsReady()
}

// inputsReady is Ready with p.mu held. An input a reload started is not waited for: the
// reload lists and opens its files (follow.Options.Later), and until it is done the
// exporter serves what it served, ready, as while the reload reads and builds its rules.
func (p *Pipeline) inputsReady() bool {
	for _, in := range p.inputs {
		if !in.later && !in.running.Ready() {
			return false
		}
	}
	return true
}

// lockScanned takes p.mu once every follower of p.inputs has made its first scan, or the
// pipeline stopped. A reload's (or a retry's) new follower lists and opens its files in
// its own goroutine (follow.Options.Later), and a snapshot's cut waits for that, as its
// positions are not known before: waited for under p.mu, every scrape, /-/ready and the
// status page would wait as long (one to two seconds over a new glob of 5,000 files). So
// it waits with p.mu let go, and looks again once it holds it: a reload meanwhile may
// have started others.
func (p *Pipeline) lockScanned() {
	for {
		p.mu.Lock()
		var scanning []<-chan struct{}
		for _, in := range p.inputs {
			if f, ok := in.running.(*follow.Follower); ok {
				select {
				case <-f.Scanned():
				default:
					scanning = append(scanning, f.Scanned())
				}
			}
		}
		if p.stopped || len(scanning) == 0 {
			return
		}
		p.mu.Unlock()
		for _, c := range scanning {
			<-c
		}
	}
}

// Stop stops every input and waits for their goroutines; later reloads are refused. With
// a storage path, the state is then written to it (a shutdown's snapshot).
func (p *Pipeline) Stop() {
	p.mu.Lock()
	first := !p.stopped
	p.stopped = true
	p.mu.Unlock()
	if first {
		close(p.expiring)
		p.expired.Wait() // outside p.mu, which a periodic snapshot takes
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if first && p.storage != nil {
		// The readers stop first, so that the snapshot has every line they handed on: those
		// a file of candidate formats held, parsed as its reader lets go of it, and those
		// the workers had not parsed. Their positions are where they stopped.
		for _, in := range p.inputs {
			in.stop()
		}
		// The readers have stopped: the cut, which encodes every series, holds no one up.
		if p.snapshot(nil, nil, nil, time.Now(), func() {}) == nil {
			p.opts.Logger.Info("snapshot written at shutdown", "dir", p.storage.dir)
		}
		p.storage.release()
	}
	p.stopInputs(nil)
}

// Collector returns the collector of the self-metrics of rules, inputs and reloads, which
// also reads the current rules' families for a scrape (exporter.Handler serves both).
func (p *Pipeline) Collector() *scrape.Collector {
	return scrape.NewCollector(scrape.Options{
		Set:     func() *store.Set { return p.gen.Load().set },
		Now:     p.clock.second,
		Wall:    p.clock.wall,
		Start:   min(p.clock.second(), p.restored),
		Inputs:  p.inputStats,
		Storage: p.StorageStats,
		Reload:  p.reloadStats,

		BoundSource: p.opts.SeriesMaxBytesSource,
	})
}

func (p *Pipeline) reloadStats() selfmetric.ReloadStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := selfmetric.ReloadStats{Successful: p.reloadErr == nil, LastSuccess: p.lastSuccess, Inputs: map[string]bool{}}
	for _, ci := range p.gen.Load().cfg.Inputs {
		r.Inputs[ci.Label()] = true
	}
	for _, in := range p.notRunning {
		r.Inputs[in.Input] = false
	}
	return r
}

// NotRunning is an input of the configuration in force that did not start, and why.
type NotRunning struct {
	// Input is the input's name, or its path or address when it has none.
	Input string
	Err   error
	// Retry is when it is next tried again (retryInputs), unless a reload that applies
	// comes first and tries it at once.
	Retry time.Time
}

// InputsNotRunning are the inputs of the configuration in force that did not start (a
// socket whose address was taken when the reload put it in force), in the config's
// order. A later reload that is refused leaves them as they are: they are tried again
// (retryInputs), and at once by a reload that applies.
func (p *Pipeline) InputsNotRunning() []NotRunning {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := slices.Clone(p.notRunning)
	for i := range out {
		out[i].Retry = p.retryAt
	}
	return out
}

// ReloadError is why the last reload was refused (the config's problems, one per line), or
// that it left inputs not started (*InputsNotStarted), until a retry starts them; nil
// when it applied.
func (p *Pipeline) ReloadError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reloadErr
}

func (p *Pipeline) inputStats() []selfmetric.InputStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]selfmetric.InputStats, 0, len(p.inputs))
	for _, in := range p.inputs {
		out = append(out, in.stats())
	}
	return out
}
