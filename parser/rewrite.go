package parser

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/logwindow/logwindow_exporter/config"
)

// rewriter is the rewrites of one label (config.Rule.RewritesOf), applied in order. Labels
// of any rule with the same rewrites share one, and so one cache per scratch.
type rewriter struct {
	rewrites []config.Rewrite
	// capped says, per rewrite, that its output may pass maxDirectBytes: it is then built
	// match by match and stops past the cap, from at most minMatches[k] matches, enough
	// to pass it (-1: all).
	capped     []bool
	minMatches []int
}

// maxDirectBytes is the most a rewrite of a capped value may give for it to run as
// Regexp.ReplaceAllString does, whole, before the cut: above it, the replacement of
// every match would cost more than the value can keep ('z*' to 70 bytes turns 1 KB into
// 70 KB, three such rewrites into 350 MB).
const maxDirectBytes = 16 << 10

// newRewriter returns the rewriter of rws, knowing of each how far it may lengthen a value.
func newRewriter(rws []config.Rewrite) *rewriter {
	w := &rewriter{rewrites: rws, capped: make([]bool, len(rws)), minMatches: make([]int, len(rws))}
	for k, rw := range rws {
		// What a match adds besides its groups' text: the replacement with every group
		// empty. The groups' text is at most the value's once per reference, as matches
		// do not overlap.
		none := make([]int, 2*(rw.Regexp.NumSubexp()+1))
		for i := range none {
			none[i] = -1
		}
		literal := len(rw.Regexp.ExpandString(nil, rw.Replacement, "", none))
		refs := strings.Count(rw.Replacement, "$")
		most := MaxLabelValueLen + (MaxLabelValueLen+1)*literal + refs*MaxLabelValueLen
		w.capped[k] = most > maxDirectBytes
		// Each match adds literal bytes at least: past this many the value is past the cap.
		w.minMatches[k] = -1
		if literal > 0 {
			w.minMatches[k] = MaxLabelValueLen/literal + 1
		}
	}
	return w
}

// apply rewrites a label value: each rewrite replaces every match in what the previous
// left, which is made a label value again (valid UTF-8, at most MaxLabelValueLen bytes)
// at each step, since a replacement may lengthen it.
func (w *rewriter) apply(v string) string {
	for k, rw := range w.rewrites {
		if w.capped[k] {
			v = replaceCapped(rw, v, w.minMatches[k])
		} else {
			v = rw.Regexp.ReplaceAllString(v, rw.Replacement)
		}
		v = v[:capLen(v)]
	}
	v = strings.ToValidUTF8(v, string(utf8.RuneError))
	return v[:capLen(v)]
}

// replaceCapped is rw.Regexp.ReplaceAllString(v, rw.Replacement) up to the first byte past
// MaxLabelValueLen at least: it stops there. At most n matches are searched for (-1: all),
// enough to pass the cap.
func replaceCapped(rw config.Rewrite, v string, n int) string {
	var out []byte
	last := 0
	for _, m := range rw.Regexp.FindAllStringSubmatchIndex(v, n) {
		out = append(out, v[last:m[0]]...)
		out = rw.Regexp.ExpandString(out, rw.Replacement, v, m)
		last = m[1]
		if len(out) > MaxLabelValueLen {
			return string(out)
		}
	}
	return string(append(out, v[last:]...))
}

// rewriterKey identifies a label's rewrites, so that equal lists share a rewriter.
func rewriterKey(rws []config.Rewrite) string {
	var b strings.Builder
	for _, rw := range rws {
		b.WriteString(rw.Regexp.String())
		b.WriteByte(0)
		b.WriteString(rw.Replacement)
		b.WriteByte(0)
	}
	return b.String()
}

// The rewrite cache of one scratch and rewriter keeps at most two generations of
// rewriteGenerationBytes each, counted as the bytes of the raw value and of its result
// when that differs, plus rewriteEntryBytes for the map's slot (a string and a
// rewritten) and its share of the map's spare room (TestRewriteCacheBounded measures
// the heap kept at about 1.3–1.5 times what is counted).
//
// When the newest generation is full the older one's values are let go and the newest
// becomes the older: a value used again within a generation stays (it is copied into the newest when
// found in the older), one not seen for a whole generation is forgotten. So a burst of
// distinct values (ids in paths) costs at most two generations per parsing goroutine and
// rewriter, whatever its length, and pushes out only what it outlasts.
//
// The bound is fixed rather than charged to the store's memory account
// (--series.max-bytes): the cache holds nothing that cannot be computed again, so room
// it took from the series would fold real label sets into overflow to save CPU; and the
// parser sits below the store, which it does not know.
const (
	rewriteGenerationBytes = 256 << 10
	rewriteEntryBytes      = 80
)

// rewriteCache remembers a rewriter's results per raw value for one scratch, which one
// goroutine uses at a time: no lock, and no cache line shared with another core.
type rewriteCache struct {
	w        *rewriter
	cur, old map[string]rewritten
	// bytes is what cur holds, counted as the bound above counts it.
	bytes int
}

// rewritten is a raw value and what its rewrites make of it. The raw value is kept beside
// its key so that moving it from the older generation to the newest allocates nothing.
type rewritten struct {
	raw, value string
}

// get returns raw rewritten. A value seen in the current generation costs one map lookup
// that does not allocate.
func (c *rewriteCache) get(raw []byte) string {
	if e, ok := c.cur[string(raw)]; ok {
		return e.value
	}
	e, ok := c.old[string(raw)]
	if !ok {
		e.raw = string(raw)
		if e.value = c.w.apply(e.raw); e.value == e.raw {
			e.value = e.raw // one string for both, counted once
		}
	}
	c.put(e)
	return e.value
}

// put adds e to the current generation, starting a new one when it would pass the bound.
func (c *rewriteCache) put(e rewritten) {
	cost := rewriteEntryBytes + len(e.raw)
	if e.value != e.raw {
		cost += len(e.value)
	}
	switch {
	case c.cur == nil:
		c.cur = make(map[string]rewritten)
	case c.bytes+cost > rewriteGenerationBytes:
		// The oldest generation's map is emptied for the newest, keeping its room: a
		// generation holds about as many values as the one before, so the newest then
		// neither grows table by table nor leaves a map to the collector.
		c.old, c.cur, c.bytes = c.cur, c.old, 0
		if c.cur == nil {
			c.cur = make(map[string]rewritten, len(c.old))
		}
		clear(c.cur)
	}
	c.cur[e.raw] = e
	c.bytes += cost
}

// rewrite replaces key[start:], a label value, by its rewritten value under rewriter w.
func (s *scratch) rewrite(w int, key []byte, start int) []byte {
	return append(key[:start], s.rewrites[w].get(key[start:])...)
}

// unrewritten renders, for Explain, the labels and items of r that have a rewriter without
// it, and returns those that differ from e's (rewritten) ones, nil elsewhere. What it
// renders is not left for the next rule of the match to take as its labels.
func (s *scratch) unrewritten(r *rule, m *match, e *Event) (labels, items [][]byte) {
	if r.labelRewriters != nil {
		s.render(r.labels, nil, m, false)
		s.keyMatch = 0 // no match is numbered 0
		labels = changed(r.labelRewriters, s.labels, e.Labels)
	}
	if r.itemRewriters != nil {
		s.renderItems(r.items, nil, nil, m, false)
		s.itemsMatch = 0
		items = changed(r.itemRewriters, s.items, e.Items)
	}
	return labels, items
}

// changed copies the values of raw that have a rewriter and differ from their rewritten
// counterpart; nil when there is none.
func changed(rewriters []int, raw, rewritten [][]byte) [][]byte {
	var out [][]byte
	for i, w := range rewriters {
		if w >= 0 && string(raw[i]) != string(rewritten[i]) {
			if out == nil {
				out = make([][]byte, len(rewriters))
			}
			out[i] = slices.Clone(raw[i])
		}
	}
	return out
}
