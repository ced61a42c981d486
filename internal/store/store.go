// Package store keeps the matched series of every rule, for the exposition (package
// exporter) to read at scrape time through the read API of read.go. It knows nothing of
// Prometheus: what the series' families are called and how they are written is the
// exposition's.
//
// A Set holds one store per rule of a *config.Config: label set → series (a windows.Series
// plus the `_total`), the rule's cardinality budget with its `__overflow__` series, idle
// expiry and drop counters. Sinks, one per writing goroutine, feed parser events into a
// Set; the exposition reads the current Set at scrape time. A reload builds a new Set that
// takes over the stores of unchanged rules, so their windows survive.
//
// Idle series are expired by Set.Expire, which the pipeline calls now and then; a scrape
// changes nothing, judging idleness itself, and a window read after any gap is still right
// because the wheels catch up on read. Between two Expires the budget bounds memory.
//
// # Writers on several cores
//
// Inputs read on goroutines of their own, and often write the same label sets (a busy
// nginx's method and status). So that they do not contend, a store has shards of writers
// (sinks are dealt to them in turn): a line takes only its shard's read lock, and writes
// only its shard's part of the series: its own wheels and counters, in cache lines of its
// own. The part of the shard that made the series is inline; another shard's is made, with
// wheels, on that shard's first line to it. Readers (scrapes, expiry, the budget's
// eviction order) merge the parts: totals and window sums add up, extrema and summaries
// merge. Making or removing a series takes every shard's write lock.
//
// # Counters outlive windows
//
// A label set's `_total` never goes back while the process lives, so sparse events stay
// visible to increase(). Once a series has been idle longer than its longest window its
// wheels are released and it becomes a kept counter: its label set, its total and the
// second of its last line. A line revives it with new wheels. A kept counter is removed
// once idle for the counter TTL (global counter_ttl; 0 keeps it), or earlier when a new
// label set needs its room in the budget, least recently active first: kept counters
// count against max_series_per_rule like live series, so the budget still bounds them.
// Removed series keep their lines in the rule's matched-lines counter.
//
// A rule without labels and a rule's initial label sets are pinned: created with the
// store, never expired, their wheels never released, so they always export their series
// (0 before any line).
//
// # Clocks
//
// A processing-time rule places each line at the processing second (monotonic, so a
// wall-clock step moves nothing) and is read and expired at it. An event-time rule lives
// entirely on the wall clock, the clock its log's times come from: its lines are judged
// late or future against the wall second, and its series are read and expired at it. A
// rule never mixes the two, so neither clock's steps reach the other's rules. Rates divide
// by the seconds observed: since the exporter's start for processing-time rules; for
// event-time rules since the earlier of that and the oldest line any event-time rule
// placed, so that a replay from the beginning of a log gives a series first seen near its
// end the rate over the whole log.
//
// # Late lines
//
// A line older than its rule's longest window is in no window, but counts in the `_total`
// of its series: a log read from its beginning brings a label set's old lines before its
// recent ones, and those old lines belong in its `_total`. Such a series is idle from birth
// until a recent line arrives, so it must not keep a live label set out of the budget: when
// a new label set finds the budget full, idle series are reaped there and then, not only at
// the next Expire (at most once per second, or per quarter budget of new label sets, since
// it walks every series). A label set whose first line is late starts as a kept counter
// (no wheels), so it is the first to give way. Only a late line of a new label set that
// finds the budget full creates no series (nor goes to the overflow series, whose windows
// it cannot reach): it counts in the rule's matched lines and late drops.
package store

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/parser"
	"github.com/logwindow/logwindow_exporter/windows"
)

// OverflowValue is the value of every label of the series that collects a rule's label
// sets once the rule holds max_series_per_rule series.
const OverflowValue = "__overflow__"

// NumParserReasons is the number of parser.DropReason values, which run from 0 to
// BadTimestamp: the size of Drops.Parser. A test fails when the parser gains one.
const NumParserReasons = int(parser.BadTimestamp) + 1

// Set is the series state of one config: what the sinks write to and the exposition reads.
// It is immutable after NewSet; the stores it points to are shared with the Set it was
// built from, which is what keeps writers of the previous Set safe during a reload.
type Set struct {
	rules []Rule
	// oldest is the second of the oldest line an event-time rule placed in a wheel since
	// the exporter started (math.MaxInt64 before the first); every Set built by reloads
	// shares it.
	oldest *atomic.Int64
	// mem is the process-wide bound on series memory, shared likewise.
	mem *memory
	// shards is the number of shards of writers of every store (see Series), and sinks
	// counts the sinks made, to deal them to shards in turn; both shared likewise, so that
	// a store taken over has the shards of the Set it was made by, and the sinks inputs
	// take after a reload stay on shards of their own.
	shards int
	sinks  *atomic.Uint32
}

// nextShard is the shard of a new sink.
func (s *Set) nextShard() uint8 {
	return uint8((s.sinks.Add(1) - 1) % uint32(s.shards))
}

// memory is what the series of every rule take, estimated, and --series.max-bytes:
// past it a new label set folds into its rule's overflow series.
type memory struct {
	used atomic.Int64
	// max is the bound; 0 is none. A Set built with a new bound changes it for all.
	max atomic.Int64
}

// full reports whether cost more bytes would pass the bound.
func (m *memory) full(cost int64) bool {
	max := m.max.Load()
	return max > 0 && m.used.Load()+cost > max
}

// SetOptions are what a Set takes besides the config.
type SetOptions struct {
	// MaxBytes bounds the memory of the series of all rules (--series.max-bytes): past it,
	// a new label set is folded into its rule's overflow series, as past the rule's budget.
	// 0 is no bound.
	MaxBytes int64
	// Shards is the number of shards of writers of a Set built without a previous one;
	// 0 is one per processor (GOMAXPROCS), at most MaxShards. Tests and benchmarks set it,
	// so that their sinks have shards of their own whatever the machine.
	Shards int
}

// Rule is one rule of a Set: the rule as this config defines it and its store
// (possibly inherited). What the rule's families are called is the exposition's.
type Rule struct {
	rule   *config.Rule
	budget budget
	store  *store
}

// budget is what a config says about how long and how many series a store keeps; it is
// not part of the store, so a reload may change it for an inherited one.
type budget struct {
	// limit is max_series_per_rule.
	limit int
	// ttl is how long, in seconds, a kept counter stays after its last line; 0 is forever.
	ttl int64
}

// store is the state of one rule that outlives a reload when the rule does not change.
type store struct {
	fingerprint string
	layout      *windows.Layout
	// value: the rule sums a capture, so `_total` is a float sum rather than the line count.
	value bool
	// eventTime: the rule places lines by their own time, on the wall clock (see the
	// package documentation). The fingerprint covers the timestamp, so an inherited store
	// keeps its clock.
	eventTime bool
	// overflowKey and overflowLabels describe the overflow series; a log line whose label
	// values are all OverflowValue lands in that same series, so the two can never be
	// exported as duplicate label sets.
	overflowKey    string
	overflowLabels []string

	// locks guard series, one per shard of writers: a sink read-locks only its shard's, so
	// that writers on different cores do not share the lock's reader count; changing the map
	// takes them all (lockAll), so any one of them is enough to read it. They are allocated
	// on their own: a block of a multiple of 64 bytes (up to 512), which the allocator
	// places at a multiple of its size, so that each lock is in a cache line of its own,
	// away from the fields every writer reads.
	locks  []shardLock
	series map[string]*Series
	// normal counts the series other than the overflow one; it is what the budget limits.
	normal int
	// retired is the line count of expired series, so matched lines stay monotonic.
	retired uint64
	// reapedAt is the now of the last reap at the budget and foldsSinceReap the new label
	// sets folded since: together they bound how often a reap walks the series.
	reapedAt       atomic.Int64
	foldsSinceReap atomic.Int64
	// lateUnseated counts late lines of label sets that had no series: matched lines that
	// are in no `_total` (see the package documentation).
	lateUnseated atomic.Uint64

	// parserDrops is indexed by parser.DropReason.
	parserDrops  [NumParserReasons]atomic.Uint64
	late, future atomic.Uint64
	folds        atomic.Uint64
	// oldest is the Set's shared oldest placed event (see Set.oldest).
	oldest *atomic.Int64
	// mem is the Set's shared memory bound; used is what this store's series take of it,
	// and wheelBytes what a series' wheels take.
	mem        *memory
	used       atomic.Int64
	wheelBytes int64
	// memFolds counts the lines folded because of the memory bound (also in folds).
	memFolds atomic.Uint64
}

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

// seriesOverhead is a series' heap besides its label values and wheels: the series, its
// labels slice header and its map entry (the map grows by doubling: measured by
// TestMaxBytes and BenchmarkMaxBytes20Rules).
const seriesOverhead = int64(unsafe.Sizeof(Series{})) + 176

// Heap a series takes for a second writing shard: the table of the other shards' parts
// (once) and each such part.
const (
	othersBytes  = int64(unsafe.Sizeof(others{}))
	farPartBytes = int64(unsafe.Sizeof(farPart{}))
)

// charge adds n bytes to the store's and the process' series memory.
func (st *store) charge(n int64) {
	st.used.Add(n)
	st.mem.used.Add(n)
}

// seriesCost is what a new series of key takes, its wheels included.
func (st *store) seriesCost(keyLen, labels int) int64 {
	return seriesOverhead + int64(keyLen) + 16*int64(labels) + st.wheelBytes
}

// heldBytes is what s is charged now: its cost, less the wheels of its first part if it
// has none, plus its other parts and their wheels. The store's write locks are held, so
// no part or wheels come or go meanwhile.
func (st *store) heldBytes(s *Series) int64 {
	n := st.seriesCost(len(s.key), len(s.labels)) - st.wheelBytes
	if o := s.others.Load(); o != nil {
		n += othersBytes
		for i := range o {
			if o[i].Load() != nil {
				n += farPartBytes
			}
		}
	}
	for p := range s.parts {
		if p.win.Load() != nil {
			n += st.wheelBytes
		}
	}
	return n
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
	// last is the second of the newest line: what the counter TTL and the eviction order
	// of a kept counter go by (while it has wheels, theirs is newest placed line's).
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

// raiseLast moves the last line's second of a kept counter forward to t.
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

// NewSet builds the state for cfg without a memory bound; see NewSetWith.
func NewSet(cfg *config.Config, prev *Set) (*Set, error) {
	return NewSetWith(cfg, prev, SetOptions{})
}

// NewSetWith builds the state for cfg. Rules whose Fingerprint equals a rule's of prev take
// over its store, keeping their series, totals and drop counters; the others start empty.
// The fingerprint covers the windows and aggregations, so a kept store's layout is the
// one the rule asks for; help text and the series budget may change.
//
// prev may be nil. prev stays usable and unchanged: writers still holding its sinks keep
// writing to the stores both Sets share, and only rules that changed or were removed lose
// those in-flight lines. A Set that is built but never put in use changes nothing.
func NewSetWith(cfg *config.Config, prev *Set, opts SetOptions) (*Set, error) {
	inherit := map[string]*store{}
	oldest := new(atomic.Int64)
	oldest.Store(math.MaxInt64)
	mem := new(memory)
	sinks := new(atomic.Uint32)
	shards := opts.Shards
	if shards <= 0 {
		shards = min(runtime.GOMAXPROCS(0), MaxShards)
	}
	if prev != nil {
		oldest, mem, sinks, shards = prev.oldest, prev.mem, prev.sinks, prev.shards
		for _, r := range prev.rules {
			inherit[r.store.fingerprint] = r.store
		}
	}
	s := &Set{rules: make([]Rule, 0, len(cfg.Rules)), oldest: oldest, mem: mem, shards: shards, sinks: sinks}
	var errs []error
	for _, r := range cfg.Rules {
		st := inherit[r.Fingerprint]
		if st != nil {
			// One store serves one rule, even if two rules had equal fingerprints.
			delete(inherit, r.Fingerprint)
		} else {
			// The rule's series share one layout of its windows with what its quantities
			// keep; an inherited store has the same, as the fingerprint covers both.
			layout, err := windows.NewLayout(r.Windows, r.Options())
			if err != nil {
				errs = append(errs, fmt.Errorf("rule %q: %w", r.Name, err))
				continue
			}
			st = newStore(r, layout, oldest, mem, shards)
		}
		b := budget{limit: cfg.Global.MaxSeriesPerRule, ttl: int64(cfg.Global.CounterTTL / time.Second)}
		s.rules = append(s.rules, Rule{rule: r, budget: b, store: st})
	}
	if err := errors.Join(errs...); err != nil {
		for _, r := range s.rules {
			if !prevHas(prev, r.store) {
				mem.used.Add(-r.store.used.Load()) // built for nothing
			}
		}
		return nil, err
	}
	// The stores of prev that s does not take over are gone once s is in use (a Set that
	// fails or is never used is the caller's to drop; the pipeline uses every Set it builds).
	for _, st := range inherit {
		mem.used.Add(-st.used.Load())
	}
	mem.max.Store(opts.MaxBytes)
	return s, nil
}

func prevHas(prev *Set, st *store) bool {
	if prev == nil {
		return false
	}
	for _, r := range prev.rules {
		if r.store == st {
			return true
		}
	}
	return false
}

func newStore(r *config.Rule, layout *windows.Layout, oldest *atomic.Int64, mem *memory, shards int) *store {
	overflow := make([]string, len(r.Labels))
	for i := range overflow {
		overflow[i] = OverflowValue
	}
	st := &store{
		mem:            mem,
		wheelBytes:     int64(layout.SeriesBytes()),
		oldest:         oldest,
		fingerprint:    r.Fingerprint,
		layout:         layout,
		value:          r.IsValueRule(),
		eventTime:      r.Timestamp != nil,
		overflowKey:    strings.Join(overflow, parser.KeySep),
		overflowLabels: overflow,
		series:         map[string]*Series{},
		locks:          make([]shardLock, shards),
	}
	// The one series of a label-less rule has the overflow series' key (no values), which
	// keeps it out of the budget as it always was.
	if len(r.Labels) == 0 {
		st.pin("", []string{})
	}
	for _, values := range r.Initial {
		vs := make([][]byte, len(values))
		for i, v := range values {
			vs[i] = []byte(v)
		}
		st.pin(cloneLabels(vs))
	}
	return st
}

// pin creates a series that exists from the start and never expires; config refuses
// duplicate initial label sets and more of them than the budget.
func (st *store) pin(key string, values []string) {
	s := newSeries(key, values, st.layout, false, 0)
	st.charge(st.seriesCost(len(key), len(values)))
	s.pinned = true
	st.series[key] = s
	if key != st.overflowKey {
		st.normal++
	}
}

// observe adds one event of a sink of shard: a lookup and an Add to the shard's part,
// under the shard's read lock, so that expiry, which takes the write locks, can never
// remove a series (or release its wheels) while an event is being added to it. A
// backfilled event (warm start) goes into the windows only.
//
// last is the sink's series of the rule's previous event. Consecutive lines mostly share a
// rule's label set, so it spares the map lookup while the key repeats and the series was
// not removed (removed is set under the write locks, so the read lock makes it current).
// A removed series stays reachable from last until the rule's next event on that sink,
// though remove no longer charges its bytes: at most one series per rule and sink.
func (st *store) observe(key []byte, labels [][]byte, now, at int64, v float64, items [][]byte, b budget, backfill bool, shard uint8, last **Series) {
	limit := b.limit
	lock := &st.locks[shard]
	lock.RLock()
	s := *last
	if s == nil || s.removed || s.key != string(key) {
		s = st.series[string(key)]
		*last = s
	}
	overBudget := s == nil && st.normal >= limit
	full := overBudget || s == nil && st.mem.full(st.seriesCost(len(key), len(labels)))
	if full && st.tooOld(now, at) {
		lock.RUnlock()
		if !backfill {
			st.lateUnseated.Add(1)
			st.late.Add(1)
		}
		return
	}
	folded, due := false, false
	// Only valid values fold here: invalid ones are sanitised by the slow path first, and
	// their sanitised label set may already be a series of its own. When a reap is due, the
	// slow path runs it first.
	if full {
		due = st.reapDue(now, limit)
		if !due && validLabels(labels) {
			s = st.series[st.overflowKey]
			folded = s != nil
		}
	}
	if s != nil && st.idlePastTTL(s, shard, now, b.ttl) {
		// A label set idle past the counter TTL is a new one (Expire may not have removed
		// it yet): its total starts again, as a scrape stopped showing the old one.
		lock.RUnlock()
		st.create(key, labels, now, at, v, items, b, due, backfill, shard)
		return
	}
	if s != nil {
		st.add(s, shard, now, at, v, items, backfill)
		lock.RUnlock()
		if folded && !backfill {
			st.fold(!overBudget)
		}
		return
	}
	lock.RUnlock()
	st.create(key, labels, now, at, v, items, b, due, backfill, shard)
}

// fold counts a line folded into the overflow series, by the memory bound or the budget.
func (st *store) fold(memory bool) {
	st.folds.Add(1)
	if memory {
		st.memFolds.Add(1)
	}
}

// tooOld reports whether an event at second at is older than every window at second now,
// as windows.Series.Add judges it for a new series. The difference is taken unsigned so
// that no pair of times can overflow it.
func (st *store) tooOld(now, at int64) bool {
	return at < now && uint64(now-at) >= uint64(st.layout.Longest())
}

// reapDue reports whether a new label set that found the budget full should reap idle
// series first: once per second of now, or once per quarter budget of label sets folded.
func (st *store) reapDue(now int64, limit int) bool {
	return now != st.reapedAt.Load() || st.foldsSinceReap.Add(1) >= int64(max(limit/4, 1))
}

// reap makes room at a full budget; the write locks are held. It releases the wheels of
// idle series and removes kept counters past the TTL, then, if the budget is still full,
// the least recently active kept counters: as many as new label sets asked for room since
// the last reap (at least one, at most a quarter budget), so a burst of new label sets
// between two reaps does not fold more of them than needed.
func (st *store) reap(now int64, b budget, memFull bool) {
	st.reapedAt.Store(now)
	demand := st.foldsSinceReap.Swap(0) + 1
	var kept []*Series
	for _, s := range st.series {
		if s.pinned || s.key == st.overflowKey {
			continue
		}
		if st.settle(s, now, b.ttl) == settledKept {
			kept = append(kept, s)
		}
	}
	want := int64(st.normal-b.limit) + demand
	if memFull {
		want = max(want, demand) // the memory bound, not the budget, asks for room
	}
	evict := min(want, int64(max(b.limit/4, 1)), int64(len(kept)))
	if evict <= 0 {
		return
	}
	slices.SortFunc(kept, func(a, b *Series) int { return cmp.Compare(a.last(), b.last()) })
	for _, s := range kept[:evict] {
		st.remove(s)
	}
}

// remove deletes s, keeping its lines in the matched count; the write locks are held.
func (st *store) remove(s *Series) {
	delete(st.series, s.key)
	s.removed = true
	st.charge(-st.heldBytes(s))
	st.retired += s.lines()
	if s.key != st.overflowKey {
		st.normal--
	}
}

// create is the first event of a label set (or of the overflow series), or a new label set
// that found the budget full: the only path that allocates, and the only one that takes the
// write lock on the write side. It reaps at a full budget only when observe found a reap
// due, so that reaps stay rate-limited when every new label set comes here (the overflow
// series does not exist yet, or reaps keep making room for one label set at a time).
func (st *store) create(rawKey []byte, labels [][]byte, now, at int64, v float64, items [][]byte, b budget, due, backfill bool, shard uint8) {
	limit := b.limit
	// Valid values (what the parser delivers) are looked up by the line's own key and copied
	// only when a series is made for them, so a label set folded at the budget costs no
	// allocation. Invalid ones are sanitised first: that label set may exist already.
	var key string
	var values []string
	cloned := !validLabels(labels)
	if cloned {
		key, values = cloneLabels(labels)
	}
	st.lockAll()
	defer st.unlockAll()
	var s *Series
	var isOverflow bool
	if cloned {
		s, isOverflow = st.series[key], key == st.overflowKey
	} else {
		s, isOverflow = st.series[string(rawKey)], string(rawKey) == st.overflowKey
	}
	if s != nil && st.gone(s, now, b.ttl) {
		st.remove(s)
		s = nil
	}
	cost := st.seriesCost(len(rawKey), len(labels))
	if cloned {
		cost = st.seriesCost(len(key), len(labels))
	}
	overBudget := s == nil && !isOverflow && st.normal >= limit
	memFull := s == nil && !isOverflow && st.mem.full(cost)
	if (overBudget || memFull) && due {
		st.reap(now, b, memFull)
		overBudget = st.normal >= limit
		memFull = st.mem.full(cost)
	}
	full := overBudget || memFull
	folded := false
	if full {
		if st.tooOld(now, at) {
			if !backfill {
				st.lateUnseated.Add(1)
				st.late.Add(1)
			}
			return
		}
		s, folded = st.series[st.overflowKey], true
		if s == nil {
			key, values = st.overflowKey, st.overflowLabels
		}
	} else if s == nil && !cloned {
		key, values = cloneLabels(labels)
	}
	if s == nil {
		// A label set whose first line is too old for every window starts as a kept
		// counter: wheels would hold nothing.
		kept := st.tooOld(now, at)
		s = newSeries(key, values, st.layout, kept, shard)
		cost := st.seriesCost(len(key), len(values))
		if kept {
			cost -= st.wheelBytes
		}
		st.charge(cost)
		st.series[key] = s
		if key != st.overflowKey {
			st.normal++
		}
	}
	st.add(s, shard, now, at, v, items, backfill)
	if folded && !backfill {
		st.fold(!overBudget)
	}
}

func validLabels(labels [][]byte) bool {
	for _, l := range labels {
		if !utf8.Valid(l) {
			return false
		}
	}
	return true
}

// cloneLabels copies the values out of the line's buffer into one string, replacing
// invalid UTF-8 so that no value can fail a scrape, and returns the map key and the label
// values as substrings of it.
func cloneLabels(labels [][]byte) (string, []string) {
	var b strings.Builder
	ends := make([]int, len(labels))
	for i, l := range labels {
		if i > 0 {
			b.WriteString(parser.KeySep)
		}
		if utf8.Valid(l) {
			b.Write(l)
		} else {
			b.WriteString(strings.ToValidUTF8(string(l), string(utf8.RuneError)))
		}
		ends[i] = b.Len()
	}
	key := b.String()
	values := make([]string, len(labels))
	begin := 0
	for i, end := range ends {
		values[i] = key[begin:end]
		begin = end + len(parser.KeySep)
	}
	return key, values
}

// add counts one event of s in shard's part: in its `_total` (unless backfilled) and in
// its wheels, which a kept counter gets back unless the event is too old for every window.
func (st *store) add(s *Series, shard uint8, now, at int64, v float64, items [][]byte, backfill bool) {
	p := s.part(shard)
	if p == nil {
		p = st.newPart(s, shard)
	}
	if !backfill {
		p.lines.Add(1)
		if st.value {
			addFloat(&p.sum, v)
		}
		p.raiseLast(at)
	}
	w := p.win.Load()
	if w == nil {
		if st.tooOld(now, at) {
			if !backfill {
				st.late.Add(1)
			}
			return
		}
		w = st.layout.NewSeries()
		if p.win.CompareAndSwap(nil, w) {
			st.charge(st.wheelBytes)
		} else {
			w = p.win.Load()
		}
	}
	switch w.AddItems(now, at, v, items) {
	case windows.Placed:
		if st.eventTime {
			st.placedAt(at)
		}
	case windows.Late:
		if !backfill {
			st.late.Add(1)
		}
	case windows.Future:
		if !backfill {
			st.future.Add(1)
		}
		st.placedAt(now)
	}
}

// placedAt lowers the oldest line placed by an event-time rule to t; after the first lines
// of a log that is a single load per line. Processing-time rules do not call it: their
// lines are placed at now, never before the exporter's start.
func (st *store) placedAt(t int64) {
	for {
		old := st.oldest.Load()
		if t >= old || st.oldest.CompareAndSwap(old, t) {
			return
		}
	}
}

// addFloat adds v to the float64 stored as bits in u; writers of one series race only on
// this word, so a CAS loop beats a lock.
func addFloat(u *atomic.Uint64, v float64) {
	for {
		old := u.Load()
		if u.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// lines is the number of lines of s.
func (s *Series) lines() uint64 {
	var n uint64
	for p := range s.parts {
		n += p.lines.Load()
	}
	return n
}

// total is the `_total` of the series: the sum of values, or the line count.
func (st *store) total(s *Series) float64 {
	if !st.value {
		return float64(s.lines())
	}
	var sum float64
	for p := range s.parts {
		sum += math.Float64frombits(p.sum.Load())
	}
	return sum
}

// snapshot returns the live series and the matched lines not in them (those of expired
// series and late lines that had no series), read together so that the rule's
// matched-lines counter never goes back.
func (st *store) snapshot(dst []*Series) ([]*Series, uint64) {
	defer st.rlock().RUnlock()
	for _, s := range st.series {
		dst = append(dst, s)
	}
	return dst, st.retired + st.lateUnseated.Load()
}

// live reports whether s exports windows at now: it is pinned, or has wheels that had a
// line within the longest window; else it is written as a kept counter.
func (st *store) live(s *Series, now int64) bool {
	for p := range s.parts {
		if st.wheels(s, p, now) != nil {
			return true
		}
	}
	return false
}

// oldestLive is the oldest second of a line in some window at now: wheels whose newest
// line is older hold nothing, and are read, expired and released as idle.
func (st *store) oldestLive(now int64) int64 { return now - st.layout.Longest() }

// wheels returns the wheels of part p of s that are read at now: none when p has none or
// they are idle past the longest window (they hold nothing then), unless s is pinned.
func (st *store) wheels(s *Series, p *part, now int64) *windows.Series {
	w := p.win.Load()
	if w == nil || !s.pinned && w.LastAdd() < st.oldestLive(now) {
		return nil
	}
	return w
}

// read appends to dst[:0] the Stats of every window of s at second now, its parts merged:
// sums and counts added, the per-second rate that of the sum, extrema of all. Parts without
// wheels to read (see wheels) are left out; more holds the other parts' reads.
func (st *store) read(s *Series, now, since int64, dst []windows.Stats, more *[]windows.Stats) []windows.Stats {
	dst = dst[:0]
	merged := false
	for p := range s.parts {
		w := st.wheels(s, p, now)
		if w == nil {
			continue
		}
		if len(dst) == 0 {
			dst = w.Read(now, since, dst)
			continue
		}
		*more = w.Read(now, since, (*more)[:0])
		for i := range min(len(dst), len(*more)) {
			d, m := &dst[i], (*more)[i]
			d.Sum += m.Sum
			d.Events += m.Events
			d.Max, d.Min = extremum(d.Max, m.Max, true), extremum(d.Min, m.Min, false)
		}
		merged = true
	}
	if merged {
		for i := range dst {
			dst[i].PerSecond = st.layout.PerSecond(i, dst[i].Sum, now, since)
		}
	}
	return dst
}

// extremum merges two maxima (or minima), either NaN when its window has no event.
func extremum(a, b float64, isMax bool) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	case isMax:
		return max(a, b)
	}
	return min(a, b)
}

// readSummaries sets dst (made by the layout's NewSummaries) to the summaries of every
// window of s at second now, its parts merged; more holds the other parts' reads (made on
// the first series with two parts that are not idle).
func (st *store) readSummaries(s *Series, now int64, dst []windows.Summary, more *[]windows.Summary) {
	first := true
	for p := range s.parts {
		w := st.wheels(s, p, now)
		if w == nil {
			continue
		}
		if first {
			w.ReadSummaries(now, dst)
			first = false
			continue
		}
		if *more == nil {
			*more = st.layout.NewSummaries()
		}
		w.ReadSummaries(now, *more)
		for i, d := range dst {
			d.Merge((*more)[i])
		}
	}
}

// stale reports whether s has something to expire at now: wheels idle for longer than the
// longest window (every window reads zero), or a kept counter idle for longer than ttl.
func (st *store) stale(s *Series, now, ttl int64) bool {
	if s.pinned {
		return false
	}
	kept := true
	for p := range s.parts {
		if w := p.win.Load(); w != nil {
			if w.LastAdd() < st.oldestLive(now) {
				return true
			}
			kept = false
		}
	}
	return kept && ttl > 0 && s.last() < now-ttl
}

// What settle did to a series.
const (
	settledLive    = iota // it has had a line within its longest window
	settledKept           // it is a kept counter (maybe just now)
	settledRemoved        // it was idle for longer than the TTL
)

// settle releases the idle wheels of s and removes it if idle past ttl; the write locks
// are held and s is not pinned.
func (st *store) settle(s *Series, now, ttl int64) int {
	live := false
	for p := range s.parts {
		w := p.win.Load()
		if w == nil {
			continue
		}
		if last := w.LastAdd(); last < st.oldestLive(now) {
			p.last.Store(last)
			p.win.Store(nil)
			st.charge(-st.wheelBytes)
		} else {
			live = true
		}
	}
	switch {
	case live:
		return settledLive
	case ttl > 0 && s.last() < now-ttl:
		st.remove(s)
		return settledRemoved
	}
	return settledKept
}

// idlePastTTL is a cheap first test of gone for the write path: no line of shard's part
// of s is newer than ttl (gone then reads every part).
func (st *store) idlePastTTL(s *Series, shard uint8, now, ttl int64) bool {
	return ttl > 0 && !s.pinned && st.partIdlePastTTL(s, shard, now, ttl)
}

// partIdlePastTTL is idlePastTTL past its first tests, which are inlined.
func (st *store) partIdlePastTTL(s *Series, shard uint8, now, ttl int64) bool {
	if p := s.part(shard); p != nil && p.last.Load() >= now-ttl {
		return false
	}
	return st.gone(s, now, ttl)
}

// gone reports whether s is a kept counter idle past ttl at now, or would be one once
// expired: Expire removes it, and a reader leaves it out until then.
func (st *store) gone(s *Series, now, ttl int64) bool {
	if s.pinned || ttl <= 0 {
		return false
	}
	last := int64(math.MinInt64)
	for p := range s.parts {
		l := p.last.Load()
		if w := p.win.Load(); w != nil {
			if l = w.LastAdd(); l >= st.oldestLive(now) {
				return false
			}
		}
		last = max(last, l)
	}
	return last < now-ttl
}

// expire releases the wheels of every series idle for longer than its longest window and
// removes kept counters idle past ttl, under the write locks. Nothing reads a store
// differently before and after (readers judge staleness themselves), so it only returns
// memory.
func (st *store) expire(now, ttl int64) {
	lock := st.rlock()
	due := false
	for _, s := range st.series {
		if st.stale(s, now, ttl) {
			due = true
			break
		}
	}
	lock.RUnlock()
	if !due {
		return
	}
	st.lockAll()
	defer st.unlockAll()
	for _, s := range st.series {
		if !s.pinned {
			st.settle(s, now, ttl)
		}
	}
}

// Expire releases the wheels of series idle for longer than their rule's longest window
// and removes kept counters idle past the counter TTL, in every rule: processing-time
// rules at second processing, event-time rules at wall. Scrapes do not expire (a scrape
// changes nothing); the pipeline calls Expire now and then, and between two calls the
// budgets bound memory as before.
func (s *Set) Expire(processing, wall int64) {
	for i := range s.rules {
		r := &s.rules[i]
		now := processing
		if r.store.eventTime {
			now = wall
		}
		r.store.expire(now, r.budget.ttl)
	}
}

// count returns the number of series (with wheels or kept counters), the overflow series
// included.
func (st *store) count() int {
	defer st.rlock().RUnlock()
	return len(st.series)
}
