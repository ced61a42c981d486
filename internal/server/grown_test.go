package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/logwindow/logwindow_exporter/exporter"
	rulescrape "github.com/logwindow/logwindow_exporter/internal/scrape"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// countedWriter is a client that reads nothing, as blockedWriter, and counts the scrapes
// blocked writing to it: each holds its read of the rule it writes.
type countedWriter struct {
	*blockedWriter
	writing *atomic.Int32
}

func (w *countedWriter) Write(p []byte) (int, error) {
	w.writing.Add(1)
	defer w.writing.Add(-1)
	return w.blockedWriter.Write(p)
}

// discardWriter is a client that reads what it is sent and keeps none of it: a recorder
// kept the read of the grown rule below whole, most of a minute of the race detector's
// growing its buffer.
type discardWriter struct{ *httptest.ResponseRecorder }

func newDiscardWriter() discardWriter { return discardWriter{httptest.NewRecorder()} }

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// TestScrapeBudgetGrownRule: scrapes that all began before any read of a rule that grew
// were charged its old, small size; each then reads the rule whole. A scrape whose read
// holds more than it was charged waits for the difference before it writes (here the
// read is past the budget: it runs alone), so clients that send their scrapes at once
// and never read hold one such read, not one each. Those waiting for room are as
// blocked as a client that does not read: one of them ends the others after the stall,
// rather than each waiting for the others' room.
func TestScrapeBudgetGrownRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stall, wait, scrapes = time.Second, 5 * time.Second, 3
		cfg, p := storetest.ParseRules(t, `
global: {windows: [1m], max_series_per_rule: 1000}
rules:
  - name: clients
    match: '^(?P<addr>[^ ]*) (?P<vhost>[^ ]*)$'
    labels: {vhost: '${vhost}'}
    distinct: '${addr}'
    distinct_registers: 16384
`)
		set, err := store.NewSetWith(cfg, nil, store.SetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		const now = 1_700_000_000
		k := set.NewSink()
		k.SetNow(now, now)
		feed := func(vhosts int) {
			for v := range vhosts {
				p.Parse("app", fmt.Appendf(nil, "10.0.0.1 v%d", v), k)
			}
		}
		coll := rulescrape.NewCollector(rulescrape.Options{Set: func() *store.Set { return set }, Now: func() int64 { return now }, Start: now})
		text := expfmt.NewFormat(expfmt.TypeTextPlain)
		feed(2)
		h := exporter.Handler(coll, prometheus.NewRegistry(), nil)
		h.ServeHTTP(newDiscardWriter(), httptest.NewRequest(http.MethodGet, "/metrics", nil))
		small, known := coll.ScrapeCost(nil, text)
		budget := scrapes * small
		// Past the budget (each read costs a floor of some 1 MiB, and 16 KiB a vhost):
		// a read of it runs alone, and the fewer vhosts, the less the race detector's
		// run renders.
		feed(160)
		// What a read of the grown rule holds, as a scrape of it tells.
		var grown int64
		{
			c := rulescrape.NewCollector(rulescrape.Options{Set: func() *store.Set { return set }, Now: func() int64 { return now }, Start: now})
			exporter.Handler(c, prometheus.NewRegistry(), nil).ServeHTTP(newDiscardWriter(), httptest.NewRequest(http.MethodGet, "/metrics", nil))
			grown, _ = c.ScrapeCost(nil, text)
		}
		if !known || grown <= budget {
			t.Fatalf("a scrape of the small rule costs %d (known %v), of the grown one %d: want the grown one past %d scrapes of the small", small, known, grown, scrapes)
		}
		l := newScrapeLimiter(10, stall, wait, slog.New(slog.DiscardHandler)).withBudget(budget, scrapeCost(coll))
		lh := l.handler(h)
		var writing atomic.Int32
		clients := make([]*countedWriter, scrapes)
		done := make(chan bool, scrapes)
		for i := range clients {
			clients[i] = &countedWriter{blockedWriter: newBlockedWriter(), writing: &writing}
			go func() {
				lh.ServeHTTP(clients[i], httptest.NewRequest(http.MethodGet, "/metrics", nil))
				done <- clients[i].Code == http.StatusOK
			}()
		}
		synctest.Wait()
		if n := writing.Load(); n > 1 {
			t.Errorf("%d scrapes charged %d each write a read of %d at once, within a budget of %d: want at most one", n, small, grown, budget)
		}
		time.Sleep(stall + time.Millisecond)
		synctest.Wait()
		if n := writing.Load(); n != 1 {
			t.Errorf("after the stall, %d scrapes are blocked writing the grown rule, want the one left", n)
		}
		l.mu.Lock()
		running, held := len(l.running), l.held
		l.mu.Unlock()
		if running != 1 || held != budget {
			t.Errorf("after the stall: %d scrapes running, charged %d; want the one left, charged the whole budget %d", running, held, budget)
		}
		for _, c := range clients {
			_ = c.SetWriteDeadline(time.Now()) // the clients go away
		}
		for range clients {
			<-done
		}
		if l.held != 0 || len(l.running) != 0 {
			t.Errorf("after: %d bytes held by %d scrapes, want none", l.held, len(l.running))
		}
	})
}

// TestScrapeBudgetHoldServedFirst: a running scrape that waits in hold for the difference
// its read grew by holds that read already; the room a scrape that ends leaves goes to
// it first, not to a scrape that waits for a place, which would hold as much again on
// top and leave the one in hold waiting, its read held, until it is ended as stalled.
func TestScrapeBudgetHoldServedFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stall, wait, budget = time.Second, 5 * time.Second, 100
		cost := func(r *http.Request) (int64, bool) {
			var n int64
			_, err := fmt.Sscan(r.Header.Get("Cost"), &n)
			return n, err == nil
		}
		l := newScrapeLimiter(10, stall, wait, slog.New(slog.DiscardHandler)).withBudget(budget, perRequest(cost))
		end := map[string]chan struct{}{"grown": make(chan struct{}), "other": make(chan struct{}), "late": make(chan struct{})}
		held := make(chan error, 1)
		var lateRan atomic.Bool
		grown := exporter.Handler(grownSource{bytes: 80, held: held, end: end["grown"]}, prometheus.NewRegistry(), nil)
		h := l.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name := r.Header.Get("Name")
			switch name {
			case "grown":
				grown.ServeHTTP(w, r)
				return
			case "late":
				lateRan.Store(true)
			}
			<-end[name]
		}))
		done := make(chan int, 3)
		scrape := func(name string, cost int) {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Name", name)
			req.Header.Set("Cost", fmt.Sprint(cost))
			go func() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				done <- rec.Code
			}()
			synctest.Wait()
		}
		scrape("other", 60)
		scrape("grown", 40) // charged 40, holds 80 once read: waits for 40 more
		scrape("late", 40)  // waits for a place
		select {
		case err := <-held:
			t.Fatalf("hold returned %v with the budget taken, want it to wait", err)
		default:
		}
		close(end["other"])
		synctest.Wait()
		select {
		case err := <-held:
			if err != nil {
				t.Errorf("hold: %v, want the room the scrape that ended left", err)
			}
		default:
			t.Errorf("the scrape in hold waits on with its read held, the room given to a scrape that had none (late ran: %v)", lateRan.Load())
		}
		if lateRan.Load() {
			t.Errorf("the late scrape runs beside the one in hold: %d bytes held of %d", l.held, budget)
		}
		close(end["grown"])
		synctest.Wait()
		if !lateRan.Load() {
			t.Error("the late scrape did not run once the one in hold ended")
		}
		close(end["late"])
		for range 3 {
			if code := <-done; code != http.StatusOK {
				t.Errorf("a scrape answered %d, want 200", code)
			}
		}
	})
}

// TestScrapeBudgetChargedWhenGiven: scrapes that wait for a place are charged what the
// reads made while they waited tell, not what their rules held when they came. Two
// scrapes come, each of a rule small then, while a third runs alone; that one reads the
// rule, which has grown past the budget, and stalls. Charged the old size, both would be
// let in beside each other once it is ended, and each would then wait in hold for the
// other's room until one ended the other a stall later; charged the grown size, one runs
// alone and the other waits for its place.
func TestScrapeBudgetChargedWhenGiven(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const stall, wait, budget, small, grown = time.Second, 5 * time.Second, 100, 30, 150
		var ruleCost atomic.Int64
		ruleCost.Store(small)
		cost := func(r *http.Request) (int64, bool) {
			var n int64
			if _, err := fmt.Sscan(r.Header.Get("Cost"), &n); err == nil {
				return n, true
			}
			return ruleCost.Load(), true
		}
		l := newScrapeLimiter(10, stall, wait, slog.New(slog.DiscardHandler)).withBudget(budget, perRequest(cost))
		gate, end := make(chan struct{}), make(chan struct{})
		held := make(chan error, 2)
		waiter := exporter.Handler(grownSource{bytes: grown, held: held, end: end}, prometheus.NewRegistry(), nil)
		h := l.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Cost") == "" {
				waiter.ServeHTTP(w, r)
				return
			}
			<-gate
			ruleCost.Store(grown) // its read tells the rule grew
			_, _ = w.Write([]byte("metrics\n"))
		}))
		done := make(chan int, 3)
		scrape := func(w http.ResponseWriter, cost string) {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if cost != "" {
				req.Header.Set("Cost", cost)
			}
			go func() {
				h.ServeHTTP(w, req)
				done <- w.(interface{ Result() *http.Response }).Result().StatusCode
			}()
			synctest.Wait()
		}
		scrape(newBlockedWriter(), fmt.Sprint(budget)) // runs alone, its client stalls
		scrape(httptest.NewRecorder(), "")
		scrape(httptest.NewRecorder(), "")
		close(gate)
		synctest.Wait()
		time.Sleep(stall + time.Millisecond)
		synctest.Wait()
		l.mu.Lock()
		running, charged, wanting := len(l.running), l.held, l.wanting
		l.mu.Unlock()
		if running != 1 || charged != budget || wanting != 0 {
			t.Errorf("after the stalled scrape was ended: %d scrapes running, charged %d and wanting %d more; want one, charged the whole budget %d", running, charged, wanting, budget)
		}
		select {
		case err := <-held:
			if err != nil {
				t.Errorf("hold: %v, want the room of the scrape that ran alone", err)
			}
		default:
			t.Error("no scrape that waited holds its read")
		}
		close(end)
		for range 3 {
			<-done
		}
		if err := <-held; err != nil {
			t.Errorf("the last scrape's hold: %v, want the room of the one before", err)
		}
		if l.held != 0 || len(l.running) != 0 {
			t.Errorf("after: %d bytes held by %d scrapes, want none", l.held, len(l.running))
		}
	})
}

// grownSource's scrape holds bytes once it read, telling its Writer so (Writer.Hold); it
// sends what Hold returned on held, then writes nothing until end is closed.
type grownSource struct {
	bytes int64
	held  chan<- error
	end   <-chan struct{}
}

func (g grownSource) Scrape(func(string) bool, expfmt.Format) exporter.Scrape { return g }

func (g grownSource) Write(w *exporter.Writer) error {
	err := w.Hold(g.bytes)
	g.held <- err
	<-g.end
	return err
}

func (grownSource) Close() {}
