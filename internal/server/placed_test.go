package server

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// seededCrowd is n client addresses drawn from a seeded source, IPv4 and IPv6 alike, as
// client gives them.
func seededCrowd(n int) []string {
	rng := rand.New(rand.NewPCG(22, uint64(n)))
	seen := map[string]bool{}
	var crowd []string
	for len(crowd) < n {
		var a string
		if rng.IntN(2) == 0 {
			a = netip.AddrFrom4([4]byte{10, byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))}).String()
		} else {
			var b [16]byte
			b[0], b[1] = 0x20, 0x01
			for i := 2; i < 16; i++ {
				b[i] = byte(rng.IntN(256))
			}
			a = netip.AddrFrom16(b).String()
		}
		if !seen[a] {
			seen[a] = true
			crowd = append(crowd, a)
		}
	}
	return crowd
}

// TestPlacedTableShares: each address of a seeded crowd given places in rounds, then
// some of them again (the crowd's busiest), is told the place it was last given, never
// an earlier one (which would have the crowd taken for clients given none lately), and,
// while the crowd fits the table, no later one: an address told a later place than its
// own is left without a share of its own, taken for as recent as the crowd. The table
// of fixed size kept each count in three of 65,536 slots and told the least: against
// 5000 addresses, about one in a hundred had every slot taken by others.
func TestPlacedTableShares(t *testing.T) {
	for _, tc := range []struct {
		addresses int
		// later is how many may be told a later place than their own.
		later int
	}{
		{100, 0},
		{5000, 0},
		// Past what the table holds entries are put out, the guarantee kept.
		{100000, -1},
	} {
		t.Run(fmt.Sprint(tc.addresses), func(t *testing.T) {
			if race.Enabled && tc.addresses > 5000 {
				// TestPlacedTableNeverEarlier puts entries out under it too.
				t.Skip("run without the race detector (.ci/run): the table is one goroutine's")
			}
			crowd := seededCrowd(tc.addresses)
			table := newPlacedTable()
			last := map[string]uint64{}
			places := uint64(0)
			place := func(a string) {
				places++
				table.set(a, places)
				last[a] = places
			}
			for range 3 {
				for _, a := range crowd {
					place(a)
				}
			}
			for _, a := range crowd[:len(crowd)/10] {
				place(a)
			}
			later := 0
			for _, a := range crowd {
				switch got, _ := table.get(a); {
				case got < last[a]:
					t.Fatalf("%s last given place %d is told %d, earlier", a, last[a], got)
				case got > last[a]:
					later++
				}
			}
			t.Logf("%d of %d addresses told a later place than their own", later, len(crowd))
			if tc.later >= 0 && later > tc.later {
				t.Errorf("%d of %d addresses told a later place than their own (left without a share of their own), want at most %d", later, len(crowd), tc.later)
			}
			if never, known := table.get("192.0.2.1"); never > places || known {
				t.Errorf("an address never given a place is told %d, known %v; want no later than the last place %d, not known", never, known, places)
			}
		})
	}
}

// TestPlacedTableNeverEarlier checks the table against a model, a map of each address's
// last place: whatever the order addresses come in, a few often among many once, while
// the table grows and once it puts entries out, no address is ever told an earlier place
// than its own last, nor one past the last given.
func TestPlacedTableNeverEarlier(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pool, often int // addresses, and how many of them come half the time
		places      int
		putOut      bool // whether the table comes to put entries out
	}{
		{"growing", 8000, 100, 50000, false},
		{"putting out", 60000, 1000, 300000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crowd := seededCrowd(tc.pool)
			rng := rand.New(rand.NewPCG(7, uint64(tc.pool)))
			table := newPlacedTable()
			last := map[string]uint64{}
			for places := uint64(1); places <= uint64(tc.places); places++ {
				a := crowd[rng.IntN(len(crowd))]
				if rng.IntN(2) == 0 {
					a = crowd[rng.IntN(tc.often)]
				}
				table.set(a, places)
				last[a] = places
				// An address seen, and one not, looked at after each place (after one
				// in seven under the race detector: the table is one goroutine's).
				b0 := crowd[rng.IntN(len(crowd))]
				if !race.Runs(int(places)) {
					continue
				}
				for _, b := range [2]string{b0, a} {
					if got, _ := table.get(b); got < last[b] || got > places {
						t.Fatalf("after place %d, %s last given place %d is told %d", places, b, last[b], got)
					}
				}
			}
			for a, at := range last {
				if got, _ := table.get(a); got < at {
					t.Fatalf("%s last given place %d is told %d, earlier", a, at, got)
				}
			}
			if putOut := table.floors != nil; putOut != tc.putOut {
				t.Errorf("the table put entries out: %v, want %v", putOut, tc.putOut)
			}
		})
	}
}

// TestPlacedTableGrowsWithAddresses: the table costs what the addresses seen need. It
// was 512 KiB from the first place given, which a fresh process takes as page faults
// at its first scrape (some 10 of its 120 to 150); the first place now makes 1 KiB, and
// 1000 addresses (with the tables they outgrew) a few tens.
func TestPlacedTableGrowsWithAddresses(t *testing.T) {
	for _, tc := range []struct {
		addresses int
		bytes     uint64
	}{
		{1, 4 << 10},
		{1000, 192 << 10},
	} {
		t.Run(fmt.Sprint(tc.addresses), func(t *testing.T) {
			crowd := seededCrowd(tc.addresses)
			// What else runs in the process only adds to the bytes counted: the
			// least of a few tries is the table's.
			least := uint64(1 << 62)
			for range 5 {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				table := newPlacedTable()
				for i, a := range crowd {
					table.set(a, uint64(i+1))
				}
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(table)
				least = min(least, after.TotalAlloc-before.TotalAlloc)
			}
			if least > tc.bytes {
				t.Errorf("a table of %d addresses allocated %d bytes, want at most %d", tc.addresses, least, tc.bytes)
			}
		})
	}
}

// BenchmarkPlacedTable is a scrape's use of the table, with 5000 addresses in it: a
// place given, and the waiting scrapes' clients looked up to choose the next.
func BenchmarkPlacedTable(b *testing.B) {
	crowd := seededCrowd(5000)
	table := newPlacedTable()
	for i, a := range crowd {
		table.set(a, uint64(i+1))
	}
	places := uint64(len(crowd))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		places++
		table.set(crowd[i%len(crowd)], places)
		for j := range 8 {
			_, _ = table.get(crowd[(i*7+j*613)%len(crowd)])
		}
	}
}
