package store

import (
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/logwindow/logwindow_exporter/windows"
)

// MaxShards bounds the shards of writers of a store: one per processor (GOMAXPROCS), each
// sink writing to the parts and taking the lock of its own shard (sinks are dealt to
// shards in turn, so the few inputs of a process each have one while they are no more
// than the processors); two sinks that share a shard are merely slower. With one
// processor there is one shard, and a store is as it was without shards.
const MaxShards = 8

// cacheLine is the size that keeps what different writers change in different cache lines.
const cacheLine = 64

// shardLock is a shard's lock, alone in its cache line.
type shardLock struct {
	sync.RWMutex
	_ [cacheLine - unsafe.Sizeof(sync.RWMutex{})]byte
}

// lockAll takes every shard's write lock: what changing the map or the parts' wheels takes.
func (st *store) lockAll() {
	for i := range st.locks {
		st.locks[i].Lock()
	}
}

func (st *store) unlockAll() {
	for i := range st.locks {
		st.locks[i].Unlock()
	}
}

// rlock takes a read lock that is enough to read the map; readers outside the write path
// (scrapes, expiry) use the first shard's.
func (st *store) rlock() *shardLock {
	l := &st.locks[0]
	l.RLock()
	return l
}

// Series is one label set of a rule. Its state is kept in parts, one per shard of writers
// that wrote to it, merged by the readers: a line touches only its own shard's part, so
// inputs on different cores writing the same label set do not share its cache lines. The
// part of the shard that created the series is inline; the others are made on their
// shard's first line.
type Series struct {
	seriesHead
	_   [cacheLine - unsafe.Sizeof(seriesHead{})%cacheLine]byte
	own part
	// The padding makes a series 128 bytes, a size the allocator places at multiples of
	// 128, so that the part is in a cache line of its own.
	_ [cacheLine - unsafe.Sizeof(part{})%cacheLine]byte
}

// seriesHead is what writers of every shard read and none changes on the way of a line.
type seriesHead struct {
	key    string
	labels []string // substrings of key: no second copy of the values
	// others holds the parts of the shards other than owner's; nil until one writes.
	others atomic.Pointer[others]
	// owner is the shard of the inline part.
	owner uint8
	// pinned series (a label-less rule's, initial label sets) never expire.
	pinned bool
	// removed: the series was deleted from the store's map (under the write locks), so a
	// sink's pointer to it (see observe) is stale.
	removed bool
}

// others are a series' parts of the shards other than its owner's, indexed by shard.
type others [MaxShards]atomic.Pointer[farPart]

// farPart is a part made by a shard after the series, in a cache line of its own.
type farPart struct {
	part
	_ [cacheLine - unsafe.Sizeof(part{})%cacheLine]byte
}

// part is one shard's share of a series.
type part struct {
	// win holds the wheels; nil while the part is a kept counter. It is set to nil only
	// under the store's write locks, and set by a line under its shard's read lock (by
	// CAS), so a line is never added to wheels that are being released.
	win   atomic.Pointer[windows.Series]
	lines atomic.Uint64
	sum   atomic.Uint64 // float64 bits; value rules only
	// mag is the sum of the magnitudes of the large values added to sum and to the
	// wheels (float64 bits); see admit.
	mag atomic.Uint64
	// last is the processing second the part was last active at: when its newest line
	// came, whatever the line's own time and its rule's clock (see counted). It is what
	// the counter TTL and the eviction order of a kept counter go by.
	last atomic.Int64
}

// newSeries returns a series with no line yet, its part owned by shard; it has wheels
// unless kept.
func newSeries(key string, labels []string, layout *windows.Layout, kept bool, shard uint8) *Series {
	s := &Series{seriesHead: seriesHead{key: key, labels: labels, owner: shard}}
	s.own.last.Store(math.MinInt64)
	if !kept {
		s.own.win.Store(layout.NewSeries())
	}
	return s
}

// parts yields the parts of s.
func (s *Series) parts(yield func(*part) bool) {
	if !yield(&s.own) {
		return
	}
	if o := s.others.Load(); o != nil {
		for i := range o {
			if p := o[i].Load(); p != nil && !yield(&p.part) {
				return
			}
		}
	}
}

// part returns shard's part of s, or nil if it has none yet.
func (s *Series) part(shard uint8) *part {
	if shard == s.owner {
		return &s.own
	}
	if o := s.others.Load(); o != nil {
		if p := o[shard].Load(); p != nil {
			return &p.part
		}
	}
	return nil
}

// newPart returns shard's part of s, making it (a kept counter: no wheels yet) on the
// shard's first line; the shard's read lock is held, and sinks sharing the shard may race
// to make it.
func (st *store) newPart(s *Series, shard uint8) *part {
	o := s.others.Load()
	if o == nil {
		if s.others.CompareAndSwap(nil, new(others)) {
			st.charge(othersBytes)
		}
		o = s.others.Load()
	}
	p := new(farPart)
	p.last.Store(math.MinInt64)
	if o[shard].CompareAndSwap(nil, p) {
		st.charge(farPartBytes)
	}
	return &o[shard].Load().part
}

// raiseLast moves the second p was last active at forward to t.
func (p *part) raiseLast(t int64) {
	for {
		old := p.last.Load()
		if t <= old || p.last.CompareAndSwap(old, t) {
			return
		}
	}
}

// last is the second of the newest line of s (math.MinInt64 before any).
func (s *Series) last() int64 {
	last := int64(math.MinInt64)
	for p := range s.parts {
		last = max(last, p.last.Load())
	}
	return last
}

// lines is the number of lines of s.
func (s *Series) lines() uint64 {
	var n uint64
	for p := range s.parts {
		n += p.lines.Load()
	}
	return n
}
