package config

import (
	"github.com/logwindow/logwindow_exporter/config/quantity"
	"github.com/logwindow/logwindow_exporter/windows/sketch"
)

// distinctRegisters reads `distinct_registers: m`, which exports the m HyperLogLog
// registers of each window's distinct count beside it, for a count over several
// exporters (their registers merge by their maximum). m is a power of two because the
// registers are those of a sketch of that precision, folded from the exporter's own; at
// most 2^14, below the sketch's 2^16, and at least 16, under which the estimate errs by
// more than a quarter.
func (rd *ruleDecoder) distinctRegisters(entries []entry, r *Rule) {
	e, ok := find(entries, "distinct_registers")
	if !ok {
		return
	}
	const least, most = 1 << sketch.MinRegisterPrecision, 1 << sketch.MaxRegisterPrecision
	m, ok := rd.wholeNumber(e, "distinct_registers", least, most)
	if !ok {
		return
	}
	if m&(m-1) != 0 {
		rd.add(e.key.Line, rd.subject, "distinct_registers: %d is not a power of two; give one of 16, 32, 64, … 1024, … %d", m, most)
		return
	}
	if _, ok := find(entries, "distinct"); !ok {
		rd.add(e.key.Line, rd.subject, "distinct_registers: the rule has no distinct: template whose count's registers it would export")
		return
	}
	for _, l := range r.Labels {
		if l.Name == quantity.RegisterLabel {
			rd.add(e.key.Line, rd.subject, "distinct_registers: the rule has a label named %q, the label of the registers' index; rename it", l.Name)
			return
		}
	}
	if r.Top != nil && r.Top.Label == quantity.RegisterLabel {
		rd.add(e.key.Line, rd.subject, "distinct_registers: top: ranks a label named %q, the label of the registers' index; rename it", r.Top.Label)
		return
	}
	r.DistinctRegisters = m
}
