package store

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/alecthomas/units"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/parser/event"
	"github.com/logwindow/logwindow_exporter/windows"
)

// memory is what the series of every rule take (and what the inputs hold, Set.Hold), and
// --series.max-bytes: past it a new label set folds into its rule's overflow series, and
// the summaries of the series are capped (windows.Capper).
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

// budget is what a config says about how long and how many series a store keeps; it is
// not part of the store, so a reload may change it for an inherited one.
type budget struct {
	// limit is max_series_per_rule.
	limit int
	// ttl is how long, in seconds, a kept counter stays after its last line; 0 is forever.
	ttl int64
}

// seriesOverhead is a series' heap besides its label values and wheels: the series, its
// labels slice header and its map entry (the map grows by doubling: measured by
// TestMaxBytes and BenchmarkMaxBytes20Rules).
const seriesOverhead = int64(unsafe.Sizeof(Series{})) + 64

// BudgetsPastBound words a warning when max_series_per_rule series of a rule hold more
// than maxBytes (--series.max-bytes; 0 is none) before a label value is written: that
// rule fills the bound before it reaches its budget, which then bounds nothing, and from
// then on the new label sets of every rule fold into __overflow__, where the budget was
// to fold the rule's alone. A huge budget meant as "no limit" is one. The rule named is
// the one whose series are largest, the first in the file of those as large (the lowest
// budget that fits is said for it); the others past it are counted.
func BudgetsPastBound(cfg *config.Config, maxBytes int64) []string {
	limit := int64(cfg.Global.MaxSeriesPerRule)
	if maxBytes <= 0 || limit <= 0 {
		return nil
	}
	var past []string
	var worst string
	var most int64
	for _, r := range cfg.Rules {
		if !labelsVary(r) {
			continue // one label set, whatever its budget
		}
		layout, err := windows.NewLayout(r.Windows, layoutOptions(r))
		if err != nil {
			continue // the Set's build refuses it
		}
		cost := seriesBytes(keyLen(len(r.Labels), 0), len(r.Labels), int64(layout.SeriesBytes()))
		if limit <= maxBytes/cost {
			continue
		}
		past = append(past, r.Name)
		if cost > most {
			worst, most = r.Name, cost
		}
	}
	if len(past) == 0 {
		return nil
	}
	others := ""
	if len(past) > 1 {
		names := slices.DeleteFunc(past, func(n string) bool { return n == worst })
		others = fmt.Sprintf(" (also rule %q", names[0])
		if len(names) > 1 {
			others += fmt.Sprintf(" and %d more", len(names)-1)
		}
		others += ")"
	}
	fix := fmt.Sprintf("lower max_series_per_rule to %d or less, or raise --series.max-bytes", maxBytes/most)
	if maxBytes < most {
		fix = "not one series of it fits: raise --series.max-bytes"
	}
	return []string{fmt.Sprintf("max_series_per_rule (%d) series of rule %q hold at least %s (%d bytes each before their label values), "+
		"more than --series.max-bytes (%s)%s: the rule fills the memory bound before its budget, and then the new label sets of every rule fold into __overflow__; %s",
		limit, worst, roughBytes(float64(limit)*float64(most)), most, units.Base2Bytes(maxBytes), others, fix)}
}

// labelsVary says whether r's lines may make more than one label set: a label of r
// renders a capture. Without labels, the one series is outside the budget (newStore pins
// it); labels of text alone render the same set for every line.
func labelsVary(r *config.Rule) bool {
	return slices.ContainsFunc(r.Labels, func(l config.Label) bool {
		// An empty template, which the loader refuses, is a rule built by hand: taken to vary.
		return len(l.Template) == 0 || slices.ContainsFunc(l.Template, func(p config.TemplatePart) bool { return p.Capture >= 0 })
	})
}

// roughBytes is n bytes in the largest binary unit under it, to a tenth: the size of a
// budget's series, which may not fit an int64.
func roughBytes(n float64) string {
	unit := 0
	for n >= 1024 && unit < len(byteUnits)-1 {
		n /= 1024
		unit++
	}
	return strconv.FormatFloat(math.Round(n*10)/10, 'f', -1, 64) + byteUnits[unit]
}

var byteUnits = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"}

// Heap a series takes for a second writing shard: the table of the other shards' parts
// (once) and each such part.
const (
	othersBytes  = int64(unsafe.Sizeof(others{}))
	farPartBytes = int64(unsafe.Sizeof(farPart{}))
)

// charge adds n bytes to the store's and the process' series memory; nothing once the
// store is dropped.
func (st *store) charge(n int64) {
	if st.dropped.Load() {
		return
	}
	st.used.Add(n)
	st.mem.used.Add(n)
	if st.dropped.Load() {
		// The drop may have taken used before n was added to it: what is left is given
		// back here, so that each byte is given back once, by whichever comes last.
		st.mem.used.Add(-st.used.Swap(0))
	}
}

// drop gives the store's charge back, once a reload's Set no longer has it: it charges
// nothing from then on.
func (st *store) drop() {
	st.settlePending()
	st.dropped.Store(true)
	st.mem.used.Add(-st.used.Swap(0))
}

// shardAccount is the windows.Account of the series of one shard of writers of a store:
// each shard's wheels are made by a layout of its own that charges it. With more than one
// shard, what the summaries grow by is gathered in the account's pending, in a cache line
// of its own, and passed on to the counters every writer shares (the store's used and the
// Set's memory) once it reaches chargeBatch, or at once when the memory bound is near: a
// summary grows on many lines, and writers on two cores adding to the shared counters on
// every one of them kept the counters' cache line moving between the cores. The readers of
// what the series take settle the pending bytes first (settlePending).
type shardAccount struct {
	st      *store
	layout  *windows.Layout
	pending atomic.Int64
	_       [cacheLine - 2*unsafe.Sizeof(uintptr(0)) - unsafe.Sizeof(atomic.Int64{})]byte
}

// chargeBatch is how many bytes a shard's summaries may grow or shrink by before the
// shared counters are told.
const chargeBatch = 64 << 10

// roomyBytes is the room above which the shards may keep bytes pending: at most
// MaxShards × chargeBatch go uncounted, far less than this room and than the room under
// which summaries are capped (windows' capBelow, 4 MiB), so that no decision the bound
// makes sees the difference.
const roomyBytes = 16 << 20

// Charge is what the shard's series' summaries grew by (windows.Account).
func (a *shardAccount) Charge(n int64) {
	if len(a.st.accounts) > 1 {
		if p := a.pending.Add(n); p < chargeBatch && p > -chargeBatch && a.st.Room() > roomyBytes {
			return
		}
		n = a.pending.Swap(0)
	}
	a.st.charge(n)
}

// Room is what the memory bound leaves the series (windows.Account).
func (a *shardAccount) Room() int64 { return a.st.Room() }

// settlePending passes the bytes pending in the shards' accounts on to the shared counters.
func (st *store) settlePending() {
	for i := range st.accounts {
		if n := st.accounts[i].pending.Swap(0); n != 0 {
			st.charge(n)
		}
	}
}

// Room is what the memory bound leaves the series.
func (st *store) Room() int64 {
	bound := st.mem.max.Load()
	if bound <= 0 {
		return math.MaxInt64
	}
	return bound - st.mem.used.Load()
}

// seriesCost is what a new series of key takes, its wheels included.
func (st *store) seriesCost(keyLen, labels int) int64 {
	return seriesBytes(keyLen, labels, st.wheelBytes)
}

// seriesBytes is what a new series takes with a key of keyLen bytes, labels values and
// wheels of wheels bytes: its key and its values' headers as the allocator rounds them
// (cloneLabels). The store charges it and BudgetsPastBound estimates by it, so that the
// warning at load is about the bytes the bound is later held to.
func seriesBytes(keyLen, labels int, wheels int64) int64 {
	return seriesOverhead + int64(windows.HeapBytes(keyLen)+windows.HeapBytes(16*labels)) + wheels
}

// keyLen is the length of the key of labels values that are valueBytes long together:
// the values joined by event.KeySep.
func keyLen(labels, valueBytes int) int {
	return len(event.KeySep)*max(labels-1, 0) + valueBytes
}

// heldBytes is what s is charged now: its cost, less the wheels of its first part, plus
// its other parts and the wheels of every part, as they grew. The store's write locks are
// held, so no part or wheels come, go or grow meanwhile.
func (st *store) heldBytes(s *Series) int64 {
	n := st.frameBytes(s)
	for p := range s.parts {
		if w := p.win.Load(); w != nil {
			n += w.Bytes()
		}
	}
	return n
}

// frameBytes is what s is charged besides its wheels: its cost less the wheels of its
// first part, and its other parts.
func (st *store) frameBytes(s *Series) int64 {
	n := st.seriesCost(len(s.key), len(s.labels)) - st.wheelBytes
	if o := s.others.Load(); o != nil {
		n += othersBytes
		for i := range o {
			if o[i].Load() != nil {
				n += farPartBytes
			}
		}
	}
	return n
}

// FoldLogEvery is how long, in seconds of a rule's clock, folds of the rule go unlogged
// after one was logged: the first fold says at once that a rule reached its budget, and
// a rule that keeps folding says so again once an hour rather than with every line.
const FoldLogEvery = 3600

// fold counts a line of the label set labels written by w folded into the overflow
// series, by the memory bound or w's budget, and logs it when due (FoldLogEvery) at w's
// second. Every line of a label set without a series folds, so what this adds to a fold
// is one atomic load until a log is due.
func (st *store) fold(w *write, memory bool, labels [][]byte) {
	w.counts.folds++
	if memory {
		w.counts.memFolds++
	}
	now, b := w.now, w.budget
	// A deadline more than 2×FoldLogEvery ahead is one the rule's clock stepped back from,
	// by more than FoldLogEvery since the last log; sinks' clocks a few seconds apart are
	// not a step back.
	if at := st.foldLogAt.Load(); (now >= at || at-now > 2*FoldLogEvery) && st.foldLogAt.CompareAndSwap(at, now+FoldLogEvery) {
		// The sink's folds it did not publish yet are folds too, this one among them.
		st.logFold(memory, b, labels, st.folds.Load()+w.counts.folds)
	}
}

// logFold says that the rule folds new label sets, why, and one of them: the label whose
// values keep changing is what to look for; folded is how many lines were folded.
func (st *store) logFold(memory bool, b budget, labels [][]byte, folded uint64) {
	values := make([]any, 0, len(labels))
	for i, l := range labels {
		values = append(values, slog.String(st.labelNames[i], string(l)))
	}
	attrs := []any{"rule", st.name, "max_series_per_rule", b.limit}
	if memory {
		attrs = append(attrs, "reason", "series.max-bytes", "series_max_bytes", st.mem.max.Load())
	} else {
		attrs = append(attrs, "reason", "max_series_per_rule")
	}
	attrs = append(attrs, "folded_lines", folded, slog.Group("labels", values...))
	st.foldLog.Warn("new label sets of the rule are folded into its __overflow__ series (logged again at most once an hour while it goes on)", attrs...)
}

// reapDue reports whether a new label set that found the budget full should reap idle
// series first: once per second of now, or once per quarter budget of label sets folded.
func (st *store) reapDue(now int64, limit int) bool {
	return now != st.reapedAt.Load() || st.foldsSinceReap.Add(1) >= int64(max(limit/4, 1))
}

// reap makes room at a full budget, at second now of the rule's clock and second active
// of the processing clock; the write locks are held. It releases the wheels of idle series
// and removes kept counters past the TTL, then, if the budget is still full, the least
// recently active kept counters: as many as new label sets asked for room since
// the last reap (at least one, at most a quarter budget), so a burst of new label sets
// between two reaps does not fold more of them than needed.
func (st *store) reap(now, active int64, b budget, memFull bool) {
	st.reapedAt.Store(now)
	demand := st.foldsSinceReap.Swap(0) + 1
	var kept []*Series
	for _, s := range st.series {
		if s.pinned || s.key == st.overflowKey {
			continue
		}
		if st.settle(s, now, active, b.ttl) == settledKept {
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
	// Label sets as recently active go in the order of their keys, so that which of them
	// gives way does not depend on the map's order.
	slices.SortFunc(kept, func(a, b *Series) int { return cmp.Or(cmp.Compare(a.last(), b.last()), strings.Compare(a.key, b.key)) })
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
