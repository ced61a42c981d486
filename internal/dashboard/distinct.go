package dashboard

import (
	"fmt"

	"github.com/logwindow/logwindow_exporter/config/quantity"
)

// FleetDistinct is the PromQL of the number of different values of a distinct: template
// over every instance the selector of its _window_distinct_register family selects (m
// registers, `distinct_registers: m`), per label set of by: the registers' maximum across
// instances is the registers of the union of their values, and HyperLogLog's estimate of
// them is α_m·m²/Σ2^−M[j], α_m = 0.7213/(1+1.079/m), or linear counting, m·ln(m/V), when V
// registers are 0 and the estimate is at most 2.5m (“HyperLogLog: the analysis of a
// near-optimal cardinality estimation algorithm”, Flajolet et al., 2007). Its standard
// error is 1.04/√m; the window label must be fixed by the selector or be among by.
func FleetDistinct(selector string, m int, by []string) string {
	registers := fmt.Sprintf("max%s (%s)", groupBy(append(by[:len(by):len(by)], quantity.RegisterLabel)...), selector)
	raw := fmt.Sprintf("0.7213 / (1 + 1.079 / %d) * %d^2 / sum%s (2 ^ -(%s))", m, m, groupBy(by...), registers)
	linear := fmt.Sprintf("%d * ln(%d / count%s (%s == 0))", m, m, groupBy(by...), registers)
	return fmt.Sprintf("(%s and %s <= %g) or %s", linear, raw, 2.5*float64(m), raw)
}
