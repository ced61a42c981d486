//go:build !race

package testexec

// Race is false without the race detector: see race.go.
const Race = false
