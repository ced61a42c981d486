package store_test

import (
	"errors"
	"math"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/parser/event"
	"github.com/logwindow/logwindow_exporter/windows"
	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// TestOldest: Set.Oldest is the second of the oldest line an event-time rule placed in a
// wheel: a line in its windows at its own second, one ahead of the wall clock at the wall
// second it is placed at; a late line, placed in none, and a processing-time rule's lines
// leave it alone.
func TestOldest(t *testing.T) {
	const wall = start + 1000
	for _, tc := range []struct {
		name string
		rule int // 0: event-time, 1: processing time
		at   int64
		want int64
	}{
		{"a line in the windows", 0, wall - 30, wall - 30},
		{"a line ahead of the wall clock", 0, wall + 100, wall},
		{"a late line", 0, wall - 3600, math.MaxInt64},
		{"a processing-time rule's line", 1, 0, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := newSet(t, storetest.Config(10, storetest.EventRule("e", storetest.OneMin, "status"), storetest.CountRule("p", storetest.OneMin, "status")), nil)
			write(set.NewSink(), line{rule: tc.rule, labels: []string{"200"}, now: start + 10, wall: wall, at: tc.at})
			if got := set.Oldest(); got != tc.want {
				t.Errorf("oldest placed at %d, want %d", got, tc.want)
			}
		})
	}
}

// TestReadShardsExtrema: a label set written by sinks of two shards reads as one series:
// the sum and the events of the two, the larger of their maxima and the smaller of their
// minima, whichever shard saw which.
func TestReadShardsExtrema(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  float64 // the first shard's value; the second's is 5
		sum    float64
		max    float64
		min    float64
		events float64
	}{
		{"the first shard's the smaller", 1, 6, 5, 1, 2},
		{"the first shard's the larger", 9, 14, 9, 5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := storetest.Must(store.NewSetWith(storetest.Config(10, storetest.ValueRule("r", storetest.OneMin, "status")), nil, store.SetOptions{Shards: 2}))
			write(set.NewSink(), line{labels: []string{"200"}, now: start, value: tc.first})
			write(set.NewSink(), line{labels: []string{"200"}, now: start, value: 5})
			r := set.Rule(0)
			all := r.Snapshot(nil)
			if len(all) != 1 {
				t.Fatalf("%d series, want 1", len(all))
			}
			var more []windows.Stats
			got := r.Read(all[0], start, start, nil, &more)
			if len(got) == 0 || got[0].Sum != tc.sum || got[0].Events != tc.events || got[0].Max != tc.max || got[0].Min != tc.min {
				t.Errorf("read %+v, want sum %v, events %v, max %v, min %v", got, tc.sum, tc.events, tc.max, tc.min)
			}
		})
	}
}

// TestBatchSinkInterleaved: a batching sink that holds the lines of label sets that take
// turns writes each label set's values to its own series at the Flush, as a sink that does
// not batch does.
func TestBatchSinkInterleaved(t *testing.T) {
	lines := []line{
		{labels: []string{"a"}, now: start, value: 1},
		{labels: []string{"b"}, now: start, value: 10},
		{labels: []string{"a"}, now: start, value: 100},
		{labels: []string{"c"}, now: start, value: 1000},
		{labels: []string{"b"}, now: start, value: 10000},
	}
	want := map[string]series{"a": {101, []float64{101}}, "b": {10010, []float64{10010}}, "c": {1000, []float64{1000}}}
	cfg := storetest.Config(10, storetest.ValueRule("r", storetest.OneMin, "path"))
	for _, batch := range []bool{false, true} {
		set := newSet(t, cfg, nil)
		k := set.NewSink()
		if batch {
			k = set.NewBatchSink()
		}
		write(k, lines...)
		k.Flush()
		if d := diff(read(set, 0, start).series, want); d != "" {
			t.Errorf("batching %v:%s", batch, d)
		}
	}
}

// TestRestoreKeepsUnseatedLines: the late lines of label sets that found the budget full,
// which are in no series, stay in the rule's matched lines across a restore: Matched never
// goes back.
func TestRestoreKeepsUnseatedLines(t *testing.T) {
	cfg := storetest.Config(1, storetest.EventRule("e", storetest.OneMin, "status"))
	old := newSet(t, cfg, nil)
	write(old.NewSink(),
		line{labels: []string{"200"}, now: start, at: start},
		line{labels: []string{"500"}, now: start, at: start - 3600},
	)
	if got := read(old, 0, start); got.matched != 2 || got.drops.Late != 1 {
		t.Fatalf("before: %d matched, %d late; want 2 and 1", got.matched, got.drops.Late)
	}
	snap := encodeSet(t, old, false, func() {})
	set := newSet(t, cfg, nil)
	if _, err := set.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if got := read(set, 0, start); got.matched != 2 {
		t.Errorf("restored: %d matched lines, want 2", got.matched)
	}
}

// TestRestoreRuleOnce: a snapshot that holds a rule's section twice (edited, its checksums
// made again) restores the first and skips the second, rather than restore the rule twice.
func TestRestoreRuleOnce(t *testing.T) {
	rules, cfg, old := persisted()
	snap := encodeSet(t, old, false, func() {})
	set, res := restoreWritten(t, cfg, func(w *storage.Writer) error {
		twice := false
		for _, sec := range snap.Sections {
			if err := storetest.CopySection(w, sec); err != nil {
				return err
			}
			if sec.Name == "rule" && !twice {
				twice = true
				if err := storetest.CopySection(w, sec); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if res.Rules != len(rules) || len(res.Skipped) != 1 || !errors.Is(res.Skipped[0], store.ErrNoSuchRule) {
		t.Fatalf("restored %d rules, skipped %v; want %d, the second section of one skipped", res.Rules, res.Skipped, len(rules))
	}
	if d := diff(read(set, 0, start+10).series, read(old, 0, start+10).series); d != "" {
		t.Errorf("the rule of two sections:%s", d)
	}
}

// TestRestoreRefusesKeyOfMoreValues: a series record whose key holds more label values than
// it says (the values are joined by event.KeySep, which no value holds) is corrupt: its
// rule is skipped, not restored with a value that holds the separator.
func TestRestoreRefusesKeyOfMoreValues(t *testing.T) {
	cfg := storetest.Config(10, storetest.CountRule("r", storetest.OneMin, "status"))
	for _, tc := range []struct {
		name    string
		key     string
		corrupt bool
	}{
		{"one value", "200", false},
		{"two values said to be one", "200" + event.KeySep + "x", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := newSet(t, cfg, nil)
			snap := encodeSet(t, old, false, func() {})
			_, res := restoreWritten(t, cfg, func(w *storage.Writer) error {
				// The series of key with one label value and one part, of shard 0, without
				// wheels: 3 lines, last active at the start.
				rec := wire.AppendBytes(nil, []byte(tc.key))
				rec = wire.AppendUvarint(rec, 1)
				rec = append(rec, 0)
				rec = wire.AppendUvarint(rec, 1)
				rec = append(rec, 0)
				rec = wire.AppendUvarint(rec, 3)
				rec = append(rec, make([]byte, 16)...)
				rec = wire.AppendVarint(rec, start)
				rec = wire.AppendBool(rec, false)
				for _, sec := range snap.Sections {
					if sec.Name != "rule" {
						if err := storetest.CopySection(w, sec); err != nil {
							return err
						}
						continue
					}
					// The rule's header, and the series as its only one.
					if err := w.Section(sec.Name); err != nil {
						return err
					}
					for head := range sec.Records() {
						if err := w.Record(head); err != nil {
							return err
						}
						break
					}
				}
				return w.Record(rec)
			})
			if corrupt := len(res.Skipped) == 1 && errors.Is(res.Skipped[0], storage.ErrCorrupt); corrupt != tc.corrupt {
				t.Errorf("restored %d rules, skipped %v; want it skipped as corrupt: %v", res.Rules, res.Skipped, tc.corrupt)
			}
		})
	}
}
