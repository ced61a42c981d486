package store_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// secondsAt returns the offsets in series, a series record, of the varints of its first
// part's second of last activity and of its wheels' second, each with its length; ok is
// false when it does not read as a series whose first part has started wheels.
func secondsAt(series []byte) (last, lastLen, wheel, wheelLen int, ok bool) {
	r := wire.NewReader(series)
	at := func() int { return len(series) - r.Len() }
	r.Prefixed()
	r.Uvarint()
	r.Byte()
	r.Uvarint()
	r.Byte()
	r.Uvarint()
	r.Uint64()
	r.Uint64()
	last = at()
	r.Varint()
	lastLen = at() - last
	hasWheels := r.Bool()
	r.Uint64()
	flags := r.Byte()
	wheel = at()
	r.Varint()
	wheelLen = at() - wheel
	return last, lastLen, wheel, wheelLen, r.Err() == nil && hasWheels && flags != 0
}

// withVarint is rec with the varint of length n at offset i replaced by t.
func withVarint(rec []byte, i, n int, t int64) []byte {
	return slices.Concat(rec[:i], wire.AppendVarint(nil, t), rec[i+n:])
}

// rewritten writes snap's sections, each record through edit: the section's name, the
// rule section's number (from 0; -1 for other sections) and the record's number in it.
func rewritten(snap *storage.Snapshot, edit func(sec string, rule, i int, rec []byte) []byte) func(w *storage.Writer) error {
	return func(w *storage.Writer) error {
		rule := -1
		for _, sec := range snap.Sections {
			if err := w.Section(sec.Name); err != nil {
				return err
			}
			at := -1
			if sec.Name == "rule" {
				rule++
				at = rule
			}
			i := 0
			for rec := range sec.Records() {
				if err := w.Record(edit(sec.Name, at, i, rec)); err != nil {
					return err
				}
				i++
			}
		}
		return nil
	}
}

// TestRestoreRefusesSecondsOutOfRange: a second of a snapshot outside those the
// exporter's clocks reach (before 1970, after 9999) was edited, its checksums made again.
// The cut's or the oldest line's refuses the snapshot; a part's last activity or its
// wheels' second refuses its rule, as other corrupt series do. Near the ends of int64
// they held the processing clock where it wraps when it moves on.
func TestRestoreRefusesSecondsOutOfRange(t *testing.T) {
	const spoil = 0 // the counting rule, whose series have wheels
	_, cfg, old := persisted()
	snap := encodeSet(t, old, false, func() {})
	bad := []int64{-1, store.LatestSecond + 1, 1 << 49, math.MaxInt64 - 1, math.MaxInt64}
	for _, tc := range []struct {
		name string
		// wholly says that the snapshot is refused, rather than the spoilt rule skipped.
		wholly bool
		edit   func(t int64) func(sec string, rule, i int, rec []byte) []byte
	}{
		{"cut", true, func(s int64) func(string, int, int, []byte) []byte {
			return func(sec string, _, _ int, rec []byte) []byte {
				if sec == "cut" {
					return wire.AppendVarint(nil, s)
				}
				return rec
			}
		}},
		{"oldest line", true, func(s int64) func(string, int, int, []byte) []byte {
			return func(sec string, _, _ int, rec []byte) []byte {
				if sec == "set" {
					return wire.AppendVarint(nil, s)
				}
				return rec
			}
		}},
		{"part's last activity", false, func(s int64) func(string, int, int, []byte) []byte {
			return func(sec string, rule, i int, rec []byte) []byte {
				if rule == spoil && i == 1 {
					at, n, _, _, ok := secondsAt(rec)
					if !ok {
						t.Fatal("the rule's first series has no wheels")
					}
					return withVarint(rec, at, n, s)
				}
				return rec
			}
		}},
		{"wheels' second", false, func(s int64) func(string, int, int, []byte) []byte {
			return func(sec string, rule, i int, rec []byte) []byte {
				if rule == spoil && i == 1 {
					_, _, at, n, ok := secondsAt(rec)
					if !ok {
						t.Fatal("the rule's first series has no wheels")
					}
					return withVarint(rec, at, n, s)
				}
				return rec
			}
		}},
	} {
		for _, s := range bad {
			if tc.name == "oldest line" && s == math.MaxInt64 {
				continue // no event-time line placed
			}
			t.Run(fmt.Sprintf("%s=%d", tc.name, s), func(t *testing.T) {
				_, res, err := restoreOf(t, cfg, rewritten(snap, tc.edit(s)))
				switch {
				case tc.wholly && !errors.Is(err, storage.ErrCorrupt):
					t.Fatalf("restored (%v, %d rules, processing %d), want refused as corrupt", err, res.Rules, res.Processing)
				case tc.wholly:
					return
				case err != nil:
					t.Fatal(err)
				case len(res.Skipped) != 1 || !errors.Is(res.Skipped[0], storage.ErrCorrupt):
					t.Fatalf("restored %d rules, skipped %v, processing %d; want the spoilt one skipped as corrupt", res.Rules, res.Skipped, res.Processing)
				}
				if res.Processing > cut {
					t.Fatalf("processing restored at %d, after the cut at %d", res.Processing, cut)
				}
			})
		}
		// The bound itself is a second the clocks reach.
		t.Run(fmt.Sprintf("%s=%d", tc.name, int64(store.LatestSecond)), func(t *testing.T) {
			_, res, err := restoreOf(t, cfg, rewritten(snap, tc.edit(store.LatestSecond)))
			if err != nil || len(res.Skipped) != 0 {
				t.Fatalf("restored %d rules, skipped %v (%v); want all", res.Rules, res.Skipped, err)
			}
		})
	}
}
