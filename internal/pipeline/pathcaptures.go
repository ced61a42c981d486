package pipeline

import (
	"regexp"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/parser"
)

// maxKnownPaths bounds the paths whose captures an input keeps: more than the pod logs a
// node holds at once; past it they are all forgotten and worked out again as lines come.
const maxKnownPaths = 1024

// pathValues gives a parser session the path captures of the file each line comes from:
// worked out from the input's path_captures once per file and kept, so that a line pays
// a comparison of its path with the previous line's, equal strings of one file at one
// address. Used by the input's reading goroutine only.
type pathValues struct {
	re *regexp.Regexp
	// groups are, per path capture of the parser (Parser.PathCaptures), the group of the
	// input's regex of that name, or -1 when the input has none.
	groups []int
	last   string
	known  map[string][][]byte
}

// newPathValues returns nil when the input has no path captures or no rule reads any.
func newPathValues(ci config.Input, p *parser.Parser) *pathValues {
	names := p.PathCaptures()
	if ci.File == nil || ci.File.PathCaptures == nil || len(names) == 0 {
		return nil
	}
	re := ci.File.PathCaptures
	pv := &pathValues{re: re, known: map[string][][]byte{}}
	for _, name := range names {
		pv.groups = append(pv.groups, re.SubexpIndex(name))
	}
	return pv
}

// set gives s the path captures of path, unless it has them already.
func (pv *pathValues) set(s *parser.Session, path string) {
	if path == pv.last {
		return
	}
	v, ok := pv.known[path]
	if !ok {
		if len(pv.known) >= maxKnownPaths {
			clear(pv.known)
		}
		v = pv.values(path)
		pv.known[path] = v
	}
	pv.last = path
	s.SetPath(v)
}

// values matches the regex against path: a capture the path does not have (the regex
// does not match, or its group does not take part) is nil.
func (pv *pathValues) values(path string) [][]byte {
	loc := pv.re.FindStringSubmatchIndex(path)
	out := make([][]byte, len(pv.groups))
	for i, g := range pv.groups {
		if g >= 0 && loc != nil && loc[2*g] >= 0 {
			out[i] = []byte(path[loc[2*g]:loc[2*g+1]])
		}
	}
	return out
}
