package exporter

import "testing"

// TestAcceptsGzip: gzip is sent when the client's Accept-Encoding gives it a positive
// quality above identity's, a coding named for itself taking its quality from its own
// entry rather than from * (RFC 9110, 12.5.3), and identity not named being the least
// preferred coding the client still takes.
func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		headers []string
		want    bool
	}{
		{nil, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{" gzip ; q = 0.5 "}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip;q=abc"}, false},
		{[]string{"gzip;q=NaN"}, false},
		{[]string{"gzip, gzip;q=NaN"}, true},
		{[]string{"gzip;q=2"}, false},
		{[]string{"identity;q=-1, gzip;q=0.1"}, true},
		{[]string{"br, gzip;q=0.001"}, true},
		{[]string{"identity", "gzip"}, false},
		{[]string{"identity;q=0.5, gzip"}, true},
		{[]string{"*"}, false},
		{[]string{"*;q=0"}, false},
		{[]string{"*;q=0, gzip"}, true},
		{[]string{"gzip;q=0.5, *"}, false},
		{[]string{"gzip;q=0, *"}, false},
		// identity refused outright, gzip taken: gzip, though * says more of identity.
		{[]string{"identity;q=0, gzip;q=0.5, *;q=0.8"}, true},
		{[]string{"*;q=0.5, identity;q=0.1"}, true},
		{[]string{"identity;q=0"}, false},
	} {
		if got := acceptsGzip(tc.headers); got != tc.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tc.headers, got, tc.want)
		}
	}
}
