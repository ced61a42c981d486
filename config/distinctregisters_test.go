package config

import (
	"slices"
	"testing"

	"github.com/logwindow/logwindow_exporter/config/quantity"
)

// TestDistinctRegistersKey: `distinct_registers: m` adds the registers' family, m of them
// under the register label, read from the distinct count's summary, and the linter sees the
// label; without the key the rule exports no registers. The registers are read at scrape
// time: the window state, and so the fingerprint, does not change with them.
func TestDistinctRegistersKey(t *testing.T) {
	const base = `
rules:
  - name: clients
    match: '(?P<addr>[^ ]+) (?P<vhost>[^ ]+)'
    labels: {vhost: '${vhost}'}
    distinct: '${addr}'
`
	for _, tc := range []struct {
		name string
		key  string
		m    int
	}{
		{"none", "", 0},
		{"fewest", "    distinct_registers: 16\n", 16},
		{"1024", "    distinct_registers: 1024\n", 1024},
		{"most", "    distinct_registers: 16384\n", 16384},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(base+tc.key), "registers.yaml")
			if err != nil {
				t.Fatal(err)
			}
			r := c.Rules[0]
			if r.DistinctRegisters != tc.m {
				t.Fatalf("DistinctRegisters %d, want %d", r.DistinctRegisters, tc.m)
			}
			fams := r.WindowFamilies()
			at := slices.IndexFunc(fams, func(f quantity.Family) bool { return f.Suffix == quantity.DistinctRegisterSuffix })
			if tc.m == 0 {
				if at >= 0 {
					t.Fatalf("registers exported without the key")
				}
			} else if at < 0 || fams[at].Registers != tc.m || fams[at].RegisterValues == nil {
				t.Fatalf("no family of %d registers among %+v", tc.m, fams)
			} else if distinct := slices.IndexFunc(fams, func(f quantity.Family) bool { return f.Suffix == quantity.DistinctSuffix }); fams[at].Summary != fams[distinct].Summary {
				t.Errorf("the registers read summary %d, the count %d", fams[at].Summary, fams[distinct].Summary)
			}
			if fp := fingerprintOf(t, base); r.Fingerprint != fp {
				t.Errorf("the key changed the fingerprint: a reload would drop the windows")
			}
			i := slices.IndexFunc(families(r), func(f family) bool { return f.name == "clients"+quantity.DistinctRegisterSuffix })
			if i < 0 || !slices.Equal(families(r)[i].labels, []string{"vhost", "window", quantity.RegisterLabel}) {
				t.Errorf("the linter does not see the register label: %+v", families(r))
			}
		})
	}
}
