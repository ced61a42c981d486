package pipeline

import (
	"time"

	"golang.org/x/sys/unix"
)

// suspended is how long the host has been suspended since it booted: CLOCK_BOOTTIME
// counts the suspension, CLOCK_MONOTONIC (Go's monotonic clock) does not. The monotonic
// clock is read between two readings of the boot clock, and the difference is taken only
// when they are less than a millisecond apart: the thread descheduled between the two
// system calls (a container throttled) would read a suspension of the time it waited.
// ok is false when no such reading was had.
func suspended() (d time.Duration, ok bool) {
	for range 3 {
		var before, mono, after unix.Timespec
		if unix.ClockGettime(unix.CLOCK_BOOTTIME, &before) != nil || unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono) != nil || unix.ClockGettime(unix.CLOCK_BOOTTIME, &after) != nil {
			return 0, false
		}
		if after.Nano()-before.Nano() < int64(time.Millisecond) {
			return time.Duration(before.Nano() - mono.Nano()), true
		}
	}
	return 0, false
}
