package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/logwindow/logwindow_exporter/config"
	dashgen "github.com/logwindow/logwindow_exporter/internal/dashboard"
	"github.com/logwindow/logwindow_exporter/internal/testutil/deploytest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// grafanaSchemaDir is where, under the user's cache directory, .ci/run installs the npm
// packages TestDashboardGrafanaSchema uses.
const grafanaSchemaDir = "logwindow/grafana-schema-13.2.3"

// testVars are the variable values the tests give the dashboard.
var testVars = deploytest.Vars{Job: "nginx", Instance: ".+", Window: "5m", RateInterval: "1m"}

// TestGeneratedDashboard: grafana-dashboard.json is what --dashboard prints for
// example-rules.yaml. With -update it is rewritten (before TestGeneratedManifests makes the
// ConfigMap from it).
func TestGeneratedDashboard(t *testing.T) {
	cfg, err := config.Load("../example-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := dashgen.Write(&buf, cfg, dashgen.Options{Title: "logwindow_exporter / nginx", UID: "logwindow-nginx"}); err != nil {
		t.Fatal(err)
	}
	want := buf.Bytes()
	if *update {
		if err := os.WriteFile("grafana-dashboard.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(dashboardJSON, want) {
		t.Error("grafana-dashboard.json is not the dashboard of example-rules.yaml: run (cd deploy && go test -run TestGenerated -update)")
	}
}

func TestDashboardVariables(t *testing.T) {
	d, err := deploytest.ParseDashboard(dashboardJSON)
	if err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" {
		t.Error("dashboard without uid or title: the sidecar and links need a stable uid")
	}
	vars := map[string]deploytest.Variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if ds := vars["datasource"]; ds.Type != "datasource" || string(ds.Query) != `"prometheus"` {
		t.Errorf("datasource variable is %q over %s, want type datasource over \"prometheus\"", ds.Type, ds.Query)
	}
	for _, name := range []string{"job", "instance"} {
		v := vars[name]
		if v.Type != "query" || v.Datasource == nil || v.Datasource.UID != "${datasource}" {
			t.Errorf("variable %s: want a query variable on ${datasource}, got %+v", name, v)
		}
	}
	w := vars["window"]
	if w.Type != "custom" {
		t.Fatalf("window variable: type %q, want custom", w.Type)
	}
	var windows string
	if err := json.Unmarshal(w.Query, &windows); err != nil {
		t.Fatal(err)
	}
	var current string
	if err := json.Unmarshal(w.Current.Value, &current); err != nil || !slices.Contains(strings.Split(windows, ","), current) {
		t.Errorf("window variable: current %s is not one of %q", w.Current.Value, windows)
	}
	if !slices.Contains(strings.Split(windows, ","), testVars.Window) {
		t.Errorf("window variable offers %q, not the tests' %q", windows, testVars.Window)
	}
}

func TestDashboardPanels(t *testing.T) {
	d, err := deploytest.ParseDashboard(dashboardJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		if p.Type == "row" {
			if len(p.Targets) > 0 {
				t.Errorf("row %q has queries", p.Title)
			}
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q query %s: datasource %+v, want the ${datasource} variable", p.Title, tg.RefID, tg.Datasource)
			}
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q query %s is empty", p.Title, tg.RefID)
			}
		}
	}
}

// TestDashboardCoverage checks that the dashboard shows what the issue asks for: each
// entry names a family (or function) some query must use.
func TestDashboardCoverage(t *testing.T) {
	qs, err := deploytest.DashboardQueries(dashboardJSON, testVars)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ what, needle string }{
		{"requests over the window", `nginx_http_requests_window{`},
		{"request rate over the window", `nginx_http_requests_window_per_second{`},
		{"5xx over the window", `nginx_http_server_errors_window{`},
		{"bytes over the window", `nginx_http_response_body_bytes_window{`},
		{"request duration", `nginx_http_request_duration_seconds_window_max{`},
		{"upstream duration", `nginx_http_upstream_response_time_seconds_window{`},
		{"top series", `topk(`},
		{"lines read per second", `logwindow_input_lines_total{`},
		{"drops by reason", `logwindow_rule_dropped_lines_total{`},
		{"bytes behind", `logwindow_input_behind_bytes{`},
		{"series vs budget", `logwindow_rule_series_limit{`},
		{"config reload", `logwindow_config_last_reload_successful{`},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			for _, q := range qs {
				if strings.Contains(q.Expr, c.needle) {
					return
				}
			}
			t.Errorf("no dashboard query uses %s", c.needle)
		})
	}
	for _, q := range qs {
		if strings.Contains(q.Expr, "window=") && !strings.Contains(q.Expr, `window="`+testVars.Window+`"`) {
			t.Errorf("%s: a window matcher that does not follow $window: %s", q.Source, q.Expr)
		}
	}
}

func TestDashboardQueriesSubstitute(t *testing.T) {
	cases := []struct {
		name    string
		vars    deploytest.Vars
		wantErr bool
	}{
		{"all set", testVars, false},
		{"rate interval missing", deploytest.Vars{Job: "j", Instance: "i", Window: "1m"}, true},
		{"window missing", deploytest.Vars{Job: "j", Instance: "i", RateInterval: "1m"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			qs, err := deploytest.DashboardQueries(dashboardJSON, c.vars)
			if c.wantErr {
				if err == nil {
					t.Fatal("no error for a variable without a value")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(qs) == 0 {
				t.Fatal("no queries")
			}
			for _, q := range qs {
				if strings.Contains(q.Expr, "$") {
					t.Errorf("%s: variable left in %s", q.Source, q.Expr)
				}
				if c.vars.Job != "" && strings.Contains(q.Expr, "job=~") && !strings.Contains(q.Expr, `job=~"`+c.vars.Job+`"`) {
					t.Errorf("%s: job not substituted: %s", q.Source, q.Expr)
				}
			}
		})
	}
}

func TestAlertRules(t *testing.T) {
	f, err := parseAlerts()
	if err != nil {
		t.Fatal(err)
	}
	var has5xx bool
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			t.Run(g.Name+"/"+r.Alert, func(t *testing.T) {
				if r.Alert == "" {
					t.Fatal("not an alerting rule")
				}
				if r.Expr.Type != intstr.String || strings.TrimSpace(r.Expr.StrVal) == "" {
					t.Error("no expression")
				}
				if r.For == nil {
					t.Error("no for: a single bad evaluation would page")
				}
				if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
					t.Errorf("severity %q", r.Labels["severity"])
				}
				if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
					t.Error("summary or description annotation missing")
				}
			})
			has5xx = has5xx || (strings.Contains(r.Expr.StrVal, "nginx_http_server_errors_window{") && strings.Contains(r.Expr.StrVal, `window="5m"`))
		}
	}
	if !has5xx {
		t.Error("no alert on the 5xx ratio over the 5m window")
	}
	qs, err := deploytest.AlertQueries(alertsYAML)
	if err != nil {
		t.Fatal(err)
	}
	if n := countRules(f.Groups); len(qs) != n {
		t.Errorf("AlertQueries gave %d queries for %d rules", len(qs), n)
	}
}

func countRules(groups []monitoringv1.RuleGroup) int {
	n := 0
	for _, g := range groups {
		n += len(g.Rules)
	}
	return n
}

func TestPromtoolAlerts(t *testing.T) {
	promtool := testexec.LookTools(t, "Debian: apt-get install prometheus", "promtool")["promtool"]
	runTool(t, ".", promtool, "check", "rules", "alerts.yaml")
	runTool(t, ".", promtool, "test", "rules", "alerts-tests.yaml")
}

// TestPromtoolDashboardQueries has promtool parse every dashboard query, by making each
// the expression of a recording rule in a scratch rule file.
func TestPromtoolDashboardQueries(t *testing.T) {
	promtool := testexec.LookTools(t, "Debian: apt-get install prometheus", "promtool")["promtool"]
	qs, err := deploytest.DashboardQueries(dashboardJSON, testVars)
	if err != nil {
		t.Fatal(err)
	}
	var rules []monitoringv1.Rule
	for i, q := range qs {
		rules = append(rules, monitoringv1.Rule{
			Record: fmt.Sprintf("logwindow_dashboard_query_%d", i),
			Expr:   intstr.FromString(q.Expr),
		})
	}
	body, err := yaml.Marshal(ruleFile{Groups: []monitoringv1.RuleGroup{{Name: "dashboard", Rules: rules}}})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
	out := runTool(t, ".", promtool, "check", "rules", p)
	if want := fmt.Sprintf("%d rules found", len(qs)); !strings.Contains(out, want) {
		t.Errorf("promtool: %q, want %q", out, want)
	}
}

// metricRefRe finds the names of the exporter's metrics (rule families of
// example-rules.yaml and self-metrics) in a query.
var metricRefRe = regexp.MustCompile(`\b((?:nginx|logwindow)_[a-zA-Z0-9_:]*)`)

// queryMetricNames returns the metric names the dashboard (panels and variables) and the
// alert rules select, for tests that compare them with what the exporter exposes.
func queryMetricNames(t *testing.T) map[string][]string {
	t.Helper()
	names := map[string][]string{}
	add := func(src, expr string) {
		for _, m := range metricRefRe.FindAllStringSubmatch(expr, -1) {
			names[m[1]] = append(names[m[1]], src)
		}
	}
	dq, err := deploytest.DashboardQueries(dashboardJSON, testVars)
	if err != nil {
		t.Fatal(err)
	}
	aq, err := deploytest.AlertQueries(alertsYAML)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range append(dq, aq...) {
		add(q.Source, q.Expr)
	}
	d, err := deploytest.ParseDashboard(dashboardJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range d.Templating.List {
		add("variable "+v.Name, string(v.Query))
	}
	return names
}

// TestDashboardGrafanaSchema type-checks grafana-dashboard.json against Grafana's own
// dashboard schema, the Dashboard type of the npm package @grafana/schema, with
// TypeScript's compiler: the JSON is written as a literal of that type, so a required field
// missing, a value of the wrong type or a field the schema does not have fails the check.
// They are looked for in the node_modules of $LOGWINDOW_GRAFANA_SCHEMA, by default
// grafanaSchemaDir under the user's cache directory, where .ci/run installs them with npm;
// without them the test is skipped, or fails under LOGWINDOW_E2E=1.
func TestDashboardGrafanaSchema(t *testing.T) {
	dir := os.Getenv("LOGWINDOW_GRAFANA_SCHEMA")
	if cache, err := os.UserCacheDir(); dir == "" && err == nil {
		dir = filepath.Join(cache, grafanaSchemaDir)
	}
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "@grafana", "schema", "package.json")); err != nil {
		if testexec.Required {
			t.Fatalf("no @grafana/schema in %s with LOGWINDOW_E2E=1: .ci/run installs it", modules)
		}
		t.Skipf("no @grafana/schema in %s (npm install --prefix %s typescript @grafana/schema)", modules, dir)
	}
	node := testexec.LookTools(t, "Debian: apt-get install nodejs", "node")["node"]
	work := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	// A row also fits Panel, whose type is any string: the rows are checked again as
	// RowPanel, which requires what Grafana's rows have (collapsed).
	var d struct {
		Panels []map[string]json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(dashboardJSON, &d); err != nil {
		t.Fatal(err)
	}
	rows := []map[string]json.RawMessage{}
	for _, p := range d.Panels {
		if string(p["type"]) == `"row"` {
			rows = append(rows, p)
		}
	}
	if len(rows) == 0 {
		t.Fatal("the dashboard has no row")
	}
	rowsJSON, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	check := "import type { Dashboard, RowPanel } from '@grafana/schema';\nexport const dashboard: Dashboard = " + string(dashboardJSON) + ";\n" +
		"export const rows: RowPanel[] = " + string(rowsJSON) + ";\n"
	tsconfig := `{"compilerOptions": {"strict": true, "noEmit": true, "module": "nodenext", "moduleResolution": "nodenext", "skipLibCheck": true, "target": "es2022"}, "files": ["check.ts"]}`
	for name, text := range map[string]string{"check.ts": check, "tsconfig.json": tsconfig} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runTool(t, work, node, filepath.Join(modules, "typescript", "bin", "tsc"), "-p", ".")
}
