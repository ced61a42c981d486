// Package growth checks, in tests, that what a function does grows linearly in its input,
// by what it allocates (how many times, and how many bytes) on an input and on one a few
// times smaller: counts, which a loaded machine does not change, where a bound in seconds
// fails on one.
package growth

import (
	"runtime"
	"testing"
)

// Linear fails t when run(n) allocates more than twice scale times what run(n/scale)
// does, in number or in bytes: a cost per item of the items before it, a message made for
// each or a copy of them, makes scale times that. A search among the items before that
// allocates nothing is not seen.
func Linear(t *testing.T, n, scale int, run func(n int)) {
	t.Helper()
	// The first run's one-time allocations (a package's lazy tables) are not the input's.
	run(n / scale)
	small, smallBytes := allocs(func() { run(n / scale) })
	large, largeBytes := allocs(func() { run(n) })
	if limit := uint64(2 * scale); large > limit*small || largeBytes > limit*smallBytes {
		t.Errorf("%d items: %d allocations of %d bytes, %.1f and %.1f times the %d of %d bytes of %d items; want at most %d times",
			n, large, largeBytes, float64(large)/float64(small), float64(largeBytes)/float64(smallBytes), small, smallBytes, n/scale, limit)
	}
}

// allocs is how many allocations f makes and of how many bytes, on one P so that other
// goroutines run only where f lets them, as testing.AllocsPerRun does.
func allocs(f func()) (count, bytes uint64) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}
