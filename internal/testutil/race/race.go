//go:build race

package race

// Enabled is set when the program was built with the race detector.
const Enabled = true
