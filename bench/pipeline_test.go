package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/pipeline"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/parser"
)

// rulesEnv names a rule file the in-process benchmarks read instead of example-rules.yaml
// (its inputs replaced as the example's are), so that a few rules can be measured or
// profiled alone.
const rulesEnv = "LOGWINDOW_BENCH_RULES"

// benchLog generates a re-dated log of lines lines into a temporary directory, writes the
// benchmark's version of example-rules.yaml (or of $LOGWINDOW_BENCH_RULES) for it and
// loads that.
func benchLog(b *testing.B, lines int, c benchConfig) (string, *config.Config, *tally) {
	b.Helper()
	gen := generator(b)
	dir := b.TempDir()
	path := filepath.Join(dir, "access.log")
	counts, err := generate("python3", gen, lines, 1, []string{path}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	c.inputs = []string{path}
	rules := filepath.Join(dir, "rules.yaml")
	src := filepath.Join("..", "example-rules.yaml")
	if env := os.Getenv(rulesEnv); env != "" {
		src = env
	}
	if err := c.write(src, rules); err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Load(rules)
	if err != nil {
		b.Fatal(err)
	}
	return path, cfg, counts[0]
}

// BenchmarkPipeline is the live path in process, with the binary's clock, for profiling:
// each op starts a pipeline on a 200,000-line log read from the beginning with
// example-rules.yaml, with 5 more rules over its pattern, and with the rules of the
// harness's -like-mtail (follow → parser → store → wheels), and stops it once a scrape
// shows every line read. It reports wall and CPU time
// per line: on a machine shared with other work, the process' CPU time moves less with
// their load than its wall time does. The follower's goroutines run under
// follow.(*Follower).readLoop, so
//
//	go test -run '^$' -bench Pipeline -benchtime 10x -cpuprofile cpu.out ./bench
//	go tool pprof -top -focus readLoop bench.test cpu.out
//
// leaves out the generation of the log.
func BenchmarkPipeline(b *testing.B) {
	const lines = 200000
	for _, tc := range []struct {
		name string
		c    benchConfig
	}{
		{"rules=5", benchConfig{}},
		{"rules=10", benchConfig{extraRules: 5}},
		{"like-mtail", benchConfig{likeMtail: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			_, cfg, _ := benchLog(b, lines, tc.c)
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				p, err := pipeline.Start(cfg, pipeline.Options{Now: time.Now})
				if err != nil {
					b.Fatal(err)
				}
				reg := prometheus.NewRegistry()
				reg.MustRegister(p.Collector())
				deadline := time.Now().Add(time.Minute)
				for linesRead(b, reg) < lines {
					if time.Now().After(deadline) {
						b.Fatal("the pipeline did not read the log within a minute")
					}
					time.Sleep(20 * time.Millisecond)
				}
				p.Stop()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/line")
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N*lines), "CPU-ns/line")
		})
	}
}

func linesRead(b *testing.B, g prometheus.Gatherer) float64 {
	families, err := g.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var n float64
	for _, mf := range families {
		if mf.GetName() == "logwindow_input_lines_total" {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// BenchmarkBytesPerSeries is the heap one series takes in the store (map entry, label
// values, totals and the wheels of the default windows) for a counting rule: the rule
// labelled by URL path is fed until it holds its budget of 10,000 series, by one input, or
// by two that write the same label sets (each then has a part of every series, with
// wheels of its own).
func BenchmarkBytesPerSeries(b *testing.B) {
	for _, inputs := range []int{1, 2} {
		b.Run(fmt.Sprintf("inputs=%d", inputs), func(b *testing.B) { bytesPerSeries(b, inputs) })
	}
}

func bytesPerSeries(b *testing.B, inputs int) {
	const budget = 10000
	path, cfg, counts := benchLog(b, 100000, benchConfig{pathRule: true, maxSeries: budget})
	series := counts.pathSeries(budget)
	if series <= budget {
		b.Fatalf("the log has only %d paths; the rule must reach its budget", series)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	p, err := parser.New(cfg.Rules)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().Unix()
	var perSeries float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		set, err := store.NewSetWith(cfg, nil, store.SetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for range inputs {
			sink := set.NewSink()
			sink.SetNow(now, now)
			for _, l := range lines {
				p.Parse("nginx", l, sink)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perSeries = float64(after.HeapAlloc-before.HeapAlloc) / float64(series)
		runtime.KeepAlive(set)
	}
	b.ReportMetric(perSeries, "B/series")
}

// BenchmarkInputsOneSet is the parser and store of the live path without the follower:
// one goroutine on one processor, or two on two, each parse the same 200,000-line log into
// one Set through a sink of their own, as inputs whose lines have the same label sets do.
// "inputs=2,apart" gives each goroutine a parser and a Set of its own, sharing nothing that
// is written, as two processes would: what two inputs cost beyond it is what they cost
// each other in one process. One op is every goroutine's pass; ns/line is wall time per
// line read in all, CPU-ns/line the process' CPU time per line (compare them within one
// run, and only in runs where two inputs took about half the wall time per line of one:
// else they did not run at once):
//
//	go test -run '^$' -bench InputsOneSet ./bench
//	LOGWINDOW_BENCH_RULES=rules.yaml go test -run '^$' -bench InputsOneSet ./bench
func BenchmarkInputsOneSet(b *testing.B) {
	const lines = 200000
	path, cfg, _ := benchLog(b, lines, benchConfig{})
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	log := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	for _, c := range []struct {
		name   string
		inputs int
		apart  bool
	}{{"inputs=1", 1, false}, {"inputs=2", 2, false}, {"inputs=2,apart", 2, true}} {
		b.Run(c.name, func(b *testing.B) {
			// Set here, not with -cpu: a benchmark using b.Loop runs before -cpu applies.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.inputs))
			now := time.Now().Unix()
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				parsers, sinks := make([]*parser.Parser, c.inputs), make([]*store.Sink, c.inputs)
				var p *parser.Parser
				var set *store.Set
				for i := range c.inputs {
					if i == 0 || c.apart {
						if p, err = parser.New(cfg.Rules); err != nil {
							b.Fatal(err)
						}
						if set, err = store.NewSetWith(cfg, nil, store.SetOptions{}); err != nil {
							b.Fatal(err)
						}
					}
					parsers[i], sinks[i] = p, set.NewSink()
				}
				runtime.GC()
				cpu0 := processCPU(b)
				b.StartTimer()
				var wg sync.WaitGroup
				for i := range c.inputs {
					p, sink := parsers[i], sinks[i]
					wg.Go(func() {
						sink.SetNow(now, now)
						for _, l := range log {
							p.Parse("nginx", l, sink)
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				cpu += processCPU(b) - cpu0
				b.StartTimer()
			}
			all := float64(b.N * c.inputs * len(log))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/all, "ns/line")
			b.ReportMetric(float64(cpu.Nanoseconds())/all, "CPU-ns/line")
		})
	}
}

// processCPU is the CPU time the process used so far, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkNode is node mode in process: the pipeline of one input over a kubelet-like tree
// of pod logs (CRI lines, path_captures, every rule labelled by namespace and pod), read
// from the beginning, against one pod's log. "pods=1,procs=1" is the one pod on one
// processor; "pods=8,procs=1" eight pods on one follower and one processor, so that the
// cost per line of eight pods' series is seen apart from the parallelism; "pods=8,procs=2"
// eight pods on two followers (shards: 2) and two processors. ns/line is wall time per
// line, CPU-ns/line the process' CPU time per line; with -cpuprofile, one sub-benchmark at
// a time (-bench 'Node/pods=8,procs=2') gives the profile of each:
//
//	go test -run '^$' -bench Node -benchtime 3x ./bench
func BenchmarkNode(b *testing.B) {
	const lines = 100000
	gen := generator(b)
	dir := b.TempDir()
	raw := filepath.Join(dir, "access.log")
	if _, err := generate("python3", gen, lines, 1, []string{raw}, time.Now()); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ pods, procs int }{{1, 1}, {8, 1}, {8, 2}} {
		b.Run(fmt.Sprintf("pods=%d,procs=%d", c.pods, c.procs), func(b *testing.B) {
			root := filepath.Join(dir, fmt.Sprintf("node-%d-%d", c.pods, c.procs))
			pods, err := podLogs(root, slices.Repeat([]string{raw}, c.pods))
			if err != nil {
				b.Fatal(err)
			}
			rules := root + ".yaml"
			if err := (benchConfig{inputs: []string{raw}, node: root, shards: c.procs}).write(filepath.Join("..", "example-rules.yaml"), rules); err != nil {
				b.Fatal(err)
			}
			cfg, err := config.Load(rules)
			if err != nil {
				b.Fatal(err)
			}
			size, err := totalSize(pods)
			if err != nil {
				b.Fatal(err)
			}
			untilRead(b, cfg, c.procs, size, c.pods*lines)
		})
	}
}

// untilRead runs, each op, a pipeline on cfg with GOMAXPROCS procs until it read lines
// lines (size bytes), and reports ns/line (wall) and CPU-ns/line (the process').
func untilRead(b *testing.B, cfg *config.Config, procs int, size int64, lines int) {
	self := fmt.Sprintf("/proc/%d/io", os.Getpid())
	read := func(b *testing.B) int64 {
		n, err := readChars(self)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		cpu0, read0 := processCPU(b), read(b)
		b.StartTimer()
		p, err := pipeline.Start(cfg, pipeline.Options{Now: time.Now})
		if err != nil {
			b.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(p.Collector())
		// A scrape of many series costs more than one: as the command does, wait
		// for the kernel's count of bytes read first.
		for read(b) < read0+size {
			time.Sleep(5 * time.Millisecond)
		}
		deadline := time.Now().Add(time.Minute)
		for linesRead(b, reg) < float64(lines) {
			if time.Now().After(deadline) {
				b.Fatal("the pipeline did not read the logs within a minute")
			}
			time.Sleep(5 * time.Millisecond)
		}
		b.StopTimer()
		cpu += processCPU(b) - cpu0
		p.Stop()
		b.StartTimer()
	}
	n := float64(b.N * lines)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/line")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "CPU-ns/line")
}

// BenchmarkOneFile is one busy file in process: on one processor; its lines shared by the
// reading goroutine and a parse worker (shards: 2) on one processor, the cost of the
// dealing alone; and on two.
// ns/line is wall time per line, CPU-ns/line the process' CPU time per line:
//
//	go test -run '^$' -bench OneFile -benchtime 3x -count 5 ./bench
func BenchmarkOneFile(b *testing.B) {
	const lines = 200000
	for _, c := range [][2]int{{1, 1}, {1, 2}, {2, 2}} {
		procs := c[0]
		b.Run(fmt.Sprintf("procs=%d,shards=%d", procs, c[1]), func(b *testing.B) {
			path, cfg, _ := benchLog(b, lines, benchConfig{shards: c[1]})
			size, err := totalSize([]string{path})
			if err != nil {
				b.Fatal(err)
			}
			untilRead(b, cfg, procs, size, lines)
		})
	}
}
