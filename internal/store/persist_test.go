package store_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/parser/event"
	"github.com/logwindow/logwindow_exporter/windows"
	"github.com/logwindow/logwindow_exporter/windows/sketch"
	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// persistRules are rules of every kind a snapshot keeps: counting with labels, value with
// extrema, event-time, label-less (pinned) and with quantile summaries.
func persistRules() []*config.Rule {
	q := storetest.ValueRule("latency", storetest.TenSec, "method")
	q.Fingerprint = "latency"
	q.Aggregations.Quantiles = true
	q.Quantiles = []float64{0.5, 0.99}
	return []*config.Rule{
		storetest.CountRule("requests", storetest.MinFive, "status"),
		storetest.ValueRule("bytes", storetest.TenSec, "method"),
		storetest.EventRule("timed", storetest.OneMin, "status"),
		storetest.CountRule("all", storetest.OneMin),
		q,
	}
}

// persistLines writes n lines from second from on, two sinks in turn so that series have
// parts of two shards, and a budget of 3 label sets so that some fold into overflow.
func persistLines(sinks [2]*store.Sink, from int64, n int) {
	statuses := []string{"200", "404", "500", "503", "301"}
	for i := range n {
		now := from + int64(i/7)
		s := statuses[i%len(statuses)]
		l := []line{
			{rule: 0, labels: []string{s}, now: now},
			{rule: 1, labels: []string{[]string{"GET", "POST"}[i%2]}, now: now, value: float64(i%13) + 0.25},
			{rule: 2, labels: []string{s}, now: now, at: now - int64(i%40)},
			{rule: 3, now: now},
			{rule: 4, labels: []string{"GET"}, now: now, value: float64(i%97) + 1},
		}
		write(sinks[i%2], l...)
	}
}

// persisted returns a Set of persistRules, and its config, that 50 lines were written
// to by one sink.
func persisted() ([]*config.Rule, *config.Config, *store.Set) {
	rules := persistRules()
	cfg := storetest.Config(10, rules...)
	set := storetest.Must(store.NewSetWith(cfg, nil, store.SetOptions{}))
	k := set.NewSink()
	persistLines([2]*store.Sink{k, k}, start, 50)
	return rules, cfg, set
}

// cut is the processing second of the cut of the snapshots these tests write: after every
// line they count.
const cut = 1_000_000

// encodeSet writes set's snapshot into a directory and reads it back, as a restart does;
// with ahead, it is encoded ahead, then between, which writes to set, runs, then the
// snapshot is taken with what was encoded ahead.
func encodeSet(t *testing.T, set *store.Set, ahead bool, between func()) *storage.Snapshot {
	t.Helper()
	sp := spill(t)
	var prev *store.Encoded
	if ahead {
		prev = storetest.Must(set.EncodeAhead(sp))
	}
	between()
	enc, err := set.Encode(sp, prev)
	if err != nil {
		t.Fatal(err)
	}
	return written(t, enc)
}

// spill is a storage.Spill of the test's, closed at its end.
func spill(t testing.TB) *storage.Spill {
	t.Helper()
	sp, err := storage.NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	return sp
}

// quantilesOf reads the quantile sketches of every series of rule i at now.
func quantilesOf(set *store.Set, i int, now int64) map[string][]float64 {
	r := set.Rule(i)
	all := r.Snapshot(nil)
	out := map[string][]float64{}
	var more []windows.Summary
	for _, s := range all {
		sums := r.Layout().NewSummaries()
		r.ReadSummaries(s, now, sums, &more)
		var qs []float64
		for _, sum := range sums {
			if q, ok := sum.(*sketch.Quantiles); ok {
				qs = append(qs, q.Quantile(0.5), q.Quantile(0.99))
			}
		}
		out[fmt.Sprint(s.Labels())] = qs
	}
	return out
}

// TestRestoreGoesOnAsIfNeverStopped: a Set restored from a snapshot and fed the same lines
// as the Set it was taken of reads the same, every series, window, total, drop counter
// and quantile, and is charged the same memory; whether the snapshot was encoded at once
// or ahead, with lines written to some series and new series made in between.
func TestRestoreGoesOnAsIfNeverStopped(t *testing.T) {
	for _, ahead := range []bool{false, true} {
		t.Run(fmt.Sprintf("ahead=%v", ahead), func(t *testing.T) {
			cfg := storetest.Config(3, persistRules()...)
			opts := store.SetOptions{Shards: 2}
			kept := storetest.Must(store.NewSetWith(cfg, nil, opts))
			keptSinks := [2]*store.Sink{kept.NewSink(), kept.NewSink()}
			persistLines(keptSinks, start, 500)
			snap := encodeSet(t, kept, ahead, func() {
				write(keptSinks[0], line{rule: 0, labels: []string{"200"}, now: start + 80}, line{rule: 2, labels: []string{"201"}, now: start + 80, at: start + 75})
			})

			restored := storetest.Must(store.NewSetWith(cfg, nil, opts))
			res, err := restored.Restore(snap)
			if err != nil || res.Rules != len(cfg.Rules) || len(res.Skipped) != 0 {
				t.Fatalf("Restore: %+v, %v", res, err)
			}
			restoredSinks := [2]*store.Sink{restored.NewSink(), restored.NewSink()}
			persistLines(keptSinks, start+200, 300)
			persistLines(restoredSinks, start+200, 300)
			if got, want := restored.MemoryUsed(), kept.MemoryUsed(); got != want {
				t.Errorf("memory used %d, the Set that never stopped %d", got, want)
			}
			if got, want := restored.Oldest(), kept.Oldest(); got != want {
				t.Errorf("oldest %d, want %d", got, want)
			}
			for _, now := range []int64{start + 250, start + 400} {
				for i, r := range cfg.Rules {
					t.Run(fmt.Sprintf("%s at %d", r.Name, now), func(t *testing.T) {
						got, want := read(restored, i, now), read(kept, i, now)
						if d := diff(got.series, want.series); d != "" {
							t.Error(d)
						}
						if got.matched != want.matched || got.held != want.held || got.drops != want.drops {
							t.Errorf("matched %d, held %d, drops %+v; want %d, %d, %+v", got.matched, got.held, got.drops, want.matched, want.held, want.drops)
						}
						if got, want := fmt.Sprint(quantilesOf(restored, i, now)), fmt.Sprint(quantilesOf(kept, i, now)); got != want {
							t.Errorf("quantiles %s, want %s", got, want)
						}
					})
				}
			}
		})
	}
}

// TestRestoreSkipsChangedRules: a rule whose definition changed, or that is gone, starts
// empty as at a reload, and the rest is restored.
func TestRestoreSkipsChangedRules(t *testing.T) {
	rules, _, old := persisted()
	snap := encodeSet(t, old, false, func() {})

	changed := *rules[0]
	changed.Fingerprint += "'"
	cfg := storetest.Config(10, &changed, rules[1])
	set := storetest.Must(store.NewSetWith(cfg, nil, store.SetOptions{}))
	res, err := set.Restore(snap)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rules != 1 || len(res.Skipped) != len(rules)-1 {
		t.Fatalf("restored %d rules, skipped %v", res.Rules, res.Skipped)
	}
	for _, err := range res.Skipped {
		if !errors.Is(err, store.ErrNoSuchRule) {
			t.Errorf("skipped for %v, want %v", err, store.ErrNoSuchRule)
		}
	}
	if v := read(set, 0, start+10); len(v.series) != 0 {
		t.Errorf("the changed rule has series %v", v.series)
	}
	if d := diff(read(set, 1, start+10).series, read(old, 1, start+10).series); d != "" {
		t.Errorf("the kept rule:%s", d)
	}
}

// restoreWritten writes a snapshot by fill, reads it back and restores it into a new Set
// of cfg, failing the test on any error but those Restore reports as skipped.
func restoreWritten(t *testing.T, cfg *config.Config, fill func(w *storage.Writer) error, bound ...int64) (*store.Set, store.Restored) {
	t.Helper()
	set, res, err := restoreOf(t, cfg, fill, bound...)
	if err != nil {
		t.Fatal(err)
	}
	return set, res
}

// restoreOf is restoreWritten of a snapshot that Restore may refuse, with its error. A
// bound given is the new Set's memory bound.
func restoreOf(t *testing.T, cfg *config.Config, fill func(w *storage.Writer) error, bound ...int64) (*store.Set, store.Restored, error) {
	t.Helper()
	dir := t.TempDir()
	if err := storage.Write(dir, fill); err != nil {
		t.Fatal(err)
	}
	var opts store.SetOptions
	for _, b := range bound {
		opts.MaxBytes = b
	}
	set := storetest.Must(store.NewSetWith(cfg, nil, opts))
	res, err := set.Restore(storetest.Must(storage.Read(dir, 1<<30)))
	return set, res, err
}

// TestRestoreSkipsUndecodableRule: a rule whose series do not decode is skipped whole and
// counted, what its series decoded so far were charged is given back, and the other rules
// are restored.
func TestRestoreSkipsUndecodableRule(t *testing.T) {
	const spoil = 4 // the rule with summaries, which decoding charges
	rules, cfg, old := persisted()
	snap := encodeSet(t, old, false, func() {})
	// The same snapshot with a record that is no series after the spoilt rule's.
	set, res := restoreWritten(t, cfg, func(w *storage.Writer) error {
		rules := 0
		for _, sec := range snap.Sections {
			if err := storetest.CopySection(w, sec); err != nil {
				return err
			}
			if sec.Name == "rule" {
				if rules++; rules == spoil+1 {
					if err := w.Record([]byte{1, 'x', 0, 0, 1, 0}); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if res.Rules != len(rules)-1 || len(res.Skipped) != 1 || !errors.Is(res.Skipped[0], storage.ErrCorrupt) {
		t.Fatalf("restored %d rules, skipped %v; want all but one, skipped as corrupt", res.Rules, res.Skipped)
	}
	if v := read(set, spoil, start+10); len(v.series) != 0 || v.matched != 0 {
		t.Errorf("the undecodable rule has series %v, %d lines", v.series, v.matched)
	}
	if d := diff(read(set, 0, start+10).series, read(old, 0, start+10).series); d != "" {
		t.Errorf("another rule:%s", d)
	}
	// What the skipped rule's decoded series were charged is given back.
	unspoilt := storetest.Must(store.NewSetWith(cfg, nil, store.SetOptions{}))
	if _, err := unspoilt.Restore(snap); err != nil {
		t.Fatal(err)
	}
	fresh := storetest.Must(store.NewSetWith(storetest.Config(10, rules[spoil]), nil, store.SetOptions{}))
	restoredOne := storetest.Must(store.NewSetWith(storetest.Config(10, rules[spoil]), nil, store.SetOptions{}))
	if _, err := restoredOne.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if got, want := set.MemoryUsed(), unspoilt.MemoryUsed()-restoredOne.MemoryUsed()+fresh.MemoryUsed(); got != want {
		t.Errorf("memory used %d, want %d", got, want)
	}
}

// TestRestoreSkipsMalformedRuleHeader: a rule section whose header record is cut short
// (a snapshot of another build, or a file edited and its checksums made again) is
// skipped as corrupt, and the other rules restored, rather than crash the start.
func TestRestoreSkipsMalformedRuleHeader(t *testing.T) {
	rules, cfg, old := persisted()
	snap := encodeSet(t, old, false, func() {})
	for _, tc := range []struct {
		name   string
		header []byte
	}{
		{"empty", []byte{}},
		{"name cut short", []byte{5, 'r', 'e'}},
		{"no fingerprint", []byte{8, 'r', 'e', 'q', 'u', 'e', 's', 't', 's'}},
		{"unknown rule, layout cut short", []byte{1, 'x', 1, 'y', 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, res := restoreWritten(t, cfg, func(w *storage.Writer) error {
				for _, sec := range snap.Sections {
					if err := storetest.CopySection(w, sec); err != nil {
						return err
					}
				}
				if err := w.Section("rule"); err != nil {
					return err
				}
				return w.Record(tc.header)
			})
			if res.Rules != len(rules) || len(res.Skipped) != 1 || !errors.Is(res.Skipped[0], storage.ErrCorrupt) {
				t.Fatalf("restored %d rules, skipped %v; want all, one section skipped as corrupt", res.Rules, res.Skipped)
			}
		})
	}
}

// FuzzRestore: a rule section of any header and series record, its checksums right (a
// snapshot of another build, or one edited), is restored or skipped, never a crash, and
// what is restored reads as a scrape reads it. The snapshot has a cut section of cuts%3
// records of cutRec (none: an earlier build's, which records no cut): one record that
// opens with a varint (what a later build adds after it is left) is restored from, any
// other refused whole, leaving the Set as new; of the event-time rule, restored activity
// is no later than the cut. A cut before 1970 or after LatestSecond is refused too, and
// processing time is restored at no such second. The Set restored into has a memory bound
// of cuts/3 (none, room for no series, or for about half the snapshot's): a rule that
// would pass it is skipped, and a snapshot whose cut records it was written without one
// is restored within it. Seeds: the records of a snapshot, with its cut, without it, with
// more after it, corrupt, twice, near the end of int64, at LatestSecond, a series last
// active near the end of int64, one whose sum is NaN, and cuts written without a bound,
// with a high one and none recorded, under each bound.
func FuzzRestore(f *testing.F) {
	rules, cfg, old := persisted()
	dir := f.TempDir()
	enc := storetest.Must(old.Encode(spill(f), nil))
	if err := storage.Write(dir, func(w *storage.Writer) error { return enc.Write(w, cut) }); err != nil {
		f.Fatal(err)
	}
	snap := storetest.Must(storage.Read(dir, 1<<30))
	set, _ := snap.Section("set")
	cutRec := wire.AppendVarint(nil, cut)
	for _, sec := range snap.Sections {
		if sec.Name != "rule" {
			continue
		}
		var recs [][]byte
		for rec := range sec.Records() {
			recs = append(recs, rec)
		}
		if len(recs) < 2 {
			continue
		}
		f.Add(recs[0], recs[1], cutRec, uint8(1))
		f.Add(recs[0], recs[1], cutRec, uint8(0))
		f.Add(recs[0], recs[1], wire.AppendVarint(nil, math.MinInt64), uint8(1))
		f.Add(recs[0], recs[1], wire.AppendVarint(nil, math.MaxInt64-1), uint8(1))
		f.Add(recs[0], recs[1], wire.AppendVarint(nil, store.LatestSecond), uint8(1))
		if last, n, _, _, ok := secondsAt(recs[1]); ok {
			f.Add(recs[0], withVarint(recs[1], last, n, math.MaxInt64-1), cutRec, uint8(1))
			f.Add(recs[0], withVarint(recs[1], last, n, math.MaxInt64-1), cutRec, uint8(0))
		}
		f.Add(recs[0], recs[1], append(cutRec, 0), uint8(1))
		f.Add(recs[0], recs[1], []byte{0x80}, uint8(1))
		f.Add(recs[0], recs[1], cutRec, uint8(2))
		f.Add(recs[0], recs[1], cutRec, uint8(1+3))
		f.Add(recs[0], recs[1], wire.AppendUvarint(bytes.Clone(cutRec), 0), uint8(1+3))
		f.Add(recs[0], recs[1], wire.AppendUvarint(bytes.Clone(cutRec), 0), uint8(1+6))
		f.Add(recs[0], recs[1], wire.AppendUvarint(bytes.Clone(cutRec), 1<<40), uint8(1+6))
		if nan := withNaNSum(recs[1]); nan != nil {
			f.Add(recs[0], nan, cutRec, uint8(1))
		}
	}
	f.Add([]byte{}, []byte{}, []byte{}, uint8(1))
	empty := storetest.Must(store.NewSetWith(cfg, nil, store.SetOptions{}))
	bounds := []int64{0, empty.MemoryUsed(), (empty.MemoryUsed() + old.MemoryUsed()) / 2}
	f.Fuzz(func(t *testing.T, head, series, cutRec []byte, cuts uint8) {
		bound := bounds[int(cuts/3)%len(bounds)]
		cuts %= 3
		fresh, res, err := restoreOf(t, cfg, func(w *storage.Writer) error {
			if err := storetest.CopySection(w, set); err != nil {
				return err
			}
			if cuts > 0 {
				if err := w.Section("cut"); err != nil {
					return err
				}
				for range cuts {
					if err := w.Record(cutRec); err != nil {
						return err
					}
				}
			}
			if err := w.Section("rule"); err != nil {
				return err
			}
			if err := w.Record(head); err != nil {
				return err
			}
			return w.Record(series)
		}, bound)
		r := wire.NewReader(cutRec)
		at := r.Varint()
		if cutOK := cuts == 0 || cuts == 1 && r.Err() == nil && at >= 0 && at <= store.LatestSecond; !cutOK {
			if err == nil || !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("%d cut records of %x: restored (%v), want refused as corrupt", cuts, cutRec, err)
			}
		} else if err != nil {
			t.Fatalf("%d cut records of %x: %v", cuts, cutRec, err)
		}
		// The one rule section is restored or skipped: as no rule of the Set, or as series
		// that do not decode with the rule's layout.
		if err == nil && res.Rules+len(res.Skipped) != 1 {
			t.Fatalf("%d rules restored, %v skipped, of one", res.Rules, res.Skipped)
		}
		for _, err := range res.Skipped {
			if !errors.Is(err, storage.ErrCorrupt) && !errors.Is(err, store.ErrNoSuchRule) && !errors.Is(err, windows.ErrLayout) && !errors.Is(err, store.ErrMaxBytes) {
				t.Fatalf("skipped as %v: not a reason Restore gives", err)
			}
		}
		// Of a snapshot that records it was written without a bound, what is restored
		// under one keeps within it.
		if written := r.Uvarint(); cuts == 1 && r.Err() == nil && written == 0 && bound > 0 && fresh.MemoryUsed() > max(bound, empty.MemoryUsed()) {
			t.Fatalf("memory used %d, over the bound %d", fresh.MemoryUsed(), bound)
		}
		// Processing time is held at no second the clocks do not reach.
		if res.Processing != math.MinInt64 && (res.Processing < 0 || res.Processing > store.LatestSecond) {
			t.Fatalf("processing restored at second %d", res.Processing)
		}
		if name := wire.NewReader(head).Prefixed(); cuts == 1 && res.Rules == 1 && string(name) == "timed" && res.Processing > at {
			t.Fatalf("event-time rule restored active at %d, after the cut at %d", res.Processing, at)
		}
		for i := range rules {
			got := read(fresh, i, start+10)
			quantilesOf(fresh, i, start+10)
			// Whole or not at all: a skipped rule leaves the Set as new.
			if want := read(empty, i, start+10); res.Rules == 0 && !reflect.DeepEqual(got, want) {
				t.Fatalf("rule %d skipped (%v, %v) reads %+v, a new Set %+v", i, res.Skipped, err, got, want)
			}
		}
	})
}

// withNaNSum is series, a series record, with its first part's sum NaN, or nil when it
// does not read as one.
func withNaNSum(series []byte) []byte {
	r := wire.NewReader(series)
	r.Prefixed()
	r.Uvarint()
	r.Byte()
	r.Uvarint()
	r.Byte()
	r.Uvarint()
	if r.Err() != nil || r.Len() < 8 {
		return nil
	}
	at := len(series) - r.Len()
	nan := bytes.Clone(series)
	binary.LittleEndian.PutUint64(nan[at:], math.Float64bits(math.NaN()))
	return nan
}

// TestRestoreSnapshotOfFewerDropReasons: a snapshot written before the drop reason
// negative keeps one drop counter fewer in each rule's header. It is restored whole, each
// drop counter as it was and negative at 0, rather than every rule skipped as corrupt (an
// upgrade would have lost every window and counter); a header of fewer counters still
// than that, or of more than this version keeps, is refused as corrupt.
func TestRestoreSnapshotOfFewerDropReasons(t *testing.T) {
	rules, cfg, old := persisted()
	k := old.NewSink()
	for i := range rules {
		for range i + 1 {
			k.Drop(i, event.BadNumber)
		}
		k.Drop(i, event.BadTimestamp)
	}
	snap := encodeSet(t, old, false, func() {})
	for _, tc := range []struct {
		name  string
		drops int // drop counters the header keeps
		ok    bool
	}{
		{"every reason", event.NumDropReasons, true},
		{"before negative", int(event.Negative), true},
		{"fewer than any version kept", int(event.Negative) - 1, false},
		{"one more than kept", event.NumDropReasons + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, res := restoreWritten(t, cfg, func(w *storage.Writer) error {
				for _, sec := range snap.Sections {
					if sec.Name != "rule" {
						if err := storetest.CopySection(w, sec); err != nil {
							return err
						}
						continue
					}
					if err := w.Section(sec.Name); err != nil {
						return err
					}
					head := true
					for rec := range sec.Records() {
						if head {
							rec, head = headerCounters(t, rec, tc.drops), false
						}
						if err := w.Record(rec); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if !tc.ok {
				if res.Rules != 0 || len(res.Skipped) != len(rules) || !errors.Is(res.Skipped[0], storage.ErrCorrupt) {
					t.Fatalf("restored %d rules, skipped %v; want every rule skipped as corrupt", res.Rules, res.Skipped)
				}
				return
			}
			if res.Rules != len(rules) || len(res.Skipped) != 0 {
				t.Fatalf("restored %d rules, skipped %v; want all %d", res.Rules, res.Skipped, len(rules))
			}
			for i := range rules {
				got, want := read(set, i, start+10), read(old, i, start+10)
				if got.drops != want.drops || got.drops.Parser[event.BadNumber] != uint64(i+1) {
					t.Errorf("rule %d: drops %+v, want %+v", i, got.drops, want.drops)
				}
				if d := diff(got.series, want.series); d != "" {
					t.Errorf("rule %d:%s", i, d)
				}
			}
		})
	}
}

// TestEncodeReadByEarlierBuild: a rule no line of which was dropped as negative is written
// with the header of the build before that drop reason, whose drop counters it keeps
// (that build refuses a header of more, and with it every window of the rule, as
// corrupt): a downgrade to it restores the rule. A rule with such drops keeps them all,
// and is restored with them. Rule 0 drops nothing: its zeros are kept but negative's.
func TestEncodeReadByEarlierBuild(t *testing.T) {
	rules, cfg, old := persisted()
	k := old.NewSink()
	for i := range rules[1:] {
		k.Drop(i+1, event.BadTimestamp)
	}
	k.Drop(1, event.Negative)
	snap := encodeSet(t, old, false, func() {})
	n := 0
	for _, sec := range snap.Sections {
		if sec.Name != "rule" {
			continue
		}
		for rec := range sec.Records() {
			r := wire.NewReader(rec)
			r.Prefixed()
			r.Prefixed()
			r.Uint64()
			counts := 0
			for r.Len() > 0 {
				r.Uvarint()
				counts++
			}
			want := storeCounters + int(event.Negative) + 1
			if n == 1 {
				want = storeCounters + event.NumDropReasons + 1
			}
			if r.Err() != nil || counts != want {
				t.Errorf("rule %d: header of %d counters (%v), want %d", n, counts, r.Err(), want)
			}
			break
		}
		n++
	}
	if n != len(rules) {
		t.Fatalf("%d rule sections, want %d", n, len(rules))
	}
	set, res := restoreWritten(t, cfg, func(w *storage.Writer) error {
		for _, sec := range snap.Sections {
			if err := storetest.CopySection(w, sec); err != nil {
				return err
			}
		}
		return nil
	})
	if res.Rules != len(rules) || len(res.Skipped) != 0 {
		t.Fatalf("restored %d rules, skipped %v; want all %d", res.Rules, res.Skipped, len(rules))
	}
	for i := range rules {
		if got, want := read(set, i, start+10).drops, read(old, i, start+10).drops; got != want {
			t.Errorf("rule %d: drops %+v, want %+v", i, got, want)
		}
	}
}

// TestRestoreProcessing: Restore says the newest processing second its series were last
// active at, or, of a processing-time rule, written at (its wheels' second), and not the
// wheels' second of an event-time rule, which is the wall clock's: the processing clock of
// the restart starts no earlier (see the pipeline), and a restored counter goes with the
// counter TTL after its last line on that clock, for processing-time and event-time rules
// alike.
func TestRestoreProcessing(t *testing.T) {
	for _, rule := range []*config.Rule{storetest.CountRule("r", storetest.OneMin, "k"), storetest.EventRule("r", storetest.OneMin, "k")} {
		t.Run(fmt.Sprintf("event time %v", rule.Timestamp != nil), func(t *testing.T) {
			cfg := storetest.TTLConfig(10, 2*time.Minute, rule)
			set := newSet(t, cfg, nil)
			// The wall clock is ahead of the processing one: the event-time wheels are at
			// its second, which is no processing second.
			own := func(at int64) int64 {
				if rule.Timestamp == nil {
					return 0 // a line of a processing-time rule has no time of its own
				}
				return at
			}
			write(set.NewSink(), line{labels: []string{"a"}, now: 87000, wall: 87400, at: own(87400)})
			write(set.NewSink(), line{labels: []string{"b"}, now: 87300, wall: 87500, at: own(87500)})
			snap := encodeSet(t, set, false, func() {})
			restored := newSet(t, cfg, nil)
			res, err := restored.Restore(snap)
			if err != nil {
				t.Fatal(err)
			}
			if res.Processing != 87300 {
				t.Errorf("restored processing second %d, want 87300", res.Processing)
			}
			for _, tc := range []struct {
				active int64
				want   map[string]series
			}{
				{87120, map[string]series{"a": {total: 1}, "b": {total: 1}}},
				{87121, map[string]series{"b": {total: 1}}},
				{87421, map[string]series{}},
			} {
				if d := diff(readAt(restored, 0, 87500+300, tc.active).series, tc.want); d != "" {
					t.Errorf("at %d: series:%s", tc.active, d)
				}
			}
		})
	}
}

// storeCounters are the counters of a rule header before its drop counters.
const storeCounters = 6

// headerCounters returns a rule header record with its drop counters cut or padded with
// zeros to drops of them, as a version that kept that many drop reasons wrote it: name,
// fingerprint, layout, the counters, the retired lines.
func headerCounters(t *testing.T, rec []byte, drops int) []byte {
	t.Helper()
	r := wire.NewReader(rec)
	name, fp, layout := r.Prefixed(), r.Prefixed(), r.Uint64()
	var counts []uint64
	for r.Len() > 0 {
		counts = append(counts, r.Uvarint())
	}
	if err := r.Err(); err != nil || len(counts) < 2 {
		t.Fatalf("header %q: %v", rec, err)
	}
	retired := counts[len(counts)-1]
	counts = counts[:len(counts)-1]
	counts = append(counts, make([]uint64, max(storeCounters+drops-len(counts), 0))...)[:storeCounters+drops]
	out := wire.AppendBytes(nil, name)
	out = wire.AppendBytes(out, fp)
	out = binary.LittleEndian.AppendUint64(out, layout)
	for _, c := range append(counts, retired) {
		out = wire.AppendUvarint(out, c)
	}
	return out
}

// TestRestoreSkipsNonFiniteSums: a series whose _total reads back as
// NaN or an infinity, which the store's admission of values never lets a sum become
// (a file edited and its checksums made again), has its rule skipped as corrupt rather
// than exported with it; the other rules are restored.
func TestRestoreSkipsNonFiniteSums(t *testing.T) {
	const spoil = 1 // the value rule without summaries
	_, cfg, old := persisted()
	snap := encodeSet(t, old, false, func() {})
	all := old.Rule(spoil).Snapshot(nil)
	if len(all) == 0 {
		t.Fatal("the value rule has no series")
	}
	total := binary.LittleEndian.AppendUint64(nil, math.Float64bits(old.Rule(spoil).Total(all[0])))
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		t.Run(fmt.Sprint(bad), func(t *testing.T) {
			set, res, replaced := restoreReplaced(t, cfg, snap, total, binary.LittleEndian.AppendUint64(nil, math.Float64bits(bad)))
			if replaced != 1 {
				t.Fatalf("the total's bits found %d times in the snapshot, want once", replaced)
			}
			if len(res.Skipped) != 1 || !errors.Is(res.Skipped[0], storage.ErrCorrupt) {
				t.Fatalf("restored %d rules, skipped %v; want the spoilt one skipped as corrupt", res.Rules, res.Skipped)
			}
			for i := range set.NumRules() {
				for key, s := range read(set, i, start+10).series {
					if math.IsNaN(s.total) || math.IsInf(s.total, 0) {
						t.Errorf("rule %d series %q: _total %v", i, key, s.total)
					}
				}
			}
		})
	}
}

// TestRestoreSkipsImpossibleMagnitude: the magnitude of a part's large values, which
// bounds what it admits so that no sum overflows, is never negative nor over its budget:
// one that is (a file edited and its checksums made again) would admit values past it,
// and is refused with its rule, as a non-finite sum is.
func TestRestoreSkipsImpossibleMagnitude(t *testing.T) {
	const spoil = 1 // the value rule without summaries
	_, cfg, old := persisted()
	snap := encodeSet(t, old, false, func() {})
	all := old.Rule(spoil).Snapshot(nil)
	if len(all) == 0 {
		t.Fatal("the value rule has no series")
	}
	// The part's sum (its _total) and the magnitude that follows it, none as no value
	// was large.
	total := binary.LittleEndian.AppendUint64(nil, math.Float64bits(old.Rule(spoil).Total(all[0])))
	was := binary.LittleEndian.AppendUint64(total, 0)
	for _, bad := range []float64{-1, 0x1p1020, math.MaxFloat64} {
		t.Run(fmt.Sprint(bad), func(t *testing.T) {
			_, res, replaced := restoreReplaced(t, cfg, snap, was, binary.LittleEndian.AppendUint64(slices.Clone(total), math.Float64bits(bad)))
			if replaced != 1 {
				t.Fatalf("the total and magnitude found %d times in the snapshot, want once", replaced)
			}
			if len(res.Skipped) != 1 || !errors.Is(res.Skipped[0], storage.ErrCorrupt) {
				t.Fatalf("restored %d rules, skipped %v; want the spoilt one skipped as corrupt", res.Rules, res.Skipped)
			}
		})
	}
}

// restoreReplaced restores snap, written again with every from in its records replaced
// by to (an edit whose checksums are made again), and says how many it replaced.
func restoreReplaced(t *testing.T, cfg *config.Config, snap *storage.Snapshot, from, to []byte) (*store.Set, store.Restored, int) {
	t.Helper()
	replaced := 0
	set, res := restoreWritten(t, cfg, func(w *storage.Writer) error {
		for _, sec := range snap.Sections {
			if err := w.Section(sec.Name); err != nil {
				return err
			}
			for rec := range sec.Records() {
				if n := bytes.Count(rec, from); n > 0 {
					replaced += n
					rec = bytes.ReplaceAll(rec, from, to)
				}
				if err := w.Record(rec); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return set, res, replaced
}

// TestRestoreWithinMaxBytes: a snapshot restored under a lower --series.max-bytes than it
// was written with (the bound, or the container's memory, lowered while the exporter was
// down) restores the rules that fit and skips the others, which start empty: the restore
// installed every series whatever the bound, and a container given less memory was killed
// at each start by the same snapshot. The label-less rule alone, last checked, is restored
// at the bound it fits exactly only if its pinned series' place is taken off the charge.
func TestRestoreWithinMaxBytes(t *testing.T) {
	rules, cfg, old := persisted()
	labelless := storetest.Config(10, persistRules()[3])
	alone := storetest.Must(store.NewSetWith(labelless, nil, store.SetOptions{}))
	for i := range 50 {
		write(alone.NewSink(), line{rule: 0, now: start + int64(i/7)})
	}
	for _, written := range []struct {
		name  string
		cfg   *config.Config
		set   *store.Set
		rules int
	}{
		{"every kind", cfg, old, len(rules)},
		{"the label-less rule alone", labelless, alone, 1},
	} {
		t.Run(written.name, func(t *testing.T) {
			restoreWithin(t, written.cfg, written.set, written.rules)
		})
	}
}

// restoreWithin restores a snapshot of old, a Set of cfg and of rules rules without a
// bound, under bounds from none to one that leaves room for no series.
func restoreWithin(t *testing.T, cfg *config.Config, old *store.Set, rules int) {
	t.Helper()
	snap := encodeSet(t, old, false, func() {})
	full := old.MemoryUsed()
	empty := storetest.Must(store.NewSetWith(cfg, nil, store.SetOptions{})).MemoryUsed()
	for _, tc := range []struct {
		name    string
		bound   int64
		skipped bool // some rule is skipped
	}{
		{"no bound", 0, false},
		{"a bound it fits exactly", full, false},
		{"a bound just below", full - 1, true},
		{"half of it", (full + empty) / 2, true},
		{"room for no series", empty, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := storetest.Must(store.NewSetWith(cfg, nil, store.SetOptions{MaxBytes: tc.bound}))
			res, err := set.Restore(snap)
			if err != nil {
				t.Fatal(err)
			}
			if res.Rules+len(res.Skipped) != rules || (len(res.Skipped) > 0) != tc.skipped {
				t.Fatalf("restored %d rules, skipped %v", res.Rules, res.Skipped)
			}
			for _, err := range res.Skipped {
				if !errors.Is(err, store.ErrMaxBytes) {
					t.Errorf("skipped for %v, want %v", err, store.ErrMaxBytes)
				}
			}
			if used := set.MemoryUsed(); tc.bound > 0 && used > tc.bound {
				t.Errorf("memory used %d, over the bound %d", used, tc.bound)
			}
			if !tc.skipped && set.MemoryUsed() != full {
				t.Errorf("memory used %d, the Set written %d", set.MemoryUsed(), full)
			}
		})
	}
}

// TestRestoreMaxBytesRepeatedSeries: a rule section that repeats the series of a pinned
// label set (an edited snapshot) is charged each copy it decodes: the place of the pinned
// series is given once, and the copies, held until the rule is installed, are bounded.
// The bound is checked as each is decoded: the restore allocates about what one of the
// snapshot as written does, not what decoding the thousand copies would.
func TestRestoreMaxBytesRepeatedSeries(t *testing.T) {
	const pinned = 3 // the rule without labels
	_, cfg, old := persisted()
	snap := encodeSet(t, old, false, func() {})
	bound := old.MemoryUsed()
	rules := 0
	edited := readBack(t, func(w *storage.Writer) error {
		for _, sec := range snap.Sections {
			if sec.Name == "rule" {
				if rules++; rules == pinned+1 {
					var recs [][]byte
					for rec := range sec.Records() {
						recs = append(recs, rec)
					}
					if err := w.Section(sec.Name); err != nil {
						return err
					}
					if err := w.Record(recs[0]); err != nil {
						return err
					}
					for range 1000 {
						if err := w.Record(recs[1]); err != nil {
							return err
						}
					}
					continue
				}
			}
			if err := storetest.CopySection(w, sec); err != nil {
				return err
			}
		}
		return nil
	})
	restore := func(snap *storage.Snapshot) (*store.Set, store.Restored, uint64) {
		set := storetest.Must(store.NewSetWith(cfg, nil, store.SetOptions{MaxBytes: bound}))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := set.Restore(snap)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		return set, res, after.TotalAlloc - before.TotalAlloc
	}
	_, _, whole := restore(snap)
	set, res, allocated := restore(edited)
	if len(res.Skipped) != 1 || !errors.Is(res.Skipped[0], store.ErrMaxBytes) {
		t.Fatalf("restored %d rules, skipped %v; want the repeating one skipped for the bound", res.Rules, res.Skipped)
	}
	if used := set.MemoryUsed(); used > bound {
		t.Errorf("memory used %d, over the bound %d", used, bound)
	}
	// Decoding the copies whole allocates 25 times as much.
	if allocated > 4*whole {
		t.Errorf("the restore allocated %d bytes, more than 4 times the %d of the snapshot as written", allocated, whole)
	}
}

// readBack is the snapshot fill writes, read back as a restart reads it.
func readBack(t *testing.T, fill func(w *storage.Writer) error) *storage.Snapshot {
	t.Helper()
	dir := t.TempDir()
	if err := storage.Write(dir, fill); err != nil {
		t.Fatal(err)
	}
	return storetest.Must(storage.Read(dir, 1<<30))
}

// TestRestoreAtMaxBytes: a Set that ran at its bound, folding new label sets, restores
// whole under that bound: what it holds past it (the overflow series, made at the bound,
// and what its series grew by since they were admitted) is held again; under half of it,
// within that; and a snapshot of an earlier build, which does not record the bound, whole.
func TestRestoreAtMaxBytes(t *testing.T) {
	rules, _, old := persisted()
	cfg := storetest.Config(1000, rules...)
	empty := storetest.Must(store.NewSetWith(cfg, nil, store.SetOptions{})).MemoryUsed()
	for _, frac := range []int64{2, 4, 8} {
		bound := empty + (old.MemoryUsed()-empty)/frac
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			set := storetest.Must(store.NewSetWith(cfg, nil, store.SetOptions{MaxBytes: bound}))
			k := set.NewSink()
			persistLines([2]*store.Sink{k, k}, start, 500)
			snap := encodeSet(t, set, false, func() {})
			if set.MemoryUsed() <= bound {
				t.Fatalf("memory used %d, within the bound %d: the Set did not run at it", set.MemoryUsed(), bound)
			}
			earlier := rewrittenCut(t, snap, func(rec []byte) []byte {
				r := wire.NewReader(rec)
				return wire.AppendVarint(nil, r.Varint())
			})
			for _, tc := range []struct {
				name  string
				snap  *storage.Snapshot
				bound int64
				whole bool
			}{
				{"the same bound", snap, bound, true},
				{"a higher bound", snap, 2 * bound, true},
				{"half of it", snap, bound / 2, false},
				{"an earlier build's", earlier, bound / 2, true},
			} {
				t.Run(tc.name, func(t *testing.T) {
					again := storetest.Must(store.NewSetWith(cfg, nil, store.SetOptions{MaxBytes: tc.bound}))
					res, err := again.Restore(tc.snap)
					if err != nil || (len(res.Skipped) == 0) != tc.whole {
						t.Fatalf("Restore: %+v, %v", res, err)
					}
					if got, want := again.MemoryUsed(), set.MemoryUsed(); tc.whole && got != want {
						t.Errorf("memory used %d, the Set written %d", got, want)
					}
					if got := again.MemoryUsed(); !tc.whole && got > max(tc.bound, empty) {
						t.Errorf("memory used %d, over the bound %d", got, tc.bound)
					}
				})
			}
		})
	}
}

// rewrittenCut is snap with its cut record edited, read back as a restart reads it.
func rewrittenCut(t *testing.T, snap *storage.Snapshot, edit func([]byte) []byte) *storage.Snapshot {
	t.Helper()
	return readBack(t, rewritten(snap, func(sec string, _, _ int, rec []byte) []byte {
		if sec == "cut" {
			return edit(rec)
		}
		return rec
	}))
}

// TestSnapshotHoldsNoEncoding: a snapshot's encoding goes to its spill, not to memory:
// EncodeAhead, the cut and the writing of the file each allocate a small fraction of the
// encoding, whether no series, some or all of them changed between EncodeAhead and the
// cut, and whatever the records' size. Held in memory, the encoding took about as much as
// the series again at every snapshot (twice that for the series changed meanwhile), past
// what --series.max-bytes leaves the process. The cut takes the records of the series no
// line came to since EncodeAhead from it, and the file written is the same as one of the
// Set encoded whole.
func TestSnapshotHoldsNoEncoding(t *testing.T) {
	for _, tc := range []struct {
		name string
		// labelSets label sets of a label value of length bytes, of which changed get a
		// line between EncodeAhead and Encode.
		labelSets, length, changed int
	}{
		{"none changed", 1000, 1000, 0},
		{"some changed", 1000, 1000, 10},
		{"all changed", 1000, 1000, 1000},
		// Records of more than a spill's buffer, and than a batch of EncodeAhead.
		{"large records", 4, 300 << 10, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := persistRules()
			set := storetest.Must(store.NewSetWith(storetest.Config(100_000, rules...), nil, store.SetOptions{}))
			k := set.NewSink()
			value := func(i int) string { return fmt.Sprint("m", i, strings.Repeat("x", tc.length)) }
			for i := range tc.labelSets {
				for sec := range int64(60) {
					write(k, line{rule: 4, labels: []string{value(i)}, now: start + sec, value: float64(sec*7+int64(i)) + 1})
				}
			}
			sp := spill(t)
			dir := t.TempDir()
			var ahead, enc *store.Encoded
			steps := []struct {
				name string
				do   func()
			}{
				{"EncodeAhead", func() { ahead = storetest.Must(set.EncodeAhead(sp)) }},
				{"lines", func() {
					for i := range tc.changed {
						write(k, line{rule: 4, labels: []string{value(i)}, now: start + 59, value: 3})
					}
				}},
				{"the cut", func() { enc = storetest.Must(set.Encode(sp, ahead)) }},
				{"the write", func() {
					if err := storage.Write(dir, func(w *storage.Writer) error { return enc.Write(w, cut) }); err != nil {
						t.Fatal(err)
					}
				}},
			}
			allocated := map[string]uint64{}
			for _, step := range steps {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				step.do()
				runtime.ReadMemStats(&after)
				allocated[step.name] = after.TotalAlloc - before.TotalAlloc
			}
			snap, err := storage.Read(dir, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			largest := 0
			for _, sec := range snap.Sections {
				for rec := range sec.Records() {
					largest = max(largest, len(rec))
				}
			}
			// An eighth of the encoding for a hundred bytes or so per series noted and
			// the records' places, the buffers of the records on their way, of the
			// spill and of the file (some 400 KiB), and a record encoded whole, grown by
			// append.
			limit := uint64(ahead.Bytes()/8 + 512<<10 + 2*largest)
			for _, step := range []string{"EncodeAhead", "the cut", "the write"} {
				if allocated[step] > limit {
					t.Errorf("%s allocated %d bytes for an encoding of %d (its largest record %d), past %d", step, allocated[step], ahead.Bytes(), largest, limit)
				}
			}
			whole := storetest.Must(set.Encode(spill(t), nil))
			if got, want := sortedRecords(snap), sortedRecords(written(t, whole)); !bytes.Equal(got, want) {
				t.Errorf("the snapshot of the cut (%d bytes) is not the one encoded whole (%d bytes)", len(got), len(want))
			}
			restored := storetest.Must(store.NewSetWith(storetest.Config(100_000, rules...), nil, store.SetOptions{}))
			held := 0
			for i := range rules {
				held += len(set.Rule(i).Snapshot(nil))
			}
			if res, err := restored.Restore(snap); err != nil || res.Series != held || len(res.Skipped) != 0 {
				t.Fatalf("Restore: %+v, %v", res, err)
			}
			if got, want := quantilesOf(restored, 4, start+59), quantilesOf(set, 4, start+59); !reflect.DeepEqual(got, want) {
				t.Errorf("the cut restored reads %v, want %v", got, want)
			}
		})
	}
}

// written is enc written as a snapshot and read back.
func written(t *testing.T, enc *store.Encoded) *storage.Snapshot {
	t.Helper()
	dir := t.TempDir()
	if err := storage.Write(dir, func(w *storage.Writer) error { return enc.Write(w, cut) }); err != nil {
		t.Fatal(err)
	}
	snap, err := storage.Read(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// sortedRecords is each section's name and its records, sorted (a store keeps its series
// in a map, whose order no two encodings share).
func sortedRecords(snap *storage.Snapshot) []byte {
	var out []byte
	for _, sec := range snap.Sections {
		recs := slices.Collect(sec.Records())
		slices.SortFunc(recs, bytes.Compare)
		out = append(out, sec.Name...)
		for _, r := range recs {
			out = wire.AppendBytes(out, r)
		}
	}
	return out
}

// TestEncodeAheadAcrossReload: a reload between EncodeAhead and the cut (the snapshot takes
// no lock a reload waits for while it encodes ahead) leaves the cut the same as a whole
// encoding of the Set reloaded: a rule taken over at its place keeps its records encoded
// ahead, one moved to another place, added or dropped is encoded whole or not at all.
func TestEncodeAheadAcrossReload(t *testing.T) {
	rules := persistRules()
	added := storetest.CountRule("added", storetest.OneMin, "status")
	for _, tc := range []struct {
		name  string
		rules []*config.Rule
	}{
		{"same rules", rules},
		{"the first dropped", rules[1:]},
		{"the last dropped", rules[:len(rules)-1]},
		{"one added first", append([]*config.Rule{added}, rules...)},
		{"one added last", append(slices.Clip(rules), added)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := storetest.Must(store.NewSetWith(storetest.Config(10, rules...), nil, store.SetOptions{}))
			k := old.NewSink()
			persistLines([2]*store.Sink{k, k}, start, 200)
			sp := spill(t)
			ahead := storetest.Must(old.EncodeAhead(sp))
			set := storetest.Must(store.NewSetWith(storetest.Config(10, tc.rules...), old, store.SetOptions{}))
			// A series written to since, and one made since, of the rule of requests.
			if i := slices.Index(tc.rules, rules[0]); i >= 0 {
				write(set.NewSink(), line{rule: i, labels: []string{"404"}, now: start + 30}, line{rule: i, labels: []string{"201"}, now: start + 30})
			}
			cut := storetest.Must(set.Encode(sp, ahead))
			whole := storetest.Must(set.Encode(spill(t), nil))
			if got, want := sortedRecords(written(t, cut)), sortedRecords(written(t, whole)); !bytes.Equal(got, want) {
				t.Errorf("the snapshot of the cut (%d bytes) is not the one encoded whole (%d bytes)", len(got), len(want))
			}
		})
	}
}
