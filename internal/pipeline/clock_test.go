package pipeline

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// script is a time source that returns t0 plus the given offsets in turn.
func script(t0 time.Time, offsets []time.Duration) func() time.Time {
	i := -1
	return func() time.Time {
		i++
		if i == 0 {
			return t0
		}
		return t0.Add(offsets[i-1])
	}
}

func TestClockMovesOnlyForward(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	cases := []struct {
		name     string
		readings []time.Duration // the source's readings after the first (t0)
		want     []int64         // processing seconds after t0, one per reading
	}{
		{"forward", []time.Duration{1500 * time.Millisecond, 3 * time.Second}, []int64{1, 3}},
		{"back an hour, then on", []time.Duration{10 * time.Second, -time.Hour, -time.Hour + 30*time.Second, -time.Hour + 31*time.Second}, []int64{10, 10, 40, 41}},
		{"back before the first reading", []time.Duration{-5 * time.Second, -4 * time.Second}, []int64{0, 1}},
		{"forward a year", []time.Duration{365 * 24 * time.Hour}, []int64{365 * 24 * 3600}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := newClock(script(t0, c.readings), nil, nil)
			for i, want := range c.want {
				if got := clk.second() - t0.Unix(); got != want {
					t.Errorf("reading %d (source %v): processing second t0%+d, want t0%+d", i+1, c.readings[i], got, want)
				}
			}
		})
	}
}

// Concurrent readers (one per input, and scrapes) must count every advance of the source
// exactly once.
func TestClockConcurrentReaders(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var ticks atomic.Int64
	clk := newClock(func() time.Time { return t0.Add(time.Duration(ticks.Add(1)-1) * time.Second) }, nil, nil)
	const readers, reads = 4, 500
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for range reads {
				clk.second()
			}
		})
	}
	wg.Wait()
	if got, want := clk.second()-t0.Unix(), int64(readers*reads+1); got != want {
		t.Errorf("after %d readings one second apart: t0%+d, want t0%+d", readers*reads+1, got, want)
	}
}

// TestClockNotBeforeFarAhead: a processing second restored far ahead is held at most at
// store.LatestSecond, from where the clock moves on with its source; near the end of
// int64 the processing time wrapped to hugely negative seconds as soon as it moved.
func TestClockNotBeforeFarAhead(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, held := range []int64{store.LatestSecond, store.LatestSecond + 1, math.MaxInt64 - 1, math.MaxInt64} {
		t.Run(fmt.Sprint(held), func(t *testing.T) {
			clk := newClock(script(t0, []time.Duration{0, 5 * time.Second}), nil, nil)
			clk.notBefore(held)
			at, later := clk.second(), clk.second()
			if later <= at || later-at != 5 {
				t.Fatalf("held at %d: processing second %d, then %d 5 s later", held, at, later)
			}
			if want := min(held, store.LatestSecond); at != want {
				t.Fatalf("processing second %d after holding it at %d, want %d", at, held, want)
			}
		})
	}
}

// TestClockWallStepHeld: the wall clock event-time rules are given goes on by the
// monotonic clock through a step of the host's wall clock until the clock has stood off
// its course for wallStepHold, whatever further steps it made meanwhile, and follows the
// wall clock's slew.
func TestClockWallStepHeld(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	type reading struct {
		after time.Duration // on both clocks, since the previous reading
		step  time.Duration // of the wall clock alone, before the reading
		want  time.Duration // the wall clock given, from t0
	}
	const day = 24 * time.Hour
	cases := []struct {
		name     string
		readings []reading
	}{
		{"slew followed", []reading{{10 * time.Second, 400 * time.Millisecond, 10400 * time.Millisecond}, {10 * time.Second, 400 * time.Millisecond, 20800 * time.Millisecond}}},
		{"a leap second's step back followed", []reading{{10 * time.Second, -time.Second, 9 * time.Second}, {time.Second, 0, 10 * time.Second}}},
		{"ahead and set right", []reading{{time.Second, day, time.Second}, {30 * time.Second, 0, 31 * time.Second}, {time.Second, -day, 32 * time.Second}, {time.Second, 0, 33 * time.Second}}},
		{"ahead and kept", []reading{{time.Second, day, time.Second}, {30 * time.Second, 0, 31 * time.Second}, {30 * time.Second, 0, day + 61*time.Second}, {time.Second, 0, day + 62*time.Second}}},
		{"a step of wallSlack followed", []reading{{10 * time.Second, wallSlack, 12 * time.Second}}},
		{"a step just past wallSlack held", []reading{{10 * time.Second, wallSlack + time.Second, 10 * time.Second}}},
		{"back and kept", []reading{{time.Second, -day, time.Second}, {wallStepHold, 0, -day + time.Second + wallStepHold}}},
		{"a second step held from the first", []reading{{time.Second, day, time.Second}, {50 * time.Second, day, 51 * time.Second}, {50 * time.Second, 0, 2*day + 101*time.Second}, {10 * time.Second, 0, 2*day + 111*time.Second}}},
		{"two steps ahead set right", []reading{{time.Second, day, time.Second}, {20 * time.Second, day, 21 * time.Second}, {20 * time.Second, -2 * day, 41 * time.Second}, {30 * time.Second, 0, 71 * time.Second}}},
		{"ahead, then back past it, kept", []reading{{time.Second, day, time.Second}, {30 * time.Second, -2 * day, 31 * time.Second}, {30 * time.Second, 0, -day + 61*time.Second}}},
		// A drifting guest stepped by its hypervisor every half minute: taken a minute
		// after the clock left its course, not held further behind at every step.
		{"stepped every half minute", []reading{{15 * time.Second, 3 * time.Second, 15 * time.Second}, {15 * time.Second, 0, 30 * time.Second}, {15 * time.Second, 3 * time.Second, 45 * time.Second}, {15 * time.Second, 0, 60 * time.Second}, {15 * time.Second, 3 * time.Second, 84 * time.Second}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mono, wall := testclock.New(t0), testclock.New(t0)
			clk := newClock(mono.Now, wall.Now, nil)
			for i, r := range c.readings {
				mono.Add(r.after)
				wall.Add(r.after + r.step)
				if _, got := clk.read(); got != t0.Add(r.want).Unix() {
					t.Errorf("reading %d: wall t0%+ds, want t0%+ds", i+1, got-t0.Unix(), int64(r.want/time.Second))
				}
			}
		})
		// The host's clock, as time.Now reads it: one reading carries both clocks.
		t.Run(c.name+" on the host's clock", func(t *testing.T) {
			base := time.Now()
			var after, step time.Duration
			clk := newClock(func() time.Time { return wallStepped(t, base.Add(after), step) }, nil, nil)
			for i, r := range c.readings {
				after += r.after
				step += r.step
				if _, got := clk.read(); got != base.Add(r.want).Unix() {
					t.Errorf("reading %d: wall base%+ds, want base%+ds", i+1, got-base.Unix(), int64(r.want/time.Second))
				}
			}
		})
	}
	t.Run("without a monotonic clock", func(t *testing.T) {
		clk := newClock(script(t0, []time.Duration{day, day + time.Second}), nil, nil)
		for i, want := range []time.Duration{day, day + time.Second} {
			if _, got := clk.read(); got != t0.Add(want).Unix() {
				t.Errorf("reading %d: wall t0%+ds, want t0%+ds", i+1, got-t0.Unix(), int64(want/time.Second))
			}
		}
	})
}

// wallStepped returns r, a reading of time.Now, as the host's clock reads after its wall
// clock alone has stepped by step: the wall reading moved, the monotonic reading kept.
// Go makes such a reading only when the host's clock steps, so the step is written into
// the wall reading, whose seconds since 1885 are bits 30 to 62 of time.Time's first word
// and nanoseconds bits 0 to 29 when bit 63 says it has a monotonic reading (its layout
// since Go 1.9); the test fails if that no longer gives the reading wanted.
func wallStepped(t *testing.T, r time.Time, step time.Duration) time.Time {
	t.Helper()
	got, to := r, r.Round(0).Add(step)
	word := (*uint64)(unsafe.Pointer(&got))
	if *word>>63 != 1 {
		t.Fatal("time.Now's reading has no monotonic reading")
	}
	const nsec = 1<<30 - 1
	*word = *word&^nsec + uint64((to.Unix()-r.Unix())<<30) + uint64(to.Nanosecond())
	if got.Sub(r) != 0 || got.Round(0).Sub(r.Round(0)) != step {
		t.Fatalf("time.Time's layout changed: a wall step of %v reads %v on the wall, %v on the monotonic clock", step, got.Round(0).Sub(r.Round(0)), got.Sub(r))
	}
	return got
}

// TestClockWallAcrossSuspend: while the host is suspended its wall clock runs on and Go's
// monotonic clock stands still; on resume the wall clock is on its course, no step, and
// lines stamped by it are not future for the hold's minute.
func TestClockWallAcrossSuspend(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	cases := []struct {
		name   string
		asleep time.Duration
	}{
		{"a minute", time.Minute},
		{"an hour", time.Hour},
		{"a weekend", 60 * time.Hour},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mono, wall := testclock.New(t0), testclock.New(t0)
			var slept time.Duration
			clk := newClock(mono.Now, wall.Now, nil)
			clk.slept, clk.sleptAt = func() (time.Duration, bool) { return slept, true }, 0
			for i, r := range []struct{ awake, asleep time.Duration }{{10 * time.Second, 0}, {time.Second, c.asleep}, {time.Second, 0}} {
				mono.Add(r.awake)
				wall.Add(r.awake + r.asleep)
				slept += r.asleep
				if _, got := clk.read(); got != wall.Now().Unix() {
					t.Errorf("reading %d: wall t0%+ds, want t0%+ds (the host's)", i+1, got-t0.Unix(), wall.Now().Unix()-t0.Unix())
				}
			}
		})
	}
}

// TestClockSuspendReadOffCourse: the time the host was suspended, three system calls, is
// read only once the wall clock has moved off the monotonic one by suspendedUnread since
// its last reading, and a suspension is counted all the same: one long enough to move
// the wall clock past wallSlack is no step, short ones read as they come do not add up
// into the next, and a step after them is still held.
func TestClockSuspendReadOffCourse(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	type reading struct {
		awake, asleep time.Duration // on the monotonic clock, then suspended, since the previous reading
		step          time.Duration // of the wall clock alone, before the reading
		want          time.Duration // the wall clock given, from t0
		reads         int           // readings of the time suspended so far
	}
	const ms = time.Millisecond
	cases := []struct {
		name     string
		readings []reading
	}{
		{"on course, never read", []reading{{10 * time.Second, 0, 0, 10 * time.Second, 0}, {time.Second, 0, 0, 11 * time.Second, 0}, {time.Hour, 0, 0, time.Hour + 11*time.Second, 0}}},
		{"a suspension counted", []reading{{10 * time.Second, 0, 0, 10 * time.Second, 0}, {time.Second, 30 * time.Second, 0, 41 * time.Second, 1}, {time.Second, 0, 0, 42 * time.Second, 1}}},
		{"a suspension past wallSlack counted", []reading{{time.Second, suspendedMin + wallSlack, 0, time.Second + suspendedMin + wallSlack, 1}}},
		// Each under suspendedMin, so not counted but left to wallSlack; read as they
		// come, so that the last ones' five seconds do not pass the step off as one.
		{"short suspensions, then a step held", []reading{
			{time.Second, 900 * ms, 0, 1900 * ms, 1}, {time.Second, 900 * ms, 0, 3800 * ms, 2}, {time.Second, 900 * ms, 0, 5700 * ms, 3},
			{time.Second, 900 * ms, 0, 7600 * ms, 4}, {time.Second, 900 * ms, 0, 9500 * ms, 5}, {time.Second, 900 * ms, 0, 11400 * ms, 6},
			{time.Second, 0, wallSlack + time.Second, 12400 * ms, 7},
		}},
		// Read once they add up to suspendedUnread; a suspension counted then is at most
		// that longer than its own.
		{"tiny suspensions read once they add up", []reading{
			{time.Second, 4 * ms, 0, 1004 * ms, 0}, {time.Second, 4 * ms, 0, 2008 * ms, 0}, {time.Second, 4 * ms, 0, 3012 * ms, 1},
			{time.Second, 4 * ms, 0, 4016 * ms, 1}, {time.Second, time.Hour, 0, time.Hour + 5020*ms, 2}, {time.Second, 0, 0, time.Hour + 6020*ms, 2},
		}},
		// Read at the step, not again while it is held: the wall clock keeps its new course.
		{"a step ahead held, then taken", []reading{{time.Second, 0, time.Hour, time.Second, 1}, {time.Second, 0, 0, 2 * time.Second, 1}, {wallStepHold, 0, 0, time.Hour + 2*time.Second + wallStepHold, 1}, {time.Second, 0, 0, time.Hour + 3*time.Second + wallStepHold, 1}}},
		// A suspension of an hour, the wall clock set back by it on resume (a VM's,
		// to the time it was suspended at): the wall clock stays on course, and the
		// time suspended is not read. Read later, as the wall clock moves off by 20 ms,
		// it is no step back: it was counted as one, held a minute (the wall clock
		// given an hour ahead) and then taken.
		{"a suspension a step back hid", []reading{
			{10 * time.Second, 0, 0, 10 * time.Second, 0}, {time.Second, time.Hour, -time.Hour, 11 * time.Second, 0},
			{time.Second, 0, 20 * ms, 12 * time.Second, 1}, {wallStepHold, 0, 0, 12*time.Second + wallStepHold, 1},
		}},
		// The suspension and its wall clock set right later (NTP, after the hold): the
		// step ahead is the suspension, taken at once.
		{"a suspension a step back hid, set right", []reading{
			{10 * time.Second, 0, 0, 10 * time.Second, 0}, {time.Second, time.Hour, -time.Hour, 11 * time.Second, 0},
			{2 * wallStepHold, 0, time.Hour, time.Hour + 11*time.Second + 2*wallStepHold, 1},
		}},
		{"a step back set right", []reading{{time.Second, 0, -time.Hour, time.Second, 1}, {time.Second, 0, time.Hour, 2 * time.Second, 2}, {time.Second, 0, 0, 3 * time.Second, 2}}},
	}
	for _, c := range cases {
		// On the host's clock the suspension is seen only in the wall readings of
		// time.Now, whose Sub compares monotonic readings: the drift summed from them
		// would never reach suspendedUnread.
		for _, host := range []bool{false, true} {
			name := c.name
			if host {
				name += " on the host's clock"
			}
			t.Run(name, func(t *testing.T) {
				base := t0
				if host {
					base = time.Now()
				}
				var awake, ahead, slept time.Duration // the monotonic clock since base, and the wall clock's lead on it
				var clk *clock
				if host {
					clk = newClock(func() time.Time { return wallStepped(t, base.Add(awake), ahead) }, nil, nil)
				} else {
					clk = newClock(func() time.Time { return base.Add(awake) }, func() time.Time { return base.Add(awake + ahead) }, nil)
				}
				reads := 0
				clk.slept, clk.sleptAt = func() (time.Duration, bool) { reads++; return slept, true }, 0
				for i, r := range c.readings {
					awake += r.awake
					ahead += r.asleep + r.step
					slept += r.asleep
					if _, got := clk.read(); got != base.Add(r.want).Unix() || reads != r.reads {
						t.Errorf("reading %d: wall base%+ds after %d readings of the time suspended, want base%+ds after %d", i+1, got-base.Unix(), reads, int64(r.want/time.Second), r.reads)
					}
				}
			})
		}
	}
}

// TestClockWallNotBefore: a start whose wall clock is behind the snapshot's lines of
// event-time rules gives them the snapshot's second, going on by the monotonic clock, until
// the wall clock comes to that course or past it (taken at once: NTP set it right), or
// has stood behind it a minute (taken then, as a step that stayed); a step that sets it
// right only partly is held as any.
func TestClockWallNotBefore(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	type reading struct {
		awake, step time.Duration // the monotonic clock, and the wall clock's step, before it
		want        time.Duration // the wall clock given, from t0
	}
	cases := []struct {
		name     string
		behind   time.Duration // the wall clock at the start, behind t0
		readings []reading
	}{
		{"set right", time.Hour, []reading{{10 * time.Second, 0, 10 * time.Second}, {time.Second, time.Hour + 2*time.Minute, 2*time.Minute + 11*time.Second}, {time.Second, 0, 2*time.Minute + 12*time.Second}}},
		{"set right to the course", time.Hour, []reading{{10 * time.Second, time.Hour, 10 * time.Second}, {time.Second, 0, 11 * time.Second}}},
		{"set right partly", time.Hour, []reading{{10 * time.Second, 30 * time.Minute, 10 * time.Second}, {wallStepHold, 0, -30*time.Minute + 10*time.Second + wallStepHold}}},
		{"never set right", time.Hour, []reading{{10 * time.Second, 0, 10 * time.Second}, {wallStepHold, 0, -time.Hour + 10*time.Second + wallStepHold}, {time.Second, 0, -time.Hour + 11*time.Second + wallStepHold}}},
		// A snapshot written by a clock 20 years ahead, read by the right one: held a
		// minute, no longer.
		{"a snapshot of a clock years ahead", 20 * 365 * 24 * time.Hour, []reading{{wallStepHold, 0, -20*365*24*time.Hour + wallStepHold}}},
		// Taken as a step that stayed, it is behind no more: a step ahead after it is
		// held as any (the hold's minute of a clock that flaps), not taken at once.
		{"never set right, then a step ahead", time.Hour, []reading{{10 * time.Second, 0, 10 * time.Second}, {wallStepHold, 0, -time.Hour + 10*time.Second + wallStepHold}, {time.Second, time.Hour, -time.Hour + 11*time.Second + wallStepHold}}},
		{"not behind", 0, []reading{{10 * time.Second, 0, 10 * time.Second}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mono, wall := testclock.New(t0.Add(-c.behind)), testclock.New(t0.Add(-c.behind))
			clk := newClock(mono.Now, wall.Now, nil)
			clk.wallNotBefore(t0.Unix())
			for i, r := range c.readings {
				mono.Add(r.awake)
				wall.Add(r.awake + r.step)
				if _, got := clk.read(); got != t0.Add(r.want).Unix() {
					t.Errorf("reading %d: wall t0%+ds, want t0%+ds", i+1, got-t0.Unix(), int64(r.want/time.Second))
				}
			}
		})
	}
}
