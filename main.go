// Command logwindow_exporter follows log files, matches their lines against YAML rules and
// exposes, for each matched series, sums and rates over sliding windows as Prometheus gauges.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	// The IANA zones a rule's timestamp: location: names, in the binary: the image has no
	// zoneinfo of its own, and a rule file must load alike wherever it runs.
	_ "time/tzdata"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/configcheck"
	"github.com/logwindow/logwindow_exporter/internal/configwatch"
	"github.com/logwindow/logwindow_exporter/internal/dashboard"
	"github.com/logwindow/logwindow_exporter/internal/explain"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/memlimit"
	"github.com/logwindow/logwindow_exporter/internal/pipeline"
	"github.com/logwindow/logwindow_exporter/internal/server"
)

const exporterName = "logwindow_exporter"

// defaultListenAddress is not used by any peer log exporter (mtail 3903, grok_exporter 9144,
// nginxlog-exporter 4040, the nginx exporters 9113/9147/9913).
const defaultListenAddress = ":9907"

// rootFS is the machine's file system, where memlimit finds the container's memory limit;
// tests put a fake cgroup in its place.
var rootFS fs.FS = os.DirFS("/")

func main() {
	stampFromBuildInfo()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process exit, so flags and exit codes are testable.
func run(args []string, stdout, stderr io.Writer) (code int) {
	stderr = terminalText{stderr}
	// What a one-shot prints is its result: lost (a full disk, a closed pipe), the exit
	// code says so, whichever printed it and however it checked its writes.
	out := &stickyWriter{w: stdout}
	stdout = out
	defer func() {
		if out.err != nil && code == 0 {
			fmt.Fprintf(stderr, "%s: writing the output: %v\n", exporterName, out.err)
			code = 1
		}
	}()
	app := kingpin.New(exporterName, "Prometheus exporter of sliding-window sums and rates over log lines matched by YAML rules.")
	// --help and --version print what was asked for, to stdout, and end the run here
	// rather than exit the process, so that a failed write of it is seen.
	app.UsageWriter(errorsKept{out})
	app.ErrorWriter(stderr)
	terminated, exit := false, 0
	// The first of them ends the run, as kingpin's exit did: kingpin goes on parsing, and
	// the help of a --help after --version would follow the version.
	terminate := func(code int) {
		if !terminated {
			terminated, exit = true, code
			app.UsageWriter(io.Discard)
		}
	}
	app.Terminate(terminate)
	versionText := version.Print(exporterName)
	// kingpin's hidden flags (--help-long, --help-man, the completions) print to os.Stdout,
	// not to the usage writer: they are routed to out, as --help and --version are.
	endPrinting := routePrintingFlags(app, out, versionText, terminate)
	var (
		configFile    = app.Flag("config.file", "Rule file (YAML). Default: "+strings.Join(defaultConfigFiles, ", else ")+", in the working directory.").PlaceHolder("FILE").String()
		configCheck   = app.Flag("config.check", "Validate the rule file, and the web config and listen addresses given, as the start does; print every error, and exit (0 valid, 1 invalid).").Bool()
		sampleFiles   = app.Flag("sample", "With --config.check: read this file (repeatable) as the input that reads it would, print per input how many of its lines are of its format and per rule how many it dropped for a time or number that does not parse, and exit 1 when an input read lines and none is, or could read none, or read no line (its files empty), a rule counted none of the lines it matched and dropped some so, a file could not be read, or no input reads a file and no rule matched its lines.").PlaceHolder("FILE").Strings()
		dashboardOut  = app.Flag("dashboard", "Print a Grafana dashboard (JSON) for the rules of --config.file and exit.").Bool()
		replayFiles   = app.Flag("replay", "One-shot: read this file to its end (repeatable), print the exposition text of every rule and exit.").PlaceHolder("FILE").Strings()
		explainSet    bool
		explainFile   = app.Flag("explain", "One-shot: for each line of this file, print which rules count it and with what, and why the others do not, and exit.").PlaceHolder("FILE").IsSetByUser(&explainSet).String()
		explainOpts   bool
		explainLines  = app.Flag("explain.lines", "How many lines of the --explain file to explain.").Default("100").IsSetByUser(&explainOpts).Int()
		explainFormat = app.Flag("explain.format", "Output of --explain: text or json (one object per line).").Default("text").IsSetByUser(&explainOpts).Enum(explain.Formats...)
		metricsPath   = app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").String()
		lifecycle     = app.Flag("web.enable-lifecycle", "Enable POST /-/reload.").Bool()
		lineTester    = app.Flag("web.enable-line-tester", "Serve the status page's line tester, POST /-/explain.").Default("true").Bool()
		readTimeout   = app.Flag("web.read-timeout", "Longest time to read a request, its headers and body (0: none).").Default("30s").Duration()
		writeTimeout  = app.Flag("web.write-timeout", "Longest time from the end of a request's headers to the end of its reply, a scrape's included (0: none).").Default("60s").Duration()
		idleTimeout   = app.Flag("web.idle-timeout", "How long a kept-alive connection waits for its next request; longer than the scrape interval, a scraper keeps its connection (0: none).").Default("2m").Duration()
		maxConns      = app.Flag("web.max-connections", "Most connections held at once: past it a new connection takes the place of one waiting for a request, or is closed. Lowered to half the open-file limit when that is lower.").Default("512").Int()
		maxRequests   = app.Flag("web.max-requests", "Most scrapes of /metrics in flight, and apart most status pages: past it a scrape waits up to 5s, taking the place of one whose client has not read for a second, else gets 503 (0: none).").Default("10").Int()
		maxScrapeSet  bool
		maxScrape     = bytesFlag(app.Flag("web.max-scrape-bytes", "Bound on the memory the scrapes in flight hold, within --web.max-requests: each is charged what the rules it reads held at their last read (the whole bound when unknown: the first after a start or a reload, the protobuf text formats, rules that held more), and past it a scrape waits as for a place, then gets 503 (0: none). Default: half of --series.max-bytes.").PlaceHolder("BYTES").IsSetByUser(&maxScrapeSet))
		configWatch   = app.Flag("config.watch", "Reload when the rule file's content changes on disk (a mounted ConfigMap updated by the kubelet), with no reload endpoint open.").Bool()
		maxLineBytes  = app.Flag("input.max-line-bytes", "Lines longer than this are skipped and counted.").Default("65536").Int()
		rotationGrace = app.Flag("input.rotation-grace", "How long a rotated-away file keeps being read after its last line.").Default("5s").Duration()
		pollInterval  = app.Flag("input.poll-interval", "How often files are checked for growth, rotation and truncation when no change event arrives, globs scanned, and a syslog unix socket's path looked at.").Default("250ms").Duration()
		backfill      = bytesFlag(app.Flag("input.backfill-bytes", "At start, how far back from the end of a file with start_at: end to read to fill the windows of event-time rules (0: off).").Default("256MiB"))
		maxBytesSet   bool
		maxBytes      = bytesFlag(app.Flag("series.max-bytes", "Bound on the memory of the series of all rules, their sketches and the inputs' partial lines; past it, new label sets fold into their rule's __overflow__ series and sketches are coarsened instead of growing (0: none). Default: half the container's memory limit (cgroup v2 memory.max, v1 memory.limit_in_bytes), else 512MiB. Unless GOMEMLIMIT is set, the Go runtime's soft memory limit is set to 1.5 times it (three quarters of the container's limit).").PlaceHolder("BYTES").IsSetByUser(&maxBytesSet))
		storagePath   = app.Flag("storage.path", "Directory where the state (every rule's series and windows, each followed file's position) is kept across restarts: written every --storage.snapshot-interval and at shutdown, read at start (empty: none).").PlaceHolder("DIR").String()
		snapshotSet   bool
		snapshotEvery = app.Flag("storage.snapshot-interval", "How often the state is written to --storage.path; after a kill, the lines read since the last snapshot are read again.").Default(pipeline.DefaultSnapshotInterval.String()).IsSetByUser(&snapshotSet).Duration()
		webFlags      = kingpinflag.AddFlags(app, defaultListenAddress)
	)
	logConfig := &promslog.Config{}
	promslogflag.AddFlags(app, logConfig)
	app.Version(versionText)
	app.HelpFlag.Short('h')
	_, err := app.Parse(args)
	endPrinting()
	if terminated || out.err != nil { // help or version text, its failed write told above
		return exit
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", exporterName, flagError(app, args, err))
		return 2
	}
	if err := server.CheckTelemetryPath(*metricsPath); err != nil {
		fmt.Fprintf(stderr, "%s: --web.telemetry-path: %v\n", exporterName, err)
		return 2
	}
	logConfig.Writer = stderr
	logger := promslog.New(logConfig)

	// A web timeout of 0 is none; the pipeline and its followers take a snapshot interval,
	// rotation grace or poll interval of 0 for their default (10s, 5s, 250ms), not for none.
	for _, d := range []struct {
		flag     string
		d        time.Duration
		positive bool
	}{{"web.read-timeout", *readTimeout, false}, {"web.write-timeout", *writeTimeout, false}, {"web.idle-timeout", *idleTimeout, false},
		{"storage.snapshot-interval", *snapshotEvery, true}, {"input.rotation-grace", *rotationGrace, true}, {"input.poll-interval", *pollInterval, true}} {
		switch {
		case d.positive && d.d <= 0:
			fmt.Fprintf(stderr, "%s: --%s must be positive\n", exporterName, d.flag)
			return 2
		case d.d < 0:
			fmt.Fprintf(stderr, "%s: --%s may not be negative\n", exporterName, d.flag)
			return 2
		}
	}
	// The followers refuse a cap past this, failing the start with an error of theirs; 0
	// would read as no cap, where they take it for their default.
	if *maxLineBytes < 1 || *maxLineBytes > follow.MaxMaxLineBytes {
		fmt.Fprintf(stderr, "%s: --input.max-line-bytes must be between 1 and %d (64 MiB)\n", exporterName, follow.MaxMaxLineBytes)
		return 2
	}
	if *maxConns < 1 || *maxRequests < 0 {
		fmt.Fprintf(stderr, "%s: --web.max-connections must be at least 1, --web.max-requests at least 0\n", exporterName)
		return 2
	}
	if err := checkOneShots(*configCheck, *dashboardOut, *replayFiles, explainSet, *explainFile, explainOpts, *sampleFiles); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", exporterName, err)
		return 2
	}
	if *explainLines < 1 {
		fmt.Fprintf(stderr, "%s: --explain.lines must be at least 1\n", exporterName)
		return 2
	}
	// The flags' mistakes the start warns of are warned of before the one-shots: by
	// --config.check too, which is to say what the start would.
	for _, size := range []struct {
		flag string
		n    int64
	}{{"series.max-bytes", *maxBytes}, {"web.max-scrape-bytes", *maxScrape}, {"input.backfill-bytes", *backfill}} {
		// A plain number is bytes: 512 meant as 512MiB bounds the series or the scrapes to
		// nothing, which would fold every label set and serve every scrape alone.
		if size.n > 0 && size.n < 1<<20 {
			logger.Warn("a size under 1 MiB: a number without a unit is bytes", "flag", "--"+size.flag, "bytes", size.n)
		}
	}
	if snapshotSet && *storagePath == "" {
		// The interval asks for snapshots the exporter would not write: state lost at a
		// restart that the user meant to keep.
		logger.Warn("--storage.snapshot-interval does nothing without --storage.path: no state is kept across restarts")
	}
	if *maxRequests == 0 && maxScrapeSet && *maxScrape > 0 {
		// The budget is kept by the scrape limiter, which --web.max-requests=0 turns off.
		logger.Warn("--web.max-scrape-bytes does nothing with --web.max-requests=0: no scrape is limited")
	}
	server.WarnConnectionRoom(server.Options{Logger: logger, MaxRequests: *maxRequests, Lifecycle: *lifecycle, LineTester: *lineTester}, *maxConns, false)
	if *configFile == "" {
		file, err := defaultConfigFile(logger)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", exporterName, err)
			return 1
		}
		*configFile = file
	}
	// The one-shots print and exit: they keep SIGHUP's default action and watch no file.
	oneShot := *dashboardOut || len(*replayFiles) > 0 || *explainFile != ""
	var hangups chan os.Signal
	if !*configCheck && !oneShot {
		// Caught before the rule file is read, which takes seconds for thousands of rules:
		// a SIGHUP meanwhile would end the process with the signal's default action. It is
		// the reload it asks for once the server runs, which reads the file again.
		hangups = make(chan os.Signal, 1)
		signal.Notify(hangups, syscall.SIGHUP)
		defer signal.Stop(hangups)
	}
	var watch *configwatch.Watcher
	var watchErr error
	if *configWatch && !oneShot {
		// Before the load: a change in between reloads once more instead of going unseen.
		// With --config.check too, which must refuse the file the watch refuses (a pipe),
		// among its other errors.
		w, err := configwatch.New(*configFile)
		if err != nil {
			watchErr = fmt.Errorf("%s: --config.watch: %w", exporterName, err)
			if !*configCheck {
				fmt.Fprintln(stderr, watchErr)
				return 1
			}
		}
		watch = w
	}
	cfg, err := loadConfig(*configFile)
	if *configCheck {
		// The bound is the start's, which the rules' budgets are checked against.
		bound := memoryBound(logger, *maxBytes, maxBytesSet)
		return configcheck.Run(cfg, err, watchErr, *configFile, webFlags, *sampleFiles,
			pipeline.Options{Now: time.Now, Logger: logger, MaxLineBytes: *maxLineBytes, Summary: stderr, SeriesMaxBytes: bound.Bytes}, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *dashboardOut {
		// A dashboard cut short (a full disk, a closed pipe) is an error, not a success.
		if err := dashboard.Write(stdout, cfg, dashboard.Options{}); err != nil {
			fmt.Fprintf(stderr, "writing the dashboard: %v\n", err)
			return 1
		}
		return 0
	}
	bound := memoryBound(logger, *maxBytes, maxBytesSet)
	softLimit := bound.SoftLimit
	if os.Getenv("GOMEMLIMIT") != "" {
		// The runtime read it at start (and refused garbage there): the user's is kept.
		softLimit = debug.SetMemoryLimit(-1)
		if err := bound.CheckUserLimit(softLimit); err != nil {
			logger.Warn("GOMEMLIMIT does not fit the memory bound", "err", err)
		}
	} else if softLimit > 0 {
		// The bound counts what the series hold; the garbage collector lets the heap grow
		// to twice what is live unless told otherwise, so a process held to the bound could
		// still take twice it from the node.
		debug.SetMemoryLimit(softLimit)
		if err := bound.CheckSoftLimit(); err != nil {
			logger.Warn("--series.max-bytes does not fit the container's memory limit", "err", err)
		}
	}
	opts := pipeline.Options{
		Now:            time.Now,
		Logger:         logger,
		MaxLineBytes:   *maxLineBytes,
		RotationGrace:  *rotationGrace,
		PollInterval:   *pollInterval,
		BackfillBytes:  *backfill,
		SeriesMaxBytes: bound.Bytes,

		SeriesMaxBytesSource: string(bound.Source),
		// The one-shots keep no state: only the server reads and writes the snapshot.
		StoragePath:      *storagePath,
		SnapshotInterval: *snapshotEvery,
	}
	if *explainFile != "" {
		// The lines come with an error too when no input reads the file and no rule
		// matched any: they show why. The summary of the input follows them.
		var summary bytes.Buffer
		opts.Summary = &summary
		out := bufio.NewWriter(stdout)
		err := pipeline.Explain(cfg, *explainFile, *explainLines, opts, func(l explain.Line) error {
			return explain.Write(out, *explainFormat, []explain.Line{l})
		})
		if ferr := out.Flush(); err == nil {
			err = ferr
		}
		_, _ = summary.WriteTo(stderr)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	if len(*replayFiles) > 0 {
		opts.Summary = stderr
		if err := pipeline.Replay(cfg, *replayFiles, opts, stdout); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	scrapeMax := scrapeBudget(*maxScrape, maxScrapeSet, bound.Bytes)
	if *maxRequests == 0 {
		scrapeMax = 0 // see the warning of --web.max-scrape-bytes above
	}
	logger.Info("memory bound", "series_max_bytes", bound.Bytes, "from", bound.Source, "container_limit", bound.Limit, "soft_limit", softLimit, "scrape_max_bytes", scrapeMax)
	err = server.Serve(cfg, opts, webFlags, server.Options{
		Name:           exporterName,
		Logger:         logger,
		MetricsPath:    *metricsPath,
		Lifecycle:      *lifecycle,
		Watch:          watch,
		Hangups:        hangups,
		LineTester:     *lineTester,
		ReadTimeout:    *readTimeout,
		WriteTimeout:   *writeTimeout,
		IdleTimeout:    *idleTimeout,
		MaxConnections: *maxConns,
		MaxRequests:    *maxRequests,
		MaxScrapeBytes: scrapeMax,
	})
	if err != nil {
		logger.Error("exiting", "err", err)
		return 1
	}
	return 0
}

// checkOneShots refuses the one-shot flags given together that do not go together, which
// would otherwise leave all but one of them unheeded with exit 0: two one-shots (the one
// run would not be the one the user reads the output of), a flag of one without it (an
// --explain.lines without --explain starts the server), or an empty file name (an empty
// --explain, too, would start the server).
func checkOneShots(check, dashboard bool, replay []string, explainSet bool, explainFile string, explainOpts bool, sample []string) error {
	var given []string
	for _, m := range []struct {
		flag string
		on   bool
	}{{"--config.check", check}, {"--dashboard", dashboard}, {"--replay", len(replay) > 0}, {"--explain", explainSet}} {
		if m.on {
			given = append(given, m.flag)
		}
	}
	switch {
	case len(given) > 1:
		return fmt.Errorf("%s are one-shots of their own: give one of them", strings.Join(given, ", "))
	case len(sample) > 0 && !check:
		return errors.New("--sample applies to --config.check")
	case explainOpts && !explainSet:
		return errors.New("--explain.lines and --explain.format apply to --explain")
	case explainSet && explainFile == "", slices.Contains(replay, ""), slices.Contains(sample, ""):
		return errors.New("--explain, --replay and --sample take a file name, not an empty one")
	}
	return nil
}

// memoryBound is the series' memory bound of --series.max-bytes (flagBytes, when set) or
// of the container's memory limit, its trouble logged.
func memoryBound(logger *slog.Logger, flagBytes int64, set bool) memlimit.Bound {
	bound, err := memlimit.Choose(rootFS, flagBytes, set)
	switch {
	case err != nil && set:
		logger.Warn("could not read the container's memory limit: --series.max-bytes and GOMEMLIMIT are not checked against it", "err", err)
	case err != nil:
		logger.Warn("could not read the container's memory limit: --series.max-bytes defaults to 512MiB", "err", err)
	}
	if err := bound.CheckFlag(); err != nil {
		logger.Warn("--series.max-bytes does not fit the container's memory limit", "err", err)
	}
	return bound
}

// scrapeBudget is --web.max-scrape-bytes: flagBytes when given (set), else half the
// series' bound, so that the series and the scrapes together stay within the Go runtime's
// soft limit of 1.5 times it; none when the series have none.
func scrapeBudget(flagBytes int64, set bool, seriesBytes int64) int64 {
	if set {
		return flagBytes
	}
	return seriesBytes / 2
}

// defaultConfigFiles are the rule files read when --config.file is not given, the first
// that exists: the name the exporter always read, then the extension of every example.
var defaultConfigFiles = []string{"logwindow.yml", "logwindow.yaml"}

// defaultConfigFile picks the rule file when --config.file is not given, and logs which:
// when both exist the first is read (the one an older version read) with a warning, as
// the two may differ.
func defaultConfigFile(logger *slog.Logger) (string, error) {
	var found []string
	for _, f := range defaultConfigFiles {
		// Lstat: a link to nothing is there too, and its load says where it leads.
		if _, err := os.Lstat(f); !errors.Is(err, fs.ErrNotExist) {
			found = append(found, f) // a file that cannot be looked at is reported by the load
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no --config.file given, and none of %s is in the working directory", strings.Join(defaultConfigFiles, ", "))
	case 1:
		logger.Info("no --config.file given: reading the default rule file", "file", found[0])
	default:
		logger.Warn("no --config.file given and several default rule files exist: reading the first, pass --config.file to choose", "file", found[0], "ignored", strings.Join(found[1:], ", "))
	}
	return found[0], nil
}

// byteSize is a flag's number of bytes: with a unit, as kingpin's Bytes reads it (512MiB,
// 1GB), or a plain number of bytes, which Bytes refuses ("unknown unit") though it is what
// a user computing a limit writes. Its errors name the flag, which kingpin's do not for a
// value of one's own.
type byteSize struct {
	flag string
	n    int64
}

// Set reads s as a plain number of bytes, else as a number with a unit.
func (b *byteSize) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		u, uerr := units.ParseBase2Bytes(s)
		if uerr != nil {
			return fmt.Errorf("--%s=%q: want bytes, as a number (134217728) or with a unit (128MiB, 1GB)", b.flag, s)
		}
		n = int64(u)
	}
	if n < 0 {
		return fmt.Errorf("--%s=%q: may not be negative", b.flag, s)
	}
	b.n = n
	return nil
}

// String is the size with its unit, as kingpin shows a default.
func (b *byteSize) String() string { return units.Base2Bytes(b.n).String() }

// bytesFlag makes c a byteSize flag and returns where its value is.
func bytesFlag(c *kingpin.FlagClause) *int64 {
	v := &byteSize{flag: c.Model().Name}
	c.SetValue(v)
	return &v.n
}

// flagError is err of app.Parse(args) with the flag whose value it refuses named: kingpin
// returns a value's own error alone (`strconv.ParseFloat: parsing "2MiB": invalid
// syntax`), which leaves a user of many flags to guess. Each flag's value is set again in
// turn, its error compared with err; the values are not used after.
func flagError(app *kingpin.Application, args []string, err error) error {
	ctx, perr := app.ParseContext(args)
	if perr != nil {
		return err
	}
	for _, e := range ctx.Elements {
		f, ok := e.Clause.(*kingpin.FlagClause)
		if !ok || e.Value == nil {
			continue
		}
		m := f.Model()
		if serr := m.Value.Set(*e.Value); serr == nil || serr.Error() != err.Error() {
			continue
		}
		if strings.Contains(err.Error(), "--"+m.Name) { // the value's own error names it
			return err
		}
		return fmt.Errorf("--%s=%s: %w", m.Name, *e.Value, err)
	}
	return err
}

// loadConfig loads the rule file at the start: config.Load, which a test replaces to act
// while the file loads.
var loadConfig = config.Load
