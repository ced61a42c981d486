// Package deploytest reads the example deployment of deploy/ for the tests that run it
// against real programs: the PromQL of the Grafana dashboard and of the alerting rules,
// the log format of the example nginx.conf, and example-rules.yaml served on a test's own
// log, so that a renamed metric breaks a test instead of a user's dashboard. It works on
// the files' bytes, which each test reads from its checkout: the tests of deploy/, a
// module of its own for its Kubernetes dependencies, share it with e2e/ without the
// product's module importing deploy/.
package deploytest

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Vars are the values Grafana would give the dashboard's variables. Queries are evaluated
// by Prometheus, which knows none of them, so every one used must be set.
type Vars struct {
	// Job and Instance are matched with =~ in the dashboard, so a regex works too.
	Job      string
	Instance string
	// Window is a window label value, e.g. "5m".
	Window string
	// RateInterval stands for Grafana's $__rate_interval, a range such as "1m".
	RateInterval string
}

// Query is one PromQL expression and where it comes from, for error messages.
type Query struct {
	Source string
	Expr   string
}

// Dashboard is the part of the Grafana dashboard model that the tests inspect.
type Dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is one dashboard panel; rows are panels of type "row" without targets.
type Panel struct {
	Title      string         `json:"title"`
	Type       string         `json:"type"`
	Datasource *DatasourceRef `json:"datasource"`
	Targets    []Target       `json:"targets"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string         `json:"refId"`
	Expr       string         `json:"expr"`
	Datasource *DatasourceRef `json:"datasource"`
}

// DatasourceRef names a data source by type and uid; the uid is "${datasource}" when it
// follows the dashboard's data source variable.
type DatasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Variable is one templating variable. Query is a string for query variables and an object
// for some other types, so it is kept raw.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *DatasourceRef  `json:"datasource"`
	Current    struct {
		Value json.RawMessage `json:"value"`
	} `json:"current"`
}

// ParseDashboard decodes a dashboard: deploy/grafana-dashboard.json, or what --dashboard
// prints.
func ParseDashboard(dashboardJSON []byte) (*Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(dashboardJSON, &d); err != nil {
		return nil, fmt.Errorf("grafana-dashboard.json: %w", err)
	}
	return &d, nil
}

// DashboardQueries returns every panel query of the dashboard with the variables replaced
// by v. It fails when a query uses a variable v leaves empty or one it does not know, since
// Prometheus would reject the query.
func DashboardQueries(dashboardJSON []byte, v Vars) ([]Query, error) {
	d, err := ParseDashboard(dashboardJSON)
	if err != nil {
		return nil, err
	}
	subst := []struct{ name, value string }{
		{"$__rate_interval", v.RateInterval},
		{"$instance", v.Instance},
		{"$window", v.Window},
		{"$job", v.Job},
	}
	var qs []Query
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			src := fmt.Sprintf("panel %q query %s", p.Title, t.RefID)
			expr := t.Expr
			for _, s := range subst {
				if !strings.Contains(expr, s.name) {
					continue
				}
				if s.value == "" {
					return nil, fmt.Errorf("%s uses %s, which has no value", src, s.name)
				}
				expr = strings.ReplaceAll(expr, s.name, s.value)
			}
			if strings.Contains(expr, "$") {
				return nil, fmt.Errorf("%s: unknown variable in %q", src, expr)
			}
			qs = append(qs, Query{Source: src, Expr: expr})
		}
	}
	return qs, nil
}

// AlertQueries returns the expression of every rule of a Prometheus rule file
// (deploy/alerts.yaml). It reads only the names and expressions: deploy's tests check the
// whole file, strictly, with the prometheus-operator types.
func AlertQueries(alertsYAML []byte) ([]Query, error) {
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert  string `yaml:"alert"`
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(alertsYAML, &f); err != nil {
		return nil, fmt.Errorf("alerts.yaml: %w", err)
	}
	var qs []Query
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			qs = append(qs, Query{Source: fmt.Sprintf("group %q rule %q", g.Name, name), Expr: r.Expr})
		}
	}
	return qs, nil
}

var (
	accessLogRe   = regexp.MustCompile(`(?m)^\s*access_log\s+(\S+)\s+(\w+)\s*;`)
	logFormatRe   = regexp.MustCompile(`(?m)^\s*log_format\s+(\w+)\s+((?:'[^']*'\s*)+);`)
	quotedPieceRe = regexp.MustCompile(`'([^']*)'`)
)

// NginxAccessLogs returns where an nginx.conf sends its access log (a file, /dev/stdout, or
// syslog:server=...) and the log_format they all use, the quoted pieces joined as nginx
// joins them. Of the example's nginx.conf (deploy/k8s/nginx.conf), the format is the one
// example-rules.yaml parses: a test that runs an nginx of its own logs with it, so its
// lines have the shape the deployed nginx writes. The format holds no single quote, so it
// can be written back as one quoted string.
func NginxAccessLogs(conf string) (targets []string, format string, err error) {
	al := accessLogRe.FindAllStringSubmatch(conf, -1)
	if len(al) == 0 {
		return nil, "", fmt.Errorf("no access_log with a format")
	}
	name := al[0][2]
	for _, a := range al {
		if a[2] != name {
			return nil, "", fmt.Errorf("access_log %s uses format %s, %s uses %s: want one format", al[0][1], name, a[1], a[2])
		}
		targets = append(targets, a[1])
	}
	for _, lf := range logFormatRe.FindAllStringSubmatch(conf, -1) {
		if lf[1] == name {
			for _, piece := range quotedPieceRe.FindAllStringSubmatch(lf[2], -1) {
				format += piece[1]
			}
			return targets, format, nil
		}
	}
	return nil, "", fmt.Errorf("access_log uses format %q, which no log_format defines", name)
}

// ServeRulesFrom rewrites the text of example-rules.yaml so that its input follows path
// from the beginning, leaving the rules themselves as they are: how a test serves the
// example's rules on a log of its own and counts every line of it.
func ServeRulesFrom(exampleRules []byte, path string) ([]byte, error) {
	text := string(exampleRules)
	for _, r := range []struct{ old, repl string }{
		{"path: /var/log/nginx/access.log", "path: " + path},
		{"start_at: end", "start_at: beginning"},
	} {
		if n := strings.Count(text, r.old); n != 1 {
			return nil, fmt.Errorf("example-rules.yaml holds %q %d times, want once", r.old, n)
		}
		text = strings.Replace(text, r.old, r.repl, 1)
	}
	return []byte(text), nil
}

// WriteServedRules writes exampleRules served from path (see ServeRulesFrom) to
// dir/rules.yaml and returns that file's name: the configuration of an exporter that
// counts every line of a test's log with the example's rules.
func WriteServedRules(tb testing.TB, exampleRules []byte, dir, path string) string {
	tb.Helper()
	rules, err := ServeRulesFrom(exampleRules, path)
	if err != nil {
		tb.Fatal(err)
	}
	config := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(config, rules, 0o644); err != nil {
		tb.Fatal(err)
	}
	return config
}

// CheckStatic fails tb unless the executable bin is statically linked: no ELF interpreter
// and no shared library, so that it starts on an image with no libc. why says what a
// dynamic binary would break where the caller ships it.
func CheckStatic(tb testing.TB, bin, why string) {
	tb.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			tb.Error("the binary has an ELF interpreter: " + why)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		tb.Errorf("the binary needs shared libraries %q", libs)
	}
}
