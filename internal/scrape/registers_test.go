package scrape

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/parser"
	"github.com/logwindow/logwindow_exporter/windows/sketch"
)

// registerRules is a distinct count per vhost, with registers (m) or without (m 0).
func registerRules(m int, windows string) string {
	text := `
global: {windows: ` + windows + `, max_series_per_rule: 1000}
rules:
  - name: http_clients
    help: Clients.
    match: '^(?P<addr>[^ ]*) (?P<vhost>[^ ]*)$'
    labels: {vhost: '${vhost}'}
    distinct: '${addr}'
`
	if m > 0 {
		text += fmt.Sprintf("    distinct_registers: %d\n", m)
	}
	return text
}

// feedClients parses, for each of vhosts, clients lines from distinct addresses, the
// first from offset, at second at; it returns the addresses by vhost.
func feedClients(p *parser.Parser, k *store.Sink, at int64, vhosts, clients, offset int, into map[string][]string) {
	k.SetNow(at, at)
	for v := range vhosts {
		vhost := fmt.Sprintf("v%d", v)
		for c := range clients {
			addr := fmt.Sprintf("10.%d.%d.%d", v, (offset+c)/256, (offset+c)%256)
			p.Parse("app", []byte(addr+" "+vhost), k)
			if into != nil {
				into[vhost] = append(into[vhost], addr)
			}
		}
	}
}

// TestDistinctRegistersFamily: with distinct_registers: m each series and window exports
// m register gauges, register "0" to m−1, equal to the registers at precision log2(m) of a
// sketch of the window's addresses (sparse in one window, dense in the other); the rule's
// store holds what it holds without them, since they are read at scrape time; the scrape
// is the registry's text and lint-clean.
func TestDistinctRegistersFamily(t *testing.T) {
	const m, q = 64, 6
	sets := map[int]*store.Set{}
	inWindow := map[string]map[string][]string{"1m": {}, "5m": {}}
	var c *Collector
	for _, regs := range []int{0, m} {
		p, set := parserSet(t, registerRules(regs, "[1m, 5m]"))
		k := set.NewSink()
		old, recent := map[string][]string{}, map[string][]string{}
		feedClients(p, k, start, 2, 20000, 0, old) // dense: past 12,288 keys
		feedClients(p, k, start+120, 2, 300, 19900, recent)
		sets[regs] = set
		if regs == 0 {
			continue
		}
		for vhost := range old {
			inWindow["1m"][vhost] = recent[vhost]
			inWindow["5m"][vhost] = slices.Concat(old[vhost], recent[vhost])
		}
		now := int64(start + 120)
		c = collectorAt(fixed(set), &now)
	}
	if a, b := sets[0].MemoryUsed(), sets[m].MemoryUsed(); a != b {
		t.Errorf("the store holds %d bytes with registers, %d without", b, a)
	}
	checkAsRegistry(t, c)
	mfs, err := scraped(c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	families := metrictest.Families{}
	for _, mf := range mfs {
		families[mf.GetName()] = mf
	}
	if n := len(families["http_clients_window_distinct_register"].GetMetric()); n != 2*2*m {
		t.Errorf("%d register samples, want %d (2 vhosts × 2 windows × %d)", n, 2*2*m, m)
	}
	for window, byVhost := range inWindow {
		for vhost, addrs := range byVhost {
			d := sketch.NewDistinct()
			for _, a := range addrs {
				d.Add(0, []byte(a))
			}
			want, _ := d.Registers(q, nil)
			for k, w := range want {
				labels := map[string]string{"vhost": vhost, "window": window, "register": strconv.Itoa(k)}
				if got := metrictest.Value(families, "http_clients_window_distinct_register", labels); got != float64(w) {
					t.Fatalf("%v: %v, want %d", labels, got, w)
				}
			}
		}
	}
	problems, err := testutil.GatherAndLint(scraped(c))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// BenchmarkScrapeDistinctRegisters is a text scrape of a distinct rule of 100 series × 2
// windows, each window with 300 different values, without registers and with 1024 (which
// multiply the samples by 1024). The store's bytes per series are reported: the same for
// both, the registers being computed at scrape time.
func BenchmarkScrapeDistinctRegisters(b *testing.B) {
	for _, m := range []int{0, 1024} {
		b.Run(fmt.Sprintf("registers=%d", m), func(b *testing.B) {
			p, set := parserSet(b, registerRules(m, "[1m, 5m]"))
			k := set.NewSink()
			feedClients(p, k, start, 100, 300, 0, nil)
			benchWriteText(b, set, start+30)
			b.ReportMetric(float64(set.MemoryUsed())/100, "store-bytes/series")
		})
	}
}
