package windows

import (
	"runtime"
	"testing"
)

const benchStart = 1_700_000_000

// BenchmarkAdd adds to one hot series at a thousand events per second, in processing time
// (the fast path) and with event times up to three seconds late.
func BenchmarkAdd(b *testing.B) {
	for _, opts := range allOptions {
		l, err := NewLayout(defaultWindows, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(optName(opts), func(b *testing.B) {
			s := l.NewSeries()
			b.ReportAllocs()
			for i := range int64(b.N) {
				now := benchStart + i/1000
				s.Add(now, now, 0.25)
			}
		})
		b.Run(optName(opts)+"/late", func(b *testing.B) {
			s := l.NewSeries()
			b.ReportAllocs()
			for i := range int64(b.N) {
				now := benchStart + i/1000
				s.Add(now, now-i%4, 0.25)
			}
		})
	}
}

// BenchmarkAddParallel adds from every P at once, to one shared series (lock contention)
// and to one series per goroutine.
func BenchmarkAddParallel(b *testing.B) {
	l, err := NewLayout(defaultWindows, Options{Events: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("shared", func(b *testing.B) {
		s := l.NewSeries()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := int64(0); pb.Next(); i++ {
				now := benchStart + i/1000
				s.Add(now, now, 1)
			}
		})
	})
	b.Run("own", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			s := l.NewSeries()
			for i := int64(0); pb.Next(); i++ {
				now := benchStart + i/1000
				s.Add(now, now, 1)
			}
		})
	})
}

// filled returns n series of the default layout, each with a day and a half of events,
// one every every seconds; a read visits the same slots however full they are.
func filled(b *testing.B, n int, every int64, opts Options) ([]*Series, int64) {
	l, err := NewLayout(defaultWindows, opts)
	if err != nil {
		b.Fatal(err)
	}
	const span = 36 * 3600
	ss := make([]*Series, n)
	for i := range ss {
		ss[i] = l.NewSeries()
		for t := int64(i) % every; t < span; t += every {
			ss[i].Add(benchStart+t, benchStart+t, 1)
		}
	}
	return ss, benchStart + span
}

// BenchmarkRead reads every window of one series, with windows ending at the current
// second and at the last complete one.
func BenchmarkRead(b *testing.B) {
	for _, opts := range allOptions {
		for _, end := range windowEnds {
			opts.LastComplete = end.lastComplete
			name := optName(opts)
			if end.lastComplete {
				name += "/last_complete"
			}
			b.Run(name, func(b *testing.B) {
				ss, now := filled(b, 1, 7, opts)
				var dst []Stats
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					dst = ss[0].Read(now, benchStart, dst)
				}
			})
		}
	}
}

// BenchmarkReadMany is one scrape's worth of reads: 10,000 series × 5 windows per op.
func BenchmarkReadMany(b *testing.B) {
	ss, now := filled(b, 10000, 97, Options{Events: true})
	var dst []Stats
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, s := range ss {
			dst = s.Read(now, benchStart, dst)
		}
	}
}

// BenchmarkSeriesBytes reports the heap one series of the default layout takes, in all and
// per windowed quantity (sum, count, max, min), for every option.
func BenchmarkSeriesBytes(b *testing.B) {
	for _, opts := range allOptions {
		b.Run(optName(opts), func(b *testing.B) {
			l, err := NewLayout(defaultWindows, opts)
			if err != nil {
				b.Fatal(err)
			}
			keep := make([]*Series, b.N)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i := range keep {
				keep[i] = l.NewSeries()
			}
			runtime.ReadMemStats(&after)
			perSeries := float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N)
			b.ReportMetric(perSeries, "B/series")
			b.ReportMetric(perSeries/float64(l.stride), "B/quantity")
			runtime.KeepAlive(keep)
		})
	}
}
