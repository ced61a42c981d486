// Package deploy holds the example deployment of logwindow_exporter: Kubernetes manifests
// (k8s/), a Grafana dashboard and Prometheus alerting rules. Its tests check them statically;
// this file hands their PromQL to tests that evaluate it against a real Prometheus, so a
// renamed metric breaks a test instead of a user's dashboard.
package deploy

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

// DashboardJSON is the Grafana dashboard, as imported by hand or loaded by the sidecar.
//
//go:embed grafana-dashboard.json
var DashboardJSON []byte

// AlertsYAML is the Prometheus rule file with the alerting rule examples.
//
//go:embed alerts.yaml
var AlertsYAML []byte

// nginxConfigMap is the example's nginx configuration: a ConfigMap whose nginx.conf key is
// the file nginx runs with.
//
//go:embed k8s/configmap-nginx.yaml
var nginxConfigMap []byte

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

// dashboard is the part of the Grafana dashboard model that the tests inspect.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

// panel is one dashboard panel; rows are panels of type "row" without targets.
type panel struct {
	Title      string         `json:"title"`
	Type       string         `json:"type"`
	Datasource *datasourceRef `json:"datasource"`
	Targets    []target       `json:"targets"`
}

// target is one query of a panel.
type target struct {
	RefID      string         `json:"refId"`
	Expr       string         `json:"expr"`
	Datasource *datasourceRef `json:"datasource"`
}

// datasourceRef names a data source by type and uid; the uid is "${datasource}" when it
// follows the dashboard's data source variable.
type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// variable is one templating variable. Query is a string for query variables and an object
// for some other types, so it is kept raw.
type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasourceRef  `json:"datasource"`
	Current    struct {
		Value json.RawMessage `json:"value"`
	} `json:"current"`
}

// parseDashboard decodes DashboardJSON.
func parseDashboard() (*dashboard, error) {
	var d dashboard
	if err := json.Unmarshal(DashboardJSON, &d); err != nil {
		return nil, fmt.Errorf("grafana-dashboard.json: %w", err)
	}
	return &d, nil
}

// DashboardQueries returns every panel query of the dashboard with the variables replaced
// by v. It fails when a query uses a variable v leaves empty or one it does not know, since
// Prometheus would reject the query.
func DashboardQueries(v Vars) ([]Query, error) {
	d, err := parseDashboard()
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

// ruleFile is a Prometheus rule file. Its groups use the prometheus-operator types so that
// the same value becomes the spec of a PrometheusRule object.
type ruleFile struct {
	Groups []monitoringv1.RuleGroup `json:"groups"`
}

// parseAlerts strictly decodes AlertsYAML: an unknown key is an error, as in Prometheus.
func parseAlerts() (*ruleFile, error) {
	var f ruleFile
	if err := yaml.UnmarshalStrict(AlertsYAML, &f); err != nil {
		return nil, fmt.Errorf("alerts.yaml: %w", err)
	}
	return &f, nil
}

// AlertQueries returns the expression of every rule in AlertsYAML.
func AlertQueries() ([]Query, error) {
	f, err := parseAlerts()
	if err != nil {
		return nil, err
	}
	var qs []Query
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			qs = append(qs, Query{Source: fmt.Sprintf("group %q rule %q", g.Name, name), Expr: r.Expr.String()})
		}
	}
	return qs, nil
}

var (
	accessLogRe   = regexp.MustCompile(`(?m)^\s*access_log\s+(\S+)\s+(\w+)\s*;`)
	logFormatRe   = regexp.MustCompile(`(?m)^\s*log_format\s+(\w+)\s+((?:'[^']*'\s*)+);`)
	quotedPieceRe = regexp.MustCompile(`'([^']*)'`)
)

// nginxAccessLogs returns where an nginx.conf sends its access log (a file, /dev/stdout, or
// syslog:server=...) and the log_format they all use, the quoted pieces joined as nginx
// joins them.
func nginxAccessLogs(conf string) (targets []string, format string, err error) {
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

// NginxLogFormat returns the log_format of the access log the example nginx.conf writes
// (k8s/configmap-nginx.yaml), the format example-rules.yaml parses. A test that runs an
// nginx of its own uses it, so its log lines have the shape the deployed nginx writes.
// The format holds no single quote, so it can be written back as one quoted string.
func NginxLogFormat() (string, error) {
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(nginxConfigMap, &cm); err != nil {
		return "", fmt.Errorf("k8s/configmap-nginx.yaml: %w", err)
	}
	conf, ok := cm.Data["nginx.conf"]
	if !ok {
		return "", fmt.Errorf("k8s/configmap-nginx.yaml: no data key nginx.conf")
	}
	_, format, err := nginxAccessLogs(conf)
	if err != nil {
		return "", fmt.Errorf("k8s/configmap-nginx.yaml, nginx.conf: %w", err)
	}
	return format, nil
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
