package server

import "hash/maphash"

// placedTable tells, for a client, the count of places (see scrapeLimiter.places) when
// it was last given or refused one, in a table of bounded size, whatever the clients.
// Each client has an entry, keyed by a keyed hash of it, in the less full of the two
// buckets that hash picks; the table starts small and doubles as entries find both of
// their buckets full, up to placedMaxBuckets. Only then is an entry put out to make
// room: the one of the two buckets given or refused a place longest ago, its count
// kept as its bucket's floor, which a client with no entry in its buckets is told (the
// later of the two floors).
//
// A client is never told an earlier place than its own last: its entry only grows
// (clients whose hashes are equal share it, their buckets too), and once it is put out,
// its bucket's floor is as late, and an entry of its hash made since was made at a
// later place; so a crowd is never taken for clients given none lately. A client is
// told a later place than its own only when its entry was put out, which took 9700
// addresses at the fewest, in 200 tables of random keys (the table at its largest from
// some 8000 on, and two buckets full): against 5000, every address is told its own.
//
// It was a table of fixed size, 512 KiB made at the first place, where each client's
// count was kept in three slots that any client's hash could pick, a client told the
// least: a crowd of 5000 addresses took every slot of about one address in a hundred,
// which was then taken for as recent as theirs. Before that, a map of the clients that
// left the limiter in the last second or two, 4096 at most, those past it forgotten: a
// crowd of more addresses than that had the forgotten ones come back as given none
// lately, as a Prometheus does, and of those the one waiting longest was put out
// (every scrape of a Prometheus beside 5000 such addresses got 503).
type placedTable struct {
	seed    maphash.Seed
	buckets []placedBucket // a power of two of them; none before the first place
	// floors is each bucket's latest count of an entry put out of it; made when the
	// table, at placedMaxBuckets, first puts one out.
	floors []uint64
}

// placedBucket holds placedWays entries: the hash of a client and its count, 0 where
// none is.
type placedBucket struct {
	keys [placedWays]uint64
	at   [placedWays]uint64
}

// placedWays is the entries of a bucket (64 bytes, a cache line); placedMinBuckets the
// buckets the table starts with (1 KiB), placedMaxBuckets those it grows to at most
// (512 KiB, and 64 KiB of floors once one is put out).
const (
	placedWays       = 4
	placedMinBuckets = 16
	placedMaxBuckets = 1 << 13
)

func newPlacedTable() placedTable { return placedTable{seed: maphash.MakeSeed()} }

// index returns the hash of client and its two buckets in a table of n buckets.
func (t *placedTable) index(client string) (key uint64, b1, b2 int) {
	key = maphash.String(t.seed, client)
	b1, b2 = buckets(key, len(t.buckets))
	return key, b1, b2
}

// buckets returns the two buckets of key in a table of n (a power of two).
func buckets(key uint64, n int) (b1, b2 int) {
	return int(key) & (n - 1), int(key>>32) & (n - 1)
}

// get is the count of places when client was last given or refused one, or later; 0
// if none. known reports whether client has an entry of its own (or of its hash): a
// client without is told its buckets' floor, when one was put out of them.
func (t *placedTable) get(client string) (at uint64, known bool) {
	if t.buckets == nil {
		return 0, false
	}
	key, b1, b2 := t.index(client)
	if at := max(t.buckets[b1].count(key), t.buckets[b2].count(key)); at != 0 || t.floors == nil {
		return at, at != 0
	}
	return max(t.floors[b1], t.floors[b2]), false
}

// count returns the count of key's entry in b, 0 if none. It looks at every entry, so
// that its compares need no branch: an empty entry's count is 0.
func (b *placedBucket) count(key uint64) uint64 {
	var at uint64
	for w := range placedWays {
		if b.keys[w] == key {
			at = max(at, b.at[w])
		}
	}
	return at
}

// find returns key's entry in b, -1 if none.
func (b *placedBucket) find(key uint64) int {
	for w := range placedWays {
		if b.at[w] != 0 && b.keys[w] == key {
			return w
		}
	}
	return -1
}

// set notes that client was given or refused a place at count places, later than any
// count it was given before.
func (t *placedTable) set(client string, places uint64) {
	if t.buckets == nil {
		t.buckets = make([]placedBucket, placedMinBuckets)
	}
	key, b1, b2 := t.index(client)
	for _, b := range [2]int{b1, b2} {
		if w := t.buckets[b].find(key); w >= 0 {
			t.buckets[b].at[w] = places
			return
		}
	}
	for !t.insert(key, places) {
		t.grow()
	}
}

// insert puts an entry of key at count at in the less full of its buckets with room,
// and reports whether one had; at placedMaxBuckets it puts out the entry of either
// bucket with the earliest count to make room when none has.
func (t *placedTable) insert(key, at uint64) bool {
	b1, b2 := buckets(key, len(t.buckets))
	w1, n1 := t.buckets[b1].free()
	w2, n2 := t.buckets[b2].free()
	switch {
	case w1 >= 0 && (w2 < 0 || n1 <= n2):
		t.buckets[b1].keys[w1], t.buckets[b1].at[w1] = key, at
		return true
	case w2 >= 0:
		t.buckets[b2].keys[w2], t.buckets[b2].at[w2] = key, at
		return true
	case len(t.buckets) < placedMaxBuckets:
		return false
	}
	if t.floors == nil {
		t.floors = make([]uint64, len(t.buckets))
	}
	b, w := b1, 0
	for _, x := range [2]int{b1, b2} {
		for y := range placedWays {
			if t.buckets[x].at[y] < t.buckets[b].at[w] {
				b, w = x, y
			}
		}
	}
	t.floors[b] = max(t.floors[b], t.buckets[b].at[w])
	t.buckets[b].keys[w], t.buckets[b].at[w] = key, at
	return true
}

// free returns an empty entry of b (-1 if none) and how many are taken.
func (b *placedBucket) free() (w, taken int) {
	w = -1
	for i := range placedWays {
		if b.at[i] == 0 {
			w = i
		} else {
			taken++
		}
	}
	return w, taken
}

// grow doubles the buckets, and again while an entry finds both of its buckets full,
// up to placedMaxBuckets. Below that no entry was put out, so there are no floors to
// carry over.
func (t *placedTable) grow() {
	old := t.buckets
	for n := 2 * len(old); ; n *= 2 {
		t.buckets = make([]placedBucket, n)
		if t.reinsert(old) {
			return
		}
	}
}

// reinsert puts the entries of old into t's buckets, and reports whether each found
// room.
func (t *placedTable) reinsert(old []placedBucket) bool {
	for i := range old {
		for w := range placedWays {
			if old[i].at[w] != 0 && !t.insert(old[i].keys[w], old[i].at[w]) {
				return false
			}
		}
	}
	return true
}
