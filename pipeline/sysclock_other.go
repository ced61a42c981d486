//go:build !linux

package pipeline

import "time"

// SystemClock is the processing-time clock for Options.Now: time.Now, whose monotonic
// reading makes processing time immune to wall-clock steps.
func SystemClock() func() time.Time { return time.Now }
