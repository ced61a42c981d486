package store

import (
	"maps"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// TestSinkLastSeriesRemoved: a sink keeps the series of its rule's last event to spare the
// lookup of the next; once that series was removed (here by a reap at the budget, which
// evicts a kept counter), the next line of its label set goes where a lookup sends it.
func TestSinkLastSeriesRemoved(t *testing.T) {
	set := storetest.Must(NewSetWith(storetest.TTLConfig(1, 0, storetest.CountRule("http_requests", []time.Duration{time.Minute}, "status")), nil, SetOptions{}))
	first, second := set.NewSink(), set.NewSink()
	// The second line finds the series in the store's map, and the sink keeps it.
	first.SetNow(start, start)
	first.Event(storetest.Event(0, 0, 0, "500"))
	first.Event(storetest.Event(0, 0, 0, "500"))
	now := int64(start + 120) // 500 idle past its window: a kept counter, evicted first
	second.SetNow(now, now)
	second.Event(storetest.Event(0, 0, 0, "404"))
	if first.last[0] == nil || !first.last[0].removed {
		t.Fatal("the sink does not hold the evicted series: the test no longer tests its removal")
	}
	first.SetNow(now, now)
	first.Event(storetest.Event(0, 0, 0, "500"))
	// 404 holds the budget, so the next 500 folds into the overflow series; added to the
	// evicted series it would be in no _total.
	r := set.Rule(0)
	got := map[string]float64{}
	all, _ := r.Snapshot(nil)
	for _, s := range all {
		if !r.Gone(s, now, now) {
			got[s.Labels()[0]] = r.Total(s)
		}
	}
	want := map[string]float64{"404": 1, OverflowValue: 1}
	if !maps.Equal(got, want) {
		t.Errorf("totals %v, want %v", got, want)
	}
}
