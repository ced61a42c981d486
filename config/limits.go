package config

import "go.yaml.in/yaml/v3"

// The most a rule file may hold of each thing whose count makes loading it, or every line
// or scrape after, cost more: far past what a file written for a real log needs, and low
// enough that a file of MaxFileBytes that reaches them all loads in seconds. Without them a
// file of a million windows, labels or rules (a generator gone wrong) loads for seconds to
// minutes and holds hundreds of megabytes, before a line is read. docs/configuration.md
// lists them.
const (
	maxRules     = 10000  // rules of a file
	maxInputs    = 1000   // inputs of a file
	maxPatterns  = 10000  // patterns of a file
	maxWindows   = 100    // windows of a rule, or of global
	maxLabels    = 100    // labels of a rule
	maxFields    = 1000   // fields of a rule
	maxRewrites  = 1000   // rewrites of a rule
	maxQuantiles = 100    // quantiles of a rule
	maxBuckets   = 1000   // buckets of a rule
	maxInitial   = 100000 // initial label sets of a rule, within max_series_per_rule
	// maxTemplateBytes and maxTemplateRefs bound a template of a label or of distinct:,
	// which every line renders, a reference up to the line's length.
	maxTemplateBytes = 4096
	maxTemplateRefs  = 100
	// maxNameBytes bounds a rule's name and its labels' names, and maxHelpBytes its help:
	// every scrape writes them, a name on every sample.
	maxNameBytes = 256
	maxHelpBytes = 4096
	// maxCandidates bounds an input's log_format: list; each is parsed, compiled and
	// compared with those before it, and tried on the first lines of every file.
	maxCandidates = 100
)

// items counts the items of a list or the keys of a mapping as written, before either is
// decoded: what is over a limit is refused without paying for it. A mapping's keys merged
// in (<<: *anchor) are not counted here; mapping's entries are.
func items(n *yaml.Node) int {
	switch n = resolve(n); n.Kind {
	case yaml.SequenceNode:
		return len(n.Content)
	case yaml.MappingNode:
		return len(n.Content) / 2
	}
	return 0
}

// tooMany reports n things (noun) under e's key past limit, at the key's line with
// subject (the rule, or none for the file), and says so when it did. holder is what the
// limit is of: "a rule", "a file".
func (d *decoder) tooMany(e entry, subject string, n, limit int, noun, holder string) bool {
	if n <= limit {
		return false
	}
	d.add(e.key.Line, subject, "%s: %d %s, more than the %d %s may have", e.key.Value, n, noun, limit, holder)
	return true
}
