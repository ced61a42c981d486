package config

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/windows"
)

// defaultWindows are the windows of a rule when neither it nor global sets any; each Config gets its own copy, so no caller can change another's.
var defaultWindows = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour}

// defaultWindowNames are defaultWindows as the `window` label shows them.
var defaultWindowNames = []string{"1m", "5m", "15m", "1h", "24h"}

// DefaultCounterTTL is how long an idle label set's `_total` is kept when global does not
// say: a day covers the `increase(...[1d])` a dashboard asks of sparse events.
const DefaultCounterTTL = 24 * time.Hour

// DefaultMaxSeriesPerRule is the cardinality budget of a rule when global does not set one.
const DefaultMaxSeriesPerRule = 10000

// Load reads and validates the config file at path, the one the exporter starts with (or
// checks): a regular file, or a pipe (`--config.file=/dev/stdin`, a shell's `<(...)`), of at
// most MaxFileBytes. On any problem it returns a nil *Config and an error listing every
// problem (an *Error when the file could be read), so a reload can keep the running config.
func Load(path string) (*Config, error) {
	data, err := readFile(path, true)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(data, path)
}

// ReadAgain is the read of the rule file for a reload, which Parse then checks: a pipe is
// refused, which holds nothing more to read, or waits for its writer while the reload
// holds the running configuration. It says too which bytes it read, before they are
// parsed: a file saved again while a watch of it and the reload each read it is known by
// what the reload parsed, not by the watch's read, and a content whose parse panicked (a
// bug) is known too, and not tried again until it changes.
func ReadAgain(path string) ([]byte, Read, error) {
	data, err := readFile(path, false)
	if err != nil {
		return nil, Read{}, fmt.Errorf("reading config: %w", err)
	}
	return data, Read{Sum: sha256.Sum256(data), OK: true}, nil
}

// Read is what one read of the rule file found.
type Read struct {
	// Sum is the SHA-256 of the bytes read, when OK.
	Sum [sha256.Size]byte
	// OK: the file could be read; a refused content is read all the same.
	OK bool
}

// MaxFileBytes bounds a rule file, which is decoded whole before its counts are checked:
// hundreds of rules take tens of kilobytes, and a Kubernetes ConfigMap, which the Helm
// chart gives the file in, holds at most 1 MiB. A file of 16 MiB took seconds of a core
// and 550 MB (twice the chart's memory limit) to decode before its 490,000 rules were
// refused; one of 1 MiB takes a sixteenth of that.
const MaxFileBytes = 1 << 20

// ReadFile reads the rule file at path, as ReadAgain and the watch of the file do: a
// regular file of at most MaxFileBytes. A path to something else is refused at once, where
// reading it would wait for a writer (a FIFO) or read on until memory runs out (/dev/zero).
func ReadFile(path string) ([]byte, error) {
	return readFile(path, false)
}

// readFile is ReadFile, which also reads a pipe when pipe is set.
func readFile(path string, pipe bool) ([]byte, error) {
	// O_NONBLOCK: the open of a FIFO would wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		// A link to nothing is listed by ls, where "no such file" alone reads as a wrong
		// path: a rule file moved from under it, a ConfigMap's key renamed.
		if target, lerr := os.Readlink(path); lerr == nil && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: it is a symbolic link to %s, which leads to no file", err, target)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() && !(pipe && fi.Mode()&os.ModeNamedPipe != 0) {
		return nil, fmt.Errorf("%s: not a regular file but %s; give the path of the rule file", path, FileTypeName(fi.Mode()))
	}
	if fi.Size() > MaxFileBytes {
		return nil, tooLarge(path, fmt.Sprintf("%d bytes, ", fi.Size()))
	}
	// One byte past the bound tells a pipe that holds more, or a file that grew since its
	// stat.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, tooLarge(path, "")
	}
	if len(data) == 0 && fi.Mode()&os.ModeNamedPipe != 0 {
		return nil, fmt.Errorf("%s: read nothing from the pipe: its writer wrote nothing, or none had opened it (a named pipe is read at once, not waited on)", path)
	}
	return data, nil
}

// tooLarge is the error of a rule file past MaxFileBytes; size says how large it is, when
// that is known (not of a pipe).
func tooLarge(path, size string) error {
	return fmt.Errorf("%s: %smore than the %d MiB (%d bytes) a rule file may hold; a rule file holds rules, not data", path, size, MaxFileBytes>>20, MaxFileBytes)
}

// Parse validates a config held in memory; file names it in messages. It is Load without
// the file system, for tests and for callers that read the file themselves.
func Parse(data []byte, file string) (*Config, error) {
	d := &decoder{patterns: map[string]string{}, patternLines: map[string]int{}, badPatterns: map[string]bool{},
		initialRewriteBudget: maxInitialRewriteBytes}
	d.text = data
	root := d.document(data)
	if root == nil {
		return nil, d.err(file)
	}
	c := d.config(root)
	c.File, c.warned = file, d.warned
	if err := d.err(file); err != nil {
		return nil, err
	}
	return c, nil
}

// decoder holds the state of one Parse: the problems found so far and the patterns, which
// every rule's match refers to.
type decoder struct {
	problems
	// text is the file, for the checks of how a value was written (see words), which
	// find its lines by lineStarts (made at the first) and have read linesRead of them.
	text       []byte
	lineStarts []int
	linesRead  int
	// warned are what Warnings says of a config that loads, found while it is decoded.
	warned []Problem
	// patterns holds each valid pattern expanded (nested %{...} resolved, wrapped in (?:)).
	patterns map[string]string
	// patternLines locates each pattern for messages.
	patternLines map[string]int
	// badPatterns are patterns already reported as invalid; rules using them are not
	// reported again.
	badPatterns map[string]bool
	// inputFormats is the format of each named input, for the checks of fields rules;
	// inputWrappers its wrapper, for rules reading cri_time.
	inputFormats  map[string]Format
	inputWrappers map[string]string
	// allInputs are the config's inputs, whose log formats rules without match: read;
	// formatRegexps the regex of each log format, compiled once for all its rules.
	allInputs     []Input
	formatRegexps map[*logformat.Format]*regexp.Regexp
	// inputLines are the lines of the config's inputs, in order, for the checks of them
	// that wait for the rules (globbedTwice).
	inputLines []int
	// formatRefused are the inputs (by Input.Label) whose log format did not compile: a rule
	// reading them gets no message of its own, whose cause the input's already names.
	formatRefused map[string]bool
	// refusing: a log format of the input being decoded was refused (refuse).
	refusing bool
	// inputsRefused and patternsRefused: the section was refused whole (past its limit, or
	// not a list or a mapping). Its error is the one to fix: a rule naming an input or a
	// pattern the section would have held says nothing of its own, so that a thousand of
	// theirs do not hide it (the status page lists the first problems only).
	inputsRefused, patternsRefused bool
	// regexBytes is the text of the regexes compiled so far (compile), regexSpent set once
	// they passed maxRegexBytes.
	regexBytes int
	regexSpent bool
	// checkedKeys are the mappings checked for keys given twice (keysChecked).
	checkedKeys map[*yaml.Node]bool
	// initialRewriteBudget is what is left of maxInitialRewriteBytes, the text the
	// initial label sets may be rewritten over to find those the rewrites would change.
	initialRewriteBudget int
}

// yamlLine splits yaml.v3's "yaml: line N: msg" errors. It is compiled on the first
// error: a valid file never needs it.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// document parses the YAML text; it returns nil (after adding a problem) when the text is
// not YAML, and an empty mapping node for an empty file.
func (d *decoder) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) {
		return &yaml.Node{Kind: yaml.MappingNode}
	}
	if err != nil {
		d.yamlError(data, err)
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.yamlError(data, err)
		return nil
	default:
		d.add(next.Line, "", "the file holds more than one YAML document (a --- separator); put everything in one")
		return nil
	}
	if len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.MappingNode}
	}
	if a := aliasBomb(&doc, len(data)); a != nil {
		bound := fmt.Sprintf("%d MiB", maxAliasBytes>>20)
		if len(data) > maxAliasBytes {
			bound = "its own size"
		}
		d.add(a.Line, "", "alias *%s: the file's aliases, written out, add more than %s to it; write out what they share, or share less", a.Value, bound)
		return nil
	}
	d.collectionTags(doc.Content[0])
	return doc.Content[0]
}

// yamlError reports a YAML syntax error. yaml.v3 often names the line where the enclosing
// block starts, or no line at all; the line reported is instead the one at which the file,
// cut after it, starts to fail with the same message: where the text went wrong.
func (d *decoder) yamlError(data []byte, err error) {
	line, msg := splitYAMLError(err)
	if at := firstFailingLine(data, msg); at > 0 {
		line = at
	}
	if at, col, b, ok := notUTF8(data, msg); ok {
		// yaml.v3 reads ahead: the line it names is where its reading stood, often the
		// next one (an é saved as Latin-1 at the end of a line).
		line = at
		msg += fmt.Sprintf(": byte 0x%02x at column %d is not UTF-8 (text saved as Latin-1 or Windows-1252?); a rule file is UTF-8", b, col)
	}
	switch text := lineOf(data, line); {
	case !strings.Contains(msg, "tab") && tabIndented(text):
		// yaml.v3 words a tab where the indentation is as a character it cannot read.
		msg += "; the line is indented with a tab, and YAML indents with spaces only"
	case strings.Contains(msg, "cannot start any token") && reservedStart(text) != 0:
		// An Apache format (%h ...) or a value pasted from elsewhere, not quoted.
		msg += fmt.Sprintf("; the value starts with %c, which YAML keeps for itself: put the value in quotes ('...')", reservedStart(text))
	case longestKey(text) > maxYAMLKeyChars:
		// yaml.v3 words a key past its bound as a key with no colon, or a colon where
		// none may be.
		msg += fmt.Sprintf("; the line's key is %d characters as written, and YAML reads a key of at most %d: shorten it", longestKey(text), maxYAMLKeyChars)
	}
	d.add(line, "", "not valid YAML: %s", msg)
}

// utf8Errors are the messages of yaml.v3's reader for a file that is not UTF-8. Its scanner
// says "found an incorrect leading UTF-8 octet" too, of a tag's %-escape (!a%ff), which
// is no byte of the file's: a file that is also not UTF-8 further down would have the
// mistake moved there.
var utf8Errors = []string{"invalid leading UTF-8 octet", "incomplete UTF-8 octet sequence", "invalid trailing UTF-8 octet", "invalid length of a UTF-8 sequence"}

// notUTF8 finds, for a message of yaml.v3's reader saying the file is not UTF-8, its first
// byte that is not, by line and column (from 1); ok is false for another message. (A file
// in UTF-16, with its byte order mark, is read as such, with messages of its own.)
func notUTF8(data []byte, msg string) (line, col int, b byte, ok bool) {
	if !slices.Contains(utf8Errors, msg) {
		return 0, 0, 0, false
	}
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			start := bytes.LastIndexByte(data[:i], '\n') + 1
			return bytes.Count(data[:start], []byte("\n")) + 1, utf8.RuneCount(data[start:i]) + 1, data[i], true
		}
		i += n
	}
	return 0, 0, 0, false
}

// lineOf is line n (from 1) of data, nil when there is none.
func lineOf(data []byte, n int) []byte {
	if n < 1 {
		return nil
	}
	for range n - 1 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return nil
		}
		data = data[nl+1:]
	}
	text, _, _ := bytes.Cut(data, []byte("\n"))
	return text
}

// tabIndented says whether a line has a tab in its indentation, the spaces and list
// dashes before its first other character.
func tabIndented(text []byte) bool {
	indent := text[:len(text)-len(bytes.TrimLeft(text, " \t-"))]
	return bytes.IndexByte(indent, '\t') >= 0
}

// maxYAMLKeyChars is the most characters a key may have that is written without YAML's
// "? " (a simple key, as every key is written).
const maxYAMLKeyChars = 1024

// longestKey is the length in characters of the longest key on a line, as written (its
// quotes too, which YAML counts): the text before each colon followed by a space or the
// line's end, from the line's indentation and list dashes, or from the { or , before it
// within the line.
func longestKey(text []byte) int {
	most, start := 0, len(text)-len(bytes.TrimLeft(text, " -"))
	for i := start; i < len(text); i++ {
		switch c := text[i]; {
		case c == '{' || c == ',':
			start = i + 1
		case c == ':' && (i+1 == len(text) || text[i+1] == ' '):
			most = max(most, utf8.RuneCount(bytes.Trim(text[start:i], " ")))
			start = i + 1
		}
	}
	return most
}

// reservedStart is the character a line's value starts with when it is one YAML reserves
// (%, @ or `) and no value may start with unquoted; 0 otherwise. The value is what follows
// the line's indentation and list dashes, and its key's ": " if it has one.
func reservedStart(text []byte) byte {
	text = bytes.TrimLeft(text, " -")
	if _, v, ok := bytes.Cut(text, []byte(": ")); ok {
		text = bytes.TrimLeft(v, " ")
	}
	if len(text) > 0 && bytes.IndexByte([]byte("%@`"), text[0]) >= 0 {
		return text[0]
	}
	return 0
}

func splitYAMLError(err error) (int, string) {
	if m := yamlLine().FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, m[2]
	}
	return 0, strings.TrimPrefix(err.Error(), "yaml: ")
}

// maxLocateBytes bounds the file firstFailingLine searches, which parses it about twenty
// times: a file of megabytes would take seconds (a mounted ConfigMap holds at most 1 MiB).
const maxLocateBytes = 1 << 20

// firstFailingLine returns a line n such that the file cut after n fails to parse with msg
// and cut before it does not, or 0 when the whole file does not fail with msg or is larger
// than maxLocateBytes. It bisects:
// cut before the mistake the file parses (or fails otherwise, as a quoted text or a {...}
// spanning lines cut in the middle does) and cut after it fails as the whole does, so a
// few parses find the line, where a parse per line took seconds on a file of thousands.
func firstFailingLine(data []byte, msg string) int {
	if len(data) > maxLocateBytes {
		// yaml.v3 names no line for a mistake on the first (its lines count from 0 and
		// it leaves out line 0): the first line is one parse, however large the file.
		first, _, _ := bytes.Cut(data, []byte("\n"))
		if err := firstYAMLError(first); err != nil {
			if _, m := splitYAMLError(err); m == msg {
				return 1
			}
		}
		return 0
	}
	// ends[i] is the end of line i+1: the file cut after it is data[:ends[i]].
	var ends []int
	for end := 0; end < len(data); {
		if nl := bytes.IndexByte(data[end:], '\n'); nl >= 0 {
			end += nl + 1
		} else {
			end = len(data)
		}
		ends = append(ends, end)
	}
	fails := func(line int) bool {
		err := firstYAMLError(data[:ends[line-1]])
		if err == nil {
			return false
		}
		_, m := splitYAMLError(err)
		return m == msg
	}
	if len(ends) == 0 || !fails(len(ends)) {
		return 0
	}
	ok, bad := 0, len(ends)
	for bad-ok > 1 {
		mid := ok + (bad-ok)/2
		if fails(mid) {
			bad = mid
		} else {
			ok = mid
		}
	}
	return bad
}

// firstYAMLError parses every document of data and returns the first error.
func firstYAMLError(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// config decodes the top level; sections are decoded even when an earlier one has problems.
func (d *decoder) config(root *yaml.Node) *Config {
	c := &Config{
		Global: Global{
			Windows: slices.Clone(defaultWindows), WindowNames: slices.Clone(defaultWindowNames),
			MaxSeriesPerRule: DefaultMaxSeriesPerRule, CounterTTL: DefaultCounterTTL,
		},
		Patterns: map[string]string{},
	}
	top, ok := d.mapping(root, "", "")
	if !ok {
		return c
	}
	d.known(top, "", "", "global", "inputs", "patterns", "rules")
	if e, ok := find(top, "global"); ok {
		d.global(e, &c.Global)
	}
	if e, ok := find(top, "inputs"); ok {
		c.Inputs = d.inputs(e)
	}
	if e, ok := find(top, "patterns"); ok {
		c.Patterns = d.patternSection(e)
	}
	d.expandPatterns(c.Patterns)
	e, ok := find(top, "rules")
	if !ok {
		d.add(0, "", "no rules: add a rules: list (see example-rules.yaml)")
		return c
	}
	c.Rules = d.rules(e, c)
	d.globbedTwice(c.Inputs, d.inputLines, c.Rules)
	return c
}

func (d *decoder) global(e entry, g *Global) {
	entries, ok := d.mapping(e.val, "global", "")
	if !ok {
		return
	}
	d.known(entries, "global", "", "windows", "max_series_per_rule", "counter_ttl")
	if w, ok := find(entries, "windows"); ok {
		if ws, names, ok := d.windows(w, "global"); ok {
			g.Windows, g.WindowNames = ws, names
		}
	}
	if e, ok := find(entries, "counter_ttl"); ok {
		s, ok := d.scalar(e, "global", "counter_ttl")
		ttl, err := parseDuration(s)
		switch {
		case !ok:
		case errors.Is(err, errTooLong):
			d.add(e.key.Line, "global", "counter_ttl: %s is longer than a duration holds (about 292 years); write 0 to keep counters while the process lives", s)
		case err != nil:
			d.add(e.key.Line, "global", "counter_ttl: %q is not a duration: %v (write e.g. 24h, 7d, or 0 to keep counters while the process lives)", s, err)
		default:
			g.CounterTTL = ttl
		}
	}
	if m, ok := find(entries, "max_series_per_rule"); ok {
		s, ok := d.scalar(m, "global", "max_series_per_rule")
		n, err := strconv.Atoi(s)
		switch {
		case !ok:
		case errors.Is(err, strconv.ErrRange):
			d.add(m.key.Line, "global", "max_series_per_rule: %s is too large a number", s)
		case err != nil:
			d.add(m.key.Line, "global", "max_series_per_rule: %q is not a whole number", s)
		case n < 1:
			d.add(m.key.Line, "global", "max_series_per_rule: must be at least 1, not %d", n)
		default:
			g.MaxSeriesPerRule = n
		}
	}
}

// errTooLong is parseDuration's error for a duration written right but past what a
// time.Duration holds (100000000000h), which is no typo to point at.
var errTooLong = errors.New("longer than a duration holds")

// digitRun is a number of a duration, each replaced by 1 to tell a number past what
// model.ParseDuration reads from a duration written wrong.
var digitRun = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[0-9]+`) })

// parseDuration is model.ParseDuration, whose error is errTooLong for a duration written
// right with a number too large: past what a time.Duration holds, or with more digits
// than a uint64 holds (1000000000000000000000s), which model.ParseDuration words as one
// written wrong. Another error says what is wrong, for a message that quotes the
// duration before it: model.ParseDuration's says only that it is not valid.
func parseDuration(s string) (time.Duration, error) {
	md, err := model.ParseDuration(s)
	if err == nil {
		return time.Duration(md), nil
	}
	if _, small := model.ParseDuration(digitRun().ReplaceAllLiteralString(s, "1")); small == nil || strings.HasSuffix(err.Error(), "out of range") {
		return 0, errTooLong
	}
	return 0, errors.New(durationFault(s))
}

// durationUnits are the units of a duration, the largest first.
var durationUnits = []string{"y", "w", "d", "h", "m", "s", "ms"}

// durationFault says what makes s, which model.ParseDuration refuses, no duration.
func durationFault(s string) string {
	switch {
	case s == "":
		return "it is empty"
	case !strings.ContainsAny(s, "0123456789"):
		return "it holds no number"
	case strings.HasPrefix(s, "-"):
		return "it is negative"
	case strings.ContainsAny(s, " \t"):
		return "it has a space"
	case strings.Contains(s, "."):
		return "a unit takes a whole number (90s, not 1.5m)"
	}
	last := -1 // index in durationUnits of the unit before
	for rest := s; rest != ""; {
		digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
		rest = rest[digits:]
		unit := rest
		if i := strings.IndexAny(rest, "0123456789"); i >= 0 {
			unit = rest[:i]
		}
		rest = rest[len(unit):]
		at := slices.Index(durationUnits, unit)
		switch {
		case digits == 0:
			return fmt.Sprintf("%q has no number before it", unit)
		case unit == "":
			return "its last number has no unit (ms, s, m, h, d, w or y)"
		case at < 0:
			return fmt.Sprintf("%q is no unit (ms, s, m, h, d, w or y)", unit)
		case at <= last:
			return "its units go from the largest to the smallest, each once (1h30m)"
		}
		last = at
	}
	// model.ParseDuration refused it for a reason not looked for here.
	return "it is written wrong"
}

// windowReason is why the wheels cannot serve window w, in windows.CheckWindow's words;
// "" when they can.
func windowReason(w time.Duration) string {
	var we *windows.WindowError
	if errors.As(windows.CheckWindow(w), &we) {
		return we.Reason
	}
	return ""
}

// windows decodes a list of Prometheus durations and checks the wheels can serve them. It
// returns them sorted, with their text as written in the same order.
func (d *decoder) windows(e entry, subject string) ([]time.Duration, []string, bool) {
	holder := "a rule"
	if subject == "global" {
		holder = "the global list"
	}
	if d.tooMany(e, subject, items(e.val), maxWindows, "windows", holder) {
		return nil, nil, false
	}
	texts, ok := d.words(e, subject, "windows", nil)
	if !ok {
		return nil, nil, false
	}
	if len(texts) == 0 {
		d.add(e.key.Line, subject, "windows: the list is empty; give at least one window (e.g. [1m, 5m])")
		return nil, nil, false
	}
	type window struct {
		d    time.Duration
		text string
	}
	parsed := make([]window, 0, len(texts))
	for _, t := range texts {
		w, err := parseDuration(t)
		if errors.Is(err, errTooLong) {
			// Past any duration is past the longest window: the longest duration of whole
			// seconds is judged for it.
			d.add(e.key.Line, subject, "windows: %s: %s", t, windowReason(time.Duration(math.MaxInt64).Truncate(time.Second)))
			ok = false
			continue
		}
		if err != nil {
			d.add(e.key.Line, subject, "windows: %q is not a duration: %v (write e.g. 30s, 5m, 1h, 1d)", t, err)
			ok = false
			continue
		}
		parsed = append(parsed, window{w, t})
	}
	if !ok {
		return nil, nil, false
	}
	slices.SortStableFunc(parsed, func(a, b window) int { return cmp.Compare(a.d, b.d) })
	ws := make([]time.Duration, len(parsed))
	names := make([]string, len(parsed))
	for i, w := range parsed {
		ws[i], names[i] = w.d, w.text
		if i > 0 && w.d == parsed[i-1].d {
			if first := parsed[i-1].text; first != w.text {
				d.add(e.key.Line, subject, "windows: %s and %s are the same window; list it once", first, w.text)
			} else {
				d.add(e.key.Line, subject, "windows: %s is listed twice", first)
			}
			return nil, nil, false
		}
	}
	for i, w := range ws {
		if reason := windowReason(w); reason != "" {
			// The window as written: 400d, not the 9600h0m0s Go would write.
			d.add(e.key.Line, subject, "windows: %s: %s", names[i], reason)
			return nil, nil, false
		}
	}
	return ws, names, true
}

func (d *decoder) patternSection(e entry) map[string]string {
	out := map[string]string{}
	if d.tooMany(e, "", items(e.val), maxPatterns, "patterns", "a file") {
		d.patternsRefused = true
		return out
	}
	entries, ok := d.mapping(e.val, "", "patterns")
	if !ok || d.tooMany(e, "", len(entries), maxPatterns, "patterns", "a file") {
		d.patternsRefused = true
		return out
	}
	for _, p := range entries {
		subject := fmt.Sprintf("pattern %q", p.key.Value)
		if !isName(p.key.Value) {
			d.add(p.key.Line, subject, "a pattern name is letters, digits and _, not starting with a digit")
			continue
		}
		s, ok := d.scalar(p, subject, "")
		if !ok {
			continue
		}
		if s == "" {
			d.add(p.key.Line, subject, "the pattern is empty")
			continue
		}
		out[p.key.Value] = s
		d.patternLines[p.key.Value] = p.key.Line
	}
	return out
}

func (d *decoder) rules(e entry, c *Config) []*Rule {
	v := resolve(e.val)
	if v.Kind != yaml.SequenceNode {
		d.add(e.key.Line, "", "rules: must be a list of rules (- name: ...), not %s", kindName(v))
		return nil
	}
	if len(v.Content) == 0 {
		d.add(e.key.Line, "", "rules: the list is empty; add at least one rule")
		return nil
	}
	if d.tooMany(e, "", len(v.Content), maxRules, "rules", "a file") {
		return nil
	}
	inputNames := map[string]bool{}
	d.inputFormats, d.inputWrappers = map[string]Format{}, map[string]string{}
	d.allInputs, d.formatRegexps = c.Inputs, map[*logformat.Format]*regexp.Regexp{}
	for _, in := range c.Inputs {
		if in.Name != "" {
			inputNames[in.Name] = true
			d.inputFormats[in.Name] = in.Format
			d.inputWrappers[in.Name] = in.Wrapper
		}
	}
	var out []*Rule
	for i, item := range v.Content {
		from, warnedFrom := len(d.problems.list), len(d.warned)
		if r := d.rule(item, i, c.Global, inputNames); r != nil {
			out = append(out, r)
		}
		d.viaAliases(item, from, warnedFrom)
	}
	d.collisions(out)
	return out
}

// FileTypeName names, in words and with its article, the type of a file that is not a
// regular one, for the rule file's error and every other about such a file (through
// internal/filestat): FileMode's own string of the type bits ("p---------") reads as a
// file of no permissions.
func FileTypeName(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	default:
		return "a file of type " + t.String()
	}
}
