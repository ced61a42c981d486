package pipeline

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/store"
)

// script is a time source that returns t0 plus the given offsets in turn.
func script(t0 time.Time, offsets []time.Duration) func() time.Time {
	i := -1
	return func() time.Time {
		i++
		if i == 0 {
			return t0
		}
		return t0.Add(offsets[i-1])
	}
}

func TestClockMovesOnlyForward(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	cases := []struct {
		name     string
		readings []time.Duration // the source's readings after the first (t0)
		want     []int64         // processing seconds after t0, one per reading
	}{
		{"forward", []time.Duration{1500 * time.Millisecond, 3 * time.Second}, []int64{1, 3}},
		{"back an hour, then on", []time.Duration{10 * time.Second, -time.Hour, -time.Hour + 30*time.Second, -time.Hour + 31*time.Second}, []int64{10, 10, 40, 41}},
		{"back before the first reading", []time.Duration{-5 * time.Second, -4 * time.Second}, []int64{0, 1}},
		{"forward a year", []time.Duration{365 * 24 * time.Hour}, []int64{365 * 24 * 3600}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := newClock(script(t0, c.readings))
			for i, want := range c.want {
				if got := clk.second() - t0.Unix(); got != want {
					t.Errorf("reading %d (source %v): processing second t0%+d, want t0%+d", i+1, c.readings[i], got, want)
				}
			}
		})
	}
}

// Concurrent readers (one per input, and scrapes) must count every advance of the source
// exactly once.
func TestClockConcurrentReaders(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var ticks atomic.Int64
	clk := newClock(func() time.Time { return t0.Add(time.Duration(ticks.Add(1)-1) * time.Second) })
	const readers, reads = 4, 500
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for range reads {
				clk.second()
			}
		})
	}
	wg.Wait()
	if got, want := clk.second()-t0.Unix(), int64(readers*reads+1); got != want {
		t.Errorf("after %d readings one second apart: t0%+d, want t0%+d", readers*reads+1, got, want)
	}
}

// TestClockNotBeforeFarAhead: a processing second restored far ahead is held at most at
// store.LatestSecond, from where the clock moves on with its source; near the end of
// int64 the processing time wrapped to hugely negative seconds as soon as it moved.
func TestClockNotBeforeFarAhead(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, held := range []int64{store.LatestSecond, store.LatestSecond + 1, math.MaxInt64 - 1, math.MaxInt64} {
		t.Run(fmt.Sprint(held), func(t *testing.T) {
			clk := newClock(script(t0, []time.Duration{0, 5 * time.Second}))
			clk.notBefore(held)
			at, later := clk.second(), clk.second()
			if later <= at || later-at != 5 {
				t.Fatalf("held at %d: processing second %d, then %d 5 s later", held, at, later)
			}
			if want := min(held, store.LatestSecond); at != want {
				t.Fatalf("processing second %d after holding it at %d, want %d", at, held, want)
			}
		})
	}
}
