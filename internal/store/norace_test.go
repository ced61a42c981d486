//go:build !race

package store

// raceEnabled shrinks the loads of the memory tests, which the race detector slows tenfold
// and which measure the heap, not locking.
const raceEnabled = false
