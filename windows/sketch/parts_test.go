package sketch

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/windows"
)

// reading is what the exposition reads of a summary, as text: two summaries that read
// alike export the same values.
func reading(s windows.Summary) string {
	var b strings.Builder
	switch s := s.(type) {
	case *Distinct:
		fmt.Fprintf(&b, "count %d precision %d", s.Count(), s.Precision())
		for _, q := range []uint8{6, 11, 16} {
			regs, ok := s.Registers(q, nil)
			// fmt's %x of up to 64 KiB of registers took a sixth of the package's tests.
			fmt.Fprintf(&b, " registers(%d) %v ", q, ok)
			b.WriteString(hex.EncodeToString(regs))
		}
	case *Quantiles:
		fmt.Fprintf(&b, "n %d zeros %d", s.Count(), s.Zeros())
		for _, p := range []float64{0.01, 0.25, 0.5, 0.9, 0.99, 1} {
			fmt.Fprintf(&b, " q%v %v", p, s.Quantile(p))
		}
		for _, neg := range []bool{false, true} {
			s.Bins(neg, func(i int32, c uint64) { fmt.Fprintf(&b, " bin %v/%d %d", neg, i, c) })
		}
	case *Top:
		fmt.Fprintf(&b, "total %v bound %v %v", s.Total(), s.Bound(), s.TopShared(math.MaxInt, 0, nil))
	case *Buckets:
		fmt.Fprintf(&b, "n %d sum %v", s.Count(), s.Sum())
		s.Cumulative(func(le float64, n uint64) { fmt.Fprintf(&b, " le %v %d", le, n) })
	default:
		panic(fmt.Sprintf("no reading of %T", s))
	}
	return b.String()
}

// readOneByOne is what a read of several parts was before windows.ReadSummariesOf: each
// part's windows read alone and merged into the first's in the parts' order.
func readOneByOne(now int64, parts []*windows.Series, dst, more []windows.Summary) {
	for i, s := range parts {
		if i == 0 {
			s.ReadSummaries(now, dst)
			continue
		}
		s.ReadSummaries(now, more)
		for k, d := range dst {
			d.Merge(more[k])
		}
	}
}

// TestReadSummariesOfKinds holds a read of a label set's parts (windows.ReadSummariesOf)
// to its parts read one by one and merged in their order, with every kind of summary:
// what each exports is the same, and, for the kinds that are Unordered (distinct counts,
// quantiles), the same whatever the order of the parts and the same as one series given
// every event reads. The streams cross the distinct count's sparse bound within a window
// and within a slot, put values of both signs and zeros into the quantiles and prune the
// top values; their events are dealt to two to four parts in several ways, and the
// summaries are kept as they grow or capped (an account with no room).
func TestReadSummariesOfKinds(t *testing.T) {
	kinds := []windows.SummaryKind{DistinctKind(1), QuantilesKind, TopKind(40, 2), BucketsKind([]float64{-1, 0, 0.01, 1, 100})}
	ws := []time.Duration{time.Minute, 5 * time.Minute, time.Hour, 24 * time.Hour}
	for _, tc := range []struct {
		name    string
		parts   int
		deal    func(r *rand.Rand, i int) int
		clients int // distinct items of the first kind
		perSec  int
		capped  bool
		// short: run with -short and -race too. The test is one goroutine's, so what
		// the race detector could add is little; the rest runs without either.
		short bool
	}{
		{"two parts in turn, sparse", 2, func(_ *rand.Rand, i int) int { return i % 2 }, 3_000, 4, false, true},
		{"two parts at random, dense in the hour", 2, func(r *rand.Rand, _ int) int { return r.IntN(2) }, 40_000, 12, false, false},
		{"three parts, a burst dense in a slot", 3, func(r *rand.Rand, _ int) int { return r.IntN(3) }, 1 << 20, 3, false, false},
		{"four parts, one idle", 4, func(r *rand.Rand, _ int) int { return r.IntN(3) }, 20_000, 8, false, false},
		{"two parts, runs of one", 2, func(_ *rand.Rand, i int) int { return i / 500 % 2 }, 20_000, 8, false, false},
		{"two parts capped", 2, func(r *rand.Rand, _ int) int { return r.IntN(2) }, 20_000, 8, true, false},
		{"three parts capped, all to one", 3, func(_ *rand.Rand, _ int) int { return 1 }, 5_000, 8, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.short && (testing.Short() || race.Enabled) {
				t.Skip("run without -short and -race only")
			}
			opts := windows.Options{Summaries: kinds}
			if tc.capped {
				opts.Account = roomless{}
			}
			l, err := windows.NewLayout(ws, opts)
			if err != nil {
				t.Fatal(err)
			}
			one, err := windows.NewLayout(ws, windows.Options{Summaries: kinds})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(uint64(tc.parts), uint64(tc.clients)))
			parts := make([]*windows.Series, tc.parts)
			for i := range parts {
				parts[i] = l.NewSeries()
			}
			reversed := slices.Clone(parts)
			slices.Reverse(reversed)
			whole := one.NewSeries()
			got, want, back, all := l.NewSummaries(), l.NewSummaries(), l.NewSummaries(), one.NewSummaries()
			wantMore := l.NewSummaries()
			var more, backMore []windows.Summary
			secs := 2 * 3600
			if testing.Short() || race.Enabled {
				secs = 3600 + 600
			}
			burst := int64(r.IntN(secs))
			i := 0
			for now := int64(base); now < base+int64(secs); now++ {
				n := r.IntN(2 * tc.perSec)
				if now >= base+burst && now < base+burst+10 {
					n = 2_000 // past the sparse bound in one 10 s slot
				}
				for range n {
					at := now - r.Int64N(4)
					v := []float64{0, -logUniform(r, 1e-3, 10), logUniform(r, 1e-3, 1e3)}[r.IntN(3)]
					items := [][]byte{fmt.Appendf(nil, "10.0.%d", r.IntN(tc.clients)), fmt.Appendf(nil, "/p/%d", int(logUniform(r, 1, 5_000)))}
					parts[tc.deal(r, i)].AddItems(now, at, v, items)
					whole.AddItems(now, at, v, items)
					i++
				}
				if m := now % 600; !(m == 0 || m == 9 || m == 599 || r.IntN(300) == 0) {
					continue
				}
				windows.ReadSummariesOf(now, parts, got, &more)
				readOneByOne(now, parts, want, wantMore)
				windows.ReadSummariesOf(now, reversed, back, &backMore)
				whole.ReadSummaries(now, all)
				for k := range got {
					kind := kinds[k%len(kinds)]
					g, w := reading(got[k]), reading(want[k])
					if g != w {
						t.Fatalf("at +%ds, summary %d (%T): read %s, one by one %s", now-base, k, got[k], g, w)
					}
					if !kind.Unordered {
						continue
					}
					if b := reading(back[k]); b != w {
						t.Fatalf("at +%ds, summary %d (%T): parts in reverse read %s, in order %s", now-base, k, got[k], b, w)
					}
					if a := reading(all[k]); !tc.capped && a != w {
						t.Fatalf("at +%ds, summary %d (%T): parts read %s, one series %s", now-base, k, got[k], w, a)
					}
				}
			}
		})
	}
}

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current output")

// TestReadSummariesOfGolden pins what a read of two parts exports, every kind of summary
// at every window at a few instants of an hour of events: testdata/parts.golden was
// written by the parts read one by one and merged in order (readOneByOne), as the store
// read them before windows.ReadSummariesOf, so that what a read of parts exports is what
// it was, top values pruned and all. A reading too long for a line is its hash and its
// start.
func TestReadSummariesOfGolden(t *testing.T) {
	kinds := []windows.SummaryKind{DistinctKind(1), QuantilesKind, TopKind(20, 2), BucketsKind([]float64{0, 0.01, 1, 100})}
	l, err := windows.NewLayout([]time.Duration{time.Minute, 5 * time.Minute, time.Hour, 24 * time.Hour}, windows.Options{Summaries: kinds})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	parts := []*windows.Series{l.NewSeries(), l.NewSeries()}
	got := l.NewSummaries()
	var more []windows.Summary
	var out bytes.Buffer
	for now := int64(base); now < base+3600+30; now++ {
		for i := range r.IntN(40) {
			v := []float64{0, logUniform(r, 1e-3, 1e3)}[r.IntN(2)]
			items := [][]byte{fmt.Appendf(nil, "10.0.%d", r.IntN(20_000)), fmt.Appendf(nil, "/p/%d", int(logUniform(r, 1, 5_000)))}
			parts[(i/7)%2].AddItems(now, now-r.Int64N(3), v, items)
		}
		if (now-base)%1200 != 1199 && now != base+3600+29 {
			continue
		}
		windows.ReadSummariesOf(now, parts, got, &more)
		for k, s := range got {
			line := reading(s)
			if len(line) > 300 {
				h := fnv.New64a()
				h.Write([]byte(line))
				line = fmt.Sprintf("%016x %s", h.Sum64(), line[:300])
			}
			fmt.Fprintf(&out, "+%d window %d %T: %s\n", now-base, k/len(kinds), s, line)
		}
	}
	golden := filepath.Join("testdata", "parts.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		t.Errorf("read of parts differs from %s:\n%s", golden, firstLineDiff(got, string(want)))
	}
}

// firstLineDiff is the first line where got and want differ.
func firstLineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got %.400s\nwant %.400s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}
