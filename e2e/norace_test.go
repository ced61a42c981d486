//go:build !race

package e2e

// raceFlags is empty without -race: see race_test.go.
var raceFlags []string
