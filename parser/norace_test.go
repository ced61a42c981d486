//go:build !race

package parser

// raceEnabled: under the race detector sync.Pool drops items on purpose, so allocation
// counts do not describe a normal build.
const raceEnabled = false
