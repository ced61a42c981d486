package pipeline

import (
	"fmt"
	"maps"
	"math/rand/v2"
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
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// workersRules count a file's lines by status and sum their bytes, at processing time and
// at their own, and the lines left ending in "\r" once read; WRAP is the input's wrapper
// and path captures, SHARDS its parse workers, FILES a rule of the captures.
const workersRules = `
global: {windows: [1m, 1h]}
inputs: [{name: web, path: 'LOG', start_at: beginning, shards: SHARDS WRAP}]
rules:FILES
  - name: requests
    match: '^(?P<ts>\S+) (?P<status>[0-9]{3}) (?P<bytes>[0-9]+) '
    labels: {status: '${status}'}
    value: bytes
  - name: timed
    match: '^(?P<ts>\S+) (?P<status>[0-9]{3}) '
    labels: {status: '${status}'}
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
  - name: carriage_returns
    match: '\r$'
`

// workersInput is how the input of workersRules reads its file: its lines wrapped as CRI
// lines or not, and with captures of its path, which a rule counting the lines with a
// status by file reads, or without.
type workersInput struct{ cri, captures bool }

// workersConfig is workersRules for log with shards workers, read as in says.
func workersConfig(t *testing.T, log string, shards int, in workersInput) *config.Config {
	t.Helper()
	wrap, files := "", ""
	if in.cri {
		wrap = ", wrapper: cri"
	}
	if in.captures {
		wrap += `, path_captures: '/(?P<file>[^/]+)$'`
		files = "\n  - {name: files, match: '^\\S+ [0-9]{3} ', labels: {file: '${file}'}}"
	}
	text := strings.NewReplacer("LOG", log, "SHARDS", fmt.Sprint(shards), " WRAP", wrap, "FILES", files).Replace(workersRules)
	cfg, err := config.Parse([]byte(text), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// workersLog is a random log of n lines of the 50 minutes before now: counted lines (a few
// statuses, byte counts, times a few seconds out of order, some long), lines of no rule
// and, wrapped as CRI, messages in parts and lines of no CRI form. It returns the log
// and, per status, the lines and bytes it holds.
func workersLog(rng *rand.Rand, n int, now int64, cri bool) (string, map[string][2]int) {
	var b strings.Builder
	want := map[string][2]int{}
	for i := range n {
		at := now - 3000 + int64(i)*3000/int64(n) - rng.Int64N(5)
		var msg string
		switch rng.IntN(10) {
		case 0:
			msg = fmt.Sprintf("no status here %d", i)
		default:
			status := []string{"200", "200", "200", "301", "404", "500"}[rng.IntN(6)]
			size := rng.IntN(5000)
			msg = fmt.Sprintf("%s %s %d %s", time.Unix(at, 0).UTC().Format(time.RFC3339), status, size, strings.Repeat("x", rng.IntN(300)))
			w := want[status]
			want[status] = [2]int{w[0] + 1, w[1] + size}
		}
		if !cri {
			b.WriteString(msg + "\n")
			continue
		}
		stamp := time.Unix(at, 0).UTC().Format(time.RFC3339Nano)
		switch rng.IntN(8) {
		case 0: // in two parts
			cut := rng.IntN(len(msg))
			fmt.Fprintf(&b, "%s stdout P %s\n%s stdout F %s\n", stamp, msg[:cut], stamp, msg[cut:])
		case 1: // not a CRI line: malformed, and the message is lost
			if strings.HasPrefix(msg, "no status") {
				fmt.Fprintf(&b, "%s\n", msg)
				continue
			}
			fmt.Fprintf(&b, "%s stdout F %s\n", stamp, msg)
		default:
			fmt.Fprintf(&b, "%s stdout F %s\n", stamp, msg)
		}
	}
	return b.String(), want
}

// damagedMaxLine is the line cap of the damaged logs' pipelines: the lines damaged inserts
// are longer, the lines of workersLog shorter.
const damagedMaxLine = 400

// damaged is text (of lines that end in "\n") with other line ends and lines between its
// lines: with cr, "\r\n" (the "\r" not read), "\r\r\n" (one "\r" read) and lines of a
// lone "\r"; empty lines, and lines too long to read, past damagedMaxLine. The lines
// workers take from a read buffer as one run (pool.add) or whole (batchHold.Block) must
// still be these lines, each read once.
func damaged(rng *rand.Rand, text string, cr bool) string {
	ends, lone := []string{"\n", "\n", "\n", "\r\n", "\r\r\n"}, "\r\n"
	if !cr {
		ends, lone = ends[:3], "\n"
	}
	var b strings.Builder
	for line := range strings.Lines(text) {
		switch rng.IntN(12) {
		case 0:
			b.WriteString("\n")
		case 1:
			b.WriteString(lone)
		case 2:
			b.WriteString(strings.Repeat("y", damagedMaxLine+1+rng.IntN(3000)) + "\n")
		}
		line = strings.TrimSuffix(line, "\n")
		b.WriteString(line + ends[rng.IntN(len(ends))])
	}
	return b.String()
}

// settled waits until p's workers parsed every line dealt to them: the snapshot's wait.
func settled(p *Pipeline) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut.Lock()
	defer p.cut.Unlock()
	for _, in := range p.inputs {
		in.drain()
	}
}

// runLog has a pipeline of workersRules with shards workers read text from the beginning,
// its lines capped at maxLine bytes (0: the default cap), and returns its samples (rules
// and input counts) once every line is parsed.
func runLog(t *testing.T, text string, shards int, in workersInput, now time.Time, maxLine int) map[string]float64 {
	t.Helper()
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Start(workersConfig(t, log, shards, in), Options{Now: func() time.Time { return now }, PollInterval: 10 * time.Millisecond, MaxLineBytes: maxLine})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	read := 0
	for line := range strings.Lines(text) {
		if maxLine == 0 || len(line)-1 <= maxLine {
			read++
		}
	}
	waitRead(t, p, uint64(read))
	settled(p)
	got := gatherPipeline(t, p)
	maps.DeleteFunc(got, func(k string, _ float64) bool {
		return strings.HasPrefix(k, "logwindow_") && !strings.HasPrefix(k, "logwindow_input_malformed_lines_total") &&
			!strings.HasPrefix(k, "logwindow_input_unmatched_lines_total") && !strings.HasPrefix(k, "logwindow_rule_")
	})
	return got
}

// TestWorkersCountAsOne: a file's lines parsed by several workers give every sample one
// worker gives (totals, sums, windows at processing time and at the lines' own, the rules'
// and the input's counts), and the counts of the log itself; with CRI lines too, whose
// parts are joined before the messages are dealt, and with damaged line ends, empty lines
// and lines too long to read between the counted ones; and with lines of up to the default
// cap, empty ones among them, at which the follower offers a read's lines whole
// (batchHold.Block), with and without "\r"s before their "\n"; and with captures of the
// file's path, which a read's lines taken whole are parsed with one by one, their "\r"s
// stripped as the follower strips them.
func TestWorkersCountAsOne(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name    string
		in      workersInput
		damaged bool
		cr      bool
		maxLine int
		seed    uint64
		// again marks a case whose paths (the joiner, the cap, the damage) earlier ones
		// run too: the race detector, to which a case is the same goroutines at work,
		// skips it; .ci/run runs it without the detector.
		again bool
	}{
		{"plain", workersInput{}, false, false, 0, 1, false},
		{"plain, another log", workersInput{}, false, false, 0, 2, true},
		{"cri", workersInput{cri: true}, false, false, 0, 3, false},
		{"damaged", workersInput{}, true, true, damagedMaxLine, 4, false},
		{"damaged, default cap", workersInput{}, true, true, 0, 5, true},
		{"empty and long lines, default cap", workersInput{}, true, false, 0, 6, false},
		{"path captures, damaged, default cap", workersInput{captures: true}, true, true, 0, 7, false},
	} {
		if tc.again && race.Enabled {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 7))
			text, want := workersLog(rng, 20000, now.Unix(), tc.in.cri)
			maxLine := tc.maxLine
			if tc.damaged {
				text = damaged(rng, text, tc.cr)
			}
			one := runLog(t, text, 1, tc.in, now, maxLine)
			statuses := 0
			for status, w := range want {
				statuses += w[0]
				if v := one[fmt.Sprintf(`requests_total{status=%q}`, status)]; v != float64(w[1]) {
					t.Errorf("one worker: requests_total{status=%s} = %v, want %d", status, v, w[1])
				}
				if v := one[fmt.Sprintf(`timed_window{status=%q,window="1h"}`, status)]; v != float64(w[0]) {
					t.Errorf("one worker: timed_window{status=%s,window=1h} = %v, want %d", status, v, w[0])
				}
			}
			if v := one[`files_total{file="access.log"}`]; tc.in.captures && v != float64(statuses) {
				t.Errorf(`one worker: files_total{file="access.log"} = %v, want %d`, v, statuses)
			}
			for _, shards := range []int{2, 3, 8} {
				got := runLog(t, text, shards, tc.in, now, maxLine)
				if !maps.Equal(got, one) {
					for _, k := range slices.Sorted(maps.Keys(one)) {
						if got[k] != one[k] {
							t.Errorf("%d workers: %s = %v, one worker %v", shards, k, got[k], one[k])
						}
					}
					for k := range got {
						if _, ok := one[k]; !ok {
							t.Errorf("%d workers: %s = %v, not of one worker", shards, k, got[k])
						}
					}
				}
			}
		})
	}
}

// TestWorkersSnapshotCut: a snapshot taken while workers parse holds, for the file, a
// position whose lines before it are every line its series counted: none dealt to a
// worker and not parsed yet is behind it.
func TestWorkersSnapshotCut(t *testing.T) {
	now := time.Now()
	dir, logDir := t.TempDir(), t.TempDir()
	log := filepath.Join(logDir, "access.log")
	text, _ := workersLog(rand.New(rand.NewPCG(9, 9)), 60000, now.Unix(), false)
	p, err := Start(workersConfig(t, log, 8, workersInput{}), Options{Now: time.Now, PollInterval: 10 * time.Millisecond, StoragePath: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Snapshots while the file grows and until it is read, each kept with its position.
	type cut struct {
		snap []byte
		off  int64
	}
	var cuts []cut
	written := 0
	for done := false; !done; {
		if written < len(text) {
			next := written + lineStart(text[written:], 5000)
			appendTo(t, log, text[written:next])
			written = next
		}
		if err := p.Snapshot(); err != nil {
			t.Fatal(err)
		}
		kept, err := os.ReadFile(filepath.Join(dir, storage.FileName))
		if err != nil {
			t.Fatal(err)
		}
		snap, err := storage.Read(dir, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		positions, _, err := decodePipeline(snap)
		if err != nil {
			t.Fatal(err)
		}
		c := cut{snap: kept}
		for _, pos := range positions[log] {
			c.off = pos.Offset
		}
		cuts = append(cuts, c)
		done = c.off == int64(len(text))
	}
	mid := slices.DeleteFunc(slices.Clone(cuts), func(c cut) bool { return c.off == int64(len(text)) })
	if len(mid) == 0 {
		t.Fatalf("none of %d snapshots was taken while the file was being read", len(cuts))
	}
	// Each restored on a file of no position: its series alone.
	for _, c := range append(mid[:min(len(mid), 20)], cuts[len(cuts)-1]) {
		restored := t.TempDir()
		if err := os.WriteFile(filepath.Join(restored, storage.FileName), c.snap, 0o600); err != nil {
			t.Fatal(err)
		}
		q, err := Start(workersConfig(t, filepath.Join(t.TempDir(), "other.log"), 1, workersInput{}), Options{Now: time.Now, StoragePath: restored})
		if err != nil {
			t.Fatal(err)
		}
		got := gatherPipeline(t, q)
		q.Stop()
		counted := 0.0
		for k, v := range got {
			if strings.HasPrefix(k, "timed_total{") {
				counted += v
			}
		}
		before := text[:c.off]
		want := strings.Count(before, "\n") - strings.Count(before, "no status here")
		if counted != float64(want) {
			t.Errorf("snapshot at byte %d of %d: the series count %v lines, the file has %d of theirs before the position", c.off, len(text), counted, want)
		}
	}
}

// lineStart is the offset of line i (from 0) of text, or its length when it has fewer.
func lineStart(text string, i int) int {
	off := 0
	for range i {
		j := strings.IndexByte(text[off:], '\n')
		if j < 0 {
			return len(text)
		}
		off += j + 1
	}
	return off
}

// TestWorkersReload: while workers parse a file that keeps growing, reloads change the
// number of workers (to one and back) and another rule; every line is counted once by
// the rule that stays, in its total and its window.
func TestWorkersReload(t *testing.T) {
	log := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rules := func(shards int, extra string) *config.Config {
		text := fmt.Sprintf(`global: {windows: [1m, 1h]}
inputs: [{path: %s, shards: %d}]
rules:
  - name: requests
    match: '^(?P<status>[0-9]+) '
    labels: {status: '${status}'}
  - name: other
    match: '^%s'
`, log, shards, extra)
		cfg, err := config.Parse([]byte(text), "rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	p, err := Start(rules(2, "x"), Options{Now: time.Now, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	const rounds, perRound = 40, 1000
	want := map[string]int{}
	done := make(chan struct{})
	var side sync.WaitGroup
	side.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if err := p.Reload(rules([]int{2, 1, 4, 3}[i%4], fmt.Sprintf("x%d", i%2))); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for r := range rounds {
		var b strings.Builder
		for j := range perRound {
			fmt.Fprintf(&b, "%d request %d %d\n", 200+(j%3), r, j)
			want[fmt.Sprint(200+j%3)]++
		}
		appendTo(t, log, b.String())
		time.Sleep(time.Millisecond)
	}
	waitRead(t, p, rounds*perRound)
	close(done)
	side.Wait()
	settled(p)
	got := gatherPipeline(t, p)
	for status, n := range want {
		if v := got[fmt.Sprintf(`requests_total{status=%q}`, status)]; v != float64(n) {
			t.Errorf("requests_total{status=%s} = %v, want %d", status, v, n)
		}
		if v := got[fmt.Sprintf(`requests_window{status=%q,window="1h"}`, status)]; v != float64(n) {
			t.Errorf("requests_window{status=%s,window=1h} = %v, want %d", status, v, n)
		}
	}
}

// TestWorkersTrickle: lines written one at a time, one a second by the injected clock, to a
// file with parse workers are each counted, in the rules' totals and windows, before the
// next is written: none waits for a batch to fill or for more lines to come.
func TestWorkersTrickle(t *testing.T) {
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64
	clock.Store(1_700_000_000)
	now := func() time.Time { return time.Unix(clock.Load(), 0) }
	p, err := Start(workersConfig(t, log, 2, workersInput{}), Options{Now: now, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	waitReady(t, p)
	const lines = 5
	for i := range lines {
		at := clock.Add(1)
		appendTo(t, log, fmt.Sprintf("%s 200 %d x\n", time.Unix(at, 0).UTC().Format(time.RFC3339), 10+i))
		bytes := float64((i + 1) * (20 + i) / 2) // 10 + 11 + ... + (10+i)
		want := map[string]float64{
			`requests_total{status="200"}`:              bytes,
			`requests_window{status="200",window="1m"}`: bytes,
			`timed_total{status="200"}`:                 float64(i + 1),
			`timed_window{status="200",window="1m"}`:    float64(i + 1),
		}
		// A line is counted as read before its rules have it: wait for both. A line
		// that waited for the next would never be counted, as the next is not written.
		var got map[string]float64
		if !await.Until(t, func() bool {
			got = gatherPipeline(t, p)
			for name, v := range want {
				if got[name] != v {
					return false
				}
			}
			return p.inputStats()[0].LinesRead == uint64(i+1)
		}) {
			for name, v := range want {
				t.Errorf("line %d written: %s = %v, want %v", i+1, name, got[name], v)
			}
			t.FailNow()
		}
	}
}

// TestWithin: a batch finds a line in the read buffer whatever its place there, and copies
// one that is not (a joined message, the last line of a file, a line of an earlier read).
func TestWithin(t *testing.T) {
	buf := make([]byte, 64)
	other := make([]byte, 64)
	for _, tc := range []struct {
		name string
		b    []byte
		want span
		in   bool
	}{
		{"first bytes", buf[:5], span{0, 5}, true},
		{"middle", buf[10:20], span{10, 20}, true},
		{"last bytes", buf[60:], span{60, 64}, true},
		{"empty line amid", buf[30:30], span{30, 30}, true},
		{"empty line at the end", buf[64:], span{}, false},
		{"capacity cut", buf[10:20:20], span{}, false},
		{"another buffer", other[10:20], span{}, false},
		{"nil", nil, span{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, in := within(tc.b, buf)
			if got != tc.want || in != tc.in {
				t.Errorf("within = %v, %v; want %v, %v", got, in, tc.want, tc.in)
			}
		})
	}
	if _, in := within(buf[:5], nil); in {
		t.Error("a line is within a nil buffer")
	}
}
