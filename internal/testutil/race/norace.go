//go:build !race

package race

// Enabled is false without the race detector: see race.go.
const Enabled = false
