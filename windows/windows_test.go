package windows

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

func TestNewLayoutRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window time.Duration
		kinds  []SummaryKind
		want   string
	}{
		{"zero", 0, nil, "window 0s: shorter than 1s"},
		{"negative", -time.Minute, nil, "window -1m0s: shorter than 1s"},
		{"sub-second", 500 * time.Millisecond, nil, "window 500ms: shorter than 1s"},
		{"fraction of a second", 90*time.Second + time.Millisecond, nil, "window 1m30.001s: not a whole number of seconds"},
		{"beyond the longest", MaxWindow + time.Second, nil, "window 8784h0m1s: longer than the longest supported window (366 days)"},
		{"a Fixed kind that is a Capper", time.Hour, []SummaryKind{bagFixed, {New: bagCapped.New, Fixed: true}}, "summary 2: a Fixed kind is a Capper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewLayout([]time.Duration{time.Minute, tc.window}, Options{Summaries: tc.kinds})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("NewLayout(%v) = %v, want %q", tc.window, err, tc.want)
			}
		})
	}
	if _, err := NewLayout(nil, Options{}); err == nil {
		t.Fatal("NewLayout(nil) succeeded")
	}
}

// TestWheelSizes pins the memory the package documentation promises: only the wheels the
// windows need, each just long enough.
func TestWheelSizes(t *testing.T) {
	type ring struct{ step, n int64 }
	for _, tc := range []struct {
		name    string
		windows []time.Duration
		want    []ring
	}{
		{"defaults", defaultWindows, []ring{{1, 300}, {60, 61}, {3600, 25}}},
		{"seconds only", []time.Duration{time.Minute, 5 * time.Minute}, []ring{{1, 300}}},
		{"one day", []time.Duration{24 * time.Hour}, []ring{{3600, 25}}},
		{"a week", []time.Duration{7 * 24 * time.Hour}, []ring{{3600, 169}}},
		{"a year", []time.Duration{365 * 24 * time.Hour}, []ring{{86400, 366}}},
		{"odd seconds", []time.Duration{301 * time.Second}, []ring{{60, 6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLayout(tc.windows, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []ring
			for _, w := range l.wheels {
				got = append(got, ring{w.step, w.n})
			}
			if len(got) != len(tc.want) {
				t.Fatalf("wheels %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("wheels %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestWheelIndexesFit: a series remembers ring indexes in 16 bits (Series.memo), which
// holds for every wheel of every window up to MaxWindow, around each grid's edges too.
func TestWheelIndexesFit(t *testing.T) {
	lengths := []time.Duration{time.Second, MaxWindow}
	for _, g := range []*grid{&valueGrid, &summaryGrid} {
		for _, c := range g[:len(g)-1] {
			for d := int64(-1); d <= 1; d++ {
				lengths = append(lengths, time.Duration(c.upTo+d)*time.Second)
			}
		}
	}
	for _, w := range lengths {
		t.Run(w.String(), func(t *testing.T) {
			l, err := NewLayout([]time.Duration{w}, Options{Summaries: []SummaryKind{bagOfValues}})
			if err != nil {
				t.Fatal(err)
			}
			for _, wh := range slices.Concat(l.wheels, l.sumWheels) {
				if wh.n > math.MaxInt16 {
					t.Fatalf("a wheel of %d-second slots has %d of them, past 16 bits", wh.step, wh.n)
				}
			}
		})
	}
}

// TestSteadyStreamIsSmooth feeds a constant rate for days and reads every few
// seconds: with pro-rating every window reads rate×W at every instant, with no sawtooth at
// minute or hour boundaries. The stream starts on a day boundary, so that the warm-up is
// exact too.
func TestSteadyStreamIsSmooth(t *testing.T) {
	days := int64(8)
	if testing.Short() || race.Enabled {
		days = 2
	}
	for _, perSecond := range []int{1, 3} {
		l, err := NewLayout(append(defaultWindows, 7*24*time.Hour), Options{Events: true})
		if err != nil {
			t.Fatal(err)
		}
		s := l.NewSeries()
		const start = 1_700_000_000 / 86400 * 86400
		var dst []Stats
		for now := int64(start); now < start+days*86400; now++ {
			for range perSecond {
				s.Add(now, now, 0.5)
			}
			if now%13 != 0 {
				continue
			}
			dst = s.Read(now, start, dst)
			for i, w := range l.Windows() {
				sec := int64(w / time.Second)
				n := float64(min(sec, now-start+1) * int64(perSecond))
				if !near(dst[i].Events, n) || !near(dst[i].Sum, n/2) || !near(dst[i].PerSecond, float64(perSecond)/2) {
					t.Fatalf("%d/s, window %v at +%ds: %+v, want %v events", perSecond, w, now-start, dst[i], n)
				}
			}
		}
	}
}

// TestPerSecondObserved: rates divide by the seconds from the caller's since while fewer
// than the window, whatever the series holds.
func TestPerSecondObserved(t *testing.T) {
	l, err := NewLayout([]time.Duration{time.Minute, time.Hour}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const now = 1_000_000
	for _, tc := range []struct {
		name       string
		since, at  int64
		wantPerSec [2]float64
	}{
		{"observed for 10s", now - 9, now, [2]float64{0.1, 0.1}},
		{"observed for 2m", now - 119, now, [2]float64{1.0 / 60, 1.0 / 120}},
		{"observed for long", now - 86400, now, [2]float64{1.0 / 60, 1.0 / 3600}},
		{"since an event 30m old", now - 1799, now - 1799, [2]float64{0, 1.0 / 1800}},
		{"an event 30m old does not move since", now, now - 1799, [2]float64{0, 1}},
		{"since after now", now + 100, now, [2]float64{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := l.NewSeries()
			if p := s.Add(now, tc.at, 1); p != Placed {
				t.Fatalf("Add: %v", p)
			}
			got := s.Read(now, tc.since, nil)
			for i := range got {
				if !near(got[i].PerSecond, tc.wantPerSec[i]) {
					t.Errorf("window %v: per second %v, want %v", l.Windows()[i], got[i].PerSecond, tc.wantPerSec[i])
				}
			}
		})
	}
}

func TestPlacement(t *testing.T) {
	l, err := NewLayout([]time.Duration{time.Minute, 5 * time.Minute}, Options{Events: true, Extrema: true})
	if err != nil {
		t.Fatal(err)
	}
	const now = 1_000_000
	for _, tc := range []struct {
		name    string
		now, at int64
		want    Placement
		held    float64 // events the 5m window holds afterwards
	}{
		{"now", now, now, Placed, 2},
		{"a little late", now, now - 5, Placed, 2},
		{"oldest second of the longest window", now, now - 299, Placed, 2},
		{"older than the longest window", now, now - 300, Late, 1},
		{"ahead of now", now, now + 30, Future, 2},
		{"stale now, at its now", now - 3, now - 3, Placed, 2},
		{"stale now, too old for the series' time", now - 3, now - 301, Late, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := l.NewSeries()
			s.Add(now, now, 1)
			if got := s.Add(tc.now, tc.at, 2); got != tc.want {
				t.Fatalf("Add(%d, %d) = %v, want %v", tc.now, tc.at, got, tc.want)
			}
			if got := s.Read(now, 0, nil)[1]; got.Events != tc.held {
				t.Fatalf("5m window holds %v events, want %v", got.Events, tc.held)
			}
		})
	}
	for p, want := range map[Placement]string{Placed: "placed", Late: "late", Future: "future", 9: "unknown"} {
		if p.String() != want {
			t.Errorf("Placement(%d).String() = %q, want %q", p, p.String(), want)
		}
	}
}

// TestHolds: a series holds something to read at now while its newest event is no older
// than the longest window and the clock has not stepped back past every window since.
func TestHolds(t *testing.T) {
	l, err := NewLayout([]time.Duration{time.Minute, 5 * time.Minute}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const now = 1_000_000
	for _, tc := range []struct {
		name    string
		adds    [][2]int64 // now, at
		read    int64
		holds   bool
		written bool // the 5m window reads an event at read
	}{
		{"nothing added", nil, now, false, false},
		{"just added", [][2]int64{{now, now}}, now, true, true},
		{"the oldest second of the longest window", [][2]int64{{now, now}}, now + 299, true, true},
		// A coarser wheel's edge slot reads part of an event that old, so it still holds
		// (windows of second slots read none of it).
		{"as old as the longest window", [][2]int64{{now, now}}, now + 300, true, false},
		{"idle past the longest window", [][2]int64{{now, now}}, now + 301, false, false},
		{"only a late event", [][2]int64{{now, now - 400}}, now, false, false},
		{"the clock stepped back less than the longest window", [][2]int64{{now, now}}, now - 299, true, true},
		{"the clock stepped back past every window", [][2]int64{{now, now}}, now - 300, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := l.NewSeries()
			for _, a := range tc.adds {
				s.Add(a[0], a[1], 1)
			}
			if got := s.Holds(tc.read); got != tc.holds {
				t.Errorf("Holds(%d) = %v, want %v", tc.read, got, tc.holds)
			}
			if got := s.Read(tc.read, 0, nil)[1].Sum > 0; got != tc.written {
				t.Errorf("Read(%d) reads an event: %v, want %v", tc.read, got, tc.written)
			}
		})
	}
}

// TestAbsurdTimes makes sure no time, however far out, panics or yields non-finite sums.
func TestAbsurdTimes(t *testing.T) {
	l, err := NewLayout(append(defaultWindows, MaxWindow), Options{Events: true, Extrema: true})
	if err != nil {
		t.Fatal(err)
	}
	times := []int64{math.MinInt64, math.MinInt64 + 1, -timeLimit - 1, -1, 0, 1, timeLimit + 1, math.MaxInt64}
	s := l.NewSeries()
	var dst []Stats
	for _, now := range times {
		for _, at := range times {
			s.Add(now, at, 1)
			for _, read := range times {
				dst = s.Read(read, now, dst)
				for i, st := range dst {
					if math.IsNaN(st.Sum) || math.IsInf(st.Sum, 0) || st.Sum < 0 || st.Events != st.Sum || math.IsNaN(st.PerSecond) {
						t.Fatalf("add(%d, %d), read at %d: window %v: %+v", now, at, read, l.Windows()[i], st)
					}
				}
			}
		}
	}
}

// TestConcurrentAddRead runs several adders and a reader on one series while a shared
// clock moves; under -race it proves the locking, and the final count proves no add is lost.
func TestConcurrentAddRead(t *testing.T) {
	l, err := NewLayout(defaultWindows, Options{Events: true, Extrema: true})
	if err != nil {
		t.Fatal(err)
	}
	s := l.NewSeries()
	const (
		base    = 1_700_000_000
		adders  = 4
		perEach = 20000
	)
	var (
		clock sync.Mutex
		tick  int64
		wg    sync.WaitGroup
	)
	// now advances one second every 2000 adds overall, so every event stays in every window.
	now := func() int64 {
		clock.Lock()
		defer clock.Unlock()
		tick++
		return base + tick/2000
	}
	done := make(chan struct{})
	readerDone := make(chan error, 1)
	go func() {
		var dst []Stats
		for {
			select {
			case <-done:
				readerDone <- nil
				return
			default:
			}
			dst = s.Read(base+adders*perEach/2000, base, dst)
			for i := 1; i < len(dst); i++ {
				if dst[i].Events < dst[i-1].Events {
					readerDone <- errors.New("a longer window holds fewer events than a shorter one")
					return
				}
			}
		}
	}()
	for g := range adders {
		wg.Go(func() {
			for i := range perEach {
				n := now()
				s.Add(n, n-int64(i%3), float64(g))
			}
		})
	}
	wg.Wait()
	close(done)
	if err := <-readerDone; err != nil {
		t.Fatal(err)
	}
	got := s.Read(base+adders*perEach/2000, base, nil)
	for i, st := range got {
		if st.Events != adders*perEach || st.Max != adders-1 || st.Min != 0 {
			t.Errorf("window %v: %+v, want %d events, max %d, min 0", l.Windows()[i], st, adders*perEach, adders-1)
		}
	}
}

// TestHeapBytes holds HeapBytes to what the allocator takes: the heap many allocations of
// a size grow by, per allocation, is what HeapBytes says, or for the objects under 16
// bytes, which share blocks, at most that. The runtime allocates for itself now and then
// (a few hundred bytes between two reads of the heap, some 10 bytes an allocation of the
// larger sizes, where fewer are made), so a size is measured up to three times: a wrong
// HeapBytes is wrong in every one.
func TestHeapBytes(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector's shadow memory is not the heap")
	}
	grows := func(n int) float64 {
		count := min(max(4<<20/n, 50), 20000)
		keep := make([][]byte, count)
		before := liveHeap()
		for i := range keep {
			keep[i] = make([]byte, n)
		}
		per := float64(liveHeap()-before) / float64(count)
		runtime.KeepAlive(keep)
		return per
	}
	for _, n := range []int{1, 3, 8, 9, 15, 16, 17, 100, 500, 1000, 1025, 5000, 20000, 32768, 32769, 70000} {
		want := float64(HeapBytes(n))
		var per float64
		for range 3 {
			if per = grows(n); n < 16 && per <= want || math.Abs(per-want) <= 0.5 {
				break
			}
		}
		if (n >= 16 || per > want) && math.Abs(per-want) > 0.5 {
			t.Errorf("%d bytes: the heap grew by %.1f per allocation, HeapBytes says %d", n, per, HeapBytes(n))
		}
	}
	// Its tables agree with the classes at every size.
	for n := 16; n <= 40000; n++ {
		want := (n + pageSize - 1) &^ (pageSize - 1)
		if i := slices.IndexFunc(sizeClasses[:], func(c int) bool { return c >= n }); i >= 0 {
			want = sizeClasses[i]
		}
		if got := HeapBytes(n); got != want {
			t.Fatalf("HeapBytes(%d) = %d, want %d", n, got, want)
		}
	}
}

func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestClockAheadAndBack: the clock a series is added at jumps ahead by less than the
// longest window and comes back, while events keep their own (right) times, as a host's
// wall clock set wrong and corrected does to an event-time rule whose log comes from
// elsewhere. Once the clock is back at or past every event placed, nothing placed lies
// between it and the series' second: the series goes back to the clock, and its windows
// read the events since, rather than the seconds of the wrong clock, which left the
// shorter windows empty until the clock caught up. The events placed while it was ahead
// by more than a wheel holds are in the longer windows alone. A clock that steps back
// behind events placed (stamped by it) stays as it was: those events are in its windows.
func TestClockAheadAndBack(t *testing.T) {
	const t0, ahead = 1_000_000, 1800
	for _, tc := range []struct {
		name string
		// stamped is how far ahead of their right time the events placed while the clock
		// was ahead were stamped: 0, or by that clock; early is an event of that time
		// placed then.
		stamped, early int64
		// want are the 1m, 5m and 1h windows' events at t0+69, after one event at t0, ten
		// at t0+1…t0+10 (and early) placed while the clock was ahead, and one a second at
		// t0+20…t0+69 as it came back.
		want [3]float64
	}{
		{"the events on time", 0, 0, [3]float64{50, 50, 61}},
		// Until the clock is past the early event, events are placed as before: t0+20…t0+25
		// are in the 1h window alone.
		{"an event ahead of the clock come back", 0, t0 + 25, [3]float64{44, 44, 62}},
		{"the events stamped by the clock ahead", ahead, 0, [3]float64{10, 10, 61}},
	} {
		for _, kinds := range [][]SummaryKind{nil, {bagOfValues}} {
			t.Run(fmt.Sprintf("%s/%d summaries", tc.name, len(kinds)), func(t *testing.T) {
				l, err := NewLayout([]time.Duration{time.Minute, 5 * time.Minute, time.Hour}, Options{Events: true, Summaries: kinds})
				if err != nil {
					t.Fatal(err)
				}
				s := l.NewSeries()
				s.Add(t0, t0, 1)
				for at := int64(t0 + 1); at <= t0+10; at++ {
					s.Add(at+ahead, at+tc.stamped, 1)
				}
				if tc.early != 0 {
					s.Add(t0+ahead+11, tc.early, 1)
				}
				for at := int64(t0 + 20); at <= t0+69; at++ {
					s.Add(at, at, 1)
				}
				got := s.Read(t0+69, t0, nil)
				for i, want := range tc.want {
					if got[i].Events != want {
						t.Errorf("%v window: %v events, want %v", l.Windows()[i], got[i].Events, want)
					}
				}
				if kinds == nil {
					return
				}
				sums := l.NewSummaries()
				s.ReadSummaries(t0+69, sums)
				for i, want := range tc.want {
					if n := len(sums[i].(*bag).vs); float64(n) != want {
						t.Errorf("%v window's summary: %d values, want %v", l.Windows()[i], n, want)
					}
				}
			})
		}
	}
}
