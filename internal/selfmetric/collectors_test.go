package selfmetric

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The memory collector says where its bound came from when told, and nothing of it
// otherwise; it sends nothing without a Set to read.
func TestMemorySource(t *testing.T) {
	for _, tc := range []struct {
		name, source string
		ok           bool
		want         string
	}{
		{name: "from a cgroup", source: "cgroup_v2", ok: true, want: `
# HELP logwindow_series_max_bytes_source 1 for where the --series.max-bytes bound came from: flag, cgroup_v2 or cgroup_v1 (half the container's memory limit), or default (512MiB: no limit found).
# TYPE logwindow_series_max_bytes_source gauge
logwindow_series_max_bytes_source{source="cgroup_v2"} 1
# HELP logwindow_series_max_bytes The --series.max-bytes bound; 0 is none.
# TYPE logwindow_series_max_bytes gauge
logwindow_series_max_bytes 1.34217728e+08
`},
		{name: "no source", ok: true, want: `
# HELP logwindow_series_max_bytes The --series.max-bytes bound; 0 is none.
# TYPE logwindow_series_max_bytes gauge
logwindow_series_max_bytes 1.34217728e+08
`},
		{name: "no set", source: "flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var failed atomic.Uint64
			c := NewMemory(func() (int64, int64, bool) { return 5, 128 << 20, tc.ok }, tc.source, &failed)
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(c)
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want), SeriesMaxBytesSource.Name, SeriesMaxBytes.Name); err != nil {
				t.Error(err)
			}
			if failed.Load() != 0 {
				t.Errorf("%d metrics failed", failed.Load())
			}
		})
	}
}
