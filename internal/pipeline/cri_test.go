package pipeline

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input/cri/critest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

// startCRI starts a pipeline following the cri input path with rules, and returns it
// with its one input.
func startCRI(t *testing.T, path, rules string, opts Options) (*Pipeline, *stream) {
	t.Helper()
	cfg, err := config.Parse([]byte("inputs: [{path: '"+path+"', wrapper: cri, start_at: beginning}]\n"+rules), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, in := range p.inputs {
		return p, in
	}
	t.Fatal("no input")
	return nil, nil
}

// A P line longer than the line cap is skipped by the follower, and the rest of its
// message, up to and including its F line, goes with it: the F line is not a message of
// its own. The message counts once as too long. So too in a replay.
func TestCRIPartTooLongDropsItsMessage(t *testing.T) {
	log := filepath.Join(t.TempDir(), "0.log")
	text := "2024-03-01T12:00:00Z stdout P " + strings.Repeat("x", 200) + "\n" +
		"2024-03-01T12:00:00Z stdout P part1b\n" +
		"2024-03-01T12:00:00Z stdout F part2\n" +
		"2024-03-01T12:00:01Z stdout F other\n"
	if err := os.WriteFile(log, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	const rules = "rules: [{name: parts, match: part}, {name: other, match: other}]\n"
	const parts, other = `logwindow_rule_matched_lines_total{rule="parts"}`, `logwindow_rule_matched_lines_total{rule="other"}`
	opts := Options{Now: time.Now, MaxLineBytes: 100, PollInterval: 10 * time.Millisecond}
	p, _ := startCRI(t, log, rules, opts)
	// The last line, handled after the others.
	if !await.Until(t, func() bool { return gatherPipeline(t, p)[other] == 1 }) {
		t.Fatal("the last line was not counted")
	}
	if got := gatherPipeline(t, p)[parts]; got != 0 {
		t.Errorf("%s %v, want 0: the F line of the dropped message was read as a message", parts, got)
	}
	if s := p.inputStats()[0]; s.TooLong != 1 || s.Unmatched != 0 || s.MalformedLines != 0 {
		t.Errorf("too long %d, unmatched %d, malformed %d: want the message too long once", s.TooLong, s.Unmatched, s.MalformedLines)
	}

	cfg := p.gen.Load().cfg
	var out bytes.Buffer
	if err := Replay(cfg, []string{log}, opts, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), parts+" 0\n") || !strings.Contains(out.String(), other+" 1\n") {
		t.Errorf("replay: want %s 0 and %s 1 in\n%s", parts, other, out.String())
	}
}

// Files each ending in a 60 KB P line, deleted: their partial messages are released with
// them (the heap they held, 270 MB for 4,100 files, was kept for the life of the input).
// 400 files show it, in a tenth of the time: their reading and their release are waited
// on, not bounded in seconds (a bound of 2 minutes for 4,100 files failed under -race on a
// loaded machine).
func TestCRIPartialsReleasedWithTheirFiles(t *testing.T) {
	const files = 400
	dir := t.TempDir()
	_, in := startCRI(t, filepath.Join(dir, "*.log"), "rules: [{name: lines, match: x}]\n",
		Options{Now: time.Now, RotationGrace: 10 * time.Millisecond, PollInterval: 50 * time.Millisecond})
	before := heapInUse()
	line := []byte("2024-03-01T12:00:00Z stdout P " + strings.Repeat("x", 60_000) + "\n")
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%05d.log", i)), line, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !await.Until(t, func() bool { return in.running.Stats().LinesRead == files }) {
		t.Fatalf("%d of %d files read", in.running.Stats().LinesRead, files)
	}
	peak := heapInUse() - before
	held := in.cri.HeldBytes()
	for i := range files {
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("%05d.log", i))); err != nil {
			t.Fatal(err)
		}
	}
	await.Until(t, func() bool { return in.cri.HeldBytes() == 0 })
	after := heapInUse() - before
	t.Logf("%d files: heap %.1f MB above the start with the files read (joiner: %.1f MB), %.1f MB after they were deleted (joiner: %d bytes)",
		files, mb(peak), mb(held), mb(after), in.cri.HeldBytes())
	if in.cri.HeldBytes() != 0 || after > peak/10 {
		t.Errorf("after the files were deleted the joiner holds %d bytes, the heap is %.1f MB above the start: want nothing and about nothing",
			in.cri.HeldBytes(), mb(after))
	}
}

func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func mb(b int64) float64 { return float64(b) / 1e6 }

// The partial messages a cri input holds count in the memory of the series
// (logwindow_series_bytes, which --series.max-bytes bounds): by what the joiner holds,
// given back when their files go and when the input stops.
func TestCRIPartialsCountInTheMemory(t *testing.T) {
	dir := t.TempDir()
	p, in := startCRI(t, filepath.Join(dir, "*.log"), "rules: [{name: lines, match: x}]\n",
		Options{Now: time.Now, RotationGrace: 10 * time.Millisecond, PollInterval: 50 * time.Millisecond})
	set := p.gen.Load().set
	base := set.MemoryUsed()
	line := []byte("2024-03-01T12:00:00Z stdout P " + strings.Repeat("x", 10_000) + "\n")
	const files = 20
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d.log", i)), line, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	counted := func(want func(held, used int64) bool) (held, used int64) {
		t.Helper()
		await.Until(t, func() bool {
			held, used = in.cri.HeldBytes(), set.MemoryUsed()-base
			return want(held, used)
		})
		return held, used
	}
	if held, used := counted(func(held, used int64) bool { return held > files*10_000 && used == held }); held <= files*10_000 || used != held {
		t.Fatalf("the joiner holds %d bytes, the memory counts %d of them", held, used)
	}
	for i := range files / 2 {
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("%02d.log", i))); err != nil {
			t.Fatal(err)
		}
	}
	if held, used := counted(func(held, used int64) bool { return held < files/2*11_000 && used == held }); held >= files/2*11_000 || used != held {
		t.Fatalf("half the files deleted: the joiner holds %d bytes, the memory counts %d of them", held, used)
	}
	cfg, err := config.Parse([]byte("rules: [{name: lines, match: x}]\n"), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if used := p.gen.Load().set.MemoryUsed() - base; used != 0 {
		t.Fatalf("the input stopped: the memory still counts %d bytes of it", used)
	}
}

// Partial messages are charged to --series.max-bytes and refused past it: a message whose
// part would take the memory past the bound is dropped whole and counted once as too
// long, its last part no message of its own (4,100 files of 60 KB parts held 270 MB
// under a 64 MiB bound before).
func TestCRIPartialsRefusedPastTheMemoryBound(t *testing.T) {
	const files, bound = 200, 1 << 20
	dir := t.TempDir()
	p, in := startCRI(t, filepath.Join(dir, "*.log"), "rules: [{name: ends, match: end}]\n",
		Options{Now: time.Now, PollInterval: 20 * time.Millisecond, SeriesMaxBytes: bound})
	set := p.gen.Load().set
	part := critest.Line("2024-03-01T12:00:00Z", "stdout", "P", strings.Repeat("x", 10_000)) + "\n"
	last := critest.Line("2024-03-01T12:00:01Z", "stdout", "F", "end") + "\n"
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d.log", i)), []byte(part), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	waitRead := func(n uint64) {
		t.Helper()
		if !await.Until(t, func() bool { return in.running.Stats().LinesRead == n }) {
			t.Fatalf("%d of %d lines read", in.running.Stats().LinesRead, n)
		}
	}
	waitRead(files)
	// The bound is on the bytes joined; each file's record of its message (a few hundred
	// bytes, kept for a dropped one too until its last part) comes on top.
	if used := set.MemoryUsed(); used > bound+files*400 {
		t.Errorf("the memory counts %d bytes under a bound of %d (the joiner holds %d)", used, bound, in.cri.HeldBytes())
	}
	for i := range files {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%03d.log", i)), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(last); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	waitRead(2 * files)
	const ends = `logwindow_rule_matched_lines_total{rule="ends"}`
	s := p.inputStats()[0]
	// The rule's matched lines are counted just after the lines read.
	var matched float64
	await.Until(t, func() bool { matched = gatherPipeline(t, p)[ends]; return int(matched)+int(s.TooLong) >= files })
	t.Logf("%d messages joined, %d dropped as too long", int(matched), s.TooLong)
	if s.TooLong == 0 || matched == 0 || int(matched)+int(s.TooLong) != files || s.MalformedLines != 0 {
		t.Errorf("%v messages matched, %d too long, %d malformed: want %d in all, each once, some of both",
			matched, s.TooLong, s.MalformedLines, files)
	}
}

// A line too long to read of a stream the input does not read (streams:) is skipped as the
// other lines of that stream are, before it is joined: its message keeps nothing in the
// joiner (where it would stay, its last part never given to it, until its file goes, and
// take one of the MaxPending messages being joined). It counts as the lines of that stream
// do, as a line read, and not as too long: the input was not asked to read it. A one-shot
// says so too: its summary counts it with the other lines of streams not read.
func TestCRIPartTooLongOfOtherStream(t *testing.T) {
	log := filepath.Join(t.TempDir(), "0.log")
	text := "2024-03-01T12:00:00Z stderr P " + strings.Repeat("x", 200) + "\n" +
		"2024-03-01T12:00:00Z stderr F end\n" +
		"2024-03-01T12:00:01Z stdout F other\n"
	if err := os.WriteFile(log, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("inputs: [{path: '"+log+"', wrapper: cri, streams: [stdout], start_at: beginning}]\n"+
		"rules: [{name: other, match: other}]\n"), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cfg, Options{Now: time.Now, MaxLineBytes: 100, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	waitTotal(t, p, "the last line", `logwindow_rule_matched_lines_total{rule="other"}`, 1)
	samples := waitTotal(t, p, "every line read", "logwindow_input_lines_total", 3)
	if got := sumOf(samples, "logwindow_input_too_long_lines_total"); got != 0 {
		t.Errorf("%v lines too long, want none: the one too long is of a stream not read", got)
	}
	p.mu.Lock()
	for _, in := range p.inputs {
		if held := in.cri.HeldBytes(); held != 0 {
			t.Errorf("the joiner holds %d bytes for a stream the input does not read, want none", held)
		}
	}
	p.mu.Unlock()

	var out, summary bytes.Buffer
	if err := Replay(cfg, []string{log}, Options{Now: time.Now, MaxLineBytes: 100, Summary: &summary}, &out); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("input %s: 1 of 1 lines fit (2 lines of other streams skipped)\n", log); summary.String() != want {
		t.Errorf("replay summary %q, want %q", summary.String(), want)
	}
}

// A container that writes UTF-16 (a Windows console's, PowerShell's) has the runtime
// wrap each of its lines as a CRI line whose message is UTF-16: the file starts with the
// CRI line's own text, so the file's encoding is told by the first message's bytes. It is
// warned of once, as a file in UTF-16 is; a CRI file of UTF-8 messages is not.
func TestCRIMessagesInUTF16(t *testing.T) {
	utf16le := func(s string) string {
		var b []byte
		for _, r := range s {
			b = append(b, byte(r), 0)
		}
		return string(b)
	}
	const line = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
	dir := t.TempDir()
	for _, tc := range []struct {
		name, log string
		warned    int
	}{
		{"UTF-16LE", "2024-03-01T12:00:00.123456789Z stdout F " + utf16le(line+"\r") + "\n2024-03-01T12:00:01Z stdout F \x00" + utf16le(line+"\r") + "\n", 1},
		{"UTF-16LE with a byte order mark", "2024-03-01T12:00:00Z stdout F \xff\xfe" + utf16le(line) + "\n", 1},
		{"UTF-8", "2024-03-01T12:00:00Z stdout F " + line + "\n2024-03-01T12:00:01Z stdout F \n", 0},
		// A first message of binary that opens with FF FE: the container's bytes, not a
		// byte order mark of the file, and no NUL every other byte.
		{"UTF-8 after a binary first message opening with FF FE", "2024-03-01T12:00:00Z stdout F \xff\xfe\x01junk\n2024-03-01T12:00:01Z stdout F " + line + "\n2024-03-01T12:00:02Z stdout F " + line + "\n", 0},
		{"UTF-8, a short first message", "2024-03-01T12:00:00Z stdout F x\n2024-03-01T12:00:01Z stdout F " + line + "\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".log")
			if err := os.WriteFile(log, []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: pods, path: '%s', wrapper: cri, log_format: combined}]\nrules: [{name: requests, labels: {status: '${status}'}}]\n", log), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			_ = Replay(cfg, []string{log}, Options{Now: time.Now, Logger: slog.New(slog.NewTextHandler(&out, nil))}, io.Discard)
			if got := strings.Count(out.String(), "file is not UTF-8 but UTF-16LE"); got != tc.warned {
				t.Errorf("warned %d times, want %d:\n%s", got, tc.warned, out.String())
			}
		})
	}
}

// The kubelet rotates a container's log by renaming 0.log to 0.log.<time> and having the
// runtime start a new 0.log: a message whose first parts (P) are in the old file and whose
// last (F) is the new file's first line is joined once, as one message, whether the old
// file's parts were read before the rotation or only after it, or the F part came only
// once the old file was closed past its grace, and whatever the input's path names: the
// log itself or the chart's glob of them. The message after it, in the new file, is its
// own. So in a replay of the two files.
func TestCRIMessageAcrossKubeletRotation(t *testing.T) {
	const rules = "rules: [{name: joined, match: '^part-apart-bpart-c$'}, {name: parts, match: 'part-'}, {name: next, match: '^next$'}]\n"
	const parts = "2024-03-01T12:00:00.000000001Z stdout P part-a\n2024-03-01T12:00:00.000000002Z stdout P part-b\n"
	const last = "2024-03-01T12:00:01.000000001Z stdout F part-c\n2024-03-01T12:00:01.000000002Z stdout F next\n"
	logPath := func(dir string) string { return filepath.Join(dir, "0.log") }
	glob := func(dir string) string { return filepath.Join(filepath.Dir(dir), "*", "*.log") }
	for _, tc := range []struct {
		name string
		path func(dir string) string
		// readFirst: the old file's parts are read before the rotation; late: the F part
		// is written once the old file was closed.
		readFirst, late bool
	}{
		{"the log, read before", logPath, true, false},
		{"the log, rotated before read", logPath, false, false},
		{"the log, F past the grace", logPath, true, true},
		{"a glob, read before", glob, true, false},
		{"a glob, rotated before read", glob, false, false},
		{"a glob, F past the grace", glob, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "app")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(dir, "0.log")
			if err := os.WriteFile(log, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			var logged syncbuf.Buffer
			p, in := startCRI(t, tc.path(dir), rules, Options{Now: time.Now, PollInterval: 10 * time.Millisecond, RotationGrace: 50 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			waitReady(t, p)
			appendTo(t, log, parts)
			if tc.readFirst {
				waitLines(t, in, 2)
			}
			if err := os.Rename(log, log+".20240301-120000"); err != nil {
				t.Fatal(err)
			}
			if tc.late {
				if err := os.WriteFile(log, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				waitLogged(t, &logged, "closed rotated file after its grace period", 1)
				appendTo(t, log, last)
			} else if err := os.WriteFile(log, []byte(last), 0o644); err != nil {
				t.Fatal(err)
			}
			waitRead(t, p, 4) // counted read once their events are written
			// and matched just after.
			got := waitTotal(t, p, "the next message", `logwindow_rule_matched_lines_total{rule="next"}`, 1)
			for _, c := range []struct {
				rule string
				want float64
			}{{"joined", 1}, {"parts", 1}, {"next", 1}} {
				if n := got[`logwindow_rule_matched_lines_total{rule="`+c.rule+`"}`]; n != c.want {
					t.Errorf("rule %s matched %v lines; want %v", c.rule, n, c.want)
				}
			}
			if s := p.inputStats()[0]; s.Unmatched != 0 || s.MalformedLines != 0 {
				t.Errorf("unmatched %d, malformed %d; want none", s.Unmatched, s.MalformedLines)
			}
			// A replay of the two files, the new one given first, joins it alike.
			var out bytes.Buffer
			if err := Replay(p.gen.Load().cfg, []string{log, log + ".20240301-120000"}, Options{Now: time.Now}, &out); err != nil {
				t.Fatal(err)
			}
			for _, rule := range []string{"joined", "parts", "next"} {
				if want := `logwindow_rule_matched_lines_total{rule="` + rule + `"} 1` + "\n"; !strings.Contains(out.String(), want) {
					t.Errorf("replay lacks %s", want)
				}
			}
		})
	}
}

// waitLines waits until in's follower has handed on n lines.
func waitLines(t *testing.T, in *stream, n uint64) {
	t.Helper()
	if !await.Until(t, func() bool { return in.running.Stats().LinesRead >= n }) {
		t.Fatalf("%d lines read; want %d", in.running.Stats().LinesRead, n)
	}
}

// A message in parts whose file goes before its last part (a pod deleted while its
// container wrote a long message) is dropped: it counts as too long, once, as a message
// the joiner drops for the memory does. Released uncounted, it showed nowhere. A message
// whose part the reader skipped for its length, and counted then, counts no more.
func TestCRIPartsOfADeletedFileCounted(t *testing.T) {
	const at = "2024-03-01T12:00:00Z "
	for _, tc := range []struct {
		name, text string
		// lines are the file's lines read or skipped for their length, tooLong what the
		// input counts as too long once the file went.
		lines, tooLong uint64
	}{
		{"a message in parts", at + "stdout P part1\n", 1, 1},
		{"both streams in parts", at + "stdout P out1\n" + at + "stderr P err1\n", 2, 2},
		{"joined past the line cap", at + "stdout P " + strings.Repeat("x", 60) + "\n" + at + "stdout P " + strings.Repeat("y", 60) + "\n", 2, 1},
		{"a part skipped for its length beside another stream's", at + "stdout P " + strings.Repeat("x", 200) + "\n" + at + "stderr P err1\n", 2, 2},
		{"whole messages", at + "stdout F whole\n" + at + "stdout P a\n" + at + "stdout F b\n", 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "0.log")
			if err := os.WriteFile(log, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, in := startCRI(t, filepath.Join(dir, "*.log"), "rules: [{name: lines, match: x}]\n",
				Options{Now: time.Now, MaxLineBytes: 100, RotationGrace: 10 * time.Millisecond, PollInterval: 10 * time.Millisecond})
			if !await.Until(t, func() bool { s := in.running.Stats(); return s.LinesRead+s.TooLong == tc.lines }) {
				t.Fatalf("%+v: want %d lines read or skipped", in.running.Stats(), tc.lines)
			}
			if err := os.Remove(log); err != nil {
				t.Fatal(err)
			}
			if !await.Until(t, func() bool { return in.cri.HeldBytes() == 0 && in.stats().Stats.TooLong >= tc.tooLong }) {
				t.Fatalf("the joiner holds %d bytes, %d too long: want nothing held, %d too long", in.cri.HeldBytes(), in.stats().Stats.TooLong, tc.tooLong)
			}
			if got := in.stats().Stats.TooLong; got != tc.tooLong {
				t.Errorf("%d too long once the file went, want %d", got, tc.tooLong)
			}
		})
	}
}

// partLine is a CRI line of stdout at a fixed time.
func partLine(tag, msg string) string {
	return critest.Line("2024-03-01T12:00:00Z", "stdout", tag, msg) + "\n"
}

// criInputs is a rule file of wrapper: cri inputs, each `name: path`, read from their
// beginning, with a rule that counts every message and one the whole messages of users.
func criInputs(inputs ...string) string {
	var b strings.Builder
	b.WriteString("inputs:\n")
	for _, in := range inputs {
		name, path, _ := strings.Cut(in, ": ")
		b.WriteString("  - {name: " + name + ", path: '" + path + "', wrapper: cri, start_at: beginning}\n")
	}
	b.WriteString("rules:\n  - {name: all, match: '.'}\n  - {name: users, match: '^user=(?P<user>\\w+) done$', labels: {user: '${user}'}}\n")
	return b.String()
}

// tooLongByInput is what each running input counts as too long, by its label.
func tooLongByInput(p *Pipeline) map[string]uint64 {
	m := map[string]uint64{}
	for _, s := range p.inputStats() {
		m[s.Input] += s.Stats.TooLong
	}
	return m
}

func reloadText(t *testing.T, p *Pipeline, rules string) {
	t.Helper()
	cfg, err := config.Parse([]byte(rules), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
}

// waitLinesRead waits until the inputs read n lines in all.
func waitLinesRead(t *testing.T, p *Pipeline, n uint64) {
	t.Helper()
	var got uint64
	if !await.Until(t, func() bool {
		got = 0
		for _, s := range p.inputStats() {
			got += s.LinesRead
		}
		return got == n
	}) {
		t.Fatalf("%d lines read, want %d", got, n)
	}
}

// A reload that narrows a cri input's glob (a new path: a new input) dropped the
// messages in parts of the files the glob no longer covers without a count or a word.
// They count as too long in the input that replaces it, as a deleted file's do, and are
// logged once, naming the input and the file; a file both globs cover is read on, and
// its message goes on in the new input's joiner.
func TestReloadNarrowedGlobCountsLostParts(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	if err := os.WriteFile(a, []byte(partLine("P", "user=alice ")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(partLine("P", "user=bob ")+partLine("P", "took=5 ")), 0o644); err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	p := startStoredOn(t, criInputs("app: "+filepath.Join(dir, "*.log")), t.TempDir(), &out, Options{SnapshotInterval: time.Hour})
	waitLinesRead(t, p, 3)
	reloadText(t, p, criInputs("app: "+filepath.Join(dir, "a*.log")))
	if got := tooLongByInput(p); got["app"] != 1 {
		t.Errorf("too long %v once the glob left b.log, want app 1 (its message in parts)", got)
	}
	logged := out.String()
	if !strings.Contains(logged, "the first parts of messages in parts are lost, counted as too long") || !strings.Contains(logged, b) || strings.Count(logged, "parts are lost") != 1 {
		t.Errorf("the log does not say once that b.log's message in parts is lost:\n%s", logged)
	}
	appendTo(t, a, partLine("F", "done"))
	// The new input counts from 0; a line counts as read once its events are in the series.
	waitLinesRead(t, p, 1)
	if got := gatherPipeline(t, p); got[`users_total{user="alice"}`] != 1 {
		t.Errorf("users_total{alice} %v, want alice's message joined across the reload", got[`users_total{user="alice"}`])
	}
}

// A reload that removes a cri input dropped its joiner's messages in parts uncounted.
// They count as too long in the cri input the reload starts in its place; with none,
// no counter of the input is left, and the log says how many, of which input and file.
func TestReloadRemovedInputCountsLostParts(t *testing.T) {
	for _, tc := range []struct {
		name string
		// after are the inputs of the reload, beside the "web" input of dir/web; counted
		// the input that counts the app's lost message, "" for none.
		after   []string
		counted string
	}{
		{name: "another input in its place", after: []string{"api: API"}, counted: "api"},
		{name: "removed alone", counted: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, sub := range []string{"app", "web", "api"} {
				if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			app := filepath.Join(dir, "app", "0.log")
			if err := os.WriteFile(app, []byte(partLine("P", "user=alice ")), 0o644); err != nil {
				t.Fatal(err)
			}
			web := "web: " + filepath.Join(dir, "web", "*.log")
			var out syncbuf.Buffer
			p := startStoredOn(t, criInputs("app: "+filepath.Join(dir, "app", "*.log"), web), t.TempDir(), &out, Options{SnapshotInterval: time.Hour})
			waitLinesRead(t, p, 1)
			after := []string{web}
			for _, in := range tc.after {
				after = append(after, strings.ReplaceAll(in, "API", filepath.Join(dir, "api", "*.log")))
			}
			reloadText(t, p, criInputs(after...))
			got := tooLongByInput(p)
			var sum uint64
			for _, n := range got {
				sum += n
			}
			switch {
			case tc.counted != "" && (got[tc.counted] != 1 || sum != 1):
				t.Errorf("too long %v once app went, want %s 1", got, tc.counted)
			case tc.counted == "" && sum != 0:
				t.Errorf("too long %v once app went, want none: web reads none of its files", got)
			}
			logged := out.String()
			want := "counted as too long"
			if tc.counted == "" {
				want = "counted nowhere"
			}
			if !strings.Contains(logged, "the first parts of messages in parts are lost, "+want) || !strings.Contains(logged, app) ||
				!strings.Contains(logged, "input=app") && !strings.Contains(logged, "of_input=app") || !strings.Contains(logged, "messages=1") {
				t.Errorf("the log does not say that app's message in parts is lost (%s):\n%s", want, logged)
			}
		})
	}
}

// A restart whose snapshot keeps messages in parts that cannot be resumed dropped those
// of a file gone while the exporter was down, or of an input whose path changed, without
// a count or a word (one rewritten was logged, uncounted). Each counts as too long, once,
// in the input that was to go on with it, and is logged naming the input and the file.
func TestRestartCountsPartsNotResumed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// down is what happens to the file while the exporter is down; glob the input's
		// path at the restart, of the same name.
		down    func(t *testing.T, log string)
		glob    string
		tooLong uint64
	}{
		{name: "read on", down: func(*testing.T, string) {}, glob: "*.log"},
		{name: "rewritten", glob: "*.log", tooLong: 1, down: func(t *testing.T, log string) {
			if err := os.Remove(log); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(log, []byte(partLine("F", "done")), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "deleted", glob: "*.log", tooLong: 1, down: func(t *testing.T, log string) {
			if err := os.Remove(log); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the glob no longer covers it", down: func(*testing.T, string) {}, glob: "x*.log", tooLong: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, storage := t.TempDir(), t.TempDir()
			log := filepath.Join(dir, "0.log")
			if err := os.WriteFile(log, []byte(partLine("P", "user=alice ")), 0o644); err != nil {
				t.Fatal(err)
			}
			var out syncbuf.Buffer
			p := startStoredOn(t, criInputs("app: "+filepath.Join(dir, "*.log")), storage, &out, Options{SnapshotInterval: time.Hour})
			waitLinesRead(t, p, 1)
			p.Stop()
			tc.down(t, log)
			var after syncbuf.Buffer
			p = startStoredOn(t, criInputs("app: "+filepath.Join(dir, tc.glob)), storage, &after, Options{SnapshotInterval: time.Hour})
			if got := tooLongByInput(p); got["app"] != tc.tooLong {
				t.Errorf("too long %v after the restart, want app %d", got, tc.tooLong)
			}
			logged := after.String()
			if said := strings.Contains(logged, "parts are lost") && strings.Contains(logged, log) && strings.Contains(logged, "input=app"); said != (tc.tooLong > 0) {
				t.Errorf("the log says the message in parts of %s is lost: %v, want %v:\n%s", log, said, tc.tooLong > 0, logged)
			}
			if tc.tooLong == 0 {
				appendTo(t, log, partLine("F", "done"))
				waitTotal(t, p, "alice's message", `users_total{user="alice"}`, 1)
			}
		})
	}
}

// A restart whose snapshot's messages in parts a glob's shards cannot resume, in files of
// directories dealt to both of them, logged them once a shard: the log says it once for
// the input, with every file, and each message counts once.
func TestRestartShardsLogLostPartsOnce(t *testing.T) {
	dir, storage := t.TempDir(), t.TempDir()
	var logs []string
	for _, sub := range []string{"a", "b", "c", "d"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		log := filepath.Join(dir, sub, "0.log")
		if err := os.WriteFile(log, []byte(partLine("P", "user=alice ")), 0o644); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, log)
	}
	rules := "inputs:\n  - {name: app, path: '" + filepath.Join(dir, "*", "*.log") + "', wrapper: cri, start_at: beginning, shards: 2}\nrules:\n  - {name: all, match: '.'}\n"
	var out syncbuf.Buffer
	p := startStoredOn(t, rules, storage, &out, Options{SnapshotInterval: time.Hour})
	waitLinesRead(t, p, uint64(len(logs)))
	p.Stop()
	for _, log := range logs { // rewritten while the exporter is down
		if err := os.Remove(log); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(log, []byte(partLine("F", "done")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var after syncbuf.Buffer
	p = startStoredOn(t, rules, storage, &after, Options{SnapshotInterval: time.Hour})
	if got := tooLongByInput(p); got["app"] != uint64(len(logs)) {
		t.Errorf("too long %v after the restart, want app %d", got, len(logs))
	}
	logged := after.String()
	if n := strings.Count(logged, "parts are lost"); n != 1 {
		t.Errorf("the log says %d times that messages in parts are lost, want once:\n%s", n, logged)
	}
	for _, log := range logs {
		if !strings.Contains(logged, log) {
			t.Errorf("the log does not name %s:\n%s", log, logged)
		}
	}
}

// A reload that starts a cri input's followers anew goes on with its messages in parts in
// the new followers' joiners when they still read CRI lines (`shards:` changed): none is
// lost nor counted twice. When the input no longer reads CRI lines (its wrapper taken
// away) they are lost, counted as too long in it, and the log said their file was no
// longer read.
func TestReloadStartedAnewCountsLostParts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(rules string) string
		tooLong uint64
	}{
		{name: "shards changed", tooLong: 0, edit: func(rules string) string {
			return strings.Replace(rules, "wrapper: cri,", "wrapper: cri, shards: 2,", 1)
		}},
		{name: "wrapper taken away", tooLong: 1, edit: func(rules string) string {
			return strings.Replace(rules, "wrapper: cri, ", "", 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "web", "0.log")
			if err := os.Mkdir(filepath.Dir(log), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(log, []byte(partLine("P", "user=alice ")), 0o644); err != nil {
				t.Fatal(err)
			}
			rules := criInputs("app: " + filepath.Join(dir, "*", "*.log"))
			var out syncbuf.Buffer
			p := startStoredOn(t, rules, t.TempDir(), &out, Options{SnapshotInterval: time.Hour})
			waitLinesRead(t, p, 1)
			reloadText(t, p, tc.edit(rules))
			if got := tooLongByInput(p); got["app"] != tc.tooLong {
				t.Errorf("too long %v after the reload, want app %d", got, tc.tooLong)
			}
			logged := out.String()
			said := strings.Contains(logged, "parts are lost")
			if said != (tc.tooLong > 0) || said && (!strings.Contains(logged, "no longer reads CRI lines") || !strings.Contains(logged, log)) {
				t.Errorf("the log says the message in parts of %s is lost: %v, want %v, because of the wrapper:\n%s", log, said, tc.tooLong > 0, logged)
			}
			if tc.tooLong == 0 {
				appendTo(t, log, partLine("F", "done"))
				waitTotal(t, p, "alice's message", `users_total{user="alice"}`, 1)
			}
		})
	}
}

// restartOrReload runs rules after p's, which logs to out: by a reload, or by a restart on
// the snapshot of storage; it returns the pipeline that runs them and what it logs (out at
// a reload, where the lines before it say nothing the callers look for).
func restartOrReload(t *testing.T, restart bool, p *Pipeline, out *syncbuf.Buffer, storage, rules string) (*Pipeline, *syncbuf.Buffer) {
	t.Helper()
	if !restart {
		reloadText(t, p, rules)
		return p, out
	}
	p.Stop()
	var after syncbuf.Buffer
	return startStoredOn(t, rules, storage, &after, Options{SnapshotInterval: time.Hour}), &after
}

// Two inputs removed at once (by a reload, or from the rule file while the exporter was
// down) that both read a file both held its message in parts, and both were given back to
// the input added in their place: it went on with one and refused the other as of a
// stream it held already, logged as past the limit of messages in progress and counted
// nowhere. The message goes on once, with the parts of the first input by name (by path
// at a restart); the other's copy is lost as a removed input's message is, counted as too
// long in the new input, and the log names both inputs.
func TestRemovedInputsHeldOneMessage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart bool
	}{{name: "reload"}, {name: "restart", restart: true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, storage := t.TempDir(), t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "app"), 0o755); err != nil {
				t.Fatal(err)
			}
			app, glob := filepath.Join(dir, "app", "0.log"), filepath.Join(dir, "app", "*.log")
			if err := os.WriteFile(app, []byte(partLine("P", "user=alice ")), 0o644); err != nil {
				t.Fatal(err)
			}
			var out syncbuf.Buffer
			p := startStoredOn(t, criInputs("a: "+glob, "b: "+app), storage, &out, Options{SnapshotInterval: time.Hour})
			waitLinesRead(t, p, 2)
			p, logs := restartOrReload(t, tc.restart, p, &out, storage, criInputs("c: "+filepath.Join(dir, "*", "*.log")))
			if got := tooLongByInput(p); got["c"] != 1 || len(got) != 1 {
				t.Errorf("too long %v once a and b went, want c 1 (b's copy of the message)", got)
			}
			// By name at a reload; by path at a restart, where glob sorts before app.
			key, lost, kept := "of_input", "b", "a"
			if tc.restart {
				key, lost, kept = "of_input_path", app, glob
			}
			logged := logs.String()
			for _, want := range []string{
				"the first parts of messages in parts are lost, counted as too long: the input that held them",
				"another input no longer in the rule file held parts of the same messages (of one file and stream), which this input goes on with",
				"input=c", key + "=" + lost, "goes_on_with_" + key + "=" + kept, app, "messages=1 counted=1",
			} {
				if !strings.Contains(logged, want) {
					t.Errorf("the log does not say %q:\n%s", want, logged)
				}
			}
			if strings.Contains(logged, "not resumed") {
				t.Errorf("the log says that messages in parts were not resumed, past the limit:\n%s", logged)
			}
			appendTo(t, app, partLine("F", "done"))
			waitTotal(t, p, "alice's message, once", `users_total{user="alice"}`, 1)
		})
	}
}

// A restart whose snapshot holds the messages in parts of an input the rule file no
// longer has, which no input reads on, logged that input by its path as if it were the
// input's name (of_input, the key a reload gives the input's name): the snapshot records
// inputs by their path alone. The log says that the input is no longer in the rule file,
// by its path, in the words a reload uses, counted in the input added or nowhere.
func TestRestartNamesRemovedInputByPath(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart bool
		after   string // the input added beside web, "" for none
		want    string
	}{
		{name: "reload, another input in its place", after: "api", want: "counted as too long"},
		{name: "restart, another input in its place", restart: true, after: "api", want: "counted as too long"},
		{name: "restart, removed alone", restart: true, want: "counted nowhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, storage := t.TempDir(), t.TempDir()
			for _, sub := range []string{"app", "web", "api"} {
				if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			app, glob := filepath.Join(dir, "app", "0.log"), filepath.Join(dir, "app", "*.log")
			if err := os.WriteFile(app, []byte(partLine("P", "user=alice ")), 0o644); err != nil {
				t.Fatal(err)
			}
			inputs := []string{"web: " + filepath.Join(dir, "web", "*.log")}
			var out syncbuf.Buffer
			p := startStoredOn(t, criInputs(append(inputs, "app: "+glob)...), storage, &out, Options{SnapshotInterval: time.Hour})
			waitLinesRead(t, p, 1)
			if tc.after != "" {
				inputs = append(inputs, tc.after+": "+filepath.Join(dir, tc.after, "*.log"))
			}
			p, logs := restartOrReload(t, tc.restart, p, &out, storage, criInputs(inputs...))
			wantTooLong := map[string]uint64{}
			if tc.after != "" {
				wantTooLong[tc.after] = 1
			}
			if got := tooLongByInput(p); got[tc.after] != wantTooLong[tc.after] || got["web"] != 0 {
				t.Errorf("too long %v once app went, want %v", got, wantTooLong)
			}
			key, name, words := "of_input", "app", "the input that held them is no longer in the rule file, "
			if tc.restart {
				key, name, words = "of_input_path", glob, "the input that held them, named here by its path (a snapshot records an input's path, not its name), is no longer in the rule file, "
			}
			logged := logs.String()
			for _, want := range []string{"the first parts of messages in parts are lost, " + tc.want + ": " + words, key + "=" + name, app} {
				if !strings.Contains(logged, want) {
					t.Errorf("the log does not say %q:\n%s", want, logged)
				}
			}
		})
	}
}
