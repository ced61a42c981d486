package config

import (
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// The file is decoded by walking yaml.Nodes rather than with yaml.Unmarshal into structs:
// that keeps the line of every key for messages, reports every unknown or duplicate key
// instead of stopping at the first, and words errors for users instead of in Go types.

// entry is one key of a mapping with its value; key carries the line for messages.
type entry struct {
	key *yaml.Node
	val *yaml.Node
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// kindName words a node's kind for "must be a list, not a mapping" messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if foreignTagged(n) {
			// rules: !include rules.yaml, which a file of another tool's may have.
			return fmt.Sprintf("a value tagged %s: %s", n.ShortTag(), plainYAML())
		}
		if n.ShortTag() == "!!null" {
			return "empty"
		}
		if kind := unquotedKind(n); kind == yaml.SequenceNode || kind == yaml.MappingNode {
			return fmt.Sprintf("text in quotes (%q), which without them would be %s", n.Value, kindName(&yaml.Node{Kind: kind}))
		}
		return "a single value"
	}
	return "something else"
}

// unquotedKind is what a quoted value would be without its quotes, as Helm's quote
// renders a list, a mapping or a boolean as text: a flow list or mapping's kind, a
// boolean's ScalarNode; 0 for a value that is not quoted, or would still be text.
func unquotedKind(n *yaml.Node) yaml.Kind {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 {
		return 0
	}
	var plain yaml.Node
	if yaml.Unmarshal([]byte(n.Value), &plain) != nil || len(plain.Content) != 1 {
		return 0
	}
	switch v := plain.Content[0]; {
	case v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle != 0, v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle != 0:
		return v.Kind
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool":
		return yaml.ScalarNode
	}
	return 0
}

// scalarKey is the text of key's single value in mapping m, "" when it has none.
func scalarKey(m *yaml.Node, key string) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k, v := resolve(m.Content[i]), resolve(m.Content[i+1]); k.Value == key && v.Kind == yaml.ScalarNode {
			return v.Value
		}
	}
	return ""
}

// isNull reports whether a value was left empty (`key:` or `key: ~`).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// mapping returns the entries of a mapping node in file order, with YAML merge keys
// (`<<: *anchor`) expanded: keys written in the mapping override merged ones, as YAML
// specifies. A key written twice is a problem (YAML forbids it; yaml.Node does not check).
func (d *decoder) mapping(n *yaml.Node, subject, what string) ([]entry, bool) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		if isNull(n) {
			return nil, true
		}
		d.add(n.Line, subject, "%smust be a mapping, not %s", at(what), kindName(n))
		return nil, false
	}
	var own, merged []entry
	seen := map[string]*yaml.Node{}
	d.keysChecked(n)
	var mergeKey *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			if mergeKey != nil {
				d.add(k.Line, subject, "%s%s", at(what), mergedTwice(mergeKey))
				continue
			}
			mergeKey = k
			merged = d.merge(v, subject, what, merged, map[*yaml.Node]bool{})
			continue
		}
		if k = resolve(k); k.Kind != yaml.ScalarNode {
			d.add(k.Line, subject, "%sa key must be a plain name, not %s", at(what), kindName(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.add(k.Line, subject, "%skey %q is given twice (first on line %d)", at(what), k.Value, first.Line)
			continue
		}
		seen[k.Value] = k
		own = append(own, entry{k, v})
	}
	out := make([]entry, 0, len(own)+len(merged))
	for _, e := range merged {
		if _, overridden := seen[e.key.Value]; !overridden {
			seen[e.key.Value] = e.key
			out = append(out, e)
		}
	}
	return append(out, own...), true
}

// merge appends the entries of the mapping(s) a merge key names, those that win first (the
// caller keeps the first of a key): of a list, the earlier mapping's; of a mapping, its own
// before those it merges itself. Each mapping is merged at most once (visited), so nested
// merges stay linear in the size of the file.
func (d *decoder) merge(v *yaml.Node, subject, what string, out []entry, visited map[*yaml.Node]bool) []entry {
	src := []*yaml.Node{v}
	if rv := resolve(v); rv.Kind == yaml.SequenceNode {
		src = rv.Content
	}
	for _, s := range src {
		m := resolve(s)
		if m.Kind != yaml.MappingNode {
			d.add(s.Line, subject, "%s<< must name a mapping (<<: *anchor), not %s", at(what), kindName(m))
			continue
		}
		if visited[m] {
			continue
		}
		visited[m] = true
		// A key given twice in a mapping only merged is told once, whatever merges it.
		report := d.keysChecked(m)
		seen := map[string]*yaml.Node{}
		var mergeKey *yaml.Node
		var nested []entry
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, val := m.Content[i], m.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				if mergeKey != nil {
					if report {
						d.add(k.Line, subject, "%s%s", at(what), mergedTwice(mergeKey))
					}
					continue
				}
				mergeKey = k
				nested = d.merge(val, subject, what, nested, visited)
				continue
			}
			if k = resolve(k); k.Kind == yaml.ScalarNode {
				if first, dup := seen[k.Value]; dup {
					if report {
						d.add(k.Line, subject, "%skey %q is given twice (first on line %d)", at(what), k.Value, first.Line)
					}
					continue
				}
				seen[k.Value] = k
				out = append(out, entry{k, val})
			}
		}
		out = append(out, nested...)
	}
	return out
}

// keysChecked marks mapping m as checked for keys given twice, and reports whether it was
// not yet: a mapping that is a rule's own and merged into others, or merged into many, is
// told of once.
func (d *decoder) keysChecked(m *yaml.Node) bool {
	if d.checkedKeys[m] {
		return false
	}
	if d.checkedKeys == nil {
		d.checkedKeys = map[*yaml.Node]bool{}
	}
	d.checkedKeys[m] = true
	return true
}

// mergedTwice is the problem of a second merge key in a mapping, first the first.
func mergedTwice(first *yaml.Node) string {
	return fmt.Sprintf("key \"<<\" is given twice (first on line %d); merge several mappings with one: <<: [*a, *b]", first.Line)
}

// known reports keys that are not in the allowed set; a typo gets a suggestion.
func (d *decoder) known(entries []entry, subject, what string, allowed ...string) {
	for _, e := range entries {
		if slices.Contains(allowed, e.key.Value) {
			continue
		}
		if hint, ok := foreignKeys[e.key.Value]; ok && slices.Contains(allowed, hint.key) {
			d.add(e.key.Line, subject, "%sunknown key %q: it is %s", at(what), e.key.Value, hint.msg)
			continue
		}
		anchor := ""
		if e.val.Anchor != "" && suggest(e.key.Value, allowed) == "" {
			anchor = fmt.Sprintf(": it holds only the anchor &%s, and the file has no key for anchors alone; put the anchor on the first value that uses it (a rule's key), and alias it after", e.val.Anchor)
		}
		d.add(e.key.Line, subject, "%sunknown key %q%s (known keys: %s)%s",
			at(what), e.key.Value, suggest(e.key.Value, allowed), strings.Join(allowed, ", "), anchor)
	}
}

// foreignKeys are keys of other tools' configurations that users paste here, too far
// from the key that takes their value for suggest to find it: what to say instead where
// that key is known.
var foreignKeys = map[string]struct{ key, msg string }{
	"log-format-upstream":    {"log_format", "the ingress-nginx controller's ConfigMap key; an input gives its value as log_format:"},
	"log-format-stream":      {"log_format", "the ingress-nginx controller's ConfigMap key; an input gives its value as log_format:"},
	"log-format-escape-json": {"log_format_escape", "the ingress-nginx controller's ConfigMap key; an input gives it as log_format_escape: json"},
	"log-format-escape-none": {"log_format_escape", "the ingress-nginx controller's ConfigMap key; an input gives it as log_format_escape: none"},
}

// find returns the entry for key, if present.
func find(entries []entry, key string) (entry, bool) {
	for _, e := range entries {
		if e.key.Value == key {
			return e, true
		}
	}
	return entry{}, false
}

// scalar returns the text of a single value; an empty value reads as "".
func (d *decoder) scalar(e entry, subject, what string) (string, bool) {
	v := resolve(e.val)
	if v.Kind != yaml.ScalarNode {
		d.add(e.key.Line, subject, "%smust be a single value, not %s", at(what), kindName(v))
		return "", false
	}
	if d.badTag(v, e.key.Line, subject, what) {
		return "", false
	}
	if isNull(v) {
		return "", true
	}
	return v.Value, true
}

// coreTags are the tags a value may be given: those of plain YAML's own types, which say
// what its text would be read as anyway.
var coreTags = []string{"!!str", "!!int", "!!float", "!!bool", "!!null", "!!seq", "!!map"}

// badTag reports, at line, a value given a tag other than the core ones, or a core tag
// that its value is not of. A tool's !include or !ENV, or !!binary, which a dump of bytes
// writes, would be taken for the text written after it (a regex of base64, a path of
// "${LOG_PATH}"), with no word said; and so would !!int abc, where !!null on text would
// read it as empty, the text lost.
func (d *decoder) badTag(v *yaml.Node, line int, subject, what string) bool {
	if foreignTagged(v) {
		d.add(line, subject, "%stag %s: %s", at(what), v.ShortTag(), plainYAML())
		return true
	}
	if not := mistagged(v); not != "" {
		d.add(line, subject, "%stag %s: %s, which the tag says it is%s; leave the tag out", at(what), v.ShortTag(), not, octalWhy(v))
		return true
	}
	return false
}

// mistagged says what n, given a core tag, is instead of what its tag says; "" when it is
// what its tag says, or has no tag.
func mistagged(n *yaml.Node) string {
	if n.Style&yaml.TaggedStyle == 0 {
		return ""
	}
	kind := map[string]yaml.Kind{"!!seq": yaml.SequenceNode, "!!map": yaml.MappingNode}[n.ShortTag()]
	if kind == 0 {
		kind = yaml.ScalarNode
	}
	switch {
	case n.Kind != kind:
		return "the value is " + kindName(n) + ", not " + kindName(&yaml.Node{Kind: kind})
	case n.Kind == yaml.ScalarNode && n.ShortTag() != "!!str":
		var v any
		if n.Decode(&v) != nil && !unbounded(n) {
			return fmt.Sprintf("YAML does not read %q as %s", n.Value, tagNames[n.ShortTag()])
		}
	}
	return ""
}

// octalWhy says why n, tagged !!int and refused, is no integer when it is decimal digits
// after a leading 0 (0999): YAML 1.1's octal 0755, which the YAML library reads an
// integer's leading 0 as, has no 8 or 9, so it reads the value as a float instead (its
// Decode refuses !!float 0999 as a !!int); "" for any other.
func octalWhy(n *yaml.Node) string {
	digits := strings.TrimLeft(strings.ReplaceAll(n.Value, "_", ""), "+-")
	if n.ShortTag() != "!!int" || len(digits) < 2 || digits[0] != '0' || strings.Trim(digits, "0123456789") != "" || !strings.ContainsAny(digits, "89") {
		return ""
	}
	var f float64
	if err := (&yaml.Node{Kind: yaml.ScalarNode, Value: n.Value}).Decode(&f); err != nil {
		return ""
	}
	return fmt.Sprintf(": a leading 0 makes an integer octal (0755), whose digits are 0 to 7, so YAML reads %s as the number %s", n.Value, strconv.FormatFloat(f, 'g', -1, 64))
}

// unbounded reports whether n, which Decode refused, is an integer or a number of its tag
// that Go's int64, uint64 or float64 has no room for: YAML's have no bound, and Decode
// refuses one as it refuses abc.
func unbounded(n *yaml.Node) bool {
	switch n.ShortTag() {
	case "!!int":
		// The spellings Decode reads, the _ left out, as it does.
		_, ok := new(big.Int).SetString(strings.ReplaceAll(n.Value, "_", ""), 0)
		return ok
	case "!!float":
		return yamlFloat().MatchString(n.Value)
	}
	return false
}

// yamlFloat is a number as YAML 1.2's core schema writes one (its .inf and .nan Decode
// reads).
var yamlFloat = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
})

// tagNames word the core tags of a single value.
var tagNames = map[string]string{"!!int": "an integer", "!!float": "a number", "!!bool": "true or false", "!!null": "empty (null, ~ or nothing)"}

// plainYAML says why a foreign tag is refused, wherever it stands.
func plainYAML() string {
	return fmt.Sprintf("a rule file's values are plain YAML, whose tags are %s and %s; "+
		"no tag includes a file, reads the environment or decodes (!!binary): write the value itself",
		strings.Join(coreTags[:len(coreTags)-1], ", "), coreTags[len(coreTags)-1])
}

// foreignTagged reports whether n is given a tag other than the core ones.
func foreignTagged(n *yaml.Node) bool {
	return n.Style&yaml.TaggedStyle != 0 && !slices.Contains(coreTags, n.ShortTag())
}

// collectionTags reports, as badTag, the tags of what scalar and list do not read as
// a value: a list, a mapping, a key (a value is reported where it is read, with the
// rule or input it is of). Aliases are not followed: what they name is reported where
// it is written.
func (d *decoder) collectionTags(n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		d.badTag(n, n.Line, "", "")
		for i, c := range n.Content {
			if i%2 == 0 && c.Kind == yaml.ScalarNode {
				if c.ShortTag() != "!!merge" { // <<, tagged as it is by default
					d.badTag(c, c.Line, "", "")
				}
				continue
			}
			d.collectionTags(c)
		}
	case yaml.SequenceNode:
		d.badTag(n, n.Line, "", "")
		for _, c := range n.Content {
			d.collectionTags(c)
		}
	}
}

// list returns the texts of a list of single values.
func (d *decoder) list(e entry, subject, what string) ([]string, bool) {
	v := resolve(e.val)
	if v.Kind != yaml.SequenceNode {
		d.add(e.key.Line, subject, "%smust be a list (e.g. [a, b]), not %s", at(what), kindName(v))
		return nil, false
	}
	out := make([]string, 0, len(v.Content))
	ok := true
	for _, item := range v.Content {
		it := resolve(item)
		if it.Kind != yaml.ScalarNode || isNull(it) {
			d.add(item.Line, subject, "%seach item must be a single value, not %s", at(what), kindName(it))
			ok = false
			continue
		}
		if d.badTag(it, item.Line, subject, what) {
			ok = false
			continue
		}
		out = append(out, it.Value)
	}
	return out, ok
}

// words is list for a list whose items are single words (durations, names, numbers): an
// item of a flow list that YAML read over two lines is two with a comma missing between
// them ([1m, 5m⏎ 15m]), reported at the line it went on to, where the check of the item
// would name the list's key. An item among named is not: it is a name with a space that
// was wrapped, which the list's check takes. An alias is not looked at: its text is where
// it is anchored, not in the list.
func (d *decoder) words(e entry, subject, what string, named map[string]bool) ([]string, bool) {
	texts, ok := d.list(e, subject, what)
	if v := resolve(e.val); ok && v.Style&yaml.FlowStyle != 0 {
		for _, it := range v.Content {
			if it.Kind != yaml.AliasNode && it.Style == 0 && strings.Contains(it.Value, " ") && !named[it.Value] && d.overLines(it) {
				d.add(it.Line+1, subject, "%s%q is written over two lines with no comma between them (from line %d), which YAML reads as one item; put a comma between its parts", at(what), it.Value, it.Line)
				ok = false
			}
		}
	}
	return texts, ok
}

// maxWrittenLineBytes bounds the line overLines reads: a list written by hand, where a
// comma goes missing, is on short lines, and a file of one long line with many items
// would read it for each.
const maxWrittenLineBytes = 4096

// overLines reports whether a scalar's text goes on past the line it starts on; false
// for a line past maxWrittenLineBytes, and past the first maxProblems scalars of a file
// looked at, which bounds the work on a file of many long lines.
func (d *decoder) overLines(n *yaml.Node) bool {
	// A file in UTF-16 (with its byte order mark) is not read here: its lines are not
	// the text's.
	bom := string(d.text[:min(2, len(d.text))])
	if d.linesRead >= maxProblems || n.Line < 1 || bom == "\xff\xfe" || bom == "\xfe\xff" {
		return false
	}
	d.linesRead++
	if d.lineStarts == nil {
		d.lineStarts = []int{0}
		for i, c := range d.text {
			if c == '\n' {
				d.lineStarts = append(d.lineStarts, i+1)
			}
		}
	}
	if n.Line > len(d.lineStarts) {
		return false
	}
	end := len(d.text)
	if n.Line < len(d.lineStarts) {
		end = d.lineStarts[n.Line] - 1
	}
	line := string(d.text[d.lineStarts[n.Line-1]:end])
	if n.Line == 1 {
		// YAML counts the columns of the first line after its byte order mark.
		line = strings.TrimPrefix(line, "\ufeff")
	}
	if len(line) > maxWrittenLineBytes {
		return false
	}
	col := []rune(line)
	if n.Column < 1 || n.Column > len(col) {
		return false
	}
	// An anchored item's column is its anchor's (&a 5m).
	written := string(col[n.Column-1:])
	if n.Anchor != "" {
		written = strings.TrimLeft(strings.TrimPrefix(written, "&"+n.Anchor), " \t")
	}
	return !strings.HasPrefix(written, n.Value)
}

// at prefixes a message with the key path it is about ("windows: "), or nothing at the top.
func at(what string) string {
	if what == "" {
		return ""
	}
	return what + ": "
}

// maxAliasBytes is how much a file's aliases may add to it, written out, when the file is
// smaller: a few shared blocks (a timestamp:, a rule's defaults merged with <<:) add
// kilobytes. Past it the aliases are a bomb ("billion laughs": each anchor repeating the
// previous ten times), or one rule's keys repeated thousands of times, whose decoding
// costs what a file of that size would, from a file of kilobytes.
const maxAliasBytes = 1 << 20

// aliasMeter measures what the aliases of a document add to it written out: a scalar
// counts its text and one byte, an alias what its anchor's node counts, its own aliases
// written out too. Each node is measured once, so a bomb costs its size to measure.
type aliasMeter struct {
	// sizes are the written-out sizes of the anchored nodes measured so far.
	sizes map[*yaml.Node]int
	added int
	limit int
	// over is the alias at which added passed limit; the measure stops there.
	over *yaml.Node
}

// aliasBomb returns the alias at which the aliases of root add more than maxAliasBytes, or
// as much as the file's size when it is larger, to the file written out; nil when they
// add less.
func aliasBomb(root *yaml.Node, fileSize int) *yaml.Node {
	m := &aliasMeter{sizes: map[*yaml.Node]int{}, limit: max(maxAliasBytes, fileSize)}
	m.size(root)
	return m.over
}

func (m *aliasMeter) size(n *yaml.Node) int {
	if m.over != nil {
		return 0
	}
	var s int
	switch n.Kind {
	case yaml.AliasNode:
		// An alias inside its own anchor (`&a [*a]`) finds no size yet: it adds nothing
		// here, and the decoder refuses what it makes.
		s = m.sizes[n.Alias]
		if m.added += s; m.added > m.limit {
			m.over = n
		}
		return s
	case yaml.ScalarNode:
		s = len(n.Value) + 1
	default:
		for _, c := range n.Content {
			s += m.size(c)
		}
	}
	if n.Anchor != "" {
		m.sizes[n] = s
	}
	return s
}

// viaAliases moves the problems and warnings found from from and warnedFrom on, while item
// (a rule or an input) was decoded, that stand at a line of a value item only aliases
// (timestamp: *time_local, <<: *defaults) to the alias's line, naming the anchored line
// too: at the anchor's line alone, an error of the rule using it would point at the rule
// that wrote the anchor, which may be fine.
func (d *decoder) viaAliases(item *yaml.Node, from, warnedFrom int) {
	if len(d.problems.list) == from && len(d.warned) == warnedFrom {
		return
	}
	lo, hi, aliases := ownLines(item, nil)
	if len(aliases) == 0 {
		return
	}
	anchors := reachedAnchors(aliases)
	move := func(p *Problem) {
		if p.Line == 0 || p.Line >= lo && p.Line <= hi {
			return
		}
		if r := innermost(anchors, p.Line); r != nil {
			p.Msg += r.repeats(p.Line)
			p.Line = r.own().by.Line
		}
	}
	kept := d.problems.list[:from]
	for _, p := range d.problems.list[from:] {
		delete(d.listed, p)
		move(&p)
		if !d.listed[p] {
			d.listed[p] = true
			kept = append(kept, p)
		}
	}
	d.problems.list = kept
	for i := warnedFrom; i < len(d.warned); i++ {
		move(&d.warned[i])
	}
}

// reached is an anchored value that the aliases of a rule or an input lead to: its lines as
// written, and the alias that leads there, itself in the value of reached from, or in the
// item's own lines when from is nil.
type reached struct {
	lo, hi int
	by     *yaml.Node
	from   *reached
}

// reachedAnchors are the anchored values the aliases of an item lead to, each once, in
// the order a search from the item's aliases, nearest first, finds them: an anchor that an
// alias of the item names is reached by it, not by another alias whose value aliases it
// again. Each anchor is looked in once, however many aliases repeat it, so an item
// repeating an anchor of many aliases many times (within what the alias meter allows)
// costs the anchor's size, not that times the repeats.
func reachedAnchors(aliases []*yaml.Node) []*reached {
	seen := map[*yaml.Node]bool{}
	var out []*reached
	add := func(a *yaml.Node, from *reached) {
		if !seen[a.Alias] {
			seen[a.Alias] = true
			out = append(out, &reached{by: a, from: from})
		}
	}
	for _, a := range aliases {
		add(a, nil)
	}
	for i := 0; i < len(out); i++ {
		r := out[i]
		var inner []*yaml.Node
		r.lo, r.hi, inner = ownLines(r.by.Alias, nil)
		for _, b := range inner {
			add(b, r)
		}
	}
	return out
}

// innermost is the anchored value of anchors, in their order, that holds line on the
// fewest lines, nil when none holds it: where one anchor stands in the value of another
// (&outer holding &inner), a line of the inner one is the inner one's, which the item
// aliases by its name, even when it merges the outer one too. Of values on as many lines
// (an anchor on the line of another), the nearest alias's wins.
func innermost(anchors []*reached, line int) *reached {
	var best *reached
	for _, r := range anchors {
		if r.lo <= line && line <= r.hi && (best == nil || r.hi-r.lo < best.hi-best.lo) {
			best = r
		}
	}
	return best
}

// own is the alias in the item's own lines that leads to r.
func (r *reached) own() *reached {
	for r.from != nil {
		r = r.from
	}
	return r
}

// maxRepeatsNamed bounds the aliases a message names on the way from a line to the item's
// alias: a chain of anchors each aliasing the one before may be thousands long.
const maxRepeatsNamed = 3

// repeats words how the item repeats line of r's value: "(line 5, which *when repeats
// here)", or through the aliases between, "(line 5, which *when repeats on line 10, which
// *mid repeats here)"; past maxRepeatsNamed of them, the first and how many more.
func (r *reached) repeats(line int) string {
	var chain []*yaml.Node
	for h := r; h != nil; h = h.from {
		chain = append(chain, h.by)
	}
	var b strings.Builder
	fmt.Fprintf(&b, " (line %d", line)
	between, skipped := chain[:len(chain)-1], 0
	if len(between) > maxRepeatsNamed {
		between, skipped = between[:1], len(between)-1
	}
	for _, a := range between {
		fmt.Fprintf(&b, ", which *%s repeats on line %d", a.Value, a.Line)
	}
	fmt.Fprintf(&b, ", which *%s repeats here", chain[len(chain)-1].Value)
	if skipped > 0 {
		fmt.Fprintf(&b, " through %d more aliases", skipped)
	}
	b.WriteByte(')')
	return b.String()
}

// ownLines is the first and last line of n as written, aliases not followed, and the
// aliases in it, appended to aliases. A scalar over lines (a | block) ends at its last
// (about: a folded one's blank lines are not counted).
func ownLines(n *yaml.Node, aliases []*yaml.Node) (lo, hi int, _ []*yaml.Node) {
	lo, hi = n.Line, n.Line
	switch n.Kind {
	case yaml.AliasNode:
		aliases = append(aliases, n)
	case yaml.ScalarNode:
		hi += strings.Count(strings.TrimRight(n.Value, "\n"), "\n")
		if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			hi++ // the text starts on the line after its | or >
		}
	}
	for _, c := range n.Content {
		var clo, chi int
		clo, chi, aliases = ownLines(c, aliases)
		lo, hi = min(lo, clo), max(hi, chi)
	}
	return lo, hi, aliases
}
