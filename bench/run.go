package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// usage is what one run of a program cost.
type usage struct {
	wall  time.Duration
	cpu   time.Duration // user + system
	rss   int64         // peak resident set, bytes
	instr instructions  // with -instructions
}

// child is a program run with GOMAXPROCS set, whose peak RSS it samples.
//
// The peak RSS comes from the kernel's high-water mark of the child's own memory
// (VmHWM), not from the rusage of wait: Go starts children with vfork, and Linux then
// counts the parent's peak RSS (here the harness's, with its line counts) in the child's
// ru_maxrss. VmHWM only exists while the child runs: a one-shot program's is sampled every
// rssPoll, and can outgrow the last sample in its final moments; a live exporter's is read
// once before it is stopped, which is its peak, so that no sampling takes CPU from it
// while it works (sampling /proc every 5 ms took 3% of a two-core machine).
type child struct {
	proc *testexec.Proc
	// stderr returns what the program wrote to its standard error, for failures.
	stderr  func() string
	rss     atomic.Int64 // latest VmHWM seen, bytes
	sampled chan struct{}
}

// rssPoll is the interval of the VmHWM samples.
const rssPoll = 5 * time.Millisecond

// watch follows a started program, sampling its peak RSS until it exits when sample is set.
func watch(p *testexec.Proc, stderr func() string, sample bool) *child {
	c := &child{proc: p, stderr: stderr, sampled: make(chan struct{})}
	if sample {
		go c.sampleRSS()
	} else {
		close(c.sampled)
	}
	return c
}

// gomaxprocs is the environment entry that runs a Go program on procs threads.
func gomaxprocs(procs int) string {
	return "GOMAXPROCS=" + strconv.Itoa(procs)
}

func (c *child) sampleRSS() {
	defer close(c.sampled)
	for {
		c.readRSS()
		select {
		case <-c.proc.Done():
			return
		case <-time.After(rssPoll):
		}
	}
}

// readRSS records the child's VmHWM; it keeps the last value once the child is gone.
func (c *child) readRSS() {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.proc.Cmd.Process.Pid))
	if err != nil {
		return
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
				c.rss.Store(kb << 10)
			}
		}
	}
}

// wait waits for the child to exit and reports a failure with its stderr.
func (c *child) wait() error {
	err := c.proc.Wait()
	<-c.sampled
	if err != nil {
		return fmt.Errorf("%s: %v\n%s", c.proc.Cmd.Path, err, lastLines(c.stderr(), 20))
	}
	return nil
}

// usage reads the CPU time and peak RSS of the exited child.
func (c *child) usage(wall time.Duration) usage {
	u := usage{wall: wall, rss: c.rss.Load()}
	if ru, ok := c.proc.Cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		u.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return u
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// runOneShot runs a program that reads its input to the end and prints an exposition:
// our --replay mode, or mtail --one_shot. Wall time is the process's whole life.
func runOneShot(procs int, name string, args ...string) (usage, scrape, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), gomaxprocs(procs))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	p, err := testexec.Start(cmd)
	if err != nil {
		return usage{}, scrape{}, err
	}
	c := watch(p, stderr.String, true)
	if err := c.wait(); err != nil {
		return usage{}, scrape{}, err
	}
	u := c.usage(c.proc.Ended().Sub(c.proc.Started()))
	s, err := parseExposition(&stdout)
	if err != nil {
		return u, scrape{}, fmt.Errorf("%s output: %w", name, err)
	}
	return u, s, nil
}

// live is one exporter started in serving mode, scraped over HTTP.
type live struct {
	*child
	exporter *testexec.Exporter
	// unscraped is the peak RSS when the inputs had been read and no scrape made yet:
	// the memory of the series without a scrape's garbage.
	unscraped int64
}

// startLive starts the exporter serving the config on a loopback port, its log next to
// the config, and returns it once it is ready; under cachegrind (-instructions) when
// counts is the file for its counts.
func startLive(bin, config string, procs int, counts string) (*live, error) {
	o := testexec.ServeOptions{Env: []string{gomaxprocs(procs)}}
	if counts != "" {
		o.Under, o.Env = cachegrind(counts), append(o.Env, cachegrindEnv)
	}
	e, err := testexec.Serve(filepath.Dir(config), bin, o, "--config.file="+config)
	if err != nil {
		return nil, err
	}
	return &live{child: watch(e.Proc, e.Log, false), exporter: e}, nil
}

// getEncoded fetches /metrics asking for the given Content-Encoding ("": gzip, as
// Prometheus and Go's client ask by default) and format (Accept; "": the text format) and
// returns the decoded body.
func (l *live) getEncoded(encoding, accept string) ([]byte, error) {
	header := http.Header{}
	if encoding != "" {
		header.Set("Accept-Encoding", encoding)
	}
	if accept != "" {
		header.Set("Accept", accept)
	}
	return l.exporter.Fetch("/metrics", header)
}

func (l *live) scrape() (scrape, error) {
	body, err := l.getEncoded("", "")
	if err != nil {
		return scrape{}, err
	}
	return parseExposition(bytes.NewReader(body))
}

// cpuTime is the CPU time the exporter used so far, from /proc (in clock ticks of 10 ms).
func (l *live) cpuTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", l.proc.Cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	f := statFields(b)
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat: %q", b)
	}
	var ticks int64
	for _, field := range f[11:13] { // utime and stime, fields 14 and 15
		n, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	const userHZ = 100 // the unit of /proc times on Linux, whatever the kernel's HZ
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// waitLines waits until the inputs have read lines lines, which fill size bytes, and
// returns the time elapsed from the start until the exporter last ran before it went
// quiet with them read (quiet): the scrape that then confirms the count is not part of
// it, as it is not reading lines. Counted, it was 6–11% of a run's wall time on two cores
// (`shards: 2` merges each series' two parts) and 2–5% on one, and flattened their ratio.
//
// Scrapes cost the exporter CPU (and garbage) that a run should not count, so it polls
// the kernel's count of bytes the exporter read (/proc/PID/io rchar) and scrapes only once
// that covers the files: one or two scrapes per run instead of one per poll. Between two
// polls it sleeps a quarter of the time the rest of the files would take at the rate read
// since the last poll, never less than poll: some twenty polls a run, so that they take no
// CPU to speak of from the exporter (a poll every 5 ms took 1–2% of a two-core machine),
// and the end is still seen within poll unless the rate more than quadruples. The sleep at
// most doubles from one poll to the next: the first polls see the exporter starting, at a
// rate far below its own, and a sleep taken from that rate could last many times the run
// (a run of 1.1 s of CPU was once measured at 14 s of wall time).
func (l *live) waitLines(ctx context.Context, lines int, size int64, poll time.Duration) (time.Duration, scrape, error) {
	ioStats := fmt.Sprintf("/proc/%d/io", l.proc.Cmd.Process.Pid)
	wait, before, at := poll, int64(0), time.Now()
	for {
		select {
		case <-ctx.Done():
			return 0, scrape{}, l.failed(fmt.Errorf("inputs did not reach %d lines: %w", lines, ctx.Err()))
		case <-time.After(wait):
		}
		read, err := readChars(ioStats)
		if err == nil && read < size {
			now, last := time.Now(), wait
			wait = poll
			if read > before {
				rest := time.Duration(float64(now.Sub(at)) * float64(size-read) / float64(read-before))
				wait = min(max(poll, rest/4), 2*last)
			}
			before, at = read, now
			continue
		}
		end, err := quiet(ctx, l.proc.Cmd.Process.Pid, max(poll/5, time.Millisecond))
		if err != nil {
			return 0, scrape{}, l.failed(fmt.Errorf("the exporter did not go quiet with the files read: %w", err))
		}
		if l.unscraped == 0 {
			l.readRSS()
			l.unscraped = l.rss.Load()
		}
		s, err := l.scrape()
		if err != nil {
			return 0, scrape{}, l.failed(err)
		}
		if read := s.values.sum("logwindow_input_lines_total"); read >= float64(lines) {
			return end.Sub(l.proc.Started()), s, nil
		}
	}
}

// quiet polls the threads of process pid every interval until, between two polls, none
// ran (more than a twentieth of the interval, for its timers), none ended and none is
// waiting for a CPU or a disk, and returns the time of the first of the two: the process
// may have run until then, not after. A thread waiting for a CPU (state R) or in a read
// from disk (D) has work left, though its CPU time stands still meanwhile: on a shared
// machine that is how its neighbours pause it. Times are compared thread by thread, so
// that one that ended, taking its CPU time out of a sum, cannot hide another's run.
func quiet(ctx context.Context, pid int, interval time.Duration) (time.Time, error) {
	ran, _, err := threadsRan(pid)
	at := time.Now()
	for err == nil {
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(interval):
		}
		before, running := ran, false
		if ran, running, err = threadsRan(pid); err == nil && !running && ranSince(before, ran) <= interval/20 {
			return at, nil
		}
		at = time.Now()
	}
	return time.Time{}, err
}

// ranSince is the CPU time the threads of now ran since before, each thread's own (a new
// one's all of it); a thread of before that has ended makes it unbounded, as what it ran
// before it ended is not known.
func ranSince(before, now map[string]time.Duration) time.Duration {
	var ran time.Duration
	for tid, t := range now {
		ran += t - before[tid]
	}
	for tid := range before {
		if _, ok := now[tid]; !ok {
			return math.MaxInt64
		}
	}
	return ran
}

// threadsRan returns the CPU time each thread of process pid has run, by thread ID (the
// first field of its /proc/PID/task/TID/schedstat, in ns, where /proc/PID/stat counts 10
// ms ticks), and whether any is running or waiting to (state R) or waits for a disk (D).
// A thread that ends between the listing and its reads is left out; none read at all is
// an error (a kernel without schedstat), not a process that never runs.
func threadsRan(pid int) (ran map[string]time.Duration, running bool, err error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, false, err
	}
	ran = make(map[string]time.Duration, len(tasks))
	skipped := error(nil)
	for _, t := range tasks {
		stat, err := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
		if err != nil {
			skipped = err
			continue
		}
		sched, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			skipped = err
			continue
		}
		ns, _, _ := strings.Cut(string(sched), " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if err != nil {
			return nil, false, fmt.Errorf("%s/%s/schedstat: %q", dir, t.Name(), sched)
		}
		ran[t.Name()] = time.Duration(n)
		if state := statFields(stat); len(state) > 0 && (state[0] == "R" || state[0] == "D") {
			running = true
		}
	}
	if len(ran) == 0 && skipped != nil {
		return nil, false, fmt.Errorf("no thread of process %d could be read: %w", pid, skipped)
	}
	return ran, running, nil
}

// statFields returns the fields of a /proc stat file from the third on, the state first:
// the command name, field 2, is in parentheses and may hold spaces, so they are counted
// from after it.
func statFields(stat []byte) []string {
	return strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
}

// readChars returns the rchar line of /proc/PID/io: bytes the process read by any system
// call, files and sockets alike, so at least what it read of its inputs.
func readChars(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "rchar:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no rchar", path)
}

// stop ends the exporter with SIGTERM, its clean shutdown, and returns its usage. The
// peak RSS is read just before: after every line and scrape, so nothing is missed.
func (l *live) stop(wall time.Duration) (usage, error) {
	l.readRSS()
	if err := l.proc.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return usage{}, err
	}
	if err := l.wait(); err != nil {
		return usage{}, err
	}
	return l.usage(wall), nil
}

// failed ends the exporter and adds how it ended, with the end of its stderr, to err.
func (l *live) failed(err error) error {
	if werr := l.kill(); werr != nil {
		return fmt.Errorf("%w; %v", err, werr)
	}
	return err
}

// kill ends an exporter whose run failed and returns the error of its end, if any.
func (l *live) kill() error {
	_ = l.proc.Kill()
	return l.wait()
}

// settle checks first, the scrape that saw every line read (waitLines), then scrapes
// until check passes or tries run out: once every line is read, the last one may still be
// between two of its rules for a moment. A scrape merges every series' slots, some
// 20–60 ms of CPU after a million lines of the example rules, which a run counts: it is
// taken again only when the first did not pass.
func (l *live) settle(first scrape, check func(scrape) error, poll time.Duration) error {
	err := check(first)
	for range 5 {
		if err == nil {
			return nil
		}
		time.Sleep(poll)
		var s scrape
		if s, err = l.scrape(); err == nil {
			err = check(s)
		}
	}
	return err
}
