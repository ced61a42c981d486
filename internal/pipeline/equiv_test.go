package pipeline

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/input/cri/critest"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// equivLog is a generated nginx log (tools/gen-nginx-log.py) whose times are spread over
// about a quarter of an hour, so that windows of 1m, 5m and 15m each leave lines out at
// their old edge, with a few lines written up to 20 s after their time, out of order as
// nginx writes a request when it ends. times[i] is line i's time.
func equivLog(t *testing.T, n, seed int) (lines [][]byte, times []int64) {
	t.Helper()
	stamp := regexp.MustCompile(`\[([^\]]+)\]`)
	const layout = "02/Jan/2006:15:04:05 -0700"
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	var first int64
	for i, line := range nginxlog.Lines(t, n, seed) {
		m := stamp.FindSubmatchIndex(line)
		at, err := time.Parse(layout, string(line[m[2]:m[3]]))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = at.Unix()
		}
		sec := first + (at.Unix()-first)*60
		if rng.IntN(50) == 0 {
			sec -= rng.Int64N(20)
		}
		out := slices.Concat(line[:m[2]], []byte(time.Unix(sec, 0).UTC().Format(layout)), line[m[3]:])
		lines, times = append(lines, out), append(times, sec)
	}
	return lines, times
}

// criLines are lines as the kubelet writes a container's log: each a stdout message in
// up to four parts (P lines, then F) at its own time, and between some of the parts those
// of stderr messages that no rule matches. times are the lines' times.
func criLines(lines [][]byte, times []int64, seed uint64) (out [][]byte, outTimes []int64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	var pending []string // stderr parts, written between stdout's
	for i, line := range lines {
		at := time.Unix(times[i], 0).UTC().Format(time.RFC3339Nano)
		for _, part := range critest.Split(rng, at, "stdout", string(line)) {
			out, outTimes = append(out, []byte(part)), append(outTimes, times[i])
			if len(pending) > 0 {
				out, outTimes = append(out, []byte(pending[0])), append(outTimes, times[i])
				pending = pending[1:]
			}
		}
		if i%7 == 0 {
			pending = append(pending, critest.Line(at, "stderr", "P", "worker "), critest.Line(at, "stderr", "F", "warning"))
		}
	}
	for _, part := range pending {
		out, outTimes = append(out, []byte(part)), append(outTimes, times[len(times)-1])
	}
	return out, outTimes
}

// equivRules are the example rules reading log from its beginning, with the input's keys
// more (a wrapper): every rule places a line by its own time, so that every way of
// reading the log gives the same windows.
func equivRules(t *testing.T, log, more string) *config.Config {
	t.Helper()
	text, err := os.ReadFile("../../example-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules := strings.Replace(string(text), "path: /var/log/nginx/access.log", "path: "+log+more, 1)
	rules = strings.Replace(rules, "start_at: end", "start_at: beginning", 1)
	cfg, err := config.Parse([]byte(rules), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// exposition is the samples of a text exposition by name and labels (a histogram's
// buckets, count and sum each), leaving out what is not of the log: the memory the series
// take.
func exposition(t *testing.T, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cut := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[cut+1:], 64)
		if cut < 0 || err != nil {
			t.Fatalf("not a sample: %q", line)
		}
		if key := line[:cut]; family(key) != "logwindow_series_bytes" {
			out[key] = v
		}
	}
	if len(out) == 0 {
		t.Fatalf("no samples in:\n%s", text)
	}
	return out
}

// family is the name of a sample's key: what precedes its labels.
func family(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		return key[:i]
	}
	return key
}

// diffSamples lists the samples of want that got lacks or has another value of; samples
// of got's families that want lacks (the live exporter's inputs, storage, reloads) are
// not compared, those of want's families are.
func diffSamples(want, got map[string]float64) []string {
	fams := map[string]bool{}
	for k := range want {
		fams[family(k)] = true
	}
	var out []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			out = append(out, fmt.Sprintf("%s: missing, want %v", k, w))
		} else if !sameFloat(g, w) {
			out = append(out, fmt.Sprintf("%s: %v, want %v", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && fams[family(k)] {
			out = append(out, fmt.Sprintf("%s: %v, not in the replay", k, g))
		}
	}
	slices.Sort(out)
	return out
}

// sameFloat reports whether a and b are equal but for the rounding of a sum: a sink adds
// up the values of a read's events of one label set and second before their series does
// (store.NewBatchSink), so that a sum's terms are grouped by how the log was read.
func sameFloat(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*max(math.Abs(a), math.Abs(b))
}

// equivRun is a log being written while exporters read it, one at a time, with the
// storage directory they share: the steps of a scenario.
type equivRun struct {
	t     *testing.T
	lines [][]byte
	times []int64
	// cri says the lines are CRI lines, of which the rules read the messages.
	cri bool
	// copies says the glob matches the log's rotated names: a copytruncate's copy is read
	// from where the log was read up to.
	copies bool
	// kubelet says the log's rotated files are named as the kubelet names a container
	// log's (0.log.20240301-120000), rotated their names, oldest first; else logrotate's
	// numbers.
	kubelet bool
	// node says the log is rotated as the kubelet rotates a container's log on a node:
	// each rotation first compresses the rotated files not compressed yet (all but the
	// newest are compressed then) and removes the oldest past its third, then renames the
	// log to its name of the time. Nothing reads a compressed file, so a scenario in which
	// one would hold lines not read yet is not drawn.
	node bool
	// olddir is the directory within the log's that logrotate's olddir moves its rotated
	// files to, or "": they stay beside it.
	olddir  string
	rotated []string
	removed int    // how many of rotated the kubelet removed, the oldest
	log     string // the log's path
	store   string // --storage.path
	cfg     *config.Config
	out     syncbuf.Buffer
	rng     *rand.Rand

	// next is the first line not written whole, of which partial bytes are written.
	next, partial int
	// p is the running exporter (nil: none), clock its clock; base is how many of the
	// log's lines the state it started from had counted, and counted how many the state
	// it would leave has (every line handed on, or a kept snapshot's).
	p       *Pipeline
	clock   *testclock.Clock
	base    int
	counted int
	// kept is a periodic snapshot taken by snapshot(), which kill() leaves as the one on
	// disk; keptCounted is how many lines it had counted.
	kept        []byte
	keptCounted int
	keptAt      time.Time // when it was written
}

// newest is the time of the newest line written whole, or of the first line before any.
func (r *equivRun) newest() int64 {
	if r.next == 0 {
		return r.times[0]
	}
	return slices.Max(r.times[:r.next])
}

// write appends n lines (the rest of a line written in part first) and then part of the
// next line when partial; the running exporter's clock is moved to the newest line's
// time first, as a clock runs ahead of what is written.
func (r *equivRun) write(n int, partial bool) {
	r.t.Helper()
	if r.clock != nil {
		r.setClock(r.next + min(n, len(r.lines)-r.next))
	}
	r.writeTo(r.log, n, partial)
}

// writeTo is write's, to the file at path, without moving the clock.
func (r *equivRun) writeTo(path string, n int, partial bool) {
	r.t.Helper()
	n = min(n, len(r.lines)-r.next)
	var b bytes.Buffer
	for i := range n {
		line := r.lines[r.next+i]
		if i == 0 {
			line = line[r.partial:]
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if n > 0 {
		r.partial = 0
	}
	r.next += n
	if partial && r.next < len(r.lines) {
		cut := 1 + r.rng.IntN(len(r.lines[r.next])-1)
		b.Write(r.lines[r.next][r.partial:cut])
		r.partial = cut
	}
	r.t.Logf("write to %s: lines to %d, %d bytes of the next", filepath.Base(path), r.next, r.partial)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b.Bytes()); err != nil {
		r.t.Fatal(err)
	}
	r.touch(path)
}

// touch sets the modification time of path to now, to the nanosecond: the kernel's
// coarse clock would give a file written after another its time, rotations come hours
// apart.
func (r *equivRun) touch(path string) {
	r.t.Helper()
	at := time.Now()
	if err := os.Chtimes(path, at, at); err != nil {
		r.t.Fatal(err)
	}
}

// setClock moves the running exporter's clock on to the newest of the lines before the
// next-th, written or about to be.
func (r *equivRun) setClock(next int) {
	newest := r.times[0]
	if next > 0 {
		newest = slices.Max(r.times[:next])
	}
	if d := time.Unix(newest, 0).Sub(r.clock.Now()); d > 0 {
		r.clock.Add(d)
	}
}

// start starts an exporter on the storage directory.
func (r *equivRun) start() {
	r.t.Helper()
	r.clock = testclock.New(time.Unix(r.newest(), 0))
	p, err := Start(r.cfg, Options{
		Now: r.clock.Now, PollInterval: 10 * time.Millisecond, RotationGrace: 300 * time.Millisecond,
		StoragePath: r.store, SnapshotInterval: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&r.out, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(p.Stop)
	r.p, r.base = p, r.counted
	r.t.Logf("start: %d lines counted", r.counted)
	waitReady(r.t, p)
}

// caughtUp waits until the running exporter has read every line written whole.
func (r *equivRun) caughtUp() {
	r.t.Helper()
	want := uint64(r.next - r.base)
	var s []selfmetric.InputStats
	var read uint64
	await.Until(r.t, func() bool {
		s, read = r.p.inputStats(), 0 // one per shard of a glob
		for _, in := range s {
			read += in.LinesRead
		}
		return read >= want
	})
	if read != want {
		r.t.Fatalf("input stats %+v, want %d lines read\n%s", s, want, r.out.String())
	}
	r.counted = r.next
	requests := r.next
	if r.cri {
		requests = 0
		for _, l := range r.lines[:r.next] {
			if stream, tag := criTags(l); stream == "stdout" && tag == "F" {
				requests++
			}
		}
	}
	// The rule's matched lines are counted just after the lines read (publish).
	var got uint64
	await.Until(r.t, func() bool {
		got = r.matched("nginx_http_path_requests")
		return got >= uint64(requests)
	})
	if got != uint64(requests) {
		r.t.Fatalf("%d requests counted of the %d written in %d lines\n%s", got, requests, r.next, r.out.String())
	}
}

// matched is how many lines the running exporter's rule of that name matched, read from
// its store rather than by a scrape.
func (r *equivRun) matched(rule string) uint64 {
	set := r.p.gen.Load().set
	for i := range set.NumRules() {
		if rl := set.Rule(i); rl.Config().Name == rule {
			return rl.Matched()
		}
	}
	r.t.Fatalf("no rule %s", rule)
	return 0
}

// inParts reports whether a CRI message is in parts at the end of what was written: the
// last line of its stream written is a P line.
func (r *equivRun) inParts() bool {
	if !r.cri {
		return false
	}
	parts := map[string]bool{}
	for _, l := range r.lines[:r.next] {
		stream, tag := criTags(l)
		parts[stream] = tag == "P"
	}
	return parts["stdout"] || parts["stderr"]
}

// criTags are a CRI line's stream and tag (P or F).
func criTags(line []byte) (stream, tag string) {
	f := bytes.SplitN(line, []byte(" "), 4)
	return string(f[1]), string(f[2])
}

// stop stops the running exporter, which writes its snapshot.
func (r *equivRun) stop() {
	r.t.Helper()
	r.caughtUp()
	r.p.Stop()
	r.p = nil
	r.t.Logf("stop: %d lines counted", r.counted)
}

// snapshot takes a periodic snapshot of the running exporter once it has read every
// line written, for kill.
func (r *equivRun) snapshot() {
	r.t.Helper()
	r.caughtUp()
	r.kept, r.keptCounted = periodicSnapshot(r.t, r.p, r.store), r.counted
	fi, err := os.Stat(filepath.Join(r.store, storage.FileName))
	if err != nil {
		r.t.Fatal(err)
	}
	r.keptAt = fi.ModTime()
	r.t.Logf("snapshot: %d lines counted", r.counted)
}

// kill ends the running exporter as a kill after the last snapshot() would: the lines it
// read since are read again by the next.
func (r *equivRun) kill() {
	r.t.Helper()
	r.caughtUp()
	kill(r.t, r.p, r.store, r.kept)
	if err := os.Chtimes(filepath.Join(r.store, storage.FileName), r.keptAt, r.keptAt); err != nil {
		r.t.Fatal(err)
	}
	r.p, r.counted = nil, r.keptCounted
	r.t.Logf("kill: %d lines counted", r.counted)
}

// rename rotates the log as logrotate's create does: each older file moves up a number,
// the log to .1, and the next write makes a new one. The running exporter (if any) has
// read the log first: a file made and rotated away before a reader looked at its path
// is not one it can know of.
func (r *equivRun) rename() {
	r.t.Helper()
	if r.p != nil {
		r.caughtUp()
	}
	to := r.newRotated()
	if err := os.Rename(r.log, to); err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("rename to %s", filepath.Base(to))
}

// renameLate rotates the log by rename, then writes n lines to the file renamed, as a
// writer that has not reopened the log yet does (nginx between logrotate's rename and the
// USR1 of its postrotate, a container runtime before the kubelet has it reopen the log).
// The running exporter (if any) has seen the log leave its path (or, a glob's rotated
// names, come to the new one) first, at the clock of those lines: a file that left its
// path is read for the rotation grace after its last write, and not after.
func (r *equivRun) renameLate(n int) {
	r.t.Helper()
	if r.p == nil {
		r.rename()
		r.writeTo(r.older(1), n, false)
		return
	}
	r.setClock(r.next + min(n, len(r.lines)-r.next))
	rotations := func() (n uint64) {
		for _, in := range r.p.inputStats() {
			n += in.Rotations
		}
		return n
	}
	before := rotations()
	r.rename()
	if !await.Until(r.t, func() bool { return rotations() != before || r.reads(r.older(1)) }) {
		r.t.Fatalf("the rename not seen: input stats %+v\n%s", r.p.inputStats(), r.out.String())
	}
	r.writeTo(r.older(1), n, false)
	r.caughtUp()
}

// newRotated is the name the log's next rotated file takes: logrotate's .1, the others
// moved up a number (shift), or the kubelet's name of the time.
func (r *equivRun) newRotated() string {
	if !r.kubelet {
		r.shift()
		return r.older(1)
	}
	if r.node {
		r.kubeletCleanup()
	}
	n := len(r.rotated)
	to := fmt.Sprintf("%s.20240301-12%02d%02d", r.log, n/60, n%60)
	r.rotated = append(r.rotated, to)
	return to
}

// kubeletCleanup does what the kubelet's container log manager does before it renames
// the log: it compresses each rotated file not compressed yet (to a .tmp file renamed to
// .gz, the rotated file removed) and removes the oldest rotated files past the 3 that a
// maxFiles of 5 keeps.
func (r *equivRun) kubeletCleanup() {
	r.t.Helper()
	for _, old := range r.rotated {
		if _, err := os.Stat(old); err == nil {
			r.compress(old)
		}
	}
	for len(r.rotated)-r.removed > 3 {
		if err := os.Remove(r.rotated[r.removed] + ".gz"); err != nil {
			r.t.Fatal(err)
		}
		r.removed++
	}
}

// older is the name of the log's i-th newest rotated file (1: the newest).
func (r *equivRun) older(i int) string {
	if !r.kubelet {
		return filepath.Join(cmp.Or(r.olddir, filepath.Dir(r.log)), fmt.Sprintf("%s.%d", filepath.Base(r.log), i))
	}
	return r.rotated[len(r.rotated)-i]
}

// shift moves each rotated file up a number, making room for .1, as logrotate's rotate 3
// does: the third is removed first, its inode free for the next file made (a file system
// reuses a freed inode at once).
func (r *equivRun) shift() {
	r.t.Helper()
	top := 0
	for ; ; top++ {
		if _, err := os.Stat(r.older(top + 1)); err != nil {
			break
		}
	}
	if top == 3 {
		if err := os.Remove(r.older(top)); err != nil {
			r.t.Fatal(err)
		}
		top--
	}
	for i := top; i >= 1; i-- {
		if err := os.Rename(r.older(i), r.older(i+1)); err != nil {
			r.t.Fatal(err)
		}
	}
}

// compress replaces a rotated file by its gzip archive, as logrotate and the kubelet do:
// no line is read from it, but a restart tells logrotate's olddir by it.
func (r *equivRun) compress(path string) {
	r.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		r.t.Fatal(err)
	}
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	if _, err := z.Write(data); err != nil {
		r.t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(path+".tmp", b.Bytes(), 0o644); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path+".gz"); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("compress %s", filepath.Base(path))
}

// copyTruncate rotates the log as logrotate's copytruncate does, once the running
// exporter (if any) has read it to its end: the lines written between a reader's last
// read and the truncation are lost by design.
func (r *equivRun) copyTruncate() {
	r.t.Helper()
	if r.p != nil {
		r.caughtUp()
	}
	r.copyTruncateUnread()
}

// copyTruncateUnread is copyTruncate's without waiting for the running exporter: the
// lines it has not read yet are in the copy, or in the log still when the exporter read
// the log after the copy but before its truncation. With a glob of the rotated names, the
// truncation waits until the running exporter has found the copy: the exporter may have
// read a line in part (a look during its write), which it hands on whole from the copy
// only when it knows of the copy as it finds the log truncated, and else as its head,
// the copy read on past it. The copy is written once the exporter has seen the file
// read under its name before move up a number, so that the name read is the copy's.
func (r *equivRun) copyTruncateUnread() {
	r.t.Helper()
	data, err := os.ReadFile(r.log)
	if err != nil {
		r.t.Fatal(err)
	}
	to := r.newRotated()
	found := func(want bool) {
		r.t.Helper()
		if r.p != nil && r.copies && !await.Until(r.t, func() bool { return r.reads(to) == want }) {
			r.t.Fatalf("%s read %v, want %v: input stats %+v\n%s", to, !want, want, r.p.inputStats(), r.out.String())
		}
	}
	found(false)
	if err := os.WriteFile(to, data, 0o644); err != nil {
		r.t.Fatal(err)
	}
	found(true)
	if err := os.Truncate(r.log, 0); err != nil {
		r.t.Fatal(err)
	}
	r.touch(to)
	r.touch(r.log)
	r.t.Logf("copytruncate")
}

// emptied rotates the log by copytruncate while the exporter runs, and waits until it has
// seen the log truncated: it reads the log on from its start, offset 0.
func (r *equivRun) emptied() {
	r.t.Helper()
	truncations := func() (n uint64) {
		for _, in := range r.p.inputStats() {
			n += in.Truncations
		}
		return n
	}
	before := truncations()
	r.copyTruncate()
	if !await.Until(r.t, func() bool { return truncations() != before }) {
		r.t.Fatalf("the truncation not seen: input stats %+v\n%s", r.p.inputStats(), r.out.String())
	}
	// The copy was made before any snapshot that follows: a restart does not take it for
	// one made while the exporter was down. A snapshot's time is its file's, which the
	// kernel stamps by its clock tick, up to a tick behind the clock touch stamped the
	// copy with.
	copied, err := os.Stat(r.older(1))
	if err != nil {
		r.t.Fatal(err)
	}
	probe := filepath.Join(r.t.TempDir(), "probe")
	if !await.Until(r.t, func() bool {
		if err := os.WriteFile(probe, nil, 0o644); err != nil {
			r.t.Fatal(err)
		}
		fi, err := os.Stat(probe)
		if err != nil {
			r.t.Fatal(err)
		}
		return fi.ModTime().After(copied.ModTime())
	}) {
		r.t.Fatalf("the kernel's clock is not past %v", copied.ModTime())
	}
}

// copyTruncateBehind rotates the log as logrotate's copytruncate does when the running
// exporter read the log's last lines after the copy was made: the copy holds fewer lines
// than were read, and lines are written to the log after. With a glob that matches the
// rotated names, it waits until the exporter has found the copy, which it holds back for
// the rotation grace: one stopped then must not leave it to be read from its start by the
// next, the log's position past its truncation.
func (r *equivRun) copyTruncateBehind() {
	r.t.Helper()
	r.caughtUp()
	data, err := os.ReadFile(r.log)
	if err != nil {
		r.t.Fatal(err)
	}
	cut := len(data)
	for range 1 + r.rng.IntN(5) {
		if cut > 0 {
			cut = bytes.LastIndexByte(data[:cut-1], '\n') + 1
		}
	}
	copied := r.newRotated()
	if err := os.WriteFile(copied, data[:cut], 0o644); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Truncate(r.log, 0); err != nil {
		r.t.Fatal(err)
	}
	r.touch(copied)
	r.touch(r.log)
	r.t.Logf("copytruncate, the copy of %d bytes of the %d read", cut, len(data))
	// Lines after the truncation: the log's position is past it once they are read.
	r.write(1+r.rng.IntN(300), false)
	if !r.copies || cut == 0 {
		return
	}
	if !await.Until(r.t, func() bool { return r.reads(copied) }) {
		r.t.Fatalf("the copy %s not found: input stats %+v\n%s", copied, r.p.inputStats(), r.out.String())
	}
}

// reads reports whether the running exporter has the file at path open.
func (r *equivRun) reads(path string) bool {
	for _, in := range r.p.inputStats() {
		if slices.ContainsFunc(in.Files, func(f input.FileStats) bool { return f.Path == path }) {
			return true
		}
	}
	return false
}

// samples is what the running exporter exports, read at the newest line's time.
func (r *equivRun) samples() map[string]float64 {
	r.t.Helper()
	r.caughtUp()
	var b bytes.Buffer
	c, reg := r.p.Collector(), prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if err := c.WriteText(&b, reg); err != nil {
		r.t.Fatal(err)
	}
	return exposition(r.t, b.String())
}

// replayed is what --replay exports of the whole log.
func replayed(t *testing.T, lines [][]byte) map[string]float64 {
	t.Helper()
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, append(bytes.Join(lines, []byte("\n")), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Replay(equivRules(t, log, ""), []string{log}, Options{Now: time.Now}, &b); err != nil {
		t.Fatal(err)
	}
	return exposition(t, b.String())
}

// TestReadingsAgree: reading a log whose rules place lines by their own time gives the
// windows (counts, sums, quantiles, distinct counts, top values, buckets) and totals of
// --replay, at the newest line's time, whichever way it was read: followed from its
// beginning once written, followed as it is written (lines in several writes), and
// across restarts (a shutdown's snapshot, a kill after a periodic one, a line or a CRI
// message written in part at the time), rotations by rename (a writer that had not
// reopened the log writing on to the file renamed too) and copytruncate (before the
// exporter read the log's last lines too), and
// rotations while the exporter was down (twice, the file of the snapshot compressed or
// not), with a glob that matches the rotated names too, into logrotate's olddir, and a
// node's container log as the kubelet rotates it. The scenarios are drawn at random; a failure names its seed.
func TestReadingsAgree(t *testing.T) {
	lines, times := equivLog(t, 2000, 7)
	want := replayed(t, lines)
	if want[`nginx_http_requests_window{method="GET",status="200",status_class="2xx",window="1m"}`] == 0 ||
		want[`nginx_http_path_requests_total`] != float64(len(lines)) {
		t.Fatalf("the replay counted no GET in its last minute, or not every line: %v", want[`nginx_http_path_requests_total`])
	}
	criText, criTimes := criLines(lines, times, 7)
	for _, wrap := range []struct {
		name string
		// glob has the input read the log's directory's *.log (the rotated files' names
		// do not match it), or pattern when set; input are its keys besides path.
		glob    bool
		pattern string
		input   string
		cri     bool
		kubelet bool
		node    bool
		olddir  bool
		lines   [][]byte
		times   []int64
		seeds   uint64
	}{
		{name: "plain", lines: lines, times: times, seeds: 4},
		{name: "CRI", input: "\n    wrapper: cri", cri: true, lines: criText, times: criTimes, seeds: 2},
		// The chart's: a pod's container's directory, the kubelet's names of its rotated
		// files, which the glob does not match.
		{name: "CRI, the kubelet's names", glob: true, input: "\n    wrapper: cri", cri: true, kubelet: true, lines: criText, times: criTimes, seeds: 2},
		// The chart's DaemonSet: every container's log of the node, rotated by the kubelet.
		{name: "CRI on a node", glob: true, input: "\n    wrapper: cri", cri: true, kubelet: true, node: true, lines: criText, times: criTimes, seeds: 3},
		{name: "glob of 2 shards", glob: true, input: "\n    shards: 2", lines: lines, times: times, seeds: 1},
		// The rotated files are the glob's too (not the compressed ones): a copytruncate's
		// copy is read from where the log was read up to.
		{name: "glob of the rotated names", glob: true, pattern: "access.lo*[^z]", lines: lines, times: times, seeds: 3},
		{name: "2 parse workers", input: "\n    shards: 2", lines: lines, times: times, seeds: 1},
		// logrotate's `olddir old`: the rotated files go to a directory within the log's.
		{name: "olddir", olddir: true, lines: lines, times: times, seeds: 5},
	} {
		newRun := func(t *testing.T, seed uint64) *equivRun {
			dir := t.TempDir()
			log := filepath.Join(dir, "access.log")
			if wrap.kubelet {
				log = filepath.Join(dir, "0.log")
			}
			path := log
			if wrap.glob {
				path = filepath.Join(dir, cmp.Or(wrap.pattern, "*.log"))
			}
			if wrap.node {
				log = filepath.Join(dir, "web_nginx-7d4b9_0f1e2d3c", "nginx", "0.log")
				if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
					t.Fatal(err)
				}
				path = filepath.Join(dir, "*_*_*", "*", "*.log")
			}
			olddir := ""
			if wrap.olddir {
				olddir = filepath.Join(dir, "old")
				if err := os.Mkdir(olddir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			return &equivRun{t: t, olddir: olddir, lines: wrap.lines, times: wrap.times, cri: wrap.cri, copies: wrap.pattern != "", kubelet: wrap.kubelet, node: wrap.node, log: log, store: t.TempDir(), cfg: equivRules(t, path, wrap.input), rng: rand.New(rand.NewPCG(seed, 2))}
		}
		check := func(t *testing.T, r *equivRun) {
			t.Helper()
			if r.p == nil {
				r.start()
			}
			r.write(len(r.lines), false)
			// What became of the lines (matched, dropped) is published just after they
			// count as read, rule by rule: the samples are taken again until they agree.
			var diff []string
			await.Until(t, func() bool {
				diff = diffSamples(want, r.samples())
				return len(diff) == 0
			})
			if len(diff) > 0 {
				t.Errorf("%d samples differ from the replay's:\n%s", len(diff), strings.Join(diff[:min(len(diff), 40)], "\n"))
			}
		}
		t.Run(wrap.name+", from the beginning", func(t *testing.T) {
			r := newRun(t, 0)
			r.write(len(r.lines), false)
			check(t, r)
		})
		t.Run(wrap.name+", as written", func(t *testing.T) {
			r := newRun(t, 0)
			r.start()
			for r.next < len(r.lines) {
				r.write(1+r.rng.IntN(400), r.rng.IntN(2) == 0)
			}
			check(t, r)
		})
		// The log was empty at the stop (the exporter had seen it truncated), so its
		// position is at offset 0: the copy a copytruncate made of it while the exporter
		// was down holds none of the lines counted, and is read whole.
		t.Run(wrap.name+", restarted on an emptied log", func(t *testing.T) {
			if wrap.olddir {
				// No bytes of the log were read to know its copy by: one moved to an
				// olddir is not looked for there, as another log's archive may be.
				t.Skip("the copy of a log emptied at the snapshot is not found in an olddir")
			}
			r := newRun(t, 0)
			r.write(len(r.lines)/4, false)
			r.start()
			r.emptied()
			r.stop()
			r.write(len(r.lines)/4, false)
			r.copyTruncate()
			r.write(len(r.lines)/4, false)
			check(t, r)
		})
		// A writer that has not reopened the log writes to the file renamed: while the
		// exporter runs, while it is down, and both across a kill after a snapshot.
		t.Run(wrap.name+", a writer that had not reopened the log", func(t *testing.T) {
			r := newRun(t, 0)
			chunk := len(r.lines) / 16
			r.write(chunk, false)
			r.start()
			r.renameLate(chunk)
			r.write(chunk, false)
			r.stop()
			r.renameLate(chunk)
			r.write(chunk, false)
			r.start()
			r.write(chunk, false)
			r.snapshot()
			r.write(chunk, false)
			r.renameLate(chunk)
			r.kill()
			r.writeTo(r.older(1), chunk, false)
			r.write(chunk, false)
			r.start()
			check(t, r)
		})
		// copytruncate under a writer that keeps writing, the exporter behind it: a glob
		// of the rotated names reads the lines it had not read from the copy.
		if wrap.pattern != "" {
			t.Run(wrap.name+", copytruncate unread", func(t *testing.T) {
				r := newRun(t, 0)
				r.start()
				for range 12 {
					r.write(1+r.rng.IntN(300), false)
					r.copyTruncateUnread()
					r.write(1+r.rng.IntN(10), false)
					r.caughtUp() // rotations hours apart: each copy read before the next
				}
				check(t, r)
			})
		}
		for seed := range wrap.seeds {
			if seed > 0 && race.Enabled {
				// The seeds draw more scenarios of the same episodes, which run the same
				// goroutines: under the detector each way of reading runs its first seed,
				// and .ci/run runs every seed without it.
				break
			}
			t.Run(fmt.Sprintf("%s, seed %d", wrap.name, seed), func(t *testing.T) {
				r := newRun(t, seed)
				r.write(r.rng.IntN(300), false)
				r.start()
				for r.next < len(r.lines)*9/10 {
					r.episode()
				}
				check(t, r)
			})
		}
	}
}

// episode writes some lines and does one thing to the log or the exporter, drawn at
// random, that must not change what is counted.
func (r *equivRun) episode() {
	r.t.Helper()
	chunk := func() int { return 1 + r.rng.IntN(300) }
	whole := r.partial == 0 // a writer rotated writes whole lines
	switch k := r.rng.IntN(6); {
	case k == 0:
		r.write(chunk(), r.rng.IntN(2) == 0)
	case k == 1 && whole:
		r.rename()
		r.write(chunk(), false)
	case k == 2 && whole && r.rng.IntN(2) == 0:
		r.copyTruncate()
		r.write(chunk(), false)
	case k == 2 && whole:
		r.copyTruncateBehind()
		r.stop()
		r.start()
	case k == 3:
		r.stop()
		switch down := r.rng.IntN(5); {
		case down == 1:
			r.write(chunk(), r.rng.IntN(2) == 0)
		case down == 2 && whole:
			r.write(chunk(), false)
			r.rename()
			r.write(chunk(), false)
		case down == 3 && whole && !r.inParts():
			// The copy is read from the position, the log from its start; the first parts
			// of a CRI message are lost, by design: its file is not read on from where
			// they were kept.
			r.write(r.rng.IntN(100), false)
			r.copyTruncate()
			r.write(chunk(), false)
		case down == 4 && whole && !(r.node && r.inParts()):
			// The file between the one read and the log's is new to the restart, which
			// the one read may have been compressed by: its lines are read, none written
			// since. The kubelet compresses the one read at the second rename. A CRI
			// message's first parts are lost when it is, by design, as the restart cannot
			// tell that no line of the file gone followed them: not drawn. In an olddir,
			// the file between is found there by the archive of the one read.
			compress := r.node || !r.inParts() && r.rng.IntN(2) == 0
			if !compress {
				r.write(chunk(), false)
			}
			r.rename()
			r.write(chunk(), false)
			r.rename()
			if compress && !r.node {
				r.compress(r.older(2))
			}
			r.write(chunk(), false)
		}
		r.start()
	case k == 4:
		r.snapshot()
		r.write(chunk(), r.rng.IntN(2) == 0)
		renamed := r.partial == 0 && r.rng.IntN(2) == 0
		if renamed {
			r.rename()
			r.write(chunk(), false)
		}
		r.kill()
		// Again, while down: the files rotated since the snapshot are read. The kubelet
		// would compress the one rotated since, whose lines after the snapshot are lost.
		if r.partial == 0 && r.rng.IntN(2) == 0 && !(r.node && renamed) {
			r.rename()
		}
		r.write(r.rng.IntN(100), r.rng.IntN(2) == 0)
		r.start()
	case k == 5 && whole:
		// A restart during a rotation: the old file may still be open.
		r.write(chunk(), false)
		r.rename()
		r.write(chunk(), r.rng.IntN(2) == 0)
		r.stop()
		r.start()
	}
}
