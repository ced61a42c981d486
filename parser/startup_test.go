package parser

import (
	"slices"
	"strings"
	"testing"
)

// The start-up lines of nginx images are told from other lines as the images write them:
// the official image's entrypoint (nginxinc/docker-nginx, the same in nginx-unprivileged)
// and ingress-nginx's banner; not lines of the user's own scripts, the entrypoint's
// errors, nginx's error log or another container's.
func TestStartupLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to perform configuration", true},
		{"/docker-entrypoint.sh: Looking for shell scripts in /docker-entrypoint.d/", true},
		{"/docker-entrypoint.sh: Launching /docker-entrypoint.d/10-listen-on-ipv6-by-default.sh", true},
		{"10-listen-on-ipv6-by-default.sh: info: Getting the checksum of /etc/nginx/conf.d/default.conf", true},
		{"10-listen-on-ipv6-by-default.sh: info: Enabled listen on IPv6 in /etc/nginx/conf.d/default.conf", true},
		{"10-listen-on-ipv6-by-default.sh: info: can not modify /etc/nginx/conf.d/default.conf (read-only file system?)", true},
		// nginx 1.18.0 and 1.19.0 to 1.19.5: 10-listen-on-ipv6-by-default.sh before "info:".
		{"10-listen-on-ipv6-by-default.sh: Getting the checksum of /etc/nginx/conf.d/default.conf", true},
		{"10-listen-on-ipv6-by-default.sh: Enabled listen on IPv6 in /etc/nginx/conf.d/default.conf", true},
		{"10-listen-on-ipv6-by-default.sh: IPv6 listen already enabled, exiting", true},
		{"10-listen-on-ipv6-by-default.sh: Can not modify /etc/nginx/conf.d/default.conf (read-only file system?), exiting", true},
		{"10-listen-on-ipv6-by-default.sh: error: ipv6 not available", true},
		{"10-listen-on-ipv6-by-default.sh: error: can not modify /etc/nginx/conf.d/default.conf (read-only file system?)", true},
		{"10-listen-on-ipv6-by-default.sh: error: /etc/nginx/conf.d/default.conf differs from the packaged version", true},
		{"10-listen-on-ipv6-by-default.sh: error: /etc/nginx/conf.d/default.conf differs from the packages version", true},
		{"/docker-entrypoint.sh: Sourcing /docker-entrypoint.d/15-local-resolvers.envsh", true},
		{"/docker-entrypoint.sh: Launching /docker-entrypoint.d/20-envsubst-on-templates.sh", true},
		{"20-envsubst-on-templates.sh: Running envsubst on /etc/nginx/templates/default.conf.template to /etc/nginx/conf.d/default.conf", true},
		{"/docker-entrypoint.sh: Launching /docker-entrypoint.d/30-tune-worker-processes.sh", true},
		{"/docker-entrypoint.sh: Ignoring /docker-entrypoint.d/40-custom.sh, not executable", true},
		{"/docker-entrypoint.sh: Configuration complete; ready for start up", true},
		{"/docker-entrypoint.sh: No files found in /docker-entrypoint.d/, skipping configuration", true},
		{"-------------------------------------------------------------------------------", true},
		{"NGINX Ingress controller", true},
		{"  Release:       v1.12.1", true},
		{"  Build:         51c2b819690bbf1709b844dbf321a9acf6eda5a7", true},
		{"  Repository:    https://github.com/kubernetes/ingress-nginx", true},
		{"  nginx version: nginx/1.25.5", true},
		// ingress-nginx up to 0.25 aligned its banner's values by fewer spaces.
		{"  Release:    0.25.1", true},
		{"  Build:      git-5179893a9", true},
		{"  Repository: https://github.com/kubernetes/ingress-nginx", true},
		{"  Release:", false},
		{"  Build: x", false},

		{"", false}, // blank: StartupLines', amid start-up lines
		{"/docker-entrypoint.sh: Configuration complete; ready for start up, or not", false},
		{"20-envsubst-on-templates.sh: ERROR: /etc/nginx/templates exists, but /etc/nginx/conf.d is not writable", false},
		{"40-custom.sh: info: warming the cache", false},
		{"10-listen-on-ipv6-by-default.sh: Getting the checksum of /etc/nginx/conf.d/site.conf", false},
		{"10-listen-on-ipv6-by-default.sh: error: ipv6 not available, or so", false},
		{"10-listen-on-ipv6-by-default.sh: ERROR: could not read /etc/os-release", false},
		{"/usr/local/bin/docker-entrypoint.sh: starting postgres", false},
		{`2026/11/29 12:00:00 [notice] 1#1: using the "epoll" event method`, false},
		{"12:00:00 INFO served / in 5ms", false},
		{"---", false},
	} {
		if got := startupLine([]byte(tc.line)); got != tc.want {
			t.Errorf("startupLine(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

// A file's held lines are start-up lines alone when each is one or blank, and one is.
func TestStartupOnly(t *testing.T) {
	const (
		launch = "/docker-entrypoint.sh: Launching /docker-entrypoint.d/10-listen-on-ipv6-by-default.sh"
		other  = "12:00:00 INFO served / in 5ms"
	)
	for _, tc := range []struct {
		name  string
		lines []string
		want  bool
	}{
		{"start-up lines", []string{launch, launch}, true},
		{"blank lines among them", []string{"NGINX Ingress controller", "", "-------------------------------------------------------------------------------", ""}, true},
		{"another line after them", []string{launch, other}, false},
		{"another line before them", []string{other, launch}, false},
		{"blank lines alone", []string{"", ""}, false},
		{"as many as the bound", slices.Repeat([]string{launch}, MaxStartupLines), true},
		{"as many as the bound, one blank", append(slices.Repeat([]string{launch}, MaxStartupLines-1), ""), true},
		{"past the bound", slices.Repeat([]string{launch}, MaxStartupLines+1), false},
		{"past the bound by a blank line", append(slices.Repeat([]string{launch}, MaxStartupLines), ""), false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := make([][]byte, len(tc.lines))
			for i, l := range tc.lines {
				lines[i] = []byte(l)
			}
			if got := (StartupLines{}).With(lines).Only(); got != tc.want {
				t.Errorf("With(%s).Only() = %v, want %v", strings.Join(tc.lines, " | "), got, tc.want)
			}
			// A reader that judges lines as they come adds each, past one of another kind.
			var s StartupLines
			for _, l := range lines {
				s.Add(l)
			}
			if got := s.Only(); got != tc.want {
				t.Errorf("StartupLines of %s: Only() = %v, want %v", strings.Join(tc.lines, " | "), got, tc.want)
			}
		})
	}
}
