package pipeline

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// A log of local times read by a layout without a zone is placed a whole UTC offset from
// the clock, in no window west of Greenwich and as future east of it. The lines read live
// that stay so for 5 minutes are warned of, once, naming the input, the rules, the offset
// and the fix; lines on time, a log read in its zone (location:), a writer's clock a few
// minutes off and a log's old lines read while the clock moves are not.
func TestZoneOffsetWarned(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC) // 13:00 in New York (EST, UTC−5)
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		location string
		shards   int // parse workers (shards:), 0 for none
		// stamp is the time a line read at the clock's now carries.
		stamp func(now time.Time) time.Time
		want  string // what the warning says; "" for none
	}{
		{"west, local times read as UTC", "", 0, func(now time.Time) time.Time { return now.In(newYork) },
			`level=WARN msg="timestamp: the lines' own times stay a whole UTC offset behind the host's clock`},
		{"west, its offset", "", 0, func(now time.Time) time.Time { return now.In(newYork) },
			`input=app rules=lines,errors behind=5h0m0s as_local_times_of=UTC-05:00`},
		{"east, local times read as UTC", "", 0, func(now time.Time) time.Time { return now.In(time.FixedZone("", 3600)) },
			`msg="timestamp: the lines' own times stay a whole UTC offset ahead of the host's clock, as a log's local times read as UTC by a layout without a zone are; each is counted as future, at the second it is read: give the rules' timestamp: location: the time zone the log is written in (an IANA name, e.g. America/New_York), or a layout that reads the offset its lines carry (-0700); a writer whose clock is off by as much is set right instead" input=app rules=lines,errors ahead=1h0m0s as_local_times_of=UTC+01:00`},
		{"a quarter-hour zone", "", 0, func(now time.Time) time.Time { return now.In(time.FixedZone("", 5*3600+45*60)) },
			`ahead=5h45m0s as_local_times_of=UTC+05:45`},
		{"lines held back a minute by a buffer", "", 0, func(now time.Time) time.Time {
			return now.In(newYork).Add(-time.Duration(now.Minute()%2) * time.Minute)
		}, `behind=5h0m0s as_local_times_of=UTC-05:00`},
		{"west, lines parsed by workers", "", 2, func(now time.Time) time.Time { return now.In(newYork) },
			`input=app rules=lines,errors behind=5h0m0s as_local_times_of=UTC-05:00`},
		{"senders in two zones", "", 0, func(now time.Time) time.Time {
			if now.Minute()%2 == 0 {
				return now.In(newYork)
			}
			return now
		}, `level=WARN msg="timestamp: some of the lines' own times stay a whole UTC offset from the host's clock and others at another, as the local times of writers in several zones (syslog senders) read by a layout without a zone are; the lines behind the clock are in no window shorter than their offset, those ahead are counted as future: have the writers write their UTC offset and read it with the layout (-0700), or UTC, or give each zone's lines an input of its own with its location:" input=app rules=lines,errors behind=5h0m0s as_local_times_of=UTC-05:00 others_as_local_times_of=UTC+00:00`},
		{"on time", "", 0, func(now time.Time) time.Time { return now }, ""},
		{"read in its zone", "America/New_York", 0, func(now time.Time) time.Time { return now.In(newYork) }, ""},
		{"a writer's clock minutes behind", "", 0, func(now time.Time) time.Time { return now.Add(-7 * time.Minute) }, ""},
		{"a log's old lines", "", 0, func(time.Time) time.Time { return t0.In(newYork) }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.log")
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			ts := `{capture: t, layout: '2006-01-02 15:04:05'}`
			if c.location != "" {
				ts = `{capture: t, layout: '2006-01-02 15:04:05', location: ` + c.location + `}`
			}
			cfg, err := config.Parse(fmt.Appendf(nil, `
global: {windows: [1m, 5m]}
inputs: [{name: app, path: '%s', shards: %[3]d}]
rules:
  - name: lines
    match: '^(?P<t>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?P<status>\d+)'
    timestamp: %[2]s
  - name: errors
    match: '^(?P<t>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?P<status>\d+)'
    where: {status: '^5'}
    timestamp: %[2]s
`, path, ts, max(c.shards, 1)), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var log syncbuf.Buffer
			clock := testclock.New(t0)
			p, err := Start(cfg, Options{Now: clock.Now, PollInterval: 5 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Stop)
			waitReady(t, p)
			// A line a minute, and one more, for 20 minutes: 4 times the 5 the offset must
			// last, so that each of several workers parses a run of them.
			var read uint64
			for range 20 {
				stamp := c.stamp(clock.Now()).Format("2006-01-02 15:04:05")
				appendTo(t, path, stamp+" 200\n"+stamp+" 503\n")
				read += 2
				waitRead(t, p, read)
				clock.Add(time.Minute)
			}
			got := log.String()
			if c.want == "" {
				if strings.Contains(got, "timestamp:") {
					t.Errorf("warned:\n%s", got)
				}
				return
			}
			if !strings.Contains(got, c.want) {
				t.Errorf("log lacks %s:\n%s", c.want, got)
			}
			if n := strings.Count(got, "level=WARN msg=\"timestamp:"); n != 1 {
				t.Errorf("warned %d times, want once:\n%s", n, got)
			}
		})
	}
}

// interleave takes a sample of a and one of b in turn, as the lines of senders in two
// zones come over one socket: the samples of each at the same wall seconds.
func interleave[S any](a, b []S) []S {
	var out []S
	for i := range max(len(a), len(b)) {
		if i < len(a) {
			out = append(out, a[i])
		}
		if i < len(b) {
			out = append(out, b[i])
		}
	}
	return out
}

// roundRobin takes n samples of each offset in turn, every seconds apart, as the lines of
// senders in as many zones come over one socket, each at its own second.
func roundRobin(n int, every int64, offsets ...int64) []zoneSample {
	var out []zoneSample
	for i := range int64(n) {
		for j, o := range offsets {
			out = append(out, zoneSample{i*every + int64(j)*every/int64(len(offsets)), o})
		}
	}
	return out
}

// zoneSample is a line's own time less the wall clock's second it was read at.
type zoneSample struct{ wall, offset int64 }

// stoppedThenNew are samples of senders minutes off the clock (never warned of) in four
// zones, one of which (600) stops while the one of fewest samples (-300) goes on, and then
// of a sender five hours behind.
func stoppedThenNew() []zoneSample {
	out := []zoneSample{{0, -300}}
	for i := range int64(10) {
		out = append(out, zoneSample{i * 10, 0}, zoneSample{i*10 + 1, 300}, zoneSample{i*10 + 2, 600})
	}
	for wall := int64(100); wall < 1000; wall += 60 {
		out = append(out, zoneSample{wall, 0}, zoneSample{wall + 1, 300}, zoneSample{wall + 2, -300})
		if wall >= 400 {
			out = append(out, zoneSample{wall + 3, -5 * 3600})
		}
	}
	return out
}

// A run of offsets from the clock is judged once it lasted zoneSpan with zoneSamples
// samples within zoneSpread, also while samples of other offsets come between its own
// (lines of senders in several zones); one that moves starts over.
func TestZoneRun(t *testing.T) {
	type sample = zoneSample
	steady := func(offset int64, n int, every int64) []sample {
		var s []sample
		for i := range n {
			s = append(s, sample{int64(i) * every, offset})
		}
		return s
	}
	cases := []struct {
		name    string
		samples []sample
		want    int64
	}{
		{"five hours behind", steady(-5*3600, 6, 60), -5 * 3600},
		{"too short a run", steady(-5*3600, 5, 60), 0},
		{"too few samples", steady(-5*3600, 4, 100), 0},
		{"on time", steady(-2, 20, 60), 0},
		{"minutes off", steady(-7*60, 20, 60), 0},
		{"half a quarter off", steady(-3600-450, 20, 60), 0},
		{"lagging within the spread", []sample{{0, -3600}, {60, -3660}, {120, -3610}, {180, -3600}, {240, -3650}, {300, -3600}}, -3600},
		{"a log's old lines, standing still", []sample{{0, -3600}, {60, -3660}, {120, -3720}, {180, -3780}, {240, -3840}, {300, -3900}}, 0},
		{"a catch-up, then live", append([]sample{{0, -86400}, {1, -40000}, {2, -9000}}, steady(5400, 6, 60)...), 5400},
		{"senders in two zones", interleave(steady(0, 12, 60), steady(-5*3600, 12, 60)), -5 * 3600},
		{"senders in three zones", interleave(steady(3600, 12, 60), interleave(steady(0, 12, 60), steady(-5*3600, 12, 60))), 3600},
		{"a sender a quarter hour behind among others", interleave(steady(0, 8, 60), interleave(steady(-2, 8, 60), steady(-900, 8, 60))), -900},
		// More zones than runs kept: each sample of one evicting the run sampled least
		// recently had every run start over at the sample before its next.
		{"senders in five zones", roundRobin(12, 60, 0, -5*3600, 3600, -8*3600, 5*3600+1800), -5 * 3600},
		{"senders in eight zones", roundRobin(12, 60, 0, 3600, 7200, -3600, -7200, -10800, 10800, 19800), 3600},
		{"senders in five zones, one on time after", append(roundRobin(3, 60, -5*3600, 3600, -8*3600, 5*3600+1800, 7200), steady(0, 20, 60)...), 0},
		// Four runs kept, one of a sender that stopped (more samples than another's, which
		// goes on): a new zone takes the stopped sender's place, not the live one's, where
		// the two would take each other's in turn and neither last.
		{"a sender stopped, another zone after", stoppedThenNew(), -5 * 3600},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r zoneRun
			var got int64
			for _, s := range c.samples {
				if o, _, _ := r.observe(s.wall, s.offset); o != 0 {
					if got != 0 {
						t.Fatalf("judged twice: %d then %d", got, o)
					}
					got = o
					r.told = true
				}
			}
			if got != c.want {
				t.Errorf("observe gave %d, want %d", got, c.want)
			}
		})
	}
}

// TestRepeatedHourReadLive: an input reading a quiet log as it is written reads a line
// of the hour New York repeats at the offset that puts it nearer the host's clock: the
// first line, read in the first time through, is not an hour ahead (future), and the line
// of the second time through half an hour after the first's last is in the 1m window,
// not an hour back. So do the workers of shards:, each told the clock of its batch.
func TestRepeatedHourReadLive(t *testing.T) {
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("shards %d", shards), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.log")
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(fmt.Appendf(nil, `
global: {windows: [1m, 24h]}
inputs: [{name: app, path: '%s', shards: %d}]
rules:
  - name: lines
    match: '^(?P<t>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) '
    timestamp: {capture: t, layout: '2006-01-02 15:04:05', location: America/New_York}
`, path, shards), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			clock := testclock.New(time.Date(2026, 11, 1, 5, 10, 0, 0, time.UTC)) // 01:10 EDT
			p, err := Start(cfg, Options{Now: clock.Now, PollInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Stop)
			waitReady(t, p)
			for i, at := range []struct {
				line  string
				after time.Duration // on the clock, since the line before
			}{
				{"2026-11-01 01:10:00 a", 0},                // 05:10 UTC, EDT
				{"2026-11-01 01:40:00 b", 30 * time.Minute}, // 05:40 UTC, EDT
				{"2026-11-01 01:15:00 c", 35 * time.Minute}, // 06:15 UTC, EST
			} {
				clock.Add(at.after)
				appendTo(t, path, at.line+"\n")
				waitRead(t, p, uint64(i+1))
			}
			got := gatherPipeline(t, p)
			if w := got[`lines_window{window="1m"}`]; w != 1 {
				t.Errorf("1m window: %v, want 1 (the line read at the clock's second)", w)
			}
			if w := got[`lines_window{window="24h"}`]; w != 3 {
				t.Errorf("24h window: %v, want 3", w)
			}
			if n := got[`logwindow_rule_dropped_lines_total{reason="future",rule="lines"}`]; n != 0 {
				t.Errorf("%v lines read as future, want none", n)
			}
		})
	}
}
