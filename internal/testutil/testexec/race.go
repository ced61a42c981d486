//go:build race

package testexec

// Race is set when this program was built with the race detector. The end-to-end test
// builds the exporter with it then, so that go test -race also checks the real binary
// under real traffic: a race found makes it exit non-zero, which Stop reports.
const Race = true
