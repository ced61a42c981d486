package pipeline

import (
	"time"

	"golang.org/x/sys/unix"
)

// SystemClock is the processing-time clock for Options.Now: the wall time at the first
// call plus the time elapsed since, measured on CLOCK_BOOTTIME. Like Go's monotonic clock it
// ignores wall-clock steps; unlike it (CLOCK_MONOTONIC on Linux), it keeps counting while the
// machine is suspended, so windows do not hold pre-suspend lines as if they were recent.
func SystemClock() func() time.Time {
	boot, ok := bootTime()
	if !ok {
		return time.Now
	}
	origin := time.Now()
	return func() time.Time {
		now, ok := bootTime()
		if !ok {
			return time.Now()
		}
		return origin.Add(now - boot)
	}
}

func bootTime() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
