package store

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// TestRestoreFutureLast: an earlier build kept the own second of a part's newest line as
// its last one, which a line stamped far ahead put years in the future, and read it only
// once the part's windows were released. A snapshot of such a part, restored, is active
// no later than the newest second its windows were written at, so that the label set
// goes with the counter TTL after that, not years later.
func TestRestoreFutureLast(t *testing.T) {
	cfg := storetest.TTLConfig(10, 2*time.Minute, storetest.EventRule("r", storetest.OneMin, "k"))
	set, err := NewSetWith(cfg, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := set.NewSink()
	k.SetNow(storetest.Start, 1000)
	k.Event(storetest.Event(0, 1000+1e9, 0, "a"))
	all := set.Rule(0).Snapshot(nil)
	all[0].own.last.Store(1000 + 1e9) // as the earlier build kept it

	snap := writeEarlier(t, set)
	restored, err := NewSetWith(cfg, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restored.Restore(snap); err != nil {
		t.Fatal(err)
	}
	r := restored.Rule(0)
	all = r.Snapshot(nil)
	if len(all) != 1 {
		t.Fatalf("%d series restored, want 1", len(all))
	}
	for _, tc := range []struct {
		now  int64
		gone bool
	}{{1120, false}, {1121, true}} {
		if got := r.Gone(all[0], tc.now, tc.now); got != tc.gone {
			t.Errorf("at %d: gone %v, want %v", tc.now, got, tc.gone)
		}
	}
}

// TestRestoreFutureLastKeptCounter: a part of an earlier build's snapshot active at the
// own second of a line years ahead whose windows were released (a kept counter) has no
// wheels to bound it. It does not hold the processing clock there (Restored.Processing):
// every other label set would look idle past the counter TTL at once, and every
// snapshot after would carry the clock on, years ahead.
func TestRestoreFutureLastKeptCounter(t *testing.T) {
	cfg := storetest.TTLConfig(10, 2*time.Minute, storetest.EventRule("r", storetest.OneMin, "k"))
	set, err := NewSetWith(cfg, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := set.NewSink()
	k.SetNow(1000, 1000)
	k.Event(storetest.Event(0, 1000, 0, "a"))
	k.Event(storetest.Event(0, 1000, 0, "b"))
	all := set.Rule(0).Snapshot(nil)
	for _, s := range all {
		if s.key == "a" {
			s.own.last.Store(1000 + 1e9) // as the earlier build kept it
		}
	}
	set.Expire(1100, 1100) // the windows of both are released, a's counter kept
	all = set.Rule(0).Snapshot(nil)
	if len(all) != 2 || all[0].own.win.Load() != nil || all[1].own.win.Load() != nil {
		t.Fatalf("%d series, want two kept counters", len(all))
	}
	snap := writeEarlier(t, set)
	restored, err := NewSetWith(cfg, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := restored.Restore(snap)
	if err != nil {
		t.Fatal(err)
	}
	if res.Processing > 1100 {
		t.Errorf("restored processing second %d, want none past the snapshot's 1100", res.Processing)
	}
}

// TestRestoreFutureLastKeptCounterWritten: such a kept counter, of an earlier build's
// snapshot that does not record its cut, is taken as active no later than the snapshot
// was written (its file's time, about the processing second of its cut), so that it goes
// with the counter TTL after that: not the own second of a line years ahead, which kept it
// for as long as the process ran, and for good across the restarts of earlier builds.
func TestRestoreFutureLastKeptCounterWritten(t *testing.T) {
	cfg := storetest.TTLConfig(10, 2*time.Minute, storetest.EventRule("r", storetest.OneMin, "k"))
	set, err := NewSetWith(cfg, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := set.NewSink()
	k.SetNow(1000, 1000)
	k.Event(storetest.Event(0, 1000, 0, "a"))
	future := time.Now().Add(200 * 365 * 24 * time.Hour).Unix()
	all := set.Rule(0).Snapshot(nil)
	all[0].own.last.Store(future) // as the earlier build kept it
	set.Expire(1100, 1100)        // its windows released, its counter kept
	snap := writeEarlier(t, set)
	written := snap.Written.Unix()
	restored, err := NewSetWith(cfg, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restored.Restore(snap); err != nil {
		t.Fatal(err)
	}
	r := restored.Rule(0)
	all = r.Snapshot(nil)
	if len(all) != 1 || all[0].own.win.Load() != nil {
		t.Fatalf("%d series restored, want a kept counter", len(all))
	}
	if got := all[0].own.last.Load(); got != written {
		t.Errorf("last active at %d, want the snapshot's writing %d", got, written)
	}
	if !r.Gone(all[0], written+121, written+121) {
		t.Errorf("a kept counter active at %d not gone past the TTL after the snapshot was written at %d", all[0].own.last.Load(), written)
	}
}

// encodeCut encodes set into a snapshot whose cut was at processing second cut, and reads
// it back as a restart does.
func encodeCut(t *testing.T, set *Set, cut int64) *storage.Snapshot {
	t.Helper()
	dir := t.TempDir()
	sp, err := storage.NewSpill(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	enc, err := set.Encode(sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := storage.Write(dir, func(w *storage.Writer) error { return enc.Write(w, cut) }); err != nil {
		t.Fatal(err)
	}
	snap, err := storage.Read(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// writeEarlier is set's snapshot as a build before the cut's processing second was
// recorded wrote it: without the section of the cut.
func writeEarlier(t *testing.T, set *Set) *storage.Snapshot {
	t.Helper()
	snap := encodeCut(t, set, noCut)
	n := len(snap.Sections)
	snap.Sections = slices.DeleteFunc(snap.Sections, func(sec storage.Section) bool { return sec.Name == sectionCut })
	if len(snap.Sections) != n-1 {
		t.Fatalf("%d sections of the cut, want 1", n-len(snap.Sections))
	}
	return snap
}

// TestRestoreHeldAhead: processing time runs ahead of the wall clock after a restart held
// it at its snapshot's second. A series of an event-time rule, whose wheels go by the wall
// clock, restored from a snapshot that records its cut's processing second is active at
// the processing second of its last line, and holds the clock there, as before the
// restart: not at its wheels' second, which would move it that much older at each restart
// (its counter TTL shortened by as much) and, without processing-time rules, hold the
// clock that much behind the snapshot's. A snapshot of an earlier build, without the cut,
// is still read, its parts bounded by their wheels.
func TestRestoreHeldAhead(t *testing.T) {
	cfg := storetest.TTLConfig(10, 2*time.Minute, storetest.EventRule("r", storetest.OneMin, "k"))
	set, err := NewSetWith(cfg, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := set.NewSink()
	k.SetNow(10000, 9000) // processing 1000 s ahead of the wall clock
	k.Event(storetest.Event(0, 9000, 0, "a"))
	for _, tc := range []struct {
		name string
		snap *storage.Snapshot
		want int64
	}{
		{"cut recorded", encodeCut(t, set, 10000), 10000},
		{"cut not recorded", writeEarlier(t, set), 9000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restored, err := NewSetWith(cfg, nil, SetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := restored.Restore(tc.snap)
			if err != nil {
				t.Fatal(err)
			}
			if res.Processing != tc.want {
				t.Errorf("restored processing second %d, want %d", res.Processing, tc.want)
			}
			all := restored.Rule(0).Snapshot(nil)
			if len(all) != 1 {
				t.Fatalf("%d series restored, want 1", len(all))
			}
			if got := all[0].own.last.Load(); got != tc.want {
				t.Errorf("last active at %d, want %d", got, tc.want)
			}
		})
	}
}

// TestRestoreCutBounds: a snapshot that records its cut takes no part as active after it,
// with wheels or without (a kept counter carried on from an earlier build's snapshot may be
// active years ahead), and its kept counters hold the processing clock no further. The
// section of the cut is one record opening with one second, or the snapshot is corrupt; a
// record with a field more, as a later build may add, is read for its second.
func TestRestoreCutBounds(t *testing.T) {
	cfg := storetest.TTLConfig(10, 2*time.Minute, storetest.EventRule("r", storetest.OneMin, "k"))
	set, err := NewSetWith(cfg, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := set.NewSink()
	k.SetNow(1000, 1000)
	k.Event(storetest.Event(0, 1000, 0, "a"))
	k.Event(storetest.Event(0, 1000, 0, "b"))
	k.SetNow(1050, 1050)
	k.Event(storetest.Event(0, 1050, 0, "c"))
	all := set.Rule(0).Snapshot(nil)
	for _, s := range all {
		if s.key == "a" {
			s.own.last.Store(1000 + 1e9) // as an earlier build kept it
		}
	}
	set.Expire(1100, 1100) // a's and b's windows released, their counters kept
	restored, err := NewSetWith(cfg, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := restored.Restore(encodeCut(t, set, 1100))
	if err != nil {
		t.Fatal(err)
	}
	if res.Processing != 1100 {
		t.Errorf("restored processing second %d, want the cut's 1100", res.Processing)
	}
	all = restored.Rule(0).Snapshot(nil)
	want := map[string]int64{"a": 1100, "b": 1000, "c": 1050}
	for _, s := range all {
		if got := s.own.last.Load(); got != want[s.key] {
			t.Errorf("%s: last active at %d, want %d", s.key, got, want[s.key])
		}
		delete(want, s.key)
	}
	if len(want) != 0 {
		t.Errorf("not restored: %v", want)
	}

	for _, tc := range []struct {
		name    string
		records [][]byte
		// restored: the snapshot is restored with the cut's 1100, else refused.
		restored bool
	}{
		{"no record", nil, false},
		{"two records", [][]byte{{2}, {4}}, false},
		{"not a second", [][]byte{{0x80}}, false},
		{"a field more", [][]byte{binary.AppendUvarint(binary.AppendVarint(nil, 1100), 7)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := encodeCut(t, set, 1100)
			dir := t.TempDir()
			err := storage.Write(dir, func(w *storage.Writer) error {
				for _, sec := range snap.Sections {
					if sec.Name == sectionCut {
						if err := w.Section(sectionCut); err != nil {
							return err
						}
						for _, rec := range tc.records {
							if err := w.Record(rec); err != nil {
								return err
							}
						}
						continue
					}
					if err := storetest.CopySection(w, sec); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			snap, err = storage.Read(dir, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			restored, err := NewSetWith(cfg, nil, SetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := restored.Restore(snap)
			all := restored.Rule(0).Snapshot(nil)
			switch {
			case tc.restored && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.restored && (res.Processing != 1100 || len(all) != 3):
				t.Errorf("restored processing second %d and %d series, want 1100 and 3", res.Processing, len(all))
			case !tc.restored && err == nil:
				t.Error("restored, want an error")
			case !tc.restored && len(all) != 0:
				t.Errorf("%d series restored from a refused snapshot", len(all))
			}
		})
	}
}
