package store

import (
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
	all, _ := set.Rule(0).Snapshot(nil)
	all[0].own.last.Store(1000 + 1e9) // as the earlier build kept it

	dir := t.TempDir()
	enc, err := set.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := storage.Write(dir, enc.Write); err != nil {
		t.Fatal(err)
	}
	snap, err := storage.Read(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	restored, err := NewSetWith(cfg, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restored.Restore(snap); err != nil {
		t.Fatal(err)
	}
	r := restored.Rule(0)
	all, _ = r.Snapshot(nil)
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
	all, _ := set.Rule(0).Snapshot(nil)
	for _, s := range all {
		if s.key == "a" {
			s.own.last.Store(1000 + 1e9) // as the earlier build kept it
		}
	}
	set.Expire(1100, 1100) // the windows of both are released, a's counter kept
	all, _ = set.Rule(0).Snapshot(nil)
	if len(all) != 2 || all[0].own.win.Load() != nil || all[1].own.win.Load() != nil {
		t.Fatalf("%d series, want two kept counters", len(all))
	}
	dir := t.TempDir()
	enc, err := set.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := storage.Write(dir, enc.Write); err != nil {
		t.Fatal(err)
	}
	snap, err := storage.Read(dir, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
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
