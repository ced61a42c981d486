package scrape

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/logwindow/logwindow_exporter/parser"
)

const distinctRules = `
global: {windows: [1m, 5m], max_series_per_rule: 100}
rules:
  - name: http_clients
    help: Clients.
    match: '^(?P<addr>[^ ]*) (?P<status>[0-9])[0-9][0-9]$'
    labels: {status_class: '${status}xx'}
    distinct: '${addr}'
  - name: http_requests
    match: '^(?P<addr>[^ ]*) (?P<status>[0-9])[0-9][0-9]$'
    labels: {status_class: '${status}xx'}
`

// TestDistinctFamily feeds lines through parser, sink and collector: each window's
// _window_distinct counts the different texts among its lines (the empty text is one, texts
// differing only past the label-value cap are two), a window without lines reads 0, the
// rule's other families and the rules without distinct: are as before, and the scrape is
// lint-clean.
func TestDistinctFamily(t *testing.T) {
	p, set := parserSet(t, distinctRules)
	k := set.NewSink()
	long := strings.Repeat("a", parser.MaxLabelValueLen)
	// Two minutes ago: 30 clients of 2xx, each three times, and one 5xx client.
	k.SetNow(start, start)
	for range 3 {
		for i := range 30 {
			p.Parse("app", fmt.Appendf(nil, "10.0.0.%d 200", i), k)
		}
	}
	p.Parse("app", []byte("10.9.9.9 503"), k)
	// Now: two of the old 2xx clients, the empty text twice, and two texts equal up to the cap.
	k.SetNow(start+120, start+120)
	for _, line := range []string{"10.0.0.1 200", "10.0.0.2 204", " 200", " 201", long + "x 200", long + "y 200"} {
		p.Parse("app", []byte(line), k)
	}
	now := int64(start + 120)
	c := collectorAt(fixed(set), &now)
	checkAsRegistry(t, c)
	reg := scraped(c)
	want := `
# HELP http_clients_window_distinct Clients. Different values of the rule's distinct: template among the lines (within max(2, 2%) of the exact count) over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE http_clients_window_distinct gauge
http_clients_window_distinct{status_class="2xx",window="1m"} 5
http_clients_window_distinct{status_class="2xx",window="5m"} 33
http_clients_window_distinct{status_class="5xx",window="1m"} 0
http_clients_window_distinct{status_class="5xx",window="5m"} 1
# HELP http_clients_window Clients. Matched lines over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE http_clients_window gauge
http_clients_window{status_class="2xx",window="1m"} 6
http_clients_window{status_class="2xx",window="5m"} 96
http_clients_window{status_class="5xx",window="1m"} 0
http_clients_window{status_class="5xx",window="5m"} 1
# HELP http_requests_window Lines matched by rule http_requests. Matched lines over the sliding window in the window label, computed by the exporter at scrape time.
# TYPE http_requests_window gauge
http_requests_window{status_class="2xx",window="1m"} 6
http_requests_window{status_class="2xx",window="5m"} 96
http_requests_window{status_class="5xx",window="1m"} 0
http_requests_window{status_class="5xx",window="5m"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "http_clients_window_distinct", "http_clients_window", "http_requests_window"); err != nil {
		t.Error(err)
	}
	var families []string
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if name := mf.GetName(); strings.HasPrefix(name, "http_requests") && strings.Contains(name, "distinct") {
			families = append(families, name)
		}
	}
	if families != nil {
		t.Errorf("a rule without distinct: exports %v", families)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
