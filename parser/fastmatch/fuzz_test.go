package fastmatch

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// A small grammar of log-shaped regexes. genPattern turns fuzzer bytes into
// an expression and a line built along with it, one piece at a time, so that
// lines that match (or almost match) are common, not only random bytes.

type piece struct {
	expr    string
	samples []string // text the piece may produce
}

var litPieces = []piece{
	{` `, []string{" "}}, {`"`, []string{`"`}}, {`\[`, []string{"["}}, {`\]`, []string{"]"}},
	{`,`, []string{","}}, {`, `, []string{", "}}, {`-`, []string{"-"}}, {`a`, []string{"a"}},
	{`ab`, []string{"ab"}}, {`GET`, []string{"GET", "get"}}, {`é`, []string{"é", "\xc3"}},
	{`\.`, []string{"."}}, {`/`, []string{"/"}}, {`:`, []string{":"}},
	{"\u00e9t\u00e9", []string{"été"}}, {`\x{FFFD}`, []string{"\ufffd", "\xff", "\xef\xbf"}},
	{`(?i:k)`, []string{"k", "K", "\u212a"}}, {`(?i:get)`, []string{"GeT", "get"}},
}

var classPieces = []piece{
	{`\S`, []string{"a", "1", ",", "é", "\xff", `"`, "€"}},
	{`\d`, []string{"0", "7", "٣"}},
	{`\w`, []string{"a", "Z", "_", "9", "é"}},
	{`\s`, []string{" ", "\t", "\n"}},
	{`[^ "]`, []string{"a", "?", "é", "\xe2\x82"}},
	{`[^\]]`, []string{"a", " ", "[", "\xc3\xa9"}},
	{`[^"]`, []string{"a", " ", "\xff"}},
	{`[^ "?]`, []string{"a", "/", "="}},
	{`[a-z]`, []string{"a", "q", "z"}},
	{`[A-Z]`, []string{"G", "E", "T"}},
	{`[\d.]`, []string{"0", ".", "5"}},
	{`.`, []string{"a", " ", "é", "\xff", "\n"}},
	{`(?s:.)`, []string{"\n", "a"}},
	{`[^,]`, []string{"a", " ", "€"}},
	{`[à-ü]`, []string{"é", "ü", "\xc3"}},
	{`\pL`, []string{"a", "é", "ß"}},
	{`[^\x{FFFD}]`, []string{"a", "\ufffd", "\xff"}},
	{`[\x80-\x{10FFFF}]`, []string{"é", "\xff", "\U0001F600"}},
	{`[^\x00-\x7f]`, []string{"é", "\x80"}},
	{`(?i:[a-c])`, []string{"a", "C"}},
	{`[[:alpha:]]`, []string{"a", "Q"}},
}

// quant is a repetition suffix and how many copies of a sample to write for it.
type quant struct {
	expr   string
	lo, hi int
}

var (
	quantifiers = []quant{{"", 1, 1}, {"", 1, 1}, {"", 1, 1}, {"*", 0, 3}, {"+", 1, 3}, {"?", 0, 1},
		{"{2}", 2, 2}, {"{1,3}", 1, 3}, {"{2,}", 2, 4}, {"{0,2}", 0, 2}}
	groupOps = []quant{{"", 1, 1}, {"", 1, 1}, {"?", 0, 1}, {"*", 0, 2}, {"+", 1, 3}, {"??", 0, 1},
		{"*?", 0, 2}, {"+?", 1, 2}, {"{1,2}", 1, 2}}
	assertions = []piece{{`\b`, nil}, {`\B`, nil}, {`^`, nil}, {`$`, nil}, {`(?m:^)`, []string{"\n"}}, {`(?m:$)`, []string{"\n"}}}
	noise      = []string{"", " ", ",", "a", "é", "\xff", "\n", `"`, "]", "0"}
)

// shape hands out the fuzzer's bytes as small choices (0 when exhausted).
type shape struct {
	b []byte
	i int
}

func (s *shape) pick(n int) int {
	if s.i >= len(s.b) {
		return 0
	}
	s.i++
	return int(s.b[s.i-1]) % n
}

type patternGen struct {
	s      *shape
	expr   strings.Builder
	line   []byte
	groups int
}

// genPattern builds an expression and a line from shape bytes.
func genPattern(b []byte) (expr string, line []byte) {
	g := &patternGen{s: &shape{b: b}}
	if g.s.pick(2) == 0 {
		g.expr.WriteString("^")
	}
	g.seq(0)
	if g.s.pick(2) == 0 {
		g.expr.WriteString("$")
	}
	return g.expr.String(), g.line
}

func (g *patternGen) seq(depth int) {
	for n := 1 + g.s.pick(4); n > 0; n-- {
		g.item(depth)
	}
}

// copies picks how many times a repeated piece appears in the line.
func (g *patternGen) copies(q quant) int {
	return q.lo + g.s.pick(q.hi-q.lo+1)
}

// emit writes one of p's samples, or now and then a bit of noise.
func (g *patternGen) emit(p piece) {
	if len(p.samples) > 0 && g.s.pick(16) < 15 {
		g.line = append(g.line, p.samples[g.s.pick(len(p.samples))]...)
	} else {
		g.line = append(g.line, noise[g.s.pick(len(noise))]...)
	}
}

func (g *patternGen) item(depth int) {
	switch k := g.s.pick(9); {
	case k < 2:
		p := litPieces[g.s.pick(len(litPieces))]
		g.expr.WriteString(p.expr)
		g.emit(p)
	case k < 5 || depth >= 3:
		p := classPieces[g.s.pick(len(classPieces))]
		q := quantifiers[g.s.pick(len(quantifiers))]
		g.expr.WriteString(p.expr + q.expr)
		if q.expr != "" && g.s.pick(3) == 0 {
			g.expr.WriteString("?") // lazy
		}
		for n := g.copies(q); n > 0; n-- {
			g.emit(p)
		}
	case k < 7:
		switch g.s.pick(3) {
		case 0:
			g.expr.WriteString("(")
			g.groups++
		case 1:
			g.groups++
			fmt.Fprintf(&g.expr, "(?P<g%d>", g.groups)
		default:
			g.expr.WriteString("(?:")
		}
		start := len(g.line)
		g.seq(depth + 1)
		body := string(g.line[start:])
		q := groupOps[g.s.pick(len(groupOps))]
		g.expr.WriteString(")" + q.expr)
		g.line = g.line[:start]
		for n := g.copies(q); n > 0; n-- {
			g.line = append(g.line, body...)
		}
	case k < 8:
		g.expr.WriteString("(?:")
		n := 2 + g.s.pick(2)
		chosen := g.s.pick(n)
		for i := range n {
			if i > 0 {
				g.expr.WriteString("|")
			}
			start := len(g.line)
			g.seq(depth + 1)
			if i != chosen {
				g.line = g.line[:start]
			}
		}
		g.expr.WriteString(")")
	default:
		p := assertions[g.s.pick(len(assertions))]
		g.expr.WriteString(p.expr)
		if len(p.samples) > 0 && g.s.pick(2) == 0 {
			g.line = append(g.line, p.samples[0]...)
		}
	}
}

// checkShape runs the differential check for one fuzz input: the generated
// line, the fuzzer's line, and the fuzzer's line spliced into the generated one.
func checkShape(t testing.TB, shapeBytes, extra []byte) (accepted, decided, anyMatch bool) {
	expr, line := genPattern(shapeBytes)
	re, m := pair(t, expr)
	if m == nil {
		return false, false, false
	}
	cut := 0
	if len(shapeBytes) > 0 {
		cut = int(shapeBytes[0]) % (len(line) + 1)
	}
	spliced := append(append(append([]byte{}, line[:cut]...), extra...), line[cut:]...)
	decided = true
	for _, l := range [][]byte{line, extra, spliced} {
		d, ok := sameAsRegexp(t, re, m, l)
		decided = decided && d
		anyMatch = anyMatch || ok
	}
	return true, decided, anyMatch
}

// FuzzMatch checks the matcher against regexp on random log-shaped regexes
// from the grammar above and random lines.
func FuzzMatch(f *testing.F) {
	seeds := []struct{ shape, line string }{
		{"\x00\x03\x02\x00\x05\x01", `203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 0 "-" "ua" 0.034 0.032`},
		{"\x01\x02\x05\x00\x04\x03\x02\x07\x01", "0.001, 0.020"},
		{"\x00\x01\x06\x02\x03\x00\x00\x09\x08", "caf\u00e9 \xff\xc3 x"},
		{"\x05\x05\x05\x05\x05\x05\x05\x05", "a, b, c, "},
		{"\x08\x07\x06\x05\x04\x03\x02\x01\x00", "line\nnext"},
	}
	for _, s := range seeds {
		f.Add([]byte(s.shape), []byte(s.line))
	}
	f.Fuzz(func(t *testing.T, shapeBytes, line []byte) {
		checkShape(t, shapeBytes, line)
	})
}

// TestGrammar runs the fuzz check over many seeded shapes, so that every
// test run covers the grammar, and makes sure the check is not vacuous:
// most generated expressions must be accepted, most must be decided by the
// matcher alone, and many must match.
func TestGrammar(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 3000
	var accepted, decided, matchedN int
	for range n {
		shapeBytes := make([]byte, 8+rng.IntN(40))
		for i := range shapeBytes {
			shapeBytes[i] = byte(rng.Uint32())
		}
		extra := []byte(noise[rng.IntN(len(noise))] + noise[rng.IntN(len(noise))])
		a, d, ok := checkShape(t, shapeBytes, extra)
		if a {
			accepted++
		}
		if d {
			decided++
		}
		if ok {
			matchedN++
		}
	}
	t.Logf("%d shapes: %d accepted, %d decided without regexp, %d with a match", n, accepted, decided, matchedN)
	if accepted < n*7/10 || decided < accepted*9/10 || matchedN < accepted/2 {
		t.Errorf("grammar coverage too low: %d accepted, %d decided, %d matched of %d", accepted, decided, matchedN, n)
	}
}

// FuzzCompile feeds arbitrary expressions: Compile must accept or reject
// every one regexp accepts (and fail on the others), and what it accepts
// must match like regexp. It reaches syntax the grammar does not write.
func FuzzCompile(f *testing.F) {
	for _, s := range []struct{ expr, line string }{
		{nginxMain, trickyLines[len(trickyLines)-8]},
		{`\A(?U)(a+)(?:b|c{2,3})*\z`, "aabccc"},
		{`(?i)[[:^alpha:]]+\Q.*\E`, "12.*"},
		{`((?:a|b){1,3}?)\1?`, "abab"},
		{`(?m)^\s*(\w+)=(.*)$`, "k=v\nx = y"},
	} {
		f.Add(s.expr, []byte(s.line))
	}
	f.Fuzz(func(t *testing.T, expr string, line []byte) {
		re, m := pair(t, expr)
		if m == nil {
			return
		}
		sameAsRegexp(t, re, m, line)
		sameAsRegexp(t, re, m, append([]byte(expr), line...))
	})
}
