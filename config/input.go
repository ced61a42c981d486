package config

import (
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// inputKind is how the loader reads one kind of input. Its keys are written beside those
// every input takes (inputKeys); a key of another kind is refused, naming both kinds.
type inputKind struct {
	name string
	// key makes an input of the kind; reads is what such an input reads ("a file") and
	// gives what key's value is ("the file or glob to follow"), for messages.
	key, reads, gives string
	// keys are the other keys only this kind takes.
	keys []string
	// decode reads the kind's keys of entries into its sub-struct of in, after the keys
	// every input takes; sources maps each source to the line of the input that has it,
	// across kinds. key may be missing (that is reported already): the other keys are
	// still checked.
	decode func(d *decoder, entries []entry, subject string, in *Input, sources map[string]int)
}

// inputKinds are the kinds of input, the first the one a message asks for when an input
// has none: a new kind is its sub-struct of Input, a case in Input.Kind and Source, an
// entry here, and its constructor in the pipeline.
var inputKinds = []inputKind{
	{name: KindFile, key: "path", reads: "a file", gives: "the file or glob to follow",
		keys: []string{"start_at", "path_captures", "shards"}, decode: (*decoder).fileInput},
	{name: KindSyslog, key: "syslog", reads: "a socket", gives: "a socket to receive on",
		keys: []string{"socket_mode"}, decode: (*decoder).syslogInput},
}

// inputKeys are the keys every input takes, whatever its kind.
var inputKeys = []string{"name", "format", "wrapper", "streams", "log_format", "log_format_escape", "apache_log_format"}

// InputKinds names the kinds of input the loader makes, as Input.Kind does.
func InputKinds() []string {
	out := make([]string, len(inputKinds))
	for i, k := range inputKinds {
		out[i] = k.name
	}
	return out
}

// allInputKeys are the keys an input may have: every input's, and every kind's.
func allInputKeys() []string {
	keys := slices.Clone(inputKeys)
	for _, k := range inputKinds {
		keys = append(keys, k.key)
		keys = append(keys, k.keys...)
	}
	return keys
}

func (d *decoder) inputs(e entry) []Input {
	v := resolve(e.val)
	if v.Kind != yaml.SequenceNode {
		d.add(e.key.Line, "", "inputs: must be a list of inputs (- path: ...), not %s", kindName(v))
		d.inputsRefused = true
		return nil
	}
	if d.tooMany(e, "", len(v.Content), maxInputs, "inputs", "a file") {
		d.inputsRefused = true
		return nil
	}
	var out []Input
	var lines []int // of each of out
	names := map[string]int{}
	sources := map[string]int{}
	keys := allInputKeys()
	for i, item := range v.Content {
		from, warnedFrom := len(d.problems.list), len(d.warned)
		if in, ok := d.input(item, i, names, sources, keys); ok {
			out = append(out, in)
			lines = append(lines, resolve(item).Line)
		}
		d.viaAliases(item, from, warnedFrom)
	}
	d.inputLabels(out, lines, names)
	d.inputLines = lines
	return out
}

// input decodes the input item, the ith of the list; names and sources are those of the
// inputs before it, each at its line.
func (d *decoder) input(item *yaml.Node, i int, names, sources map[string]int, keys []string) (Input, bool) {
	subject := fmt.Sprintf("input #%d", i+1)
	if item.Kind == yaml.AliasNode && resolve(item).Kind == yaml.MappingNode {
		// The whole input again: its keys' lines are the anchored input's, where the
		// errors of the duplicate would be reported, naming that line as the first.
		if name := scalarKey(resolve(item), "name"); name != "" {
			subject = fmt.Sprintf("input %q", name)
		}
		d.add(item.Line, subject, "is the input on line %d again (*%s): its lines would count twice; repeat its keys with <<: *%[2]s and give a name and a path of its own",
			resolve(item).Line, item.Value)
		return Input{}, false
	}
	entries, ok := d.mapping(item, subject, "")
	if !ok {
		return Input{}, false
	}
	in := Input{}
	if n, ok := find(entries, "name"); ok {
		in.Name, _ = d.scalar(n, subject, "name")
		if len(in.Name) > maxNameBytes {
			// The metrics' input label, on every sample of the input's.
			d.add(n.key.Line, subject, "name: %.40q... is %d bytes, more than the %d a name may have", in.Name, len(in.Name), maxNameBytes)
			in.Name = ""
		}
		if in.Name != "" {
			subject = fmt.Sprintf("input %q", in.Name)
			if first, dup := names[in.Name]; dup {
				d.add(n.key.Line, subject, "name: another input already has this name (line %d)", first)
			}
			names[in.Name] = n.key.Line
		}
	}
	d.known(entries, subject, "", keys...)
	if f, ok := find(entries, "format"); ok {
		in.Format = d.format(f, subject)
	}
	d.logFormat(entries, subject, &in)
	if f, ok := find(entries, "format"); ok && (in.LogFormat != nil || in.LogFormats != nil) {
		d.add(f.key.Line, subject, "format: and a log format: the log format says how the lines are read (a JSON template with log_format_escape: json reads JSON); leave format: out")
	}
	if w, ok := find(entries, "wrapper"); ok {
		in.Wrapper = d.wrapper(w, subject)
	}
	if s, ok := find(entries, "streams"); ok {
		in.Streams = d.streams(s, subject, in.Wrapper)
	}
	if k := d.kindOf(entries, subject, resolve(item).Line); k != nil {
		k.decode(d, entries, subject, &in, sources)
	}
	if d.refusing {
		if d.formatRefused == nil {
			d.formatRefused = map[string]bool{}
		}
		d.formatRefused[in.Label()], d.refusing = true, false
	}
	return in, true
}

// globbedTwice warns of a file input's path that other inputs' globs match, when a rule
// reads it and one of them: they all read the file, and that rule counts its lines as
// many times as it reads them. Rules that keep to one input each count them once, so it
// is no error; nor do inputs of a container's streams apart (stdout and stderr), which
// read none of the same lines. One warning names every glob that matches the path, so
// that narrowing one of them is not taken for the fix. Only the paths are compared: two
// globs that match one file, or a symlink to it, are seen by the files they match when
// the exporter starts (pipeline.ReadTwice). lines are those of ins.
func (d *decoder) globbedTwice(ins []Input, lines []int, rules []*Rule) {
	var globs []int
	for i, in := range ins {
		if in.File != nil && in.File.IsGlob() {
			globs = append(globs, i)
		}
	}
	if len(globs) == 0 {
		return
	}
	for i, in := range ins {
		if in.File == nil || in.File.IsGlob() {
			continue
		}
		var also []int // the inputs of the globs that match in's path, a rule reading both
		for _, g := range globs {
			if ok, _ := filepath.Match(filepath.Clean(ins[g].File.Path), filepath.Clean(in.File.Path)); !ok {
				continue
			}
			if !in.Streams.Apart(ins[g].Streams) && slices.ContainsFunc(rules, func(r *Rule) bool { return r.Reads(in) && r.Reads(ins[g]) }) {
				also = append(also, g)
			}
		}
		if len(also) == 0 {
			continue
		}
		read := []Input{in}
		for _, g := range also {
			read = append(read, ins[g])
		}
		rule, reads, times := CountedMost(rules, read)
		if len(also) == 1 {
			d.warn(lines[i], fmt.Sprintf("input %q", in.Label()),
				"path: %q is also matched by the glob %q of the input on line %d: both read its lines, and rule %q, which reads both inputs, counts them twice",
				in.File.Path, ins[also[0]].File.Path, lines[also[0]], rule)
			continue
		}
		named := make([]string, len(also))
		for k, g := range also {
			named[k] = fmt.Sprintf("%q of the input on line %d", ins[g].File.Path, lines[g])
		}
		d.warn(lines[i], fmt.Sprintf("input %q", in.Label()),
			"path: %q is also matched by the globs %s: all %d read its lines, and rule %q, which reads %d of those inputs, counts them %s",
			in.File.Path, listing(named), len(also)+1, rule, reads, Times(times))
	}
}

// CountedMost is the rule of rules that counts a line of a file all of ins read the
// most times, how many of ins it reads and how many times it counts the line: those it
// reads of the inputs that read the line's stream. Inputs of a container's streams apart
// read none of the same lines: a rule of an input of stdout, one of stderr and one of
// both counts each line twice, not 3 times.
func CountedMost(rules []*Rule, ins []Input) (rule string, reads, times int) {
	for _, r := range rules {
		n := 0
		for _, s := range []Streams{StreamStdout, StreamStderr} {
			k := 0
			for _, in := range ins {
				if r.Reads(in) && !in.Streams.Apart(s) {
					k++
				}
			}
			n = max(n, k)
		}
		if n > times {
			rule, times = r.Name, n
			reads = 0
			for _, in := range ins {
				if r.Reads(in) {
					reads++
				}
			}
		}
	}
	return rule, reads, times
}

// Times says how many times a line is counted: "once", "twice", "3 times".
func Times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// inputLabels reports a name that is the source of another input without a name, which is
// known by its source: the two would share the input label of their metrics. lines are
// those of ins, names those of each name.
func (d *decoder) inputLabels(ins []Input, lines []int, names map[string]int) {
	unnamed := map[string]int{} // source → index in ins
	for i, in := range ins {
		if in.Name == "" && in.Source() != "" {
			unnamed[in.Source()] = i
		}
	}
	for _, in := range ins {
		j, clash := unnamed[in.Name]
		if !clash || in.Source() == in.Name {
			continue
		}
		what := "path"
		if ins[j].Kind() == KindSyslog {
			what = "address"
		}
		d.add(names[in.Name], fmt.Sprintf("input %q", in.Name), "name: is the %s of the input on line %d, which has no name and is known by its %[1]s (in the input label of its metrics, in logs); name one of them otherwise",
			what, lines[j])
	}
}

// kindOf is the kind of an input, by the key that makes it; it reports an input with
// none or with two, and every key of a kind the input is not. An input with none is read
// as the kind its other keys are of, if any, so that their values are checked too.
func (d *decoder) kindOf(entries []entry, subject string, line int) *inputKind {
	var kind *inputKind
	for i := range inputKinds {
		k := &inputKinds[i]
		e, ok := find(entries, k.key)
		switch {
		case !ok:
		case kind == nil:
			kind = k
		default:
			d.add(e.key.Line, subject, "%s and %s: an input reads %s or %s, not both; make two inputs", kind.key, k.key, kind.reads, k.reads)
		}
	}
	if kind == nil {
		first, others := inputKinds[0], inputKinds[1:]
		var or []string
		for _, k := range others {
			or = append(or, k.key+": "+k.gives)
		}
		d.add(line, subject, "%s: is missing; give %s (or %s)", first.key, first.gives, strings.Join(or, ", or "))
		for i := range inputKinds {
			if slices.ContainsFunc(entries, func(e entry) bool { return slices.Contains(inputKinds[i].keys, e.key.Value) }) {
				return &inputKinds[i]
			}
		}
		return nil
	}
	for _, other := range inputKinds {
		if other.name == kind.name {
			continue
		}
		for _, key := range other.keys {
			if e, ok := find(entries, key); ok {
				d.add(e.key.Line, subject, "%s: applies to %s inputs (%s:), not to a %s input", key, other.name, other.key, kind.name)
			}
		}
	}
	return kind
}

// fileInput decodes the keys of a file input.
func (d *decoder) fileInput(entries []entry, subject string, in *Input, sources map[string]int) {
	f := &FileInput{}
	in.File = f
	if p, ok := find(entries, "path"); ok {
		var pathOK bool
		if f.Path, pathOK = d.scalar(p, subject, "path"); pathOK {
			d.path(f.Path, p.key.Line, subject, sources)
		}
	}
	if p, ok := find(entries, "path_captures"); ok {
		f.PathCaptures = d.pathCaptures(p, subject, in.Wrapper)
	}
	if s, ok := find(entries, "shards"); ok {
		d.shards(s, subject, f)
		// Its parse workers read by one format: a file whose lines choose among
		// candidates is parsed on one core, which shards: would not say.
		if f.Shards > 1 && !f.IsGlob() && in.LogFormats != nil {
			d.add(s.key.Line, subject, "shards: a file read by candidate formats (log_format: auto or a list) is parsed on one core; name its one format, or leave shards out")
		}
	}
	if s, ok := find(entries, "start_at"); ok {
		text, ok := d.scalar(s, subject, "start_at")
		switch {
		case !ok:
		case text == "end":
			f.StartAt = StartAtEnd
		case text == "beginning":
			f.StartAt = StartAtBeginning
		default:
			d.add(s.key.Line, subject, "start_at: %q is neither end nor beginning", text)
		}
	}
}

// maxShards bounds `shards:`: more followers than cores gain nothing.
const maxShards = 64

// shards decodes `shards:`, which splits a glob's files among that many followers, or a
// file's lines among that many parse workers.
func (d *decoder) shards(e entry, subject string, f *FileInput) {
	text, ok := d.scalar(e, subject, "shards")
	if !ok {
		return
	}
	n, err := strconv.Atoi(text)
	switch {
	case err != nil || n < 1 || n > maxShards:
		d.add(e.key.Line, subject, "shards: %q is not a whole number from 1 to %d", text, maxShards)
	default:
		f.Shards = n
	}
}

// path checks a file input's path; sources maps each path or socket address to the line
// of the input that has it.
func (d *decoder) path(path string, line int, subject string, sources map[string]int) {
	if path == "" {
		d.add(line, subject, "path: is empty; give the file or glob to follow")
		return
	}
	if strings.ContainsRune(path, 0) {
		// A YAML escape ("\0") put it there: the system refuses such a name, so the input
		// would only log and count that its path cannot be looked at.
		d.add(line, subject, "path: %q holds a NUL byte, which no file name has: it matches no file, ever", path)
		return
	}
	if _, err := filepath.Match(path, ""); err != nil {
		d.add(line, subject, "path: %q is not a valid glob: it %s", path, globFault(path))
		return
	}
	if err := UnlistedElement(path); err != nil {
		d.add(line, subject, "path: %q %v", path, err)
		return
	}
	if err := EmptyRange(path); err != nil {
		d.add(line, subject, "path: %q %v", path, err)
		return
	}
	// Two spellings of one path (./, //, a trailing /.) follow one file twice.
	key := filepath.Clean(path)
	if first, dup := sources[key]; dup {
		as := ""
		if key != path {
			as = ", as " + key
		}
		d.add(line, subject, "path: %q is already followed by the input on line %d%s (its lines would count twice)", path, first, as)
	}
	sources[key] = line
	d.shellPath(path, line, subject)
}

// globFault says what in path, a glob filepath.Match refuses, is wrong: its error says
// only "syntax error in pattern".
func globFault(path string) string {
	const literal = `; a [ of the name itself is written \[`
	for i := 0; i < len(path); i++ {
		switch path[i] {
		case '\\':
			if i+1 == len(path) {
				return `ends in a \ that escapes nothing (a \ of the name itself is written \\)`
			}
			i++
		case '[':
			j := i + 1
			for j < len(path) && path[j] != ']' {
				if path[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(path) {
				return fmt.Sprintf("has a [ that no ] closes, at %q%s", path[i:], literal)
			}
			i = j
		}
	}
	return "has a [...] class that is empty, or has a - or ] where a character belongs" + literal
}

// emptyRange returns the first range of a [...] class of path, a glob filepath.Match
// takes, whose low end comes after its high end: Match takes it, and it holds no
// character, so the class it is alone in matches none, and the glob no file, ever.
func emptyRange(path string) (lo, hi string, ok bool) {
	// char is the character of a class at path[i:], after its \ if it has one, and the
	// index past it.
	char := func(i int) (string, int) {
		if path[i] == '\\' {
			i++
		}
		_, n := utf8.DecodeRuneInString(path[i:])
		return path[i : i+n], i + n
	}
	for i := 0; i < len(path); i++ {
		switch path[i] {
		case '\\':
			i++
		case '[':
			i++
			if i < len(path) && path[i] == '^' {
				i++
			}
			// Match refused a class that does not close, and a - or ] where a
			// character belongs, so each step reads a character or the ].
			for first := true; i < len(path) && (first || path[i] != ']'); first = false {
				var l, h string
				l, i = char(i)
				h = l
				if path[i] == '-' {
					h, i = char(i + 1)
				}
				if l > h {
					return l, h, true
				}
			}
		}
	}
	return "", "", false
}

// EmptyRange refuses a glob with a range that holds no character ([z-a]), naming it and
// its right order, as what follows the path in a message; nil for another path. Match
// takes such a range, and the glob matches no file, ever. The one-shots' paths, given on
// the command line, are refused as an input's.
func EmptyRange(path string) error {
	lo, hi, ok := emptyRange(path)
	if !ok {
		return nil
	}
	return fmt.Errorf("has the range [%s-%s], which holds no character as %s comes after %s: write it [%[2]s-%[1]s]",
		classChar(lo), classChar(hi), lo, hi)
}

// classChar is c as a range's end is written in a class: a ], - or \ escaped, which would
// else close the class, read as a range's -, or escape what follows it.
func classChar(c string) string {
	if c == "]" || c == "-" || c == `\` {
		return `\` + c
	}
	return c
}

// UnlistedElement refuses a glob with a ".", ".." or empty element after its first
// wildcard, naming the first, as what follows the path in a message; nil for another
// path. The follower matches each element from the first wildcard on against the names a
// directory's listing gives, which never holds these: such a glob matches no file, ever.
// Before the first wildcard the system resolves them, and they work. The one-shots'
// paths, given on the command line, are refused as an input's.
func UnlistedElement(path string) error {
	sep := string(filepath.Separator)
	elems := strings.Split(path, sep)
	first := slices.IndexFunc(elems, IsGlob)
	if first < 0 {
		return nil
	}
	for i, e := range elems[first+1:] {
		var elem string
		switch {
		case e == "." || e == "..":
			elem = strconv.Quote(e)
		case e == "" && first+1+i == len(elems)-1:
			elem = "a trailing " + sep
		case e == "":
			elem = "an empty element (" + sep + sep + ")"
		default:
			continue
		}
		return fmt.Errorf("has %s after a wildcard, which no directory listing gives: the glob matches no file; give the cleaned path %s", elem, filepath.Clean(path))
	}
	return nil
}

// shellVariable is a shell's $NAME or ${NAME}, compiled for the first path that holds a $.
var shellVariable = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*\}?`) })

// shellVar returns the first shell variable in path, "" for none.
func shellVar(path string) string {
	if !strings.Contains(path, "$") {
		return ""
	}
	return shellVariable().FindString(path)
}

// shellPath warns of a path written as a shell, or a tool with recursive globs, reads it:
// the glob matches another file or none, which only the warning that it matches no file
// yet would tell. They are names a file may have, so it is no error.
func (d *decoder) shellPath(path string, line int, subject string) {
	warn := func(format string, args ...any) {
		d.warn(line, subject, format, args...)
	}
	if strings.HasPrefix(path, "~") {
		warn("path: %q starts with ~, which a shell expands and a glob does not: give the home directory's path", path)
	}
	if v := shellVar(path); v != "" {
		warn("path: %q holds %s, which a shell expands and a glob does not: the rule file reads no environment variable; give the path itself", path, v)
	}
	if strings.Contains(path, "**") {
		warn("path: %q holds **, which a glob reads as *: it matches the names of one directory level, not of any number of them; give each level (%s)",
			path, strings.ReplaceAll(path, "**", "*"))
	}
}

// syslogInput decodes the keys of a syslog input.
func (d *decoder) syslogInput(entries []entry, subject string, in *Input, sources map[string]int) {
	s := &SyslogInput{}
	in.Syslog = s
	written := ""
	if e, ok := find(entries, "syslog"); ok {
		d.socket(e, subject, s, sources)
		if v := resolve(e.val); v.Kind == yaml.ScalarNode {
			written = v.Value
		}
	}
	if m, ok := find(entries, "socket_mode"); ok {
		d.socketMode(m, subject, s, written)
	}
	if w, ok := find(entries, "wrapper"); ok && in.Wrapper != "" {
		// The pipeline would join every sender's messages as the parts of one file's.
		d.add(w.key.Line, subject, "wrapper: %s reads the lines a container runtime writes to a pod's log files (path: /var/log/pods/...); a syslog input receives messages no runtime wrapped: leave wrapper out", in.Wrapper)
	}
}

// socket decodes `syslog:`, the address of the socket.
func (d *decoder) socket(e entry, subject string, s *SyslogInput, sources map[string]int) {
	addr, ok := d.scalar(e, subject, "syslog")
	if !ok {
		return
	}
	a, err := parseSocketAddress(addr)
	if err != nil {
		d.add(e.key.Line, subject, "syslog: %s", err)
		return
	}
	s.Address, s.Socket = addr, a
	// Two names of one address are one socket where the file tells them: localhost is
	// bound as 127.0.0.1. Any other name is looked up only when bound: an input on the
	// address it resolves to beside it fails at start.
	bound := a.Addr
	if host, port, err := net.SplitHostPort(a.Addr); err == nil && a.Network == "udp" && isLocalhost(host) {
		bound = net.JoinHostPort(localhostIP, port)
	}
	key, localhostKey := a.Network+" "+bound, "udp localhost "+bound
	local := bound != a.Addr
	if first, dup := sources[key]; dup {
		as := ""
		if l, firstLocal := sources[localhostKey]; local != (firstLocal && l == first) {
			as = " (localhost is bound as " + localhostIP + ")"
		}
		d.add(e.key.Line, subject, "syslog: %q is already received on by the input on line %d%s", addr, first, as)
	} else if first, port, overlaps := overlapsUDP(a, e.key.Line, sources); overlaps {
		d.add(e.key.Line, subject, "syslog: %q overlaps the input on line %d: a UDP socket on every address takes port %s on each, and binding the second would fail",
			addr, first, port)
	}
	sources[key] = e.key.Line
	if local {
		sources[localhostKey] = e.key.Line
	}
}

// overlapsUDP notes UDP address a of the input on line in sources, and reports whether
// it overlaps an input before it, on line first, whose socket it cannot be bound beside:
// one on the same port where either is on every address (0.0.0.0, [::] or none, which
// takes the port on every address of both families).
func overlapsUDP(a SocketAddress, line int, sources map[string]int) (first int, port string, overlaps bool) {
	host, port, err := net.SplitHostPort(a.Addr)
	if a.Network != "udp" || err != nil {
		return 0, "", false
	}
	ip := net.ParseIP(host)
	every := host == "" || ip != nil && ip.IsUnspecified()
	everyKey, oneKey := "udp every :"+port, "udp one :"+port
	first, taken := sources[everyKey]
	if !taken && every {
		first, taken = sources[oneKey]
	}
	key := oneKey
	if every {
		key = everyKey
	}
	if _, ok := sources[key]; !ok {
		sources[key] = line
	}
	return first, port, taken
}

// socketMode decodes `socket_mode:`, an octal permission like '0660', of the socket whose
// address is written, as the file has it.
func (d *decoder) socketMode(e entry, subject string, s *SyslogInput, written string) {
	text, ok := d.scalar(e, subject, "socket_mode")
	if !ok {
		return
	}
	// Told by the scheme written, so that the mode beside a refused address, which has its
	// own error, is read as a unix socket's, unless the address is a UDP one all the same.
	if _, udp := cutPrefixFold(written, "udp:"); udp {
		d.add(e.key.Line, subject, "socket_mode: applies only to a syslog: unixgram:// socket")
		return
	}
	// The text as written is read, so 0660 unquoted is octal too, and so is YAML 1.2's
	// spelling of an octal number.
	digits := strings.TrimPrefix(strings.TrimPrefix(text, "0o"), "0O")
	if digits == "" || strings.Trim(digits, "01234567") != "" {
		d.add(e.key.Line, subject, "socket_mode: %q is not an octal permission like '0660': its digits are 0 to 7", text)
		return
	}
	m, err := strconv.ParseUint(digits, 8, 64)
	if err != nil || m > 0o777 {
		// chmod(2) would take the set-user-ID, set-group-ID and sticky bits, which mean
		// nothing on a socket, and refuse more.
		d.add(e.key.Line, subject, "socket_mode: %q has bits past 0777 (set-user-ID, set-group-ID, sticky, or more), which a socket's permission does not have; give read and write bits alone, e.g. '0660'", text)
		return
	}
	if m&0o222 == 0 {
		// connect(2) and sendto(2) on a unix socket need write permission on its file.
		d.add(e.key.Line, subject, "socket_mode: %q lets no one send: a sender needs write permission on the socket, e.g. '0660'", text)
		return
	}
	if m&0o200 == 0 {
		// The kernel reads the owner's bits alone for the owner, whatever the group's say;
		// and the start probes a socket found at the path by sending to it (a stale one
		// left by a crash is replaced, a live one refused).
		d.warn(e.key.Line, subject, "socket_mode: %q gives the socket's owner, the exporter's user, no write permission: a sender running as that user cannot send, and a socket the exporter leaves behind (a crash) cannot be probed at the next start, which then refuses the path unless it runs as root; e.g. '0660'", text)
	}
	s.SocketMode = fs.FileMode(m)
}
