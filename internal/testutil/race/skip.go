package race

import "testing"

// Skip skips tb under the race detector: for a test of one goroutine's logic whose work
// the detector multiplies (the rule files of the limits' sizes take 5 to 40 times the
// CPU to parse under it) and can find nothing in. .ci/run runs its package whole without
// the detector.
func Skip(tb testing.TB) {
	tb.Helper()
	if Enabled {
		tb.Skip("one goroutine's work, which the race detector only slows: run without it (.ci/run does)")
	}
}
