package parser

import "bytes"

// startupLines are the lines nginx images write to stdout as they start, before any
// access line: the official image's entrypoint scripts (nginxinc/docker-nginx, and
// nginx-unprivileged's, which are the same) and ingress-nginx's controller banner. Each
// is a line's opening, or the whole line when whole. A pod of them that serves no
// request for a while holds these lines alone, of no candidate's format; they are no sign
// that its access log is of another (Session.Settle). The list is of the lines as the
// images write them, not of their shape: a line of a script of the user's own, or one
// of these scripts' ERROR lines, is not on it.
var startupLines = []struct {
	text  string
	whole bool
}{
	// docker-entrypoint.sh, as ENTRYPOINT ["/docker-entrypoint.sh"] runs it ($0).
	{"/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to perform configuration", true},
	{"/docker-entrypoint.sh: Looking for shell scripts in /docker-entrypoint.d/", true},
	{"/docker-entrypoint.sh: Sourcing /docker-entrypoint.d/", false},
	{"/docker-entrypoint.sh: Launching /docker-entrypoint.d/", false},
	{"/docker-entrypoint.sh: Ignoring /docker-entrypoint.d/", false},
	{"/docker-entrypoint.sh: Configuration complete; ready for start up", true},
	{"/docker-entrypoint.sh: No files found in /docker-entrypoint.d/, skipping configuration", true},
	// 10-listen-on-ipv6-by-default.sh says only what it did to default.conf, each line
	// "info:" (since nginx 1.19.6).
	{"10-listen-on-ipv6-by-default.sh: info: ", false},
	// Before (nginx 1.18.0, 1.19.0 to 1.19.5) it wrote these lines of it, whole, some
	// "error:": the same skips as its later "info:" lines, after which nginx starts.
	{"10-listen-on-ipv6-by-default.sh: Getting the checksum of /etc/nginx/conf.d/default.conf", true},
	{"10-listen-on-ipv6-by-default.sh: Enabled listen on IPv6 in /etc/nginx/conf.d/default.conf", true},
	{"10-listen-on-ipv6-by-default.sh: IPv6 listen already enabled, exiting", true},
	{"10-listen-on-ipv6-by-default.sh: Can not modify /etc/nginx/conf.d/default.conf (read-only file system?), exiting", true},
	{"10-listen-on-ipv6-by-default.sh: error: ipv6 not available", true},
	{"10-listen-on-ipv6-by-default.sh: error: /etc/nginx/conf.d/default.conf is not a file or does not exist", true},
	{"10-listen-on-ipv6-by-default.sh: error: can not modify /etc/nginx/conf.d/default.conf (read-only file system?)", true},
	{"10-listen-on-ipv6-by-default.sh: error: IPv6 listen already enabled", true},
	{"10-listen-on-ipv6-by-default.sh: error: can not guess the operating system", true},
	{"10-listen-on-ipv6-by-default.sh: error: /etc/nginx/conf.d/default.conf differs from the packaged version", true},
	{"10-listen-on-ipv6-by-default.sh: error: /etc/nginx/conf.d/default.conf differs from the packages version", true}, // alpine's, before 1.19.3
	{"10-listen-on-ipv6-by-default.sh: error: Unsupported distribution", true},
	// 20-envsubst-on-templates.sh, but for its ERROR lines (an output directory not
	// writable). 30-tune-worker-processes.sh writes to stderr only.
	{"20-envsubst-on-templates.sh: Running envsubst on ", false},
	{"20-envsubst-on-templates.sh: Appending stream block to ", false},
	{"20-envsubst-on-templates.sh: /etc/nginx/nginx.conf contains a stream block", false},
	{"20-envsubst-on-templates.sh: info: can not modify ", false},
	// The ingress-nginx controller's banner (version.String, printed to stdout before
	// anything else), the nginx -v line indented in it; blank lines are StartupLines'.
	// Its nginx -V lines (built by, configure arguments) are not on it: the banner asks
	// for them at --v=2, but is printed before the flags are parsed, so never does. Up to
	// 0.25 it had no nginx version line and aligned its values by fewer spaces
	// ("  Release:    0.25.1"): each opening is the older one, which the newer begins with.
	{"-------------------------------------------------------------------------------", true},
	{"NGINX Ingress controller", true},
	{"  Release:    ", false},
	{"  Build:      ", false},
	{"  Repository: ", false},
	{"  nginx version: ", false},
}

// startupLine reports whether line is one of startupLines.
func startupLine(line []byte) bool {
	for _, l := range startupLines {
		if l.whole && string(line) == l.text || !l.whole && bytes.HasPrefix(line, []byte(l.text)) {
			return true
		}
	}
	return false
}

// StartupLines tells of a file's lines, added one by one, whether they are an nginx
// image's start-up lines alone (startupLines), blank lines among them (ingress-nginx's
// banner has two): at least one such line, no line of another kind, and no more than
// MaxStartupLines lines. A reader that judges a file's lines as they come and keeps none
// (a glob of one log format, whose files of no format are settled as a Session's are)
// adds each; a Session adds the lines it held (With). The zero value has had no line.
type StartupLines struct {
	found, other bool
	// n are the lines added before one of another kind.
	n int
}

// Add adds line and reports whether the lines are still start-up lines and blank lines
// alone: once one of another kind came, they never are again.
func (s *StartupLines) Add(line []byte) bool {
	switch {
	case s.other:
		return false
	case len(line) == 0:
	case startupLine(line):
		s.found = true
	default:
		s.other = true
		return false
	}
	s.n++
	return true
}

// With is s with lines added.
func (s StartupLines) With(lines [][]byte) StartupLines {
	for _, line := range lines {
		if !s.Add(line) {
			break
		}
	}
	return s
}

// Only reports whether the lines added are an nginx image's start-up lines alone: at
// least one of them, none of another kind but blank, and no more than MaxStartupLines.
func (s StartupLines) Only() bool { return s.found && !s.other && s.n <= MaxStartupLines }

// MaxStartupLines bounds the start-up lines (and blank lines among them) that are no
// sign of a file's format. The official image's entrypoint writes two lines before its
// scripts, one per file in /docker-entrypoint.d (four as shipped), one per template it
// renders (20-envsubst-on-templates.sh; a stream template adds one), at most a few of
// 10-listen-on-ipv6-by-default.sh's and one after them; ingress-nginx's banner is nine.
// A pod writes a dozen or so, a few dozen with many templates: 256 leaves room for hundreds
// of templates and scripts. Past it, lines that only look like them (a loop printing one,
// an image of another kind) are judged as any others, and their file may be of no format.
const MaxStartupLines = 256
