//go:build !race

package sketch

// raceEnabled shrinks the long model runs, which the race detector slows tenfold and which
// check logic, not locking.
const raceEnabled = false
