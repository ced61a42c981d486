// Package race tells tests whether they run under the race detector, which slows a
// goroutine's work tenfold or more and makes sync.Pool drop items on purpose: the long
// model runs shrink under it, tests of one goroutine's long work skip (Skip), and
// allocation counts do not describe a normal build. .ci/run runs the packages whose runs
// shrink or skip again without it, whole.
package race

// every is how many of a model's subtests share one run under the race detector (Runs).
// It is prime to the lengths of the models' loops, so that the subtests that run cover
// every generator, layout and option in turn.
const every = 7

// Runs reports whether a model's subtest numbered i runs: every one without the race
// detector, one in every seven with it. The models are each one goroutine's and check
// logic, not locking: a few subtests give the detector what all would, and the run
// without it checks them all.
func Runs(i int) bool { return !Enabled || i%every == 0 }
