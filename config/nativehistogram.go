package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// nativeHistogram reads `native_histogram:`, which exports a value rule's window
// distribution as a native histogram to a scrape in protobuf. Without the key a rule gets one
// when it has quantiles and no buckets: its quantile sketch is then the only distribution
// it keeps, and the native histogram is the form of it that adds across instances.
func (rd *ruleDecoder) nativeHistogram(entries []entry, r *Rule, isValue bool) {
	r.NativeHistogram = r.Aggregations.Quantiles && len(r.Buckets) == 0
	e, ok := find(entries, "native_histogram")
	if !ok {
		return
	}
	v := resolve(e.val)
	var on bool
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" || v.Decode(&on) != nil {
		quoted := ""
		if unquotedKind(v) == yaml.ScalarNode {
			quoted = fmt.Sprintf(", not text in quotes (%q); write it without them", v.Value)
		}
		rd.add(e.key.Line, rd.subject, "native_histogram: must be true or false%s", quoted)
		return
	}
	if on && !isValue {
		rd.add(e.key.Line, rd.subject, "native_histogram: needs a value: capture (the histogram counts the values)")
		return
	}
	r.NativeHistogram = on
}
