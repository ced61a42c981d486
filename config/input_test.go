package config

import (
	"cmp"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Each kind's keys are written beside the shared ones and land in its sub-struct; a key of
// another kind is refused at its line, naming both kinds.
func TestInputShape(t *testing.T) {
	for _, tc := range []struct {
		name string
		// input is the YAML of one input, its first line at line 2 of the file.
		input string
		want  Input
		kind  string
		err   string // else the whole error
	}{
		{name: "file", input: `
  - name: web
    path: /var/log/pods/*/*.log
    start_at: beginning
    shards: 2
    wrapper: cri
    format: json`,
			want: Input{Name: "web", Wrapper: WrapperCRI, Format: FormatJSON,
				File: &FileInput{Path: "/var/log/pods/*/*.log", StartAt: StartAtBeginning, Shards: 2}},
			kind: KindFile},
		{name: "syslog", input: `
  - name: edge
    syslog: unixgram:///run/edge.sock
    socket_mode: '0600'
    format: logfmt`,
			want: Input{Name: "edge", Format: FormatLogfmt,
				Syslog: &SyslogInput{Address: "unixgram:///run/edge.sock", Socket: SocketAddress{"unixgram", "/run/edge.sock"}, SocketMode: 0o600}},
			kind: KindSyslog},
		// connect(2) to a unix socket needs write permission on its file: a mode without
		// a write bit makes a socket only root can reach, nginx's workers never.
		{name: "socket_mode no one may write", input: `
  - syslog: unixgram:///run/edge.sock
    socket_mode: '0444'`,
			err: `in.yaml:3: input #1: socket_mode: "0444" lets no one send: a sender needs write permission on the socket, e.g. '0660'`},
		{name: "shards on a socket", input: `
  - name: edge
    syslog: udp://127.0.0.1:5140
    shards: 2`,
			err: `in.yaml:4: input "edge": shards: applies to file inputs (path:), not to a syslog input`},
		{name: "path_captures and start_at on a socket", input: `
  - syslog: udp://127.0.0.1:5140
    path_captures: '(?P<x>.)'
    start_at: end`,
			err: "in.yaml:3: input #1: path_captures: applies to file inputs (path:), not to a syslog input\n" +
				"in.yaml:4: input #1: start_at: applies to file inputs (path:), not to a syslog input"},
		// The pipeline would join the messages of every sender as one file's parts.
		{name: "wrapper on a socket", input: `
  - name: edge
    syslog: udp://127.0.0.1:5140
    wrapper: cri
    streams: [stdout]`,
			err: `in.yaml:4: input "edge": wrapper: cri reads the lines a container runtime writes to a pod's log files (path: /var/log/pods/...); a syslog input receives messages no runtime wrapped: leave wrapper out`},
		{name: "socket_mode on a file", input: `
  - path: /var/log/a.log
    socket_mode: '0660'`,
			err: `in.yaml:3: input #1: socket_mode: applies to syslog inputs (syslog:), not to a file input`},
		{name: "two kinds", input: `
  - path: /var/log/a.log
    syslog: udp://127.0.0.1:5140`,
			err: `in.yaml:3: input #1: path and syslog: an input reads a file or a socket, not both; make two inputs`},
		{name: "no kind, a file's keys checked", input: `
  - name: lost
    shards: many`,
			err: "in.yaml:2: input \"lost\": path: is missing; give the file or glob to follow (or syslog: a socket to receive on)\n" +
				`in.yaml:3: input "lost": shards: "many" is not a whole number from 1 to 64`},
		{name: "unknown key", input: `
  - path: /var/log/a.log
    socket: udp://127.0.0.1:5140`,
			err: `in.yaml:3: input #1: unknown key "socket" (known keys: name, format, wrapper, streams, log_format, log_format_escape, apache_log_format, path, start_at, path_captures, shards, syslog, socket_mode)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte("inputs:"+tc.input+"\nrules: [{name: a, match: x}]\n"), "in.yaml")
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("error:\n%v\nwant:\n%s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Inputs[0]; !reflect.DeepEqual(got, tc.want) || got.Kind() != tc.kind {
				t.Errorf("input %+v (file %+v, syslog %+v), kind %q; want %+v, kind %q", got, got.File, got.Syslog, got.Kind(), tc.want, tc.kind)
			}
		})
	}
}

// Every kind the loader makes names itself and its source.
func TestInputKinds(t *testing.T) {
	c, err := Parse([]byte(`
inputs:
  - {name: f, path: /var/log/a.log, path_captures: '/(?P<file>[^/]+)$'}
  - {name: s, syslog: 'udp://127.0.0.1:5140'}
rules: [{name: a, match: x}]
`), "kinds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, in := range c.Inputs {
		kinds = append(kinds, in.Kind())
	}
	if !slices.Equal(kinds, InputKinds()) {
		t.Errorf("kinds %v, want one input of each of %v", kinds, InputKinds())
	}
	for i, want := range []struct{ source, label, captures string }{
		{"/var/log/a.log", "f", "file"},
		{"udp://127.0.0.1:5140", "s", "syslog_hostname,syslog_tag"},
	} {
		in := c.Inputs[i]
		if in.Source() != want.source || in.Label() != want.label || strings.Join(in.PathCaptureNames(), ",") != want.captures {
			t.Errorf("input %d: source %q, label %q, path captures %v; want %+v", i, in.Source(), in.Label(), in.PathCaptureNames(), want)
		}
	}
	if (Input{}).Kind() != "" || (Input{}).Source() != "" {
		t.Errorf("an Input the loader did not make has kind %q, source %q", Input{}.Kind(), Input{}.Source())
	}
}

// TestInputLabelsDiffer: an input's name may not be the path (or address) of another input
// without a name, which its self-metrics are labelled by: the two inputs' lines, files and
// errors were summed into one input label, and neither could be told apart.
func TestInputLabelsDiffer(t *testing.T) {
	for _, tc := range []struct{ name, inputs, want string }{
		{"name is another's path", "[{path: /var/log/a.log}, {name: /var/log/a.log, path: /var/log/b.log}]",
			`rules.yaml:1: input "/var/log/a.log": name: is the path of the input on line 1, which has no name and is known by its path (in the input label of its metrics, in logs); name one of them otherwise`},
		{"name is another's address, written before it", "[{name: 'udp://127.0.0.1:5140', path: /var/log/b.log}, {syslog: 'udp://127.0.0.1:5140'}]",
			`rules.yaml:1: input "udp://127.0.0.1:5140": name: is the address of the input on line 1, which has no name and is known by its address (in the input label of its metrics, in logs); name one of them otherwise`},
		{"name is its own path", "[{name: /var/log/a.log, path: /var/log/a.log}, {path: /var/log/b.log}]", ""},
		{"name is a named input's path", "[{name: a, path: /var/log/b.log}, {name: /var/log/b.log, path: /var/log/c.log}]", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParseError(t, "inputs: "+tc.inputs+"\nrules: [{name: r, match: x}]\n", "rules.yaml", tc.want)
		})
	}
}

// TestShellPathWarnings: a path written as a shell or another tool reads it (~, $VAR,
// ** for any depth) is a glob here that matches something else, or nothing, where the
// only word said was that it matches no file yet: each is warned of at the path's line.
func TestShellPathWarnings(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/var/log/nginx/*.log", ""},
		{"~/logs/access.log", `c.yaml:1: warning: input #1: path: "~/logs/access.log" starts with ~, which a shell expands and a glob does not: give the home directory's path`},
		{"/var/log/$HOSTNAME/access.log", `c.yaml:1: warning: input #1: path: "/var/log/$HOSTNAME/access.log" holds $HOSTNAME, which a shell expands and a glob does not: the rule file reads no environment variable; give the path itself`},
		{"/logs/${POD}/*.log", `c.yaml:1: warning: input #1: path: "/logs/${POD}/*.log" holds ${POD}, which a shell expands`},
		{"/var/log/**/*.log", `c.yaml:1: warning: input #1: path: "/var/log/**/*.log" holds **, which a glob reads as *: it matches the names of one directory level, not of any number of them; give each level (/var/log/*/*.log)`},
	} {
		t.Run(c.path, func(t *testing.T) {
			parseWarned(t, "c.yaml", fmt.Sprintf("inputs: [{path: '%s'}]\nrules:\n  - {name: r, match: x}\n", c.path), c.want)
		})
	}
}

// TestGlobUnlistedElement: a glob is matched element by element against directory
// listings from its first wildcard on, and a listing never gives ".", ".." or an empty
// name, so a glob with one of them after a wildcard matches no file, ever. It loaded
// without a word; it is refused, with the cleaned path. Before any wildcard they are
// resolved by the system, as in a plain path, and work.
func TestGlobUnlistedElement(t *testing.T) {
	const hint = `, which no directory listing gives: the glob matches no file; `
	for _, c := range []struct{ path, want string }{
		{"/var/log/pods/*/../x/*.log", `c.yaml:1: input #1: path: "/var/log/pods/*/../x/*.log" has ".." after a wildcard` + hint + `give the cleaned path /var/log/pods/x/*.log`},
		{"/logs/*/./a.log", `c.yaml:1: input #1: path: "/logs/*/./a.log" has "." after a wildcard` + hint + `give the cleaned path /logs/*/a.log`},
		{"/logs/*//a.log", `c.yaml:1: input #1: path: "/logs/*//a.log" has an empty element (//) after a wildcard` + hint + `give the cleaned path /logs/*/a.log`},
		{"/logs/*/", `c.yaml:1: input #1: path: "/logs/*/" has a trailing / after a wildcard` + hint + `give the cleaned path /logs/*`},
		{"logs/a?/b/..", `c.yaml:1: input #1: path: "logs/a?/b/.." has ".." after a wildcard` + hint + `give the cleaned path logs/a?`},
		{`/logs/a\[b/./c.log`, `c.yaml:1: input #1: path: "/logs/a\\[b/./c.log" has "." after a wildcard` + hint + `give the cleaned path /logs/a\[b/c.log`},
		// Before the first wildcard, or in a path that is no glob: the system resolves them.
		{"/var/log/../log/*.log", ""},
		{"./logs/*.log", ""},
		{"/var//log/./*.log", ""},
		{"/var/log/../log/a.log", ""},
		{"/logs/a.log/", ""},
		{"/logs/*.d/x..y/a.log", ""},
	} {
		t.Run(c.path, func(t *testing.T) {
			checkParseError(t, fmt.Sprintf("inputs: [{path: '%s'}]\nrules:\n  - {name: r, match: x}\n", c.path), "c.yaml", c.want)
		})
	}
}

// TestGlobEmptyRange: a class's range whose low end comes after its high end holds no
// character; filepath.Match takes it, so the glob loaded and matched no file, ever (or
// fewer than meant). It is refused, naming the range and its order.
func TestGlobEmptyRange(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/logs/[z-a].log", `c.yaml:1: input #1: path: "/logs/[z-a].log" has the range [z-a], which holds no character as z comes after a: write it [a-z]`},
		{"/logs/[^9-0]/*.log", `c.yaml:1: input #1: path: "/logs/[^9-0]/*.log" has the range [9-0], which holds no character as 9 comes after 0: write it [0-9]`},
		{"/logs/[a-cx-q]*.log", `c.yaml:1: input #1: path: "/logs/[a-cx-q]*.log" has the range [x-q], which holds no character as x comes after q: write it [q-x]`},
		{`/logs/[\z-a].log`, `c.yaml:1: input #1: path: "/logs/[\\z-a].log" has the range [z-a], which holds no character as z comes after a: write it [a-z]`},
		{"/logs/[é-a].log", `c.yaml:1: input #1: path: "/logs/[é-a].log" has the range [é-a], which holds no character as é comes after a: write it [a-é]`},
		// A ], - or \ at an end is escaped in the range named and in the one to write, which
		// unescaped ([!-]]) is no glob.
		{`/logs/[\]-!].log`, `c.yaml:1: input #1: path: "/logs/[\\]-!].log" has the range [\]-!], which holds no character as ] comes after !: write it [!-\]]`},
		{`/logs/[\--!].log`, `c.yaml:1: input #1: path: "/logs/[\\--!].log" has the range [\--!], which holds no character as - comes after !: write it [!-\-]`},
		{`/logs/[\\-!].log`, `c.yaml:1: input #1: path: "/logs/[\\\\-!].log" has the range [\\-!], which holds no character as \ comes after !: write it [!-\\]`},
		// Ranges in order, a range of one, characters and escapes that are no range.
		{"/logs/[a-z0-9].log", ""},
		{"/logs/[a-a].log", ""},
		{"/logs/[za].log", ""},
		{`/logs/\[z-a].log`, ""},
		{`/logs/[\]-a]*.log`, ""},
		{"/logs/[^a-z]*.log", ""},
	} {
		t.Run(c.path, func(t *testing.T) {
			checkParseError(t, fmt.Sprintf("inputs: [{path: '%s'}]\nrules:\n  - {name: r, match: x}\n", c.path), "c.yaml", c.want)
		})
	}
}

// TestIngressConfigMapKeys: the ingress-nginx controller's ConfigMap keys for its access
// log, pasted into an input, or the key with its value pasted as the format, are errors
// that say which key of the input takes the value: they read as unknown keys with no
// suggestion, and the pasted key's text as a format that no line fits, with no word.
func TestIngressConfigMapKeys(t *testing.T) {
	for _, c := range []struct{ name, input, want string }{
		{"log-format-upstream", `log-format-upstream: '$remote_addr $status'`,
			`f.yaml:2: input "web": unknown key "log-format-upstream": it is the ingress-nginx controller's ConfigMap key; an input gives its value as log_format:`},
		{"log-format-stream", `log-format-stream: '[$remote_addr] $status'`,
			`f.yaml:2: input "web": unknown key "log-format-stream": it is the ingress-nginx controller's ConfigMap key; an input gives its value as log_format:`},
		{"log-format-escape-json", `{log_format: '{"s":"$status"}', log-format-escape-json: "true"}`,
			`f.yaml:2: input "web": unknown key "log-format-escape-json": it is the ingress-nginx controller's ConfigMap key; an input gives it as log_format_escape: json`},
		{"log-format-escape-none", `{log_format: '$status', log-format-escape-none: "true"}`,
			`f.yaml:2: input "web": unknown key "log-format-escape-none": it is the ingress-nginx controller's ConfigMap key; an input gives it as log_format_escape: none`},
		{"the key with its value as the format", `log_format: "log-format-upstream: '$remote_addr $status'"`,
			`f.yaml:2: input "web": log_format: this is the ingress-nginx controller's ConfigMap entry log-format-upstream; give only its value, the format string`},
		{"the key with its value unquoted as the format", `log_format: "log-format-upstream: $remote_addr $status"`,
			`f.yaml:2: input "web": log_format: this is the ingress-nginx controller's ConfigMap entry log-format-upstream; give only its value, the format string`},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := "inputs:\n  - {name: web, path: /a.log, " + strings.TrimSuffix(strings.TrimPrefix(c.input, "{"), "}") + "}\nrules: [{name: r, match: x}]\n"
			_, err := Parse([]byte(text), "f.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error:\n%v\nwant it to hold:\n%s", err, c.want)
			}
		})
	}
}

// TestSameFileTwice: a path written otherwise than another input's (/logs/./a.log,
// /logs//a.log) is the same file, followed twice and its lines counted twice by a rule
// that reads both, as an identical path is refused; and a path that another input's glob
// matches is read by both, which is warned of (rules may keep to one input each).
func TestSameFileTwice(t *testing.T) {
	for _, c := range []struct{ name, second, err, warn string }{
		{"the same path", "/logs/a.log", `f.yaml:3: input "b": path: "/logs/a.log" is already followed by the input on line 2 (its lines would count twice)`, ""},
		{"a dot element", "/logs/./a.log", `f.yaml:3: input "b": path: "/logs/./a.log" is already followed by the input on line 2, as /logs/a.log (its lines would count twice)`, ""},
		{"a double slash", "/logs//a.log", `f.yaml:3: input "b": path: "/logs//a.log" is already followed by the input on line 2, as /logs/a.log (its lines would count twice)`, ""},
		{"a glob matching it", "/logs/*.log", "",
			`f.yaml:2: warning: input "a": path: "/logs/a.log" is also matched by the glob "/logs/*.log" of the input on line 3: both read its lines, and rule "r", which reads both inputs, counts them twice`},
		{"a glob of an escaped character", `/logs/\a.log`, "",
			`f.yaml:2: warning: input "a": path: "/logs/a.log" is also matched by the glob "/logs/\\a.log" of the input on line 3: both read its lines, and rule "r", which reads both inputs, counts them twice`},
		{"another file", "/logs/b.log", "", ""},
		{"a glob matching others", "/logs/*.txt", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := "inputs:\n  - {name: a, path: /logs/a.log}\n  - {name: b, path: '" + c.second + "'}\nrules: [{name: r, match: x}]\n"
			cfg, err := Parse([]byte(text), "f.yaml")
			switch {
			case c.err != "":
				if err == nil || err.Error() != c.err {
					t.Errorf("error:\n%v\nwant:\n%s", err, c.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			got := Warnings(cfg)
			if c.warn == "" && len(got) != 0 || c.warn != "" && (len(got) != 1 || got[0] != c.warn) {
				t.Errorf("warnings %q; want %q", got, c.warn)
			}
		})
	}
}

// TestGlobbedTwiceByRules: a file that another input's glob matches is read by both, and
// counted twice only by a rule that reads both inputs: rules that keep to one input each
// (inputs:) count it once, and are not warned of; a rule that reads both is named.
func TestGlobbedTwiceByRules(t *testing.T) {
	const inputs = "inputs:\n  - {name: a, path: /logs/a.log}\n  - {name: b, path: '/logs/*.log'}\n  - {path: /other.log}\n"
	const warning = `f.yaml:2: warning: input "a": path: "/logs/a.log" is also matched by the glob "/logs/*.log" of the input on line 3: both read its lines, and rule %q, which reads both inputs, counts them twice`
	// A container's stdout and its stderr, each read by an input of its own: no line is
	// read twice.
	const streams = "inputs:\n  - {name: a, path: /logs/a.log, wrapper: cri, streams: [stdout]}\n  - {name: b, path: '/logs/*.log', wrapper: cri, streams: [%s]}\n"
	for _, c := range []struct{ name, inputs, rules, warn string }{
		{"each rule keeps to one input", "", "  - {name: ra, match: x, inputs: [a]}\n  - {name: rb, match: x, inputs: [b]}\n", ""},
		{"a rule lists both", "", "  - {name: ra, match: x, inputs: [a]}\n  - {name: both, match: x, inputs: [b, a]}\n", fmt.Sprintf(warning, "both")},
		{"a rule reads every input", "", "  - {name: ra, match: x, inputs: [a]}\n  - {name: all, match: x}\n", fmt.Sprintf(warning, "all")},
		{"streams apart", fmt.Sprintf(streams, "stderr"), "  - {name: all, match: x}\n", ""},
		{"streams shared", fmt.Sprintf(streams, "stdout, stderr"), "  - {name: all, match: x}\n", fmt.Sprintf(warning, "all")},
		// Every glob that matches the path is named: narrowing the one named alone left
		// the lines counted twice, and the next start named the other.
		{"two globs match it", inputs + "  - {name: c, path: '/logs/a.*'}\n", "  - {name: all, match: x}\n",
			`f.yaml:2: warning: input "a": path: "/logs/a.log" is also matched by the globs "/logs/*.log" of the input on line 3, "/logs/a.*" of the input on line 5: all 3 read its lines, and rule "all", which reads 3 of those inputs, counts them 3 times`},
		{"two globs, a rule of two inputs", inputs + "  - {name: c, path: '/logs/a.*'}\n", "  - {name: ab, match: x, inputs: [a, b]}\n  - {name: ac, match: x, inputs: [a, c]}\n",
			`f.yaml:2: warning: input "a": path: "/logs/a.log" is also matched by the globs "/logs/*.log" of the input on line 3, "/logs/a.*" of the input on line 5: all 3 read its lines, and rule "ab", which reads 2 of those inputs, counts them twice`},
		// A rule of stdout's, stderr's and both streams' inputs counts a line twice: the
		// inputs of stdout and of stderr read none of the same lines.
		{"two globs of streams apart", "inputs:\n  - {name: a, path: /logs/a.log, wrapper: cri}\n  - {name: b, path: '/logs/*.log', wrapper: cri, streams: [stdout]}\n  - {name: c, path: '/logs/a.*', wrapper: cri, streams: [stderr]}\n", "  - {name: all, match: x}\n",
			`f.yaml:2: warning: input "a": path: "/logs/a.log" is also matched by the globs "/logs/*.log" of the input on line 3, "/logs/a.*" of the input on line 4: all 3 read its lines, and rule "all", which reads 3 of those inputs, counts them twice`},
		{"two globs, one read with it", inputs + "  - {name: c, path: '/logs/a.*'}\n", "  - {name: ra, match: x, inputs: [a, c]}\n  - {name: rb, match: x, inputs: [b]}\n",
			`f.yaml:2: warning: input "a": path: "/logs/a.log" is also matched by the glob "/logs/a.*" of the input on line 5: both read its lines, and rule "ra", which reads both inputs, counts them twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(cmp.Or(c.inputs, inputs)+"rules:\n"+c.rules), "f.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got := Warnings(cfg)
			if c.warn == "" && len(got) != 0 || c.warn != "" && (len(got) != 1 || got[0] != c.warn) {
				t.Errorf("warnings %q; want %q", got, c.warn)
			}
		})
	}
}

// TestSocketMode: a socket_mode is an octal permission of read and write bits; each way
// of missing it is named (it said "not an octal permission" of '0000' and '1777' alike),
// and a mode that leaves the exporter's own user no write loads with a warning.
func TestSocketMode(t *testing.T) {
	const at = `c.yaml:1: input #1: socket_mode: `
	for _, c := range []struct {
		mode string // as written in YAML
		want fs.FileMode
		err  string // else warn
		warn string
	}{
		{mode: "'0660'", want: 0o660},
		// The text is read as written: YAML's number is not made of it.
		{mode: "0660", want: 0o660},
		{mode: "0o660", want: 0o660},
		{mode: "'600'", want: 0o600},
		{mode: "'0666'", want: 0o666},
		{mode: "'0000'", err: at + `"0000" lets no one send: a sender needs write permission on the socket, e.g. '0660'`},
		{mode: "'0444'", err: at + `"0444" lets no one send: a sender needs write permission on the socket, e.g. '0660'`},
		{mode: "'0999'", err: at + `"0999" is not an octal permission like '0660': its digits are 0 to 7`},
		{mode: "'0o'", err: at + `"0o" is not an octal permission like '0660': its digits are 0 to 7`},
		{mode: "'rw-rw----'", err: at + `"rw-rw----" is not an octal permission like '0660': its digits are 0 to 7`},
		{mode: "''", err: at + `"" is not an octal permission like '0660': its digits are 0 to 7`},
		{mode: "'1777'", err: at + `"1777" has bits past 0777 (set-user-ID, set-group-ID, sticky, or more), which a socket's permission does not have; give read and write bits alone, e.g. '0660'`},
		{mode: "'4660'", err: at + `"4660" has bits past 0777 (set-user-ID, set-group-ID, sticky, or more), which a socket's permission does not have; give read and write bits alone, e.g. '0660'`},
		{mode: "'7777777777777777777777777'", err: at + `"7777777777777777777777777" has bits past 0777 (set-user-ID, set-group-ID, sticky, or more), which a socket's permission does not have; give read and write bits alone, e.g. '0660'`},
		// The owner's bits alone count for the owner: its own probe of a stale socket at
		// the next start is refused, as a sender of its user is.
		{mode: "'0060'", want: 0o060, warn: `c.yaml:1: warning: input #1: socket_mode: "0060" gives the socket's owner, the exporter's user, no write permission: a sender running as that user cannot send, and a socket the exporter leaves behind (a crash) cannot be probed at the next start, which then refuses the path unless it runs as root; e.g. '0660'`},
		{mode: "'0022'", want: 0o022, warn: `c.yaml:1: warning: input #1: socket_mode: "0022" gives the socket's owner`},
	} {
		t.Run(c.mode, func(t *testing.T) {
			text := fmt.Sprintf("inputs: [{syslog: 'unixgram:///run/x.sock', socket_mode: %s}]\nrules:\n  - {name: r, match: x}\n", c.mode)
			if c.err != "" {
				if _, err := Parse([]byte(text), "c.yaml"); fmt.Sprint(err) != c.err {
					t.Errorf("got:\n%v\nwant:\n%s", err, c.err)
				}
				return
			}
			cfg := parseWarned(t, "c.yaml", text, c.warn)
			if got := cfg.Inputs[0].Syslog.SocketMode; got != c.want {
				t.Errorf("mode %v, want %v", got, c.want)
			}
		})
	}
}

// TestGlobFault: a path filepath.Match refuses is refused saying what in it is wrong,
// where Go's error says "syntax error in pattern" of each.
func TestGlobFault(t *testing.T) {
	const literal = `; a [ of the name itself is written \[`
	const class = `has a [...] class that is empty, or has a - or ] where a character belongs` + literal
	for _, c := range []struct{ path, want string }{
		{"/var/log/[a.log", `has a [ that no ] closes, at "[a.log"` + literal},
		{"/var/log/[ab]/[c.log", `has a [ that no ] closes, at "[c.log"` + literal},
		{`/var/log/[a\]`, `has a [ that no ] closes, at "[a\\]"` + literal},
		{`/var/log/a\`, `ends in a \ that escapes nothing (a \ of the name itself is written \\)`},
		{"/var/log/[]a].log", class},
		{"/var/log/[-a].log", class},
	} {
		t.Run(c.path, func(t *testing.T) {
			if _, err := filepath.Match(c.path, ""); err == nil {
				t.Fatalf("filepath.Match takes %q", c.path)
			}
			_, err := Parse([]byte(fmt.Sprintf("inputs: [{path: '%s'}]\nrules:\n  - {name: r, match: x}\n", c.path)), "c.yaml")
			want := fmt.Sprintf("c.yaml:1: input #1: path: %q is not a valid glob: it %s", c.path, c.want)
			if fmt.Sprint(err) != want {
				t.Errorf("got:\n%v\nwant:\n%s", err, want)
			}
		})
	}
}
