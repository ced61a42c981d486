// Command bench measures logwindow_exporter end to end: it generates an nginx access log
// with gen-nginx-log.py, has the real binary read it from the beginning through
// example-rules.yaml (file → rules → wheels → scrape), optionally has Debian's mtail read the
// same file with the equivalent program in nginx.mtail, and prints lines/s, CPU time per
// line and peak RSS, with medians over the runs and the ratio to mtail.
//
// Every run is checked: its `_total`s must equal the counts of the generated log, taken by
// plain string splitting, or the benchmark fails.
//
//	go run ./bench -lines 1000000 -runs 3 -mtail    # one file, one core (GOMAXPROCS=1)
//	go run ./bench -rules 5 -mtail                   # ten rules over the pattern
//	go run ./bench -files 2                          # two inputs, two cores
//	go run ./bench -scrape                           # scrape time and RSS with 10k series
//	go run ./bench -without nginx_http_clients       # what a rule costs: the file without it beside
//
// The machine may be shared: wall time (lines/s) then depends on the neighbours, CPU time
// per line much less, and the two tools are interleaved run by run so that both see the
// same load.
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

//go:embed nginx.mtail
var mtailProgram []byte

// generatorEnv names gen-nginx-log.py when it is not the module's tools/gen-nginx-log.py
// (the tests' generator reads the same variable).
const generatorEnv = nginxlog.Env

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command line.
type options struct {
	lines, seed, runs, files, procs int
	extraRules                      int
	mode                            string
	mtail, scrape, likeMtail, node  bool
	// instructions: our live runs under cachegrind, their instructions counted.
	instructions bool
	// rewrite: each rule file also runs with the ids in its path labels rewritten.
	rewrite bool
	// without: the first rule file also runs without each of these sets of rules.
	without         [][]string
	series, scrapes int
	gen, mtailBin   string
	// configs are the rule files, each a program of its own (-config, repeated).
	configs []string
	// configJSON is the rule file of the json and logfmt forms of the log.
	configJSON    string
	formats       []string
	bins          []string
	poll, timeout time.Duration
}

// ruleFile is a rule file written for the runs, the name that tells its program from the
// others', and the counts its program must expose.
type ruleFile struct {
	path, name string
	want       expected
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.lines, "lines", 1000000, "lines per generated log file")
	fs.IntVar(&o.seed, "seed", 1, "generator seed of the first file (the next ones use seed+1, ...)")
	fs.IntVar(&o.runs, "runs", 3, "runs of each program; the table shows medians")
	fs.IntVar(&o.files, "files", 1, "log files, each its own input read concurrently (live mode)")
	fs.IntVar(&o.procs, "procs", 0, "GOMAXPROCS of the measured programs (0: one per file); above -files, each input's shards: (parse workers) is -procs/-files")
	fs.BoolVar(&o.node, "node", false, "the files as the pod logs of one node (CRI lines under <ns>_<pod>_<uid>/nginx/0.log), read by one input over their glob with path_captures and shards: -procs, every rule labelled by namespace and pod")
	fs.IntVar(&o.extraRules, "rules", 0, "extra counting rules over the same pattern (and extra mtail blocks), to see the cost per rule")
	fs.StringVar(&o.mode, "mode", "live", "live: serve and scrape until every line is counted; replay: --replay, one-shot")
	fs.BoolVar(&o.mtail, "mtail", false, "also run mtail --one_shot with nginx.mtail on the same files")
	fs.BoolVar(&o.likeMtail, "like-mtail", false, "remove what mtail's program cannot compute (the rules with distinct:, and top: with the label it ranks), so that -mtail compares the same counters")
	fs.BoolVar(&o.instructions, "instructions", false, "run the exporter under valgrind's cachegrind and count the instructions it executes a line, in all and by the module's packages: a count the machine's load does not move (its CPU times then are valgrind's)")
	fs.BoolVar(&o.rewrite, "rewrite", false, "also run each rule file with the ids in its rules' path labels rewritten ("+pathRewrite+"), as a program of its own in the same runs")
	fs.BoolVar(&o.scrape, "scrape", false, "also time scrapes of a rule holding -series series (first file only)")
	fs.IntVar(&o.series, "series", 10000, "series budget of the scrape benchmark's rule")
	fs.IntVar(&o.scrapes, "scrapes", 10, "scrapes timed by the scrape benchmark")
	fs.StringVar(&o.gen, "gen", os.Getenv(generatorEnv), "gen-nginx-log.py (default: $"+generatorEnv+" or the module's tools/)")
	fs.Func("bin", "logwindow_exporter binary (default: build the module); repeat to compare builds run by run", func(v string) error {
		o.bins = append(o.bins, v)
		return nil
	})
	fs.Func("without", "also run the first rule file without the rules of these comma-separated names, as a program of its own in the same runs, to see what they cost; repeatable", func(v string) error {
		o.without = append(o.without, strings.Split(v, ","))
		return nil
	})
	fs.Func("config", "rule file whose inputs are replaced (default: the module's example-rules.yaml); repeat to compare rule files run by run", func(v string) error {
		o.configs = append(o.configs, v)
		return nil
	})
	fs.StringVar(&o.mtailBin, "mtail.bin", "mtail", "mtail binary")
	fs.StringVar(&o.configJSON, "config.json", "", "rule file of the json and logfmt forms (default: the module's example-rules-json.yaml)")
	formats := fs.String("formats", "text", "comma-separated log formats to run, each a program of its own on the same records: "+strings.Join(formatNames, ", "))
	fs.DurationVar(&o.poll, "poll", 5*time.Millisecond, "shortest interval of the checks whether the lines are counted (live mode; longer ones while much is left to read)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "limit of one run")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.procs == 0 {
		o.procs = o.files
	}
	o.formats = strings.Split(*formats, ",")
	for _, f := range o.formats {
		if !slices.Contains(formatNames, f) {
			return o, fmt.Errorf("-formats: %q is not one of %s", f, strings.Join(formatNames, ", "))
		}
		if f != "text" && o.extraRules > 0 {
			return o, errors.New("-rules adds regex rules: it runs with -formats text only")
		}
		if f != "text" && o.rewrite {
			return o, errors.New("-rewrite varies the text rule files: it runs with -formats text only")
		}
		if f != "text" && len(o.without) > 0 {
			return o, errors.New("-without varies the text rule files: it runs with -formats text only")
		}
	}
	switch {
	case o.lines < 1 || o.runs < 1 || o.files < 1 || o.procs < 1 || o.series < 1 || o.scrapes < 1:
		return o, errors.New("-lines, -runs, -files, -procs, -series and -scrapes must be positive")
	case o.extraRules < 0:
		return o, errors.New("-rules must not be negative")
	case o.mode != "live" && o.mode != "replay":
		return o, fmt.Errorf("-mode %q: want live or replay", o.mode)
	case o.poll <= 0 || o.timeout <= 0:
		return o, errors.New("-poll and -timeout must be positive")
	case o.node && (o.mtail || len(o.formats) > 1 || o.formats[0] != "text"):
		return o, errors.New("-node reads the text logs as CRI lines: not with -mtail or -formats")
	case o.instructions && (o.mode != "live" || o.mtail || o.scrape):
		return o, errors.New("-instructions counts live runs of the exporter: not with -mode replay, -mtail or -scrape")
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	if err := bench(o, stdout); err != nil {
		fmt.Fprintln(stderr, "bench: FAIL:", err)
		return 1
	}
	return 0
}

// bench is the whole benchmark; any failed check ends it with an error.
func bench(o options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "logwindow-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := o.locate(dir); err != nil {
		return err
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		return fmt.Errorf("python3 runs the log generator: %w", err)
	}

	paths := make([]string, o.files)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("access-%d.log", i+1))
	}
	began := time.Now()
	perFile, err := generate(python, o.gen, o.lines, o.seed, paths, time.Now())
	if err != nil {
		return err
	}
	counts := newTally()
	for _, t := range perFile {
		counts.merge(t)
	}
	if counts.unparsed > 0 {
		return fmt.Errorf("%d generated lines do not have the expected shape", counts.unparsed)
	}
	total := counts.lines
	fmt.Fprintf(out, "log: %d file(s) × %d lines of gen-nginx-log.py (seed %d), re-dated to end now; generated in %.1fs\n",
		o.files, o.lines, o.seed, time.Since(began).Seconds())
	for _, c := range o.configs {
		fmt.Fprintf(out, "rules: %s plus %d copies of its request count over the same pattern\n", filepath.Base(c), o.extraRules)
	}
	if o.rewrite {
		fmt.Fprintf(out, "rules: each file also with the ids in its path labels rewritten (-rewrite: %s)\n", pathRewrite)
	}
	if o.likeMtail {
		fmt.Fprintln(out, "rules: without the distinct: rules and top: (-like-mtail), as mtail's program computes neither")
	}
	for _, names := range o.without {
		fmt.Fprintf(out, "rules: %s also without %s (-without)\n", filepath.Base(o.configs[0]), strings.Join(names, ", "))
	}
	fmt.Fprintf(out, "machine: %d CPUs, load average %s; measured programs run with GOMAXPROCS=%d\n\n",
		runtime.NumCPU(), loadAverage(), o.procs)

	node, read := "", paths // read: the files the programs read
	if o.node {
		node = filepath.Join(dir, "node")
		if read, err = podLogs(node, paths); err != nil {
			return err
		}
		fmt.Fprintf(out, "node: the logs as %d pods' nginx logs in CRI lines, one input over %s, its files shared by %d followers (shards: GOMAXPROCS)\n\n", len(read), filepath.Join(node, "*_*_*", "nginx", "*.log"), max(o.procs, 1))
	}
	// rules are the text rule files, each a program of its own: each config, with -rewrite
	// each config again with its paths rewritten, and with -without the first config
	// without each set of rules named.
	want := counts.exampleTotals(o.extraRules)
	base := benchConfig{inputs: paths, extraRules: o.extraRules, likeMtail: o.likeMtail, node: node, shards: o.shards()}
	var rules []ruleFile
	for _, rewrite := range []bool{false, true} {
		if rewrite && !o.rewrite {
			break
		}
		for i, c := range o.configs {
			rf := ruleFile{filepath.Join(dir, fmt.Sprintf("rules-%d.yaml", i+1)), filepath.Base(c), want}
			if rewrite {
				rf.name += " rewrite"
				rf.path = filepath.Join(dir, fmt.Sprintf("rules-%d-rewrite.yaml", i+1))
			}
			bc := base
			bc.rewrite = rewrite
			if err := bc.write(c, rf.path); err != nil {
				return err
			}
			rules = append(rules, rf)
		}
	}
	for i, without := range o.without {
		rf := ruleFile{filepath.Join(dir, fmt.Sprintf("rules-without-%d.yaml", i+1)),
			filepath.Base(o.configs[0]) + " without " + strings.Join(without, ", "), want}
		for _, name := range without {
			rf.want = rf.want.without(name + "_total")
		}
		bc := base
		bc.without = without
		if err := bc.write(o.configs[0], rf.path); err != nil {
			return err
		}
		rules = append(rules, rf)
	}
	progs := filepath.Join(dir, "progs")
	if o.mtail {
		if err := os.Mkdir(progs, 0o755); err != nil {
			return err
		}
		prog := append(slices.Clip(mtailProgram), mtailCopies(o.extraRules)...)
		if err := os.WriteFile(filepath.Join(progs, "nginx.mtail"), prog, 0o644); err != nil {
			return err
		}
	}

	var programs []program
	for _, format := range o.formats {
		fpaths, frules := read, rules
		if format != "text" {
			rf := ruleFile{want: want}
			if fpaths, rf.path, err = o.structuredForm(dir, format, paths); err != nil {
				return err
			}
			frules = []ruleFile{rf}
		}
		for _, rf := range frules {
			for _, bin := range o.bins {
				name := "logwindow " + o.mode
				if len(o.formats) > 1 {
					name += " " + format
				}
				if len(frules) > 1 {
					name += " " + rf.name
				}
				if len(o.bins) > 1 {
					name += " " + filepath.Base(bin)
				}
				programs = append(programs, program{name, func() (usage, error) { return o.runOurs(bin, rf.path, fpaths, total, rf.want) }})
			}
		}
	}
	// With several inputs or cores, the first file alone on one core, in the same runs:
	// what the inputs' lines/s and CPU per line are compared with.
	// oneCore, with -node on more than one core, is every pod log on one core.
	single, oneCore := -1, -1
	if (o.files > 1 || o.procs > 1) && o.mode == "live" && len(o.formats) == 1 && o.formats[0] == "text" {
		one := filepath.Join(dir, "rules-one.yaml")
		oneNode, oneRead := "", read[:1]
		if o.node {
			// The first pod alone on a node of its own: its log linked, not copied.
			oneNode = filepath.Join(dir, "node-one")
			rel, err := filepath.Rel(node, read[0])
			if err != nil {
				return err
			}
			oneRead = []string{filepath.Join(oneNode, rel)}
			if err := os.MkdirAll(filepath.Dir(oneRead[0]), 0o755); err != nil {
				return err
			}
			if err := os.Link(read[0], oneRead[0]); err != nil {
				return err
			}
		}
		if err := (benchConfig{inputs: paths[:1], extraRules: o.extraRules, likeMtail: o.likeMtail, node: oneNode}).write(o.configs[0], one); err != nil {
			return err
		}
		o1 := o
		o1.procs = 1
		wantOne, lines := perFile[0].exampleTotals(o.extraRules), perFile[0].lines
		single = len(programs)
		name := "logwindow live, 1 input"
		if o.node {
			name = "logwindow live, 1 pod log"
		}
		programs = append(programs, program{name, func() (usage, error) {
			return o1.runOurs(o.bins[0], one, oneRead, lines, wantOne)
		}})
		if o.node && o.procs > 1 {
			// Every pod on one follower and one core: against it, the first program is the
			// parallelism alone, and it against one pod the cost of more pods' series.
			all := filepath.Join(dir, "rules-one-core.yaml")
			if err := (benchConfig{inputs: paths, extraRules: o.extraRules, likeMtail: o.likeMtail, node: node}).write(o.configs[0], all); err != nil {
				return err
			}
			oneCore = len(programs)
			programs = append(programs, program{fmt.Sprintf("logwindow live, %d pod logs on 1 core", o.files), func() (usage, error) {
				return o1.runOurs(o.bins[0], all, read, total, want)
			}})
		}
	}
	if o.mtail {
		programs = append(programs, program{"mtail", func() (usage, error) { return o.runMtail(progs, paths, want) }})
	}
	// linesOf is how many lines program j read: the one-input program, the first file's.
	linesOf := func(j int) int {
		if j == single {
			return perFile[0].lines
		}
		return total
	}
	results := make([][]usage, len(programs))
	for i := range o.runs {
		for _, j := range roundOrder(i, len(programs)) {
			p := programs[j]
			u, err := p.run()
			if err != nil {
				return fmt.Errorf("%s run %d: %w", p.name, i+1, err)
			}
			results[j] = append(results[j], u)
			fmt.Fprintf(out, "run %d: %s checked, %.2fs wall, %.2fs CPU\n", i+1, p.name, u.wall.Seconds(), u.cpu.Seconds())
		}
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "program\trun\twall s\tlines/s\tCPU s\tCPU-µs/line\tlines/CPU-s\tpeak RSS MB\t")
	for j, p := range programs {
		for i, u := range results[j] {
			row(tw, p.name, fmt.Sprint(i+1), u, linesOf(j))
		}
	}
	med := make([]usage, len(programs))
	for j, p := range programs {
		med[j] = median(results[j])
		row(tw, p.name, "median", med[j], linesOf(j))
	}
	tw.Flush()
	fmt.Fprintf(out, "every run's _totals equal the generated log's counts (%d lines)\n", total)
	var counted []instructions
	if o.instructions {
		names, lines := make([]string, len(programs)), make([]int, len(programs))
		for j, p := range programs {
			names[j], lines[j] = p.name, linesOf(j)
			counted = append(counted, medianInstructions(results[j]))
		}
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		printInstructions(tw, names, counted, lines)
		tw.Flush()
	}
	// Ratios of medians: each other program against the first.
	for j := 1; j < len(programs); j++ {
		if j == single || j == oneCore {
			continue // compared below, per line
		}
		a, b := med[0], med[j]
		if counted != nil {
			fmt.Fprintf(out, "%s / %s (medians): %.4f× the instructions, %.4f× the module's\n", programs[j].name, programs[0].name,
				float64(counted[j].total)/float64(counted[0].total), float64(counted[j].module())/float64(counted[0].module()))
			continue
		}
		fmt.Fprintf(out, "%s / %s (medians): %.2f× the wall time, %.2f× the CPU per line, %.2f× the peak RSS\n",
			programs[j].name, programs[0].name, b.wall.Seconds()/a.wall.Seconds(), b.cpu.Seconds()/a.cpu.Seconds(), float64(b.rss)/float64(a.rss))
	}
	if single >= 0 {
		what := fmt.Sprintf("%d inputs on %d cores / 1 input on 1 core", o.files, o.procs)
		switch {
		case o.node:
			what = fmt.Sprintf("%d pod logs on one input, %d cores / 1 pod log on 1 core", o.files, o.procs)
		case o.files == 1:
			what = fmt.Sprintf("1 input on %d cores (shards: %d) / on 1 core", o.procs, o.shards())
		}
		compare(out, what, results[0], results[single], linesOf(0), linesOf(single))
		if oneCore >= 0 {
			compare(out, fmt.Sprintf("of which the parallelism, %d pod logs on %d cores / on 1 core", o.files, o.procs),
				results[0], results[oneCore], total, total)
			compare(out, fmt.Sprintf("and the pods' series, %d pod logs / 1 pod log, both on 1 core", o.files),
				results[oneCore], results[single], total, linesOf(single))
		}
	}
	if o.scrape {
		fmt.Fprintln(out)
		return o.scrapeBench(dir, paths[0], perFile[0], out)
	}
	return nil
}

// shards is the `shards:` of the measured programs' inputs: the node input's followers,
// one per core; or each file input's parse workers, the cores beyond one per file.
func (o options) shards() int {
	if o.node {
		return o.procs
	}
	return o.procs / o.files
}

// structuredForm writes the logs at paths in format (json or logfmt) and the rule file
// reading them, and returns both.
func (o options) structuredForm(dir, format string, paths []string) ([]string, string, error) {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = strings.TrimSuffix(p, ".log") + "." + format
		if err := convert(p, out[i], format); err != nil {
			return nil, "", err
		}
	}
	rules := filepath.Join(dir, "rules-"+format+".yaml")
	return out, rules, benchConfig{inputs: out, format: format}.write(o.configJSON, rules)
}

// locate fills in the binary, the example config and the generator from the module's
// directory, building the binary into dir.
func (o *options) locate(dir string) error {
	if len(o.bins) > 0 && len(o.configs) > 0 && o.gen != "" {
		return nil
	}
	mod, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return fmt.Errorf("finding the module (run inside it, or give -bin, -config and -gen): %w", err)
	}
	root := strings.TrimSpace(string(mod))
	if len(o.configs) == 0 {
		o.configs = []string{filepath.Join(root, "example-rules.yaml")}
	}
	if o.configJSON == "" {
		o.configJSON = filepath.Join(root, "example-rules-json.yaml")
	}
	if o.gen == "" {
		o.gen = filepath.Join(root, "tools", "gen-nginx-log.py")
	}
	if _, err := os.Stat(o.gen); err != nil {
		return fmt.Errorf("log generator: %w (give -gen or $%s)", err, generatorEnv)
	}
	if len(o.bins) == 0 {
		bin, err := testexec.Build(dir, false)
		if err != nil {
			return err
		}
		o.bins = []string{bin}
	}
	return nil
}

// program is one of the programs compared.
type program struct {
	name string
	run  func() (usage, error)
}

// runOurs is one run of the exporter bin over the files, checked against want.
func (o options) runOurs(bin, rules string, paths []string, lines int, want expected) (usage, error) {
	check := func(s scrape) error {
		if err := want.check(s.values); err != nil {
			return err
		}
		if dropped := s.values.sum("logwindow_rule_dropped_lines_total"); dropped != 0 {
			return fmt.Errorf("%v lines dropped (late, future, no value...): the log should give none", dropped)
		}
		return s.checkWindows()
	}
	if o.mode == "replay" {
		args := []string{"--config.file=" + rules}
		for _, p := range paths {
			args = append(args, "--replay="+p)
		}
		u, s, err := runOneShot(o.procs, bin, args...)
		if err != nil {
			return u, err
		}
		return u, check(s)
	}
	counts := ""
	if o.instructions {
		f, err := os.CreateTemp(filepath.Dir(rules), "cachegrind-*.out")
		if err != nil {
			return usage{}, err
		}
		counts = f.Name()
		f.Close()
		defer os.Remove(counts)
	}
	l, err := startLive(bin, rules, o.procs, counts)
	if err != nil {
		return usage{}, err
	}
	defer l.kill()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	size, err := totalSize(paths)
	if err != nil {
		return usage{}, err
	}
	wall, first, err := l.waitLines(ctx, lines, size, o.poll)
	if err != nil {
		return usage{}, err
	}
	if err := l.settle(first, check, o.poll); err != nil {
		return usage{}, err
	}
	u, err := l.stop(wall)
	if err == nil && o.instructions {
		u.instr, err = readCachegrind(counts)
	}
	return u, err
}

// runMtail is one run of mtail --one_shot over the files, checked against want.
func (o options) runMtail(progs string, paths []string, want expected) (usage, error) {
	u, s, err := runOneShot(o.procs, o.mtailBin,
		"--one_shot", "--one_shot_format=prometheus", "--progs="+progs, "--logs="+strings.Join(paths, ","),
		// one_shot still listens; a free port keeps runs from clashing with other mtails.
		"--address=127.0.0.1", "--port=0", "--logtostderr", "--stderrthreshold=ERROR")
	if err != nil {
		return u, err
	}
	return u, want.check(s.values)
}

func totalSize(paths []string) (int64, error) {
	var n int64
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return 0, err
		}
		n += fi.Size()
	}
	return n, nil
}

// row prints one line of the results table.
func row(w io.Writer, name, run string, u usage, lines int) {
	fmt.Fprintf(w, "%s\t%s\t%.3f\t%s\t%.3f\t%.3f\t%s\t%.1f\t\n", name, run,
		u.wall.Seconds(), thousands(float64(lines)/u.wall.Seconds()),
		u.cpu.Seconds(), u.cpu.Seconds()*1e6/float64(lines), thousands(float64(lines)/u.cpu.Seconds()),
		float64(u.rss)/(1<<20))
}

// median takes the median of each measure on its own.
func median(us []usage) usage {
	pick := func(f func(usage) float64) float64 {
		v := make([]float64, len(us))
		for i, u := range us {
			v[i] = f(u)
		}
		slices.Sort(v)
		return sortedMedian(v)
	}
	return usage{
		wall: time.Duration(pick(func(u usage) float64 { return float64(u.wall) })),
		cpu:  time.Duration(pick(func(u usage) float64 { return float64(u.cpu) })),
		rss:  int64(pick(func(u usage) float64 { return float64(u.rss) })),
	}
}

// roundOrder is the order in which round i runs n programs: each round starts one
// program further on. A program's place in a round (the first after the log's
// generation, or after a given other) moves its CPU time by several percent on a shared
// host; rotating the order spreads that over all of them alike instead of charging it to
// the first given.
func roundOrder(i, n int) []int {
	order := make([]int, n)
	for k := range order {
		order[k] = (i + k) % n
	}
	return order
}

// sortedMedian is the median of v, sorted and not empty.
func sortedMedian(v []float64) float64 {
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// compare prints how program b's runs of bLines lines compare with a's of aLines, in lines/s
// and CPU per line: the ratio of the medians, and the median and range of the rounds' own
// ratios. The programs of a round run one after the other, so a round's ratio is spared
// the slower swings of a shared machine's speed that the medians of each are not.
func compare(out io.Writer, what string, a, b []usage, aLines, bLines int) {
	speed := func(x, y usage) float64 {
		return (float64(aLines) / x.wall.Seconds()) / (float64(bLines) / y.wall.Seconds())
	}
	perLine := func(x, y usage) float64 {
		return (x.cpu.Seconds() / float64(aLines)) / (y.cpu.Seconds() / float64(bLines))
	}
	ma, mb := median(a), median(b)
	fmt.Fprintf(out, "%s (medians): %.2f× the lines/s, %.2f× the CPU per line", what, speed(ma, mb), perLine(ma, mb))
	if len(a) > 1 {
		var speeds, perLines []float64
		for i := range min(len(a), len(b)) {
			speeds = append(speeds, speed(a[i], b[i]))
			perLines = append(perLines, perLine(a[i], b[i]))
		}
		fmt.Fprintf(out, "; per round, median (range): %s× the lines/s, %s× the CPU per line", spread(speeds), spread(perLines))
	}
	fmt.Fprintln(out)
}

// spread formats the median of v and its range: 1.83 (1.67–2.11).
func spread(v []float64) string {
	v = slices.Sorted(slices.Values(v))
	return fmt.Sprintf("%.2f (%.2f–%.2f)", sortedMedian(v), v[0], v[len(v)-1])
}

// thousands formats a rate as 1,234,567.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
