// Package exporter is the Prometheus exposition of a rule set's families: format-neutral
// snapshots of one rule's samples (Shape, RuleSnapshot), one writer per format (the text
// format 0.0.4, OpenMetrics, delimited protobuf with native histograms, and the protobuf
// text formats), which merge in a registry's families by name (Writer), and the HTTP
// handler that negotiates the format and the encoding of a scrape (Handler). It knows
// nothing of where the samples come from: internal/scrape reads them from the store.
package exporter
