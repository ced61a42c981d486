package pipeline

import (
	"bytes"
	"regexp"
	"slices"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/parser"
)

// maxKnownPaths bounds the paths whose captures an input keeps: more than the pod logs a
// node holds at once; past it they are all forgotten and worked out again as lines come.
const maxKnownPaths = 1024

// The captures an input gives a line of its own rather than of its file
// (config.InputCaptureNames), indexes of lineValues.
const (
	lineStream = iota
	lineHostname
	lineTag
	numLineCaptures
)

// lineCaptureNames are the names of lineValues' captures, by index.
var lineCaptureNames = [numLineCaptures]string{config.StreamCapture, config.SyslogHostnameCapture, config.SyslogTagCapture}

// lineValues are the values of a line's own captures: the stream of a CRI line, the
// hostname and tag of a datagram's syslog header.
type lineValues [numLineCaptures][]byte

// pathValues gives a parser session the captures an input gives each line besides the
// line's own: those of the file it comes from, worked out from the input's path_captures
// (and the workload of its pod) once per file and kept, so that a line pays a comparison
// of its path with the previous line's, equal strings of one file at one address; and
// those of the line (lineValues), compared with the previous line's. Used by the input's
// reading goroutine only.
type pathValues struct {
	re *regexp.Regexp
	// groups are, per path capture of the parser (Parser.PathCaptures), the group of the
	// input's regex of that name, or -1 when the input has none.
	groups []int
	// workload is the index among the parser's path captures of the workload the input
	// derives from its pod group (podGroup), or -1.
	workload, podGroup int
	// line are, per line capture, its index among the parser's path captures, or -1.
	line    [numLineCaptures]int
	hasLine bool
	started bool
	last    string
	// lastLine are the line captures last given, copied; cur the values last given.
	lastLine lineValues
	cur      [][]byte
	known    map[string][][]byte
	// miss, when set, is told of the first path the regex does not match, whose
	// captures then read as empty: a regex written for another tree than the files'.
	miss func(path string)
	// now is the clock workloadOf judges a CronJob's Job's minute by.
	now func() time.Time
}

// newPathValues returns nil when no rule reads a capture the input gives. now is the
// clock a pod's workload is worked out by (workloadOf).
func newPathValues(ci config.Input, p *parser.Parser, now func() time.Time) *pathValues {
	names := p.PathCaptures()
	have := ci.InputCaptureNames()
	pv := &pathValues{workload: -1, podGroup: -1, known: map[string][][]byte{}, cur: make([][]byte, len(names)), now: now}
	if ci.File != nil {
		pv.re = ci.File.PathCaptures
	}
	for j := range pv.line {
		pv.line[j] = -1
	}
	found := false
	for i, name := range names {
		g := -1
		if pv.re != nil {
			g = pv.re.SubexpIndex(name)
		}
		pv.groups = append(pv.groups, g)
		own := slices.Contains(have, name)
		switch j := slices.Index(lineCaptureNames[:], name); {
		case g >= 0:
		case own && name == config.WorkloadCapture:
			pv.workload, pv.podGroup = i, pv.re.SubexpIndex(config.PodCapture)
		case own && j >= 0:
			pv.line[j] = i
			pv.hasLine = true
		default:
			continue
		}
		found = true
	}
	if !found {
		return nil
	}
	return pv
}

// pathsMissMessage is what is logged of a path_captures regex that does not match the
// path of a file the input reads.
const pathsMissMessage = "path_captures does not match the path of a file the input reads: the captures read as empty for its lines"

// set gives s the captures of a line of path, which has no captures of its own.
func (pv *pathValues) set(s *parser.Session, path string) {
	pv.setLine(s, path, lineValues{})
}

// setLine gives s the captures of a line of path whose own are line, unless it has them
// already.
func (pv *pathValues) setLine(s *parser.Session, path string, line lineValues) {
	if pv.started && path == pv.last && (!pv.hasLine || pv.sameLine(line)) {
		return
	}
	if !pv.started || path != pv.last {
		v, ok := pv.known[path]
		if !ok {
			if len(pv.known) >= maxKnownPaths {
				clear(pv.known)
			}
			v = pv.values(path)
			pv.known[path] = v
		}
		copy(pv.cur, v)
		pv.started, pv.last = true, path
	}
	for j, at := range pv.line {
		if at >= 0 {
			pv.lastLine[j] = append(pv.lastLine[j][:0], line[j]...)
			pv.cur[at] = pv.lastLine[j]
		}
	}
	s.SetPath(pv.cur)
}

// sameLine reports whether line's captures are those last given.
func (pv *pathValues) sameLine(line lineValues) bool {
	for j, at := range pv.line {
		if at >= 0 && !bytes.Equal(line[j], pv.lastLine[j]) {
			return false
		}
	}
	return true
}

// values matches the regex against path: a capture the path does not have (the regex
// does not match, or its group does not take part) is nil; the workload is that of the
// pod capture.
func (pv *pathValues) values(path string) [][]byte {
	out := make([][]byte, len(pv.groups))
	if pv.re == nil {
		return out
	}
	loc := pv.re.FindStringSubmatchIndex(path)
	if loc == nil && pv.miss != nil {
		pv.miss(path)
		pv.miss = nil
	}
	for i, g := range pv.groups {
		if g >= 0 && loc != nil && loc[2*g] >= 0 {
			out[i] = []byte(path[loc[2*g]:loc[2*g+1]])
		}
	}
	if g := pv.podGroup; pv.workload >= 0 && g >= 0 && loc != nil && loc[2*g] >= 0 {
		out[pv.workload] = []byte(workloadOf(path[loc[2*g]:loc[2*g+1]], pv.now()))
	}
	return out
}
