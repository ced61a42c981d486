package pipeline

import (
	"testing"
	"time"
)

// bootSources are bootClock's clocks under the test's control.
type bootSources struct {
	wall   time.Time
	mono   time.Duration
	boot   time.Duration
	bootOK bool
	reads  int // BOOTTIME readings
}

func (s *bootSources) now() (time.Time, time.Duration) { return s.wall, s.mono }

func (s *bootSources) readBoot() (time.Duration, bool) {
	s.reads++
	return s.boot, s.bootOK
}

// TestBootClockReadsBoottimeOnlyWhenNeeded: the clock follows the monotonic clock between
// BOOTTIME readings, and reads BOOTTIME again when the wall clock leaves the monotonic one
// (a resume, a step) or after bootRefresh, so a suspend shows in processing time.
func TestBootClockReadsBoottimeOnlyWhenNeeded(t *testing.T) {
	type step struct {
		wall, mono, boot time.Duration // how far each source moves before the reading
		bootFails        bool
		want             time.Duration // processing time after the origin
		reads            int           // BOOTTIME readings so far, the first one excluded
	}
	const ms = time.Millisecond
	cases := []struct {
		name  string
		steps []step
	}{
		{"running: the monotonic clock alone", []step{
			{wall: 100 * ms, mono: 100 * ms, boot: 100 * ms, want: 100 * ms},
			{wall: 100 * ms, mono: 100 * ms, boot: 100 * ms, want: 200 * ms},
			{wall: 900 * ms, mono: 900 * ms, boot: 900 * ms, want: 1100 * ms, reads: 1},
			{wall: 100 * ms, mono: 100 * ms, boot: 100 * ms, want: 1200 * ms, reads: 1},
		}},
		{"resume: the wall clock jumped, the suspended hour counts at once", []step{
			{wall: 100 * ms, mono: 100 * ms, boot: 100 * ms, want: 100 * ms},
			{wall: time.Hour + 5*ms, mono: 5 * ms, boot: time.Hour + 5*ms, want: time.Hour + 105*ms, reads: 1},
			{wall: 5 * ms, mono: 5 * ms, boot: 5 * ms, want: time.Hour + 110*ms, reads: 1},
		}},
		{"wall clock stepped back: read again, no jump", []step{
			{wall: -time.Hour, mono: 5 * ms, boot: 5 * ms, want: 5 * ms, reads: 1},
			{wall: 5 * ms, mono: 5 * ms, boot: 5 * ms, want: 10 * ms, reads: 1},
		}},
		{"resume without the wall clock: caught up within bootRefresh", []step{
			{wall: 500 * ms, mono: 500 * ms, boot: time.Hour + 500*ms, want: 500 * ms},
			{wall: 600 * ms, mono: 600 * ms, boot: 600 * ms, want: time.Hour + 1100*ms, reads: 1},
		}},
		{"BOOTTIME fails later: the monotonic clock goes on", []step{
			{wall: time.Hour, mono: 100 * ms, boot: time.Hour, bootFails: true, want: 100 * ms, reads: 1},
			{wall: 100 * ms, mono: 100 * ms, boot: 100 * ms, bootFails: true, want: 200 * ms, reads: 2},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			src := &bootSources{wall: t0, boot: 5 * time.Hour, bootOK: true}
			clk, ok := bootClock(src.now, src.readBoot)
			if !ok {
				t.Fatal("bootClock failed with a working BOOTTIME")
			}
			src.reads = 0
			for i, s := range tc.steps {
				src.wall = src.wall.Add(s.wall)
				src.mono += s.mono
				src.boot += s.boot
				src.bootOK = !s.bootFails
				if got := clk().Sub(t0); got != s.want || src.reads != s.reads {
					t.Errorf("reading %d: origin%+v after %d BOOTTIME readings, want origin%+v after %d", i+1, got, src.reads, s.want, s.reads)
				}
			}
		})
	}
}

func TestBootClockFailsWithoutBoottime(t *testing.T) {
	src := &bootSources{wall: time.Now()}
	if _, ok := bootClock(src.now, src.readBoot); ok {
		t.Error("bootClock succeeded although BOOTTIME cannot be read")
	}
}
