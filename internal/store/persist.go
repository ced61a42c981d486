package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"

	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/parser/event"
	"github.com/logwindow/logwindow_exporter/windows"
	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// Sections of a snapshot that hold a Set: one "set" with what the rules share, then one
// "rule" per rule whose first record is the rule's header and each later one a series,
// and one "cut" with the processing second of the cut. A snapshot of an earlier build
// lacks the last (an earlier build passes it over), and is read without it.
const (
	sectionSet  = "set"
	sectionRule = "rule"
	sectionCut  = "cut"
)

// noCut is the processing second of the cut of a snapshot that does not record it.
const noCut = math.MaxInt64

// LatestSecond is the last second a snapshot may hold, 9999-12-31T23:59:59 UTC: with the
// first, 0 (1970), it bounds what the exporter's clocks reach, wall clock and processing
// time alike. A second of a snapshot outside them (the cut's, a part's last activity, a
// wheel's, the oldest placed line's) was edited: near the ends of int64 it would wrap
// the processing clock held to it (time.Unix(t, 0).Add overflows) and freeze the wheels
// at the windows' own bound, so it is refused as corrupt. The bound leaves room enough
// for processing time to run on from it for longer than any exporter runs.
const LatestSecond = 253402300799

// inRange reports whether t is a second the exporter's clocks reach (LatestSecond).
func inRange(t int64) bool { return t >= 0 && t <= LatestSecond }

// Encoded is a Set's state encoded by Encode, the rules' headers in memory and the
// series' records in a storage.Spill, to be written to a snapshot once whatever keeps the
// Set still (the pipeline's cut) is let go.
type Encoded struct {
	set   []byte
	rules []encodedRule
	// bound is the memory bound the Set had (--series.max-bytes; 0 none), which its series
	// may pass by what it admits at the bound (Restore).
	bound int64
	spill *storage.Spill
}

// encodedRule is one rule's header and where its series' records are in the spill. The
// records of the series unchanged since an encoding ahead are taken from it as they are,
// so that a snapshot encodes a series that no line came to once.
type encodedRule struct {
	st   *store
	head []byte
	recs []storage.Span
	// ahead holds, in an encoding of EncodeAhead, each series' index in noted, which
	// holds its record and what its parts were when it was encoded, in the order
	// encoded.
	ahead map[*Series]int
	noted []aheadSeries
}

// aheadSeries is a series' record in an encoding of EncodeAhead, and its parts then.
type aheadSeries struct {
	rec   storage.Span
	parts []partState
}

// partState is what a part was: a line added to it, or its wheels released, changes it.
type partState struct {
	p     *part
	win   *windows.Series
	lines uint64
}

// unchanged reports whether the parts of s are still those of a.
func (a aheadSeries) unchanged(s *Series) bool {
	i := 0
	for p := range s.parts {
		if i == len(a.parts) || a.parts[i] != (partState{p, p.win.Load(), p.lines.Load()}) {
			return false
		}
		i++
	}
	return i == len(a.parts)
}

// Bytes is about what the encoding takes.
func (e *Encoded) Bytes() int {
	n := len(e.set)
	for _, r := range e.rules {
		n += len(r.head)
		for _, rec := range r.recs {
			n += int(rec.Len())
		}
	}
	return n
}

// Encode encodes the state of every rule of s into sp: its series (label values, line
// counts and sums, wheels) and the counters read beside them (matched lines of series no
// longer held, drops), so that Restore can make a Set of the same rules go on as if it
// had never stopped. Writers may go on meanwhile, but what they write during the
// encoding may or may not be in it: the caller stops the writers whose lines must be in
// it whole or not at all.
//
// ahead, when not nil, is what EncodeAhead made of s into sp a moment before: the records
// of the series no line was counted in since are taken from it, so that the writers need
// be stopped only while the series written meanwhile are encoded. One made into another
// spill is not used.
func (s *Set) Encode(sp *storage.Spill, ahead *Encoded) (*Encoded, error) {
	if ahead != nil && ahead.spill != sp {
		ahead = nil
	}
	return s.encode(sp, ahead, false)
}

// EncodeAhead encodes s into sp as Encode does while writers go on, and notes what each
// series was when encoded, for Encode. It takes the write locks of a store for a few
// hundred series at a time, so that no line is half added to a series as it is encoded (a
// line is counted before its wheels are written), and adds their records to sp once it
// let them go. Writes that change a series' wheels without counting a line (a backfill
// sink's) must not happen between the two.
func (s *Set) EncodeAhead(sp *storage.Spill) (*Encoded, error) {
	return s.encode(sp, nil, true)
}

func (s *Set) encode(sp *storage.Spill, ahead *Encoded, note bool) (*Encoded, error) {
	e := &Encoded{set: wire.AppendVarint(nil, s.oldest.Load()), rules: make([]encodedRule, 0, len(s.rules)), bound: s.mem.max.Load(), spill: sp}
	// The rules' records on their way to sp: a batch of EncodeAhead's, made at once (grown
	// by append it would take five times its size), or one record.
	var scratch []byte
	if note {
		scratch = make([]byte, 0, aheadBytes)
	}
	for i := range s.rules {
		var prev *encodedRule
		if ahead != nil && i < len(ahead.rules) && ahead.rules[i].st == s.rules[i].store {
			prev = &ahead.rules[i]
		}
		r, err := s.rules[i].store.encode(sp, prev, note, &scratch)
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", s.rules[i].rule.Name, err)
		}
		e.rules = append(e.rules, r)
	}
	return e, nil
}

// Write writes the encoding into w as sections of their own, with processing, the
// processing second of the cut: read once Encode returned, so that no line in the
// encoding was counted at a later one. Restore takes the series as active no later than
// it.
func (e *Encoded) Write(w *storage.Writer, processing int64) error {
	if err := w.Section(sectionSet); err != nil {
		return err
	}
	if err := w.Record(e.set); err != nil {
		return err
	}
	if err := w.Section(sectionCut); err != nil {
		return err
	}
	if err := w.Record(wire.AppendUvarint(wire.AppendVarint(nil, processing), uint64(e.bound))); err != nil {
		return err
	}
	for _, r := range e.rules {
		if err := w.Section(sectionRule); err != nil {
			return err
		}
		if err := w.Record(r.head); err != nil {
			return err
		}
		if err := w.Spilled(e.spill, r.recs); err != nil {
			return err
		}
	}
	return nil
}

// encode encodes the rule's header, and its series into sp through scratch: under the
// map's read lock, which keeps series from coming and going, the others than those of
// prev unchanged since; or, to note them, in batches under the write locks.
func (st *store) encode(sp *storage.Spill, prev *encodedRule, note bool, scratch *[]byte) (encodedRule, error) {
	r := encodedRule{st: st}
	r.head = wire.AppendBytes(nil, []byte(st.name))
	r.head = wire.AppendBytes(r.head, []byte(st.fingerprint))
	r.head = binary.LittleEndian.AppendUint64(r.head, st.layout.Fingerprint())
	counts := make([]uint64, 0, len(st.counters()))
	for _, c := range st.counters() {
		counts = append(counts, c.Load())
	}
	// The drop counters of reasons added since snapshotDropReasons are left out while 0:
	// a build from before them refuses a header of more counters, and with it the rule,
	// as corrupt, and reads one without them as it wrote it.
	least := len(counts) - event.NumDropReasons + snapshotDropReasons
	for len(counts) > least && counts[len(counts)-1] == 0 {
		counts = counts[:len(counts)-1]
	}
	for _, c := range counts {
		r.head = wire.AppendUvarint(r.head, c)
	}
	lock := st.rlock()
	r.head = wire.AppendUvarint(r.head, st.retired)
	if note {
		all := make([]*Series, 0, len(st.series))
		for _, s := range st.series {
			all = append(all, s)
		}
		lock.RUnlock()
		err := st.encodeNoted(sp, &r, all, scratch)
		return r, err
	}
	defer lock.RUnlock()
	var kept []bool
	if prev != nil {
		kept = make([]bool, len(prev.noted))
	}
	var changed []storage.Span
	for _, s := range st.series {
		if i, ok := prev.aheadOf(s); ok {
			kept[i] = true
			continue
		}
		var err error
		if *scratch, err = s.appendBinary((*scratch)[:0]); err != nil {
			return r, err
		}
		span, err := sp.Add(*scratch)
		if err != nil {
			return r, err
		}
		changed = append(changed, span)
	}
	// In the order they are in the spill, which the snapshot's writer then reads once.
	r.recs = make([]storage.Span, 0, len(st.series))
	for i, k := range kept {
		if k {
			r.recs = append(r.recs, prev.noted[i].rec)
		}
	}
	r.recs = append(r.recs, changed...)
	return r, nil
}

// aheadOf returns the index in r.noted of s, in an encoding of EncodeAhead, if s did not
// change since; r may be nil.
func (r *encodedRule) aheadOf(s *Series) (int, bool) {
	if r == nil {
		return 0, false
	}
	i, ok := r.ahead[s]
	return i, ok && r.noted[i].unchanged(s)
}

// aheadBatch is how many series EncodeAhead encodes under one taking of a store's write
// locks: the longest its writers wait, some hundreds of microseconds. aheadBytes ends a
// batch early, once its records take that much: they are held until added to the spill,
// after the locks are let go.
const (
	aheadBatch = 128
	aheadBytes = 256 << 10
)

// encodeNoted encodes the series all (a copy of the map) into sp through scratch, noting
// each one's parts in r.
func (st *store) encodeNoted(sp *storage.Spill, r *encodedRule, all []*Series, scratch *[]byte) error {
	r.ahead = make(map[*Series]int, len(all))
	r.noted = make([]aheadSeries, 0, len(all))
	r.recs = make([]storage.Span, 0, len(all))
	var ends []int
	for len(all) > 0 {
		first, n := len(r.noted), 0
		batch := (*scratch)[:0]
		ends = ends[:0]
		var err error
		st.lockAll()
		for n < len(all) && n < aheadBatch && len(batch) < aheadBytes && err == nil {
			s := all[n]
			n++
			if s.removed {
				continue
			}
			var a aheadSeries
			for p := range s.parts {
				a.parts = append(a.parts, partState{p, p.win.Load(), p.lines.Load()})
			}
			if batch, err = s.appendBinary(batch); err == nil {
				ends = append(ends, len(batch))
				r.ahead[s] = len(r.noted)
				r.noted = append(r.noted, a)
			}
		}
		st.unlockAll()
		*scratch = batch
		if err != nil {
			return err
		}
		all = all[n:]
		from := 0
		for i, end := range ends {
			span, err := sp.Add(batch[from:end])
			if err != nil {
				return err
			}
			r.noted[first+i].rec = span
			r.recs = append(r.recs, span)
			from = end
		}
	}
	return nil
}

// counters are the rule's counters a snapshot keeps, in the order it keeps them.
func (st *store) counters() []*atomic.Uint64 {
	cs := []*atomic.Uint64{&st.lateUnseated, &st.late, &st.future, &st.tooLarge, &st.folds, &st.memFolds}
	for i := range st.parserDrops {
		cs = append(cs, &st.parserDrops[i])
	}
	return cs
}

// appendBinary appends the series' record: its label values, the shard that made it and
// each part (shard, lines, sum, magnitude, last second, wheels if any).
func (s *Series) appendBinary(dst []byte) ([]byte, error) {
	dst = wire.AppendBytes(dst, []byte(s.key))
	dst = wire.AppendUvarint(dst, uint64(len(s.labels)))
	dst = append(dst, s.owner)
	n := 0
	for range s.parts {
		n++
	}
	dst = wire.AppendUvarint(dst, uint64(n))
	var err error
	each := func(shard uint8, p *part) {
		if err != nil {
			return
		}
		dst = append(dst, shard)
		dst = wire.AppendUvarint(dst, p.lines.Load())
		dst = binary.LittleEndian.AppendUint64(dst, p.sum.Load())
		dst = binary.LittleEndian.AppendUint64(dst, p.mag.Load())
		dst = wire.AppendVarint(dst, p.last.Load())
		w := p.win.Load()
		dst = wire.AppendBool(dst, w != nil)
		if w != nil {
			dst, err = w.AppendBinary(dst)
		}
	}
	each(s.owner, &s.own)
	if o := s.others.Load(); o != nil {
		for i := range o {
			if p := o[i].Load(); p != nil {
				each(uint8(i), &p.part)
			}
		}
	}
	return dst, err
}

// Restored says what Restore took from a snapshot.
type Restored struct {
	// Rules and Series are the rules restored and their series.
	Rules, Series int
	// Skipped holds why each rule of the snapshot was not restored: none of the Set's
	// rules has its name and fingerprint (a rule changed or removed, which starts empty as
	// at a reload), or its series did not decode with the rule's layout.
	Skipped []error
	// Processing is the newest processing second the restored parts were last active at
	// (of a snapshot that does not record its cut's, those that have wheels only), or, of
	// processing-time rules, written at (math.MinInt64 when none was restored): the
	// processing clock must not start behind it, or those series
	// would read their windows at that second until the clock caught up, leaving out of
	// the shorter ones the lines placed behind it (and, by the longest window, read
	// nothing at all), and the label sets active before the restart would be newer than
	// those active after.
	Processing int64
	// Wall is the newest wall-clock second the restored series of event-time rules were
	// added at (math.MinInt64 when none was restored): a start whose wall clock is behind
	// it (a node without a clock of its own, booted in the past) would read their windows
	// at a second behind their lines, and by the longest window read nothing at all.
	Wall int64
}

// ErrNoSuchRule is why a rule of a snapshot is skipped when the Set has no rule of its
// name and fingerprint: it was changed or removed while the exporter was down.
var ErrNoSuchRule = errors.New("no rule of this name and definition")

// ErrMaxBytes is why a rule of a snapshot is skipped when its series would take the
// memory of the series past --series.max-bytes (SetOptions.MaxBytes), lowered since.
var ErrMaxBytes = errors.New("its series would pass the memory bound (--series.max-bytes)")

// Restore puts the state a snapshot of Encode holds into s, which must be new: made by
// NewSetWith without a previous Set, before any sink writes to it. Each rule of the
// snapshot goes to the rule of s with its name and fingerprint, whole or not at all; an
// error is returned only for a snapshot whose Set section or cut section does not decode,
// and then s is unchanged.
func (s *Set) Restore(snap *storage.Snapshot) (Restored, error) {
	res := Restored{Processing: math.MinInt64, Wall: math.MinInt64}
	sec, ok := snap.Section(sectionSet)
	if !ok {
		return res, fmt.Errorf("%w: no %q section", storage.ErrCorrupt, sectionSet)
	}
	oldest := int64(math.MaxInt64)
	for rec := range sec.Records() {
		r := wire.NewReader(rec)
		if oldest = r.Varint(); r.Err() == nil && oldest != math.MaxInt64 && !inRange(oldest) {
			r.Failf("oldest line at second %d", oldest)
		}
		if err := r.Done(); err != nil {
			return res, err
		}
	}
	cut, bound, err := decodeCut(snap)
	if err != nil {
		return res, err
	}
	// A Set at its bound holds more than it (the overflow series, made at the bound, and
	// what the series admitted before grew by): a snapshot of a Set whose bound was as
	// high is restored whole, as is one that does not record it (an earlier build's);
	// under a bound lowered since, the rules are restored while they fit.
	most := s.mem.max.Load()
	if bound < 0 || bound > 0 && most >= bound {
		most = 0
	}
	// A kept counter of a snapshot that does not record its cut has no wheels to bound its
	// activity by (decodeSeries): the time the snapshot was written does, about its cut's
	// processing second unless processing time ran ahead of the wall clock.
	written := int64(noCut)
	if cut == noCut && !snap.Written.IsZero() {
		written = snap.Written.Unix()
	}
	byName := make(map[string]*store, len(s.rules))
	for _, r := range s.rules {
		byName[r.rule.Name+"\x00"+r.rule.Fingerprint] = r.store
	}
	for _, sec := range snap.Sections {
		if sec.Name != sectionRule {
			continue
		}
		n, processing, wall, err := restoreRule(sec, byName, cut, written, most)
		if err != nil {
			res.Skipped = append(res.Skipped, err)
			continue
		}
		res.Rules++
		res.Series += n
		res.Processing = max(res.Processing, processing)
		res.Wall = max(res.Wall, wall)
	}
	s.oldest.Store(min(s.oldest.Load(), oldest))
	return res, nil
}

// decodeCut returns the processing second of the snapshot's cut, or noCut when it does
// not record it (an earlier build's), and the memory bound of the Set written (0 none),
// or -1 when it does not record it.
func decodeCut(snap *storage.Snapshot) (int64, int64, error) {
	sec, ok := snap.Section(sectionCut)
	if !ok {
		return noCut, -1, nil
	}
	cut, bound, n := int64(noCut), int64(-1), 0
	for rec := range sec.Records() {
		r := wire.NewReader(rec)
		// A later build may add fields after the second: an earlier one reads its own.
		if cut = r.Varint(); r.Err() == nil && !inRange(cut) {
			r.Failf("cut at second %d", cut)
		}
		if err := r.Err(); err != nil {
			return noCut, -1, err
		}
		// An earlier build wrote the second alone; a bound past int64 is none recorded.
		if b, k := binary.Uvarint(r.Rest()); k > 0 && b <= math.MaxInt64 {
			bound = int64(b)
		}
		n++
	}
	if n != 1 {
		return noCut, -1, fmt.Errorf("%w: %d records in the %q section", storage.ErrCorrupt, n, sectionCut)
	}
	return cut, bound, nil
}

// restoreRule decodes one rule's section whole, then puts its series in its store; it
// returns how many, the newest processing second they hold (Restored.Processing) and the
// newest wall-clock second their wheels were added at, of an event-time rule
// (Restored.Wall).
// cut is the processing second of the snapshot's cut, or noCut; written bounds the
// activity of its kept counters when it is noCut (decodeSeries). most is the memory bound
// the series restored are kept within, 0 none.
func restoreRule(sec storage.Section, byName map[string]*store, cut, written, most int64) (int, int64, int64, error) {
	var st *store
	var series []*Series
	var counts []uint64
	var retired uint64
	var charged int64
	var cost int64 // what install charges for the series decoded, less those they replace
	replaced := map[*Series]bool{}
	for rec := range sec.Records() {
		r := wire.NewReader(rec)
		if st != nil {
			s, err := st.decodeSeries(r, cut, written)
			if err == nil {
				cost += st.restoredBytes(s)
				// A pinned series of its label set gives its place (install), once; no
				// sink writes to the store yet.
				if old := st.series[s.key]; old != nil && !replaced[old] {
					replaced[old] = true
					cost -= st.heldBytes(old)
				}
				// Checked as each series is decoded, so that a snapshot of more than the
				// bound holds (lowered since, or edited) is not decoded whole first.
				if st.settlePending(); most > 0 && st.mem.used.Load()+cost > most {
					err = fmt.Errorf("%w of %d bytes, at series %d", ErrMaxBytes, most, len(series)+1)
				}
			}
			if err != nil {
				// Decoding charged the summaries of the series decoded so far; no sink
				// writes to the store yet, so what it was charged before is exact.
				st.settlePending()
				st.charge(charged - st.used.Load())
				return 0, 0, 0, fmt.Errorf("rule %q: %w", st.name, err)
			}
			series = append(series, s)
			continue
		}
		name, fp := string(r.Prefixed()), string(r.Prefixed())
		layout := r.Uint64()
		if err := r.Err(); err != nil {
			return 0, 0, 0, fmt.Errorf("rule header: %w", err)
		}
		if st = byName[name+"\x00"+fp]; st == nil {
			return 0, 0, 0, fmt.Errorf("rule %q: %w", name, ErrNoSuchRule)
		}
		if layout != st.layout.Fingerprint() {
			return 0, 0, 0, fmt.Errorf("rule %q: %w", name, windows.ErrLayout)
		}
		var err error
		if counts, retired, err = st.headerCounts(r); err != nil {
			return 0, 0, 0, fmt.Errorf("rule %q: %w", name, err)
		}
		// One snapshot section per store: a second one of the same rule is refused.
		delete(byName, name+"\x00"+fp)
		st.settlePending()
		charged = st.used.Load()
	}
	if st == nil {
		return 0, 0, 0, fmt.Errorf("%w: rule section without a header", storage.ErrCorrupt)
	}
	st.install(series, counts, retired)
	// Of a snapshot that does not record its cut, a part without wheels (a kept counter) is
	// left out: an earlier build may have kept it active at the own second of a line years
	// ahead, which only the time of the snapshot's file bounds (decodeSeries), and a copy
	// or a touch of the file sets that anywhere, where it would hold the processing clock.
	processing, wall := int64(math.MinInt64), int64(math.MinInt64)
	for _, s := range series {
		for p := range s.parts {
			w := p.win.Load()
			if w == nil && cut == noCut {
				continue
			}
			processing = max(processing, p.last.Load())
			switch {
			case w != nil && !st.eventTime:
				processing = max(processing, w.Second())
			case w != nil:
				wall = max(wall, w.Second())
			}
		}
	}
	return len(series), processing, wall, nil
}

// restoredBytes is what install charges for s, a series decoded from a snapshot: decoding
// charged the growth of its summaries to the layout's account already.
func (st *store) restoredBytes(s *Series) int64 {
	n := st.frameBytes(s)
	for p := range s.parts {
		if p.win.Load() != nil {
			n += st.wheelBytes
		}
	}
	return n
}

// snapshotDropReasons are the drop reasons every snapshot keeps a counter of: those before
// Negative, the first added since snapshots were written. The parser's reasons are the
// last of a header's counters, in their order, so a snapshot of a version that kept fewer
// holds the first of them.
const snapshotDropReasons = int(event.Negative)

// headerCounts reads the rest of a rule header: its counters, in counters' order, and the
// retired lines. Drop counters a snapshot of an earlier version did not keep start at 0.
func (st *store) headerCounts(r *wire.Reader) ([]uint64, uint64, error) {
	most := len(st.counters())
	least := most - event.NumDropReasons + snapshotDropReasons
	var vs []uint64
	for r.Len() > 0 && len(vs) <= most {
		vs = append(vs, r.Uvarint())
	}
	if err := r.Done(); err != nil {
		return nil, 0, err
	}
	if n := len(vs) - 1; n < least || n > most {
		return nil, 0, r.Failf("%d counters, want %d to %d", n, least, most)
	}
	counts := make([]uint64, most)
	copy(counts, vs[:len(vs)-1])
	return counts, vs[len(vs)-1], nil
}

// decodeSeries reads one series record of the store's rule, of a snapshot whose cut was
// at processing second cut (noCut: not recorded, and then its parts without wheels were
// active no later than second written).
func (st *store) decodeSeries(r *wire.Reader, cut, written int64) (*Series, error) {
	key := string(r.Prefixed())
	nlabels := r.Count(len(key)+1, 0)
	owner := r.Byte()
	nparts := r.Count(MaxShards, 1)
	if r.Err() == nil && int(owner) >= MaxShards {
		r.Failf("shard %d", owner)
	}
	labels := []string{}
	if nlabels > 0 {
		labels = strings.SplitN(key, event.KeySep, nlabels)
		if len(labels) != nlabels || strings.Contains(labels[nlabels-1], event.KeySep) {
			r.Failf("%d label values in a key of %d", nlabels, len(labels))
		}
	}
	s := &Series{seriesHead: seriesHead{key: key, labels: labels, owner: owner}}
	s.own.last.Store(math.MinInt64)
	seen := [MaxShards]bool{}
	for i := range nparts {
		shard := r.Byte()
		switch {
		case r.Err() != nil:
		case int(shard) >= MaxShards || seen[shard] || i == 0 && shard != owner:
			r.Failf("part of shard %d", shard)
		}
		if r.Err() != nil {
			return nil, r.Err()
		}
		seen[shard] = true
		p := &s.own
		if shard != owner {
			if s.others.Load() == nil {
				s.others.Store(new(others))
			}
			far := new(farPart)
			s.others.Load()[shard].Store(far)
			p = &far.part
		}
		p.lines.Store(r.Uvarint())
		sum, mag := r.Uint64(), r.Uint64()
		// admit keeps the sum finite and mag from 0 to bigBudget: else the file was
		// edited, and a scrape would export NaN or an infinity as the _total, or values
		// past the budget be admitted until it is one.
		switch f, m := math.Float64frombits(sum), math.Float64frombits(mag); {
		case r.Err() != nil:
		case math.IsNaN(f) || math.IsInf(f, 0):
			r.Failf("part of shard %d: a sum of %v", shard, f)
		case !(m >= 0 && m <= bigBudget):
			r.Failf("part of shard %d: a magnitude of %v", shard, m)
		}
		p.sum.Store(sum)
		p.mag.Store(mag)
		// No part was active after the cut; an earlier build's snapshot does not say when
		// that was, and its parts are bounded by their wheels below.
		last := r.Varint()
		if r.Err() == nil && last != math.MinInt64 && !inRange(last) {
			r.Failf("part of shard %d: last active at second %d", shard, last)
		}
		p.last.Store(min(last, cut))
		if r.Bool() {
			layout := st.accounts[int(shard)%len(st.accounts)].layout
			w, rest, err := layout.DecodeSeries(r.Rest())
			if err != nil {
				return nil, err
			}
			if t, at := w.Second(), w.LastAdd(); t != math.MinInt64 && !inRange(t) || at != math.MinInt64 && !inRange(at) {
				return nil, r.Failf("part of shard %d: wheels at second %d, last added to at %d", shard, t, at)
			}
			p.win.Store(w)
			*r = *wire.NewReader(rest)
			// A build before the cut was recorded, and an earlier one still, kept the own
			// second of a line from the future as a part's last one: it is taken no later
			// than its wheels were written. Their second is the rule's clock's, for an
			// event-time rule the wall clock's, which is about the processing second its
			// activity is now kept in, unless processing time ran ahead of the wall clock
			// (a restart held it, or the wall clock stepped back while the exporter ran):
			// the part is then taken as active that much earlier.
			if t := w.Second(); cut == noCut && t != math.MinInt64 && p.last.Load() > t {
				p.last.Store(t)
			}
		} else if cut == noCut {
			// A kept counter of such a build may be active at a line's own second years
			// ahead, which kept it for as long as the process ran (nothing reaps a label
			// set active in the future), and was carried on by each snapshot.
			p.last.Store(min(p.last.Load(), written))
		}
	}
	if nparts == 0 {
		r.Failf("series without parts")
	}
	return s, r.Done()
}

// install puts decoded series and counters into a store no sink writes to yet: a
// restored series takes the place of a pinned one of its label set, and is pinned then.
func (st *store) install(series []*Series, counts []uint64, retired uint64) {
	st.lockAll()
	defer st.unlockAll()
	for i, c := range st.counters() {
		c.Store(counts[i])
	}
	for _, s := range series {
		if old := st.series[s.key]; old != nil {
			s.pinned = old.pinned
			st.remove(old)
		}
		st.series[s.key] = s
		if s.key != st.overflowKey {
			st.normal++
		}
		st.charge(st.restoredBytes(s))
	}
	st.retired = retired
	matched := retired + st.lateUnseated.Load()
	for _, s := range st.series {
		matched += s.lines()
	}
	st.matched.Store(matched)
	st.settlePending()
}
