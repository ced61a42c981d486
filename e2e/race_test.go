//go:build race

package e2e

// raceFlags build the exporter with the race detector when the test itself runs with it,
// so that go test -race also checks the real binary under real traffic: a race found makes
// it exit non-zero, which the test reports.
var raceFlags = []string{"-race"}
