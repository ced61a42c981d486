package parser

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// rewriteChains are the rewrites the reference tests put on a label, each a list of
// {regex, replacement} applied in order: the routes of the docs, and replacements that
// lengthen (past the cap too), delete, match empty text, refer to named groups or read
// Unicode classes.
var rewriteChains = [][][2]string{
	{{`/[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}`, `/:uuid`}, {`/[0-9]+(/|$)`, `/:id$1`}},
	{{`/[0-9a-f]{32,}`, `/:hash`}, {`\?.*`, ``}},
	{{`.`, `$0$0$0`}},
	{{`x*`, `-`}},
	{{`^/(?P<first>[^/]*)/.*$`, `/${first}/*`}, {`(?i)API`, `api`}},
	{{`\p{L}+`, `<$0>`}, {`\x{FFFD}`, `?`}},
	{{`^$`, `(empty)`}},
	{{`[0-9]`, `$$`}},
	// Past the cap at each step: replaced match by match, stopping there.
	{{`z*`, strings.Repeat("y", 70)}, {`z*`, strings.Repeat("w", 70)}, {`[^y]*`, "é"}},
	{{`(.)`, strings.Repeat("$1", 20)}, {`(?P<c>\pL)`, "${c}" + strings.Repeat("ü", 30)}},
}

// chainYAML writes a rewrite: list for label over the chain c.
func chainYAML(label string, c [][2]string) string {
	var b strings.Builder
	for _, rw := range c {
		fmt.Fprintf(&b, "      - {label: %s, regex: '%s', replacement: '%s'}\n", label, rw[0], rw[1])
	}
	return b.String()
}

// referenceRewrite is what a label value must be after chain c: the value as a label
// without rewrites (valid UTF-8, capped), then regexp.ReplaceAllString of each rewrite in
// turn, each result made a label value again.
func referenceRewrite(c [][2]string, v string) string {
	label := func(s string) string {
		s = validLabel(s)
		for len(s) > MaxLabelValueLen {
			_, size := utf8.DecodeLastRuneInString(s)
			s = s[:len(s)-size]
		}
		return s
	}
	v = label(v)
	for _, rw := range c {
		re, ok := referenceRegexps.Load(rw[0])
		if !ok {
			re, _ = referenceRegexps.LoadOrStore(rw[0], regexp.MustCompile(rw[0]))
		}
		v = label(re.(*regexp.Regexp).ReplaceAllString(v, rw[1]))
	}
	return v
}

// referenceRegexps are the chains' regexes compiled once, for the reference.
var referenceRegexps sync.Map

// rewriteRules are, for chain c: a rule rewriting its route label, one with the same
// labels and rewrites (which shares what the first rendered), one rewriting the label it
// ranks (top), one with the same labels and no rewrite (which must not share them), and
// one rewriting a label of another name with the same chain.
func rewriteRules(t testing.TB, c [][2]string) []*config.Rule {
	return mustParse(t, `
rules:
  - name: rewritten
    match: '^(?P<v>.*)$'
    labels: {route: '${v}', raw: '${v}'}
    rewrite:
`+chainYAML("route", c)+`
  - name: again
    match: '^(?P<v>.*)$'
    labels: {route: '${v}', raw: '${v}'}
    rewrite:
`+chainYAML("route", c)+`
  - name: ranked
    match: '^(?P<v>.*)$'
    labels: {route: '${v}', raw: '${v}'}
    rewrite:
`+chainYAML("route", c)+`
    top: {label: route, k: 3}
  - name: plain
    match: '^(?P<v>.*)$'
    labels: {route: '${v}', raw: '${v}'}
  - name: other_name
    match: '^(?P<v>.*)$'
    labels: {path: '${v}'}
    rewrite:
`+chainYAML("path", c)).Rules
}

// rewriteSink keeps, per rule, the label values and items of the last event.
type rewriteSink struct {
	rec   recorder
	items map[int][]string
}

func (s *rewriteSink) Event(e *Event) {
	s.rec.Event(e)
	var items []string
	for _, it := range e.Items {
		items = append(items, string(it))
	}
	s.items[e.Rule] = items
}

func (s *rewriteSink) Drop(rule int, reason DropReason) { s.rec.Drop(rule, reason) }

// checkRewrite parses v and checks every rule's labels and items against the reference.
func checkRewrite(t *testing.T, parse func(line []byte, sink Sink), rules []*config.Rule, c [][2]string, v string) {
	t.Helper()
	sink := &rewriteSink{rec: recorder{t: t, rules: rules}, items: map[int][]string{}}
	parse([]byte(v), sink)
	label := referenceRewrite(nil, v)
	want := referenceRewrite(c, v)
	wants := []record{
		{Rule: "rewritten", Labels: "raw=" + label + ",route=" + want, Value: 1},
		{Rule: "again", Labels: "raw=" + label + ",route=" + want, Value: 1},
		{Rule: "ranked", Labels: "raw=" + label, Value: 1},
		{Rule: "plain", Labels: "raw=" + label + ",route=" + label, Value: 1},
		{Rule: "other_name", Labels: "path=" + want, Value: 1},
	}
	if fmt.Sprint(sink.rec.got) != fmt.Sprint(wants) {
		t.Fatalf("value %q:\n got %q\nwant %q", v, sink.rec.got, wants)
	}
	if got := sink.items[2]; len(got) != 1 || got[0] != want {
		t.Fatalf("value %q: top item %q, want %q", v, got, want)
	}
}

// adversarialValues are label values at the edges: empty, ids at the end and in the
// middle, runs of ids, invalid UTF-8, the key separator, values at and past the cap (a
// replacement may push a value past it, and a cut may fall inside a rune).
var adversarialValues = []string{
	"", "/", "//", "/api/users/8412", "/api/users/8412/", "/api/users/8412/orders/7",
	"/1/2/3/4", "/v1/00000000-0000-0000-0000-000000000000/x", "/V1/DEADBEEF-0000-0000-0000-000000000000",
	"/a?x=1/2", "/API/é/ü", "\xff/1\xfe", "a\xffb", "/" + strings.Repeat("0123456789abcdef", 4),
	strings.Repeat("a", MaxLabelValueLen), strings.Repeat("é", MaxLabelValueLen/2) + "/1",
	strings.Repeat("x", MaxLabelValueLen-1) + "é", strings.Repeat("/7", 700), "xxxx", "日本/123",
}

// randomValue builds a value from pieces that the chains match, around and across.
func randomValue(r *rand.Rand) string {
	pieces := []string{"/", "/", "api", "API", "users", "8412", "0", "-", "deadbeef", "cafe",
		"0123abcd-0123-4567-89ab-0123456789ab", "?q=1", "x", "é", "日本", "\xff", "\xe2\x82", "$1", " ",
		strings.Repeat("7", 40), strings.Repeat("ab", 300)}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// TestRewriteReference holds the parser's rewritten labels and top values to
// regexp.ReplaceAllString applied in order, over adversarial and random values, each
// parsed repeatedly so that values come from the cache as well as from the regexes, on
// Parse and on a Session, enough of them for the cache to change generations.
func TestRewriteReference(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	for i, c := range rewriteChains {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			rules := rewriteRules(t, c)
			p, err := New(rules)
			if err != nil {
				t.Fatal(err)
			}
			sess := p.NewSession()
			parsers := map[string]func([]byte, Sink){
				"Parse":   func(line []byte, s Sink) { p.Parse("", line, s) },
				"Session": func(line []byte, s Sink) { sess.ParseWrapped("", line, nil, s) },
			}
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			values := append([]string{}, adversarialValues...)
			n := 400
			if race.Enabled {
				n = 40 // regexp runs some 30 times slower under the race detector
			}
			for range n {
				values = append(values, randomValue(r))
			}
			// Long distinct values, so that the cache changes generations meanwhile (on the
			// first chain only: the others are slow on them and change nothing of it).
			if i == 0 {
				for j := range 300 {
					values = append(values, fmt.Sprintf("/%d/%s", j, strings.Repeat("a/1", 300)))
				}
			}
			for name, parse := range parsers {
				t.Run(name, func(t *testing.T) {
					for range 2 {
						for _, v := range values {
							checkRewrite(t, parse, rules, c, v)
						}
					}
				})
			}
			if i == 0 && sess.s.rewrites[0].old == nil {
				t.Errorf("the session's cache never changed generations")
			}
		})
	}
}

// FuzzRewrite: values are untrusted text. Whatever a line holds, the rewritten labels
// must be what the reference gives, also when the value comes from the cache.
func FuzzRewrite(f *testing.F) {
	for _, v := range adversarialValues {
		f.Add(v)
	}
	type built struct {
		rules []*config.Rule
		sess  *Session
	}
	var all []built
	for _, c := range rewriteChains {
		rules := rewriteRules(f, c)
		p, err := New(rules)
		if err != nil {
			f.Fatal(err)
		}
		all = append(all, built{rules, p.NewSession()})
	}
	f.Fuzz(func(t *testing.T, v string) {
		if strings.ContainsAny(v, "\n\r") {
			return
		}
		for i, b := range all {
			parse := func(line []byte, s Sink) { b.sess.ParseWrapped("", line, nil, s) }
			checkRewrite(t, parse, b.rules, rewriteChains[i], v)
			checkRewrite(t, parse, b.rules, rewriteChains[i], v)
		}
	})
}

// cacheBytes is what a rewrite cache holds, counted from its maps as the bound counts it.
func cacheBytes(c *rewriteCache) int {
	n := 0
	for _, m := range []map[string]rewritten{c.cur, c.old} {
		for k, e := range m {
			n += rewriteEntryBytes + len(k)
			if e.value != k {
				n += len(e.value)
			}
		}
	}
	return n
}

// TestRewriteCacheBounded: a burst of distinct ids through one session keeps the cache
// within its two generations, in what it counts and in the heap it keeps, and a value used
// throughout the burst is still cached after it.
func TestRewriteCacheBounded(t *testing.T) {
	p := mustNew(t, `
rules:
  - name: routes
    match: '^(?P<v>.*)$'
    labels: {route: '${v}'}
    rewrite: [{label: route, regex: '/[0-9]+', replacement: '/:id'}]
`)
	sess := p.NewSession()
	sink := &nopSink{}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	burst := 100_000
	if race.Enabled {
		burst = 30_000 // still three times what two generations hold
	}
	hot := []byte("/api/hot/1")
	line := make([]byte, 0, 64)
	for i := range burst {
		line = fmt.Appendf(line[:0], "/api/users/%d/orders/%d", i, i*7)
		sess.ParseWrapped("", line, nil, sink)
		if i%1000 == 0 {
			sess.ParseWrapped("", hot, nil, sink)
		}
	}
	grown := int64(heap()) - int64(before)
	t.Logf("heap grew by %d bytes over %d lines; the cache counts %d", grown, burst, cacheBytes(&sess.s.rewrites[0]))
	c := &sess.s.rewrites[0]
	// The documented bound: two generations of 256 KiB as counted.
	const bound = 512 << 10
	if n := cacheBytes(c); n > bound {
		t.Errorf("cache holds %d bytes as counted, more than %d", n, bound)
	}
	// Unbounded, the burst would keep an entry of about 100 bytes per line (3 to 10 MB).
	if limit := int64(4 * bound); grown > limit {
		t.Errorf("heap grew by %d bytes over the burst, want at most %d", grown, limit)
	}
	if _, ok := c.cur[string(hot)]; !ok {
		if _, ok := c.old[string(hot)]; !ok {
			t.Errorf("the value used throughout the burst was forgotten")
		}
	}
	runtime.KeepAlive(sess)
}

// TestRewriteShared: labels with equal rewrites share one rewriter, hence one cache per
// scratch; different ones do not.
func TestRewriteShared(t *testing.T) {
	p := mustNew(t, `
rules:
  - name: a
    match: '^(?P<v>.*)$'
    labels: {route: '${v}', path: '${v}', other: '${v}'}
    rewrite:
      - {label: route, regex: '/[0-9]+', replacement: '/:id'}
      - {label: path, regex: '/[0-9]+', replacement: '/:id'}
      - {label: other, regex: '/[0-9]+', replacement: '/:n'}
  - name: b
    match: '^(?P<v>.*)$'
    labels: {route: '${v}'}
    rewrite: [{label: route, regex: '/[0-9]+', replacement: '/:id'}]
`)
	g := p.groups[0]
	// Labels are sorted: other, path, route.
	if got := fmt.Sprint(g.rules[0].labelRewriters, g.rules[1].labelRewriters); got != "[0 1 1] [1]" {
		t.Errorf("rewriters %s, want [0 1 1] [1]", got)
	}
	if n := len(p.NewSession().s.rewrites); n != 2 {
		t.Errorf("%d caches, want 2", n)
	}
}

// TestExplainRewrite: Explain shows a rewritten value and, where the rewrite changed it,
// the value before; the next rule of the match, with the same template and no rewrite,
// still sees the value as it is.
func TestExplainRewrite(t *testing.T) {
	rules := rewriteRules(t, rewriteChains[0])
	p, err := New(rules)
	if err != nil {
		t.Fatal(err)
	}
	// show writes values as a list, a nil value as -, no list at all as none.
	show := func(vs [][]byte) string {
		if len(vs) == 0 {
			return "none"
		}
		parts := make([]string, len(vs))
		for i, v := range vs {
			parts[i] = "-"
			if v != nil {
				parts[i] = string(v)
			}
		}
		return strings.Join(parts, " ")
	}
	for _, tc := range []struct {
		value string
		want  []string // per rule: labels | items | raw | raw items
	}{
		{"/api/users/8412", []string{
			"/api/users/8412 /api/users/:id | none | - /api/users/8412 | none",
			"/api/users/8412 /api/users/:id | none | - /api/users/8412 | none",
			"/api/users/8412 | /api/users/:id | none | /api/users/8412",
			"/api/users/8412 /api/users/8412 | none | none | none",
			"/api/users/:id | none | /api/users/8412 | none",
		}},
		{"/api/users", []string{
			"/api/users /api/users | none | none | none",
			"/api/users /api/users | none | none | none",
			"/api/users | /api/users | none | none",
			"/api/users /api/users | none | none | none",
			"/api/users | none | none | none",
		}},
	} {
		t.Run(tc.value, func(t *testing.T) {
			ex := p.Explain("", []byte(tc.value))
			for i, want := range tc.want {
				res := ex.Rules[i]
				got := strings.Join([]string{show(res.Event.Labels), show(res.Event.Items), show(res.Raw), show(res.RawItems)}, " | ")
				if res.Outcome != Counted || got != want {
					t.Errorf("rule %s: %s\n got %s\nwant %s", rules[i].Name, res.Outcome, got, want)
				}
			}
		})
	}
}

// mustNew is the parser of the rules of a config's text.
func mustNew(t *testing.T, yaml string) *Parser {
	t.Helper()
	p, err := New(mustParse(t, yaml).Rules)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// BenchmarkRewriteUnique is the cost of a value the cache cannot have: unique 1 KB
// numeric paths through the rewrites of the docs (uuid, hash, id), and through chains a
// config may write that lengthen the value past its cap ('z*' to 70 bytes, three times).
func BenchmarkRewriteUnique(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	values := make([]string, 1024)
	for i := range values {
		var v strings.Builder
		for v.Len() < MaxLabelValueLen-12 {
			fmt.Fprintf(&v, "/%d", r.IntN(1_000_000))
		}
		values[i] = v.String()
	}
	long := strings.Repeat("y", 70)
	for _, c := range []struct {
		name  string
		chain [][2]string
	}{
		{"docs", [][2]string{{`/[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}`, `/:uuid`}, {`/[0-9a-f]{32,}`, `/:hash`}, {`/[0-9]+(/|$)`, `/:id$1`}}},
		{"growing", [][2]string{{`z*`, long}, {`z*`, long}, {`z*`, long}}},
	} {
		var rws []config.Rewrite
		for _, rw := range c.chain {
			rws = append(rws, config.Rewrite{Regexp: regexp.MustCompile(rw[0]), Replacement: rw[1]})
		}
		w := newRewriter(rws)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if v := w.apply(values[i%len(values)]); len(v) > MaxLabelValueLen {
					b.Fatalf("%d bytes", len(v))
				}
				i++
			}
		})
	}
}
