//go:build race

package scrape

// raceEnabled shrinks the long comparisons against a reference, which the race detector
// slows tenfold and which check logic, not locking; CI runs them whole without it.
const raceEnabled = true
