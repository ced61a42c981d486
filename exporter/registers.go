package exporter

import (
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// The samples of a Registers family are m per series and window, told apart by the
// register label: as the registry orders samples, by their label values in name order, a
// family's samples run register by register ("0", "1", "10", …) within each group of the
// series and windows that agree on the pairs sorting before the register label.

// SetRegisters sets series i's registers of window wi (the RuleSpec's Registers values);
// regs is copied. A window whose registers are not set has no register samples.
func (r *RuleSnapshot) SetRegisters(i, wi int, regs []uint8) {
	m := r.shape.spec.Registers
	k := i*len(r.shape.spec.Windows) + wi
	copy(r.regs[k*m:(k+1)*m], regs)
	r.regSet[k] = true
}

// registerShape is what the writers need of the register label, made once per Shape: a
// scrape writes each register's pair m times per series and window.
type registerShape struct {
	// sorted lists the register indexes by their label text.
	sorted []int
	// text and pb are the label's pairs, by index, as each format encodes them.
	text []string
	pb   [][]byte
}

func newRegisterShape(spec *RuleSpec) registerShape {
	var rs registerShape
	values := make([]string, spec.Registers)
	for k := range values {
		values[k] = strconv.Itoa(k)
		rs.sorted = append(rs.sorted, k)
		rs.text = append(rs.text, string(appendTextPair(nil, spec.RegisterLabel, values[k])))
		rs.pb = append(rs.pb, appendLabelPair(nil, spec.RegisterLabel, values[k]))
	}
	slices.SortFunc(rs.sorted, func(a, b int) int { return strings.Compare(values[a], values[b]) })
	return rs
}

// walkRegisters walks the Registers family of r in the order of the exposition, until sw
// failed.
func walkRegisters(sw sampleWriter, r *RuleSnapshot) {
	s, m := r.shape, r.shape.spec.Registers
	nw := len(s.spec.Windows)
	pairs := r.regRun[:0]
	r.eachWindow(func(i, wi int) bool {
		if r.regSet[i*nw+wi] {
			pairs = append(pairs, [2]int32{int32(i), int32(wi)})
		}
		return true
	})
	r.regRun = pairs
	before := s.regOrder[:slices.Index(s.regOrder, pairExtra)]
	for len(pairs) > 0 {
		n := 1
		for n < len(pairs) && r.sameBefore(before, pairs[0], pairs[n]) {
			n++
		}
		run := pairs[:n]
		pairs = pairs[n:]
		sw.registerRun(run)
		for _, k := range s.reg.sorted {
			for j, p := range run {
				// A run is every series and window when no label sorts before the
				// register's: it is checked sample by sample.
				if sw.failed() != nil {
					return
				}
				sw.register(j, k, r.regs[(int(p[0])*nw+int(p[1]))*m+k])
			}
		}
	}
}

// sameBefore reports whether two (series, window) pairs agree on the pairs listed in
// before (regOrder's before the register label).
func (r *RuleSnapshot) sameBefore(before []int, a, b [2]int32) bool {
	for _, li := range before {
		if li == pairWindow {
			if a[1] != b[1] {
				return false
			}
		} else if r.labels[a[0]][li] != r.labels[b[0]][li] {
			return false
		}
	}
	return true
}

// runPairs encodes, for each (series, window) pair of a run, the pairs of its register
// samples but the register's own, in name order: those before it and those after it,
// each joined by commas when sep; at[3j:3j+3] are where the run's j-th starts, where the
// register's pair goes and where it ends in b.
func runPairs[P string | []byte](r *RuleSnapshot, b []byte, at []int, run [][2]int32, windows []P, sep bool, pair func(b []byte, name, value string) []byte) ([]byte, []int) {
	s := r.shape
	b, at = b[:0], at[:0]
	for _, p := range run {
		start := len(b)
		cut := start
		at = append(at, start)
		for _, li := range s.regOrder {
			if li == pairExtra {
				cut = len(b)
				at = append(at, cut)
				continue
			}
			if sep && len(b) > cut {
				b = append(b, ',')
			}
			if li == pairWindow {
				b = append(b, windows[p[1]]...)
			} else {
				b = pair(b, s.spec.LabelNames[li], r.labels[p[0]][li])
			}
		}
		at = append(at, len(b))
	}
	return b, at
}

func (t *textWriter) registerRun(run [][2]int32) {
	t.scratch, t.at = runPairs(t.r, t.scratch, t.at, run, t.r.shape.text.windowPairs, true, appendTextPair)
}

func (t *textWriter) register(j, k int, v uint8) {
	at := t.at[3*j : 3*j+3]
	t.sample(t.name(), t.scratch[at[0]:at[1]], t.r.shape.reg.text[k], t.scratch[at[1]:at[2]], "", float64(v))
}

func (p *protoWriter) registerRun(run [][2]int32) {
	p.pairs, p.at = runPairs(p.r, p.pairs, p.at, run, p.r.shape.pb.windowPairs, false, appendLabelPair)
}

func (p *protoWriter) register(j, k int, v uint8) {
	at, reg := p.at[3*j:3*j+3], p.r.shape.reg.pb[k]
	if p.counting {
		n := at[2] - at[0] + len(reg) + valueBytes
		p.size += protowire.SizeTag(fieldFamilyMetric) + protowire.SizeBytes(n)
		return
	}
	m := append(p.metric[:0], p.pairs[at[0]:at[1]]...)
	m = append(m, reg...)
	m = append(m, p.pairs[at[1]:at[2]]...)
	p.metric = appendValue(m, fieldMetricGauge, float64(v))
	p.end()
}
