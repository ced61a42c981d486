package exporter

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// holding is a Source whose scrape says it holds bytes, and tells what Hold returned.
type holding struct {
	bytes int64
	err   *error
}

func (s holding) Scrape(func(string) bool, expfmt.Format) Scrape { return s }
func (s holding) Write(w *Writer) error {
	*s.err = w.Hold(s.bytes)
	return *s.err
}
func (holding) Close() {}

// TestWriterHold: a scrape served with a request whose context has a hold function tells
// it what it holds, and ends with its error; without one, Hold lets it go on.
func TestWriterHold(t *testing.T) {
	refused := errors.New("no room")
	for _, tc := range []struct {
		name string
		hold func(int64) error
		want error
	}{
		{name: "no limiter", want: nil},
		{name: "room given", hold: func(int64) error { return nil }, want: nil},
		{name: "ended", hold: func(int64) error { return refused }, want: refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var told int64
			var err error
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if tc.hold != nil {
				req = req.WithContext(WithHold(context.Background(), func(n int64) error { told = n; return tc.hold(n) }))
			}
			Handler(holding{bytes: 12345, err: &err}, prometheus.NewRegistry(), nil).ServeHTTP(httptest.NewRecorder(), req)
			if err != tc.want || tc.hold != nil && told != 12345 {
				t.Errorf("Hold returned %v after telling %d, want %v after 12345", err, told, tc.want)
			}
		})
	}
}
