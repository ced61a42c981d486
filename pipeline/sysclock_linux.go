package pipeline

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// SystemClock is the processing-time clock for Options.Now: the wall time at the first
// call plus the time elapsed since, measured on CLOCK_BOOTTIME. Like Go's monotonic clock it
// ignores wall-clock steps; unlike it (CLOCK_MONOTONIC on Linux), it keeps counting while the
// machine is suspended, so windows do not hold pre-suspend lines as if they were recent.
//
// The clock is read for every line, and CLOCK_BOOTTIME is a system call (Go reads only the
// realtime and monotonic clocks through the vDSO) that cost as much as the rest of the
// line's work. So between two BOOTTIME readings the clock moves with Go's monotonic clock,
// and it reads BOOTTIME again when the wall clock moved bootDrift more or less than the
// monotonic one since the last reading (a resume from suspend moves the wall clock by the
// time suspended and the monotonic clock not at all), or after bootRefresh of monotonic
// time in any case (for a machine whose wall clock is not restored at resume).
func SystemClock() func() time.Time {
	start := time.Now()
	clock, ok := bootClock(func() (time.Time, time.Duration) {
		t := time.Now()
		return t.Round(0), t.Sub(start)
	}, bootTime)
	if !ok {
		return time.Now
	}
	return clock
}

// The thresholds of SystemClock's BOOTTIME readings. NTP slews the wall clock by at most
// 0.5 ms per second, far below bootDrift; a step of the wall clock only costs one reading.
const (
	bootDrift   = 10 * time.Millisecond
	bootRefresh = time.Second
)

// bootClock is SystemClock over its sources: now gives the wall time and the monotonic
// time since a fixed origin in one reading, boot reads CLOCK_BOOTTIME. It fails when boot
// does; a later failure of boot leaves the clock on the monotonic time until boot works.
func bootClock(now func() (wall time.Time, mono time.Duration), boot func() (time.Duration, bool)) (func() time.Time, bool) {
	origin, lastMono := now()
	boot0, ok := boot()
	if !ok {
		return nil, false
	}
	// The function is called by every input and by reloads: the last reading is shared.
	var mu sync.Mutex
	lastWall, lastBoot := origin, boot0
	return func() time.Time {
		wall, mono := now()
		mu.Lock()
		defer mu.Unlock()
		since := mono - lastMono
		if since >= 0 && since < bootRefresh && (wall.Sub(lastWall)-since).Abs() < bootDrift {
			return origin.Add(lastBoot - boot0 + since)
		}
		b, ok := boot()
		if !ok {
			return origin.Add(lastBoot - boot0 + max(since, 0))
		}
		lastWall, lastMono, lastBoot = wall, mono, b
		return origin.Add(b - boot0)
	}, true
}

func bootTime() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
