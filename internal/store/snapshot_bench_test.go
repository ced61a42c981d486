//go:build unix

package store

import (
	"fmt"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/testutil/cputime"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// BenchmarkSnapshot is the CPU of a snapshot of 2,000 series of quantiles (some 4 MB
// encoded), its file written and synced: encoded ahead and taken at the cut unchanged,
// as a periodic snapshot of idle series is, or encoded whole at the cut, as at shutdown.
// MB/s is of the encoding, cpu-ns/op the CPU time of the process (the wall time waits
// for the disk's sync).
func BenchmarkSnapshot(b *testing.B) {
	const labelSets = 2000
	rule := storetest.ValueRule("request_seconds", storetest.DefaultWindows, "path")
	rule.Aggregations.Quantiles, rule.Quantiles = true, []float64{0.5, 0.99}
	set := storetest.Must(NewSetWith(storetest.Config(labelSets, rule), nil, SetOptions{}))
	k := set.NewSink()
	for sec := range int64(60) {
		k.SetNow(start+sec, start+sec)
		for i := range labelSets {
			k.Event(storetest.Event(0, 0, float64(sec*int64(i)%997)/100, fmt.Sprint("/path/", i)))
		}
	}
	for _, ahead := range []bool{true, false} {
		b.Run(fmt.Sprintf("ahead=%v", ahead), func(b *testing.B) {
			dir := b.TempDir()
			b.ReportAllocs()
			cpu0, n := cputime.Process(b), 0
			for b.Loop() {
				n++
				sp := storetest.Must(storage.NewSpill(dir))
				var prev *Encoded
				if ahead {
					prev = storetest.Must(set.EncodeAhead(sp))
				}
				enc := storetest.Must(set.Encode(sp, prev))
				if err := storage.Write(dir, func(w *storage.Writer) error { return enc.Write(w, start+60) }); err != nil {
					b.Fatal(err)
				}
				sp.Close()
				b.SetBytes(int64(enc.Bytes()))
			}
			b.ReportMetric(float64((cputime.Process(b)-cpu0).Nanoseconds())/float64(n), "cpu-ns/op")
		})
	}
}
