package scrape

import (
	"bytes"
	"sync"
	"testing"

	"github.com/prometheus/common/expfmt"
)

// TestConcurrentScrapes runs scrapes of every format at once over the same rules, every
// kind of family among them (meant for -race): each writes what a scrape alone writes, so
// that the readers, views and buffers scrapes keep for one another are never shared by two
// at a time.
func TestConcurrentScrapes(t *testing.T) {
	c := formatScrape(t)
	formats := []expfmt.Format{expfmt.FmtText, expfmt.FmtOpenMetrics_1_0_0, expfmt.FmtProtoDelim, expfmt.FmtProtoText}
	want := make([][]byte, len(formats))
	for i, f := range formats {
		want[i] = encoded(t, c, nil, f)
	}
	const scrapers, rounds = 6, 10
	var wg sync.WaitGroup
	for s := range scrapers {
		wg.Go(func() {
			for r := range rounds {
				i := (s + r) % len(formats)
				var got bytes.Buffer
				if err := c.Encode(&got, nil, formats[i]); err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(got.Bytes(), want[i]) {
					t.Errorf("scraper %d, round %d, %s: differs from a scrape alone:\n%s", s, r, formats[i], firstDiff(got.Bytes(), want[i]))
					return
				}
			}
		})
	}
	wg.Wait()
}
