package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// pathRuleName is the rule of the scrape benchmark: one series per URL path, which the
// generator's long tail of paths drives to the series budget.
const pathRuleName = "nginx_http_requests_by_path"

// pathRule is that rule, over the example config's captures (its log format's, or its
// NGINX_ACCESS pattern's) and event time.
func pathRule(format bool) string {
	if format {
		return `
- name: ` + pathRuleName + `
  help: HTTP requests by URL path, a rule with as many series as the budget allows.
  labels: {path: '${uri}'}
  timestamp: {capture: time_local}
`
	}
	return `
- name: ` + pathRuleName + `
  help: HTTP requests by URL path, a rule with as many series as the budget allows.
  match: '^%{NGINX_ACCESS}$'
  labels: {path: '${path}'}
  timestamp: {capture: time_local, layout: '` + timeLayout + `'}
`
}

// copyRule is the i-th extra rule of -rules: the example's request count under another
// name, so that it adds the per-rule work of a rule and no new regex.
func copyRule(i int, format bool) string {
	if format {
		return `
- name: ` + copyName(i) + `
  help: A copy of nginx_http_requests, to measure the cost of one more rule over the format.
  labels: {method: '${request_method}', status: '${status}', status_class: '${status_class}'}
  timestamp: {capture: time_local}
`
	}
	return `
- name: ` + copyName(i) + `
  help: A copy of nginx_http_requests, to measure the cost of one more rule over the pattern.
  match: '^%{NGINX_ACCESS}$'
  labels: {method: '${method}', status: '${status}', status_class: '${status_class}xx'}
  timestamp: {capture: time_local, layout: '` + timeLayout + `'}
`
}

func copyName(i int) string { return fmt.Sprintf("nginx_http_requests_copy%d", i) }

// mtailCopies is mtail's version of the extra rules: one more block over the same pattern
// each, as an mtail user adds a rule.
func mtailCopies(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "\ncounter %s_total by method, status, status_class\nNGINX_ACCESS {\n  %[1]s_total[$method][$status][$status_class + \"xx\"]++\n}\n", copyName(i))
	}
	return b.String()
}

// logFormatKeys are the keys of an input's log format, kept from the example config's.
var logFormatKeys = []string{"log_format", "log_format_escape", "apache_log_format"}

// benchConfig is a rule file for the benchmark, made from the example config.
type benchConfig struct {
	// shards is the node input's shards: (followers), or each file input's (parse
	// workers of its lines); 1 or less: none.
	shards int
	// inputs are the log files, each its own input (and so its own goroutine), read from
	// the beginning.
	inputs []string
	// pathRule replaces the rules by pathRule, with maxSeries as the series budget.
	pathRule  bool
	maxSeries int
	// extraRules appends that many copyRules.
	extraRules int
	// format, when set, is the inputs' format (json, logfmt); every rule then reads all the
	// inputs, as fields rules name theirs.
	format string
	// likeMtail removes what nginx.mtail cannot compute: the rules that count distinct
	// values (mtail's program has no counter of theirs), and top: with the label it ranks
	// (which leaves the count mtail keeps). The comparison with mtail is then of the same
	// counters, the exporter's windows, quantiles and buckets besides.
	likeMtail bool
	// node, when set, is the root of pod logs (podLogs) that one input reads in place of
	// inputs, as a node's exporter reads its pods' logs: wrapper: cri, every rule labelled
	// by the pod from the file's path.
	node string
	// rewrite adds pathRewrite to every rule with a path label (the example's top rules),
	// so that the numbers in paths become :id. Their _total does not depend on the path,
	// so the checks stay as they are.
	rewrite bool
	// without names rules to remove: what the rule file costs with them, less what it
	// costs without, is the rules' own cost.
	without []string
}

// pathRewrite is what -rewrite adds to the rules with a path label, as the docs' route
// example: the generator's paths hold ids of a long tail (/api/v1/users/4821/orders).
const pathRewrite = `[{label: path, regex: '/[0-9]+(/|$)', replacement: '/:id$1'}]`

// write reads the example config at src and writes it to dst with the benchmark's inputs
// (and rules). Editing the YAML tree keeps everything else, anchors included, as written.
func (c benchConfig) write(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("%s: not a YAML mapping", src)
	}
	root := doc.Content[0]
	// The inputs' log format, when the rules read one, goes to every input of the copy.
	var formatKeys []string
	if in := getKey(root, "inputs"); in != nil && in.Kind == yaml.SequenceNode && len(in.Content) > 0 && c.format == "" {
		for _, k := range logFormatKeys {
			if v := getKey(in.Content[0], k); v != nil {
				formatKeys = append(formatKeys, k, v.Value)
			}
		}
	}
	inputs := &yaml.Node{Kind: yaml.SequenceNode}
	names := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for i, path := range c.inputs {
		name := "nginx"
		if i > 0 {
			name += strconv.Itoa(i + 1)
		}
		in := mapping(append([]string{"name", name, "path", path, "start_at", "beginning"}, formatKeys...)...)
		if c.format != "" {
			in = mapping("name", name, "path", path, "start_at", "beginning", "format", c.format)
		}
		if c.shards > 1 {
			setKey(in, "shards", scalar(strconv.Itoa(c.shards)))
		}
		inputs.Content = append(inputs.Content, in)
		names.Content = append(names.Content, scalar(name))
	}
	setKey(root, "inputs", inputs)
	var podLabels *yaml.Node
	if c.node != "" {
		inputs, podLabels = nodeInput(c.node, c.shards, formatKeys)
		setKey(root, "inputs", inputs)
	}
	if c.format != "" {
		rules := getKey(root, "rules")
		if rules == nil || rules.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s: no list of rules", src)
		}
		for _, r := range rules.Content {
			setKey(r, "inputs", names)
		}
	}
	if c.likeMtail {
		rules := getKey(root, "rules")
		if rules == nil || rules.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s: no list of rules", src)
		}
		rules.Content = slices.DeleteFunc(rules.Content, func(r *yaml.Node) bool { return getKey(r, "distinct") != nil })
		for _, r := range rules.Content {
			withoutTop(r)
		}
	}
	if len(c.without) > 0 {
		rules := getKey(root, "rules")
		if rules == nil || rules.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s: no list of rules", src)
		}
		expandAliases(rules) // a rule removed may hold an anchor the others refer to
		for _, without := range c.without {
			n := len(rules.Content)
			rules.Content = slices.DeleteFunc(rules.Content, func(r *yaml.Node) bool {
				name := getKey(r, "name")
				return name != nil && name.Value == without
			})
			if len(rules.Content) == n {
				left := ""
				if c.likeMtail {
					left = " left by -like-mtail"
				}
				return fmt.Errorf("-without: %s has no rule %s%s", src, without, left)
			}
		}
	}
	if c.rewrite {
		if err := addRewrite(root); err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
	}
	if c.pathRule {
		var rules yaml.Node
		if err := yaml.Unmarshal([]byte(pathRule(len(formatKeys) > 0)), &rules); err != nil {
			return err
		}
		setKey(root, "rules", rules.Content[0])
		global := getKey(root, "global")
		if global == nil {
			global = mapping()
			setKey(root, "global", global)
		}
		setKey(global, "max_series_per_rule", scalar(strconv.Itoa(c.maxSeries)))
	}
	if c.extraRules > 0 {
		rules := getKey(root, "rules")
		if rules == nil || rules.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s: no list of rules to add to", src)
		}
		for i := 1; i <= c.extraRules; i++ {
			var r yaml.Node
			if err := yaml.Unmarshal([]byte(copyRule(i, len(formatKeys) > 0)), &r); err != nil {
				return err
			}
			rules.Content = append(rules.Content, r.Content[0].Content...)
		}
	}
	if podLabels != nil {
		if err := addLabels(root, podLabels); err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, out, 0o644)
}

// addRewrite gives every rule of root with a path label pathRewrite.
func addRewrite(root *yaml.Node) error {
	rules := getKey(root, "rules")
	if rules == nil || rules.Kind != yaml.SequenceNode {
		return fmt.Errorf("no list of rules")
	}
	var rw yaml.Node
	if err := yaml.Unmarshal([]byte(pathRewrite), &rw); err != nil {
		return err
	}
	n := 0
	for _, r := range rules.Content {
		if labels := getKey(r, "labels"); labels != nil && getKey(labels, "path") != nil {
			setKey(r, "rewrite", rw.Content[0])
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("-rewrite: no rule has a path label to rewrite")
	}
	return nil
}

// expandAliases replaces every alias under n by a copy of what it refers to, a copy to
// its last node: setKey and deleteKey edit a mapping's Content in place, which a shallow
// copy would share with the anchor and every other copy.
func expandAliases(n *yaml.Node) {
	for i, c := range n.Content {
		if c.Kind == yaml.AliasNode {
			n.Content[i] = deepCopy(c.Alias)
		}
		expandAliases(n.Content[i])
	}
}

// deepCopy copies n and everything under it, without its anchor.
func deepCopy(n *yaml.Node) *yaml.Node {
	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = deepCopy(k)
	}
	return &c
}

// withoutTop removes top: from rule r, and the label it ranks.
func withoutTop(r *yaml.Node) {
	top := getKey(r, "top")
	if top == nil {
		return
	}
	deleteKey(r, "top")
	if labels := getKey(r, "labels"); labels != nil {
		if ranked := getKey(top, "label"); ranked != nil {
			deleteKey(labels, ranked.Value)
		}
		if len(labels.Content) == 0 {
			deleteKey(r, "labels")
		}
	}
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

// mapping builds a mapping node from key, value, key, value...
func mapping(kv ...string) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Content = append(m.Content, scalar(kv[i]), scalar(kv[i+1]))
	}
	return m
}

func getKey(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// deleteKey removes key and its value from mapping m.
func deleteKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}

// setKey replaces the value of key in mapping m, or appends the key.
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, scalar(key), v)
}
