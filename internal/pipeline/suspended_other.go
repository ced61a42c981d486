//go:build !linux

package pipeline

import "time"

// suspended is not known where the time the host was suspended is not read: a resume
// moving the wall clock ahead of the monotonic one is then held as a step.
func suspended() (time.Duration, bool) { return 0, false }
