package deploy

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/logwindow/logwindow_exporter/config"
)

// chartLogFormat is one value of logFormat the chart's README and values.yaml document,
// with the timing variables it gives (the chart then adds the rules reading them).
type chartLogFormat struct {
	name    string
	values  string // the values setting it, as a user writes them
	timings []string
}

var (
	bothTimings = []string{"request_time", "upstream_response_time"}
	requestTime = []string{"request_time"}
)

var chartLogFormats = []chartLogFormat{
	{"auto (the default)", "", bothTimings},
	{"auto", "logFormat: auto\n", bothTimings},
	{"combined", "logFormat: combined\n", nil},
	{"main", "logFormat: main\n", nil},
	{"upstreaminfo", "logFormat: upstreaminfo\n", bothTimings},
	{"combined_request_time", "logFormat: combined_request_time\n", requestTime},
	{"main_request_time", "logFormat: main_request_time\n", requestTime},
	{"combined_upstream_time", "logFormat: combined_upstream_time\n", bothTimings},
	{"main_upstream_time", "logFormat: main_upstream_time\n", bothTimings},
	{"format string with the times", `logFormat: '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time $upstream_response_time'` + "\n", bothTimings},
	{"format string without times", `logFormat: '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent'` + "\n", nil},
	// nginx reads a variable whatever its case (and so does the exporter).
	{"format string of another case", `logFormat: '$Remote_Addr - $remote_user [$TIME_LOCAL] "$request" $Status $body_bytes_sent'` + "\n", nil},
	// $request_method and $uri are what the chart's rules read of $request.
	{"format string of the method and the path", `logFormat: '$remote_addr [$time_local] $request_method $uri $status $body_bytes_sent'` + "\n", nil},
	{"format string of braced variables", `logFormat: '${remote_addr} [${time_local}] "${request}" ${status} ${body_bytes_sent}'` + "\n", nil},
	{"format string with the upstream time alone", `logFormat: '$remote_addr [$time_local] "$request" $status $body_bytes_sent $upstream_response_time'` + "\n", []string{"upstream_response_time"}},
	{"directive over lines", "logFormat: |\n" +
		"  log_format  main  '$remote_addr - $remote_user [$time_local] \"$request\" '\n" +
		"                    '$status $body_bytes_sent \"$http_referer\" '\n" +
		"                    '\"$http_user_agent\" \"$http_x_forwarded_for\" $request_time';  # timed\n", requestTime},
	{"directive on one line", `logFormat: "log_format timed '$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent $request_time $upstream_response_time';"` + "\n", bothTimings},
	{"JSON directive", "logFormat: |\n" +
		"  log_format json escape=json '{\"remote_addr\":\"$remote_addr\",\"time_local\":\"$time_local\",'\n" +
		"    '\"request\":\"$request\",\"status\":$status,\"body_bytes_sent\":$body_bytes_sent,\"request_time\":$request_time}';\n", requestTime},
	// The times whose layout the exporter knows besides $time_local: the rules are placed
	// by the one the format has.
	{"format string of $time_iso8601", "logFormat: '$remote_addr [$time_iso8601] \"$request\" $status $body_bytes_sent $request_time'\n", requestTime},
	{"JSON directive of $msec", "logFormat: |\n  log_format j escape=json '{\"ts\":$msec,\"ip\":\"$remote_addr\",\"req\":\"$request\",\"st\":$status,\"b\":$body_bytes_sent}';\n", nil},
	{"directive of $time_iso8601 under a comment of $time_local", "logFormat: |\n  # log_format old '$remote_addr [$time_local] \"$request\" $status $body_bytes_sent';\n  log_format new '$remote_addr [$TIME_ISO8601] \"$request\" $status $body_bytes_sent';\n", nil},
	{"JSON template with its escape", `logFormat: '{"remote_addr":"$remote_addr","time_local":"$time_local","request":"$request","status":$status,"body_bytes_sent":$body_bytes_sent,"upstream_response_time":"$upstream_response_time"}'` + "\nlogFormatEscape: json\n", []string{"upstream_response_time"}},
}

// chartModes are the chart's modes, as values.
var chartModes = map[string]string{"daemonset": "", "syslog": "mode: syslog\n", "sidecar": "mode: sidecar\n"}

// timingRules are the chart's rules that read each timing variable.
var timingRules = map[string]string{
	"request_time":           "nginx_http_request_duration_seconds",
	"upstream_response_time": "nginx_http_upstream_response_time_seconds",
}

// TestChartLogFormat renders every mode with every documented logFormat with Helm's own
// engine, loads the rule file each renders with the exporter's own check (config.Load,
// what --config.check runs, and the built exporter's --config.check with the rendered
// arguments), and lints each with `helm lint --strict` and the values schema: every documented value makes a rule file the exporter accepts, with the timing
// rules exactly when the format has the times.
func TestChartLogFormat(t *testing.T) {
	example := ruleNames(loadRules(t, string(mustRead(t, "../example-rules.yaml"))))
	for _, mode := range slices.Sorted(maps.Keys(chartModes)) {
		for _, f := range chartLogFormats {
			t.Run(mode+"/"+f.name, func(t *testing.T) {
				// Helm's rendering and lint under the race detector, seconds of one core a
				// case and nothing timed: the cases share the cores.
				t.Parallel()
				c := chartCase{name: f.name, values: chartModes[mode] + f.values, mode: mode}
				m := renderChart(t, c)
				text := m.configMaps["lw-logwindow-exporter-rules"].Data["rules.yaml"]
				cfg, err := checkRules(t, text)
				if err != nil {
					t.Fatalf("the exporter refuses the rendered rule file: %v\n%s", err, text)
				}
				want := slices.DeleteFunc(slices.Clone(example), func(name string) bool {
					for v, r := range timingRules {
						if r == name && !slices.Contains(f.timings, v) {
							return true
						}
					}
					return false
				})
				if got := ruleNames(cfg); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
					t.Errorf("rules %v, want %v", got, want)
				}
				for _, in := range cfg.Inputs {
					if in.LogFormat == nil && in.LogFormats == nil {
						t.Errorf("input %s reads no log format", in.Name)
					}
					if mode == "daemonset" && in.Streams != config.StreamStdout {
						t.Errorf("input %s reads the streams %v, want stdout alone (stderr is nginx's error log)", in.Name, in.Streams)
					}
				}
				lintChart(t, c.vals(t))
				exporterConfigCheck(t, m, chartPodSpec(m))
			})
		}
	}
}

// checkRules loads a rule file as the exporter's --config.check does.
func checkRules(t *testing.T, text string) (*config.Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return config.Load(p)
}

// lintChart is `helm lint --strict` with Helm's own linter, which checks the values
// against values.schema.json: an error or a warning fails.
func lintChart(t *testing.T, vals map[string]any) {
	t.Helper()
	l := action.NewLint()
	l.Strict = true
	l.Namespace = "monitoring"
	res := l.Run([]string{chartDir}, vals)
	for _, msg := range res.Messages {
		if msg.Severity > support.InfoSev {
			t.Errorf("helm lint --strict: %s", msg)
		} else {
			t.Logf("helm lint: %s", msg)
		}
	}
	for _, err := range res.Errors {
		t.Errorf("helm lint --strict: %v", err)
	}
}

// TestChartSchema: values.schema.json refuses what the chart would not do what was meant
// with (a typo of a key or of a mode, a preset nginx does not have), at install as at lint,
// and still takes any format string (TestChartLogFormat installs and lints those).
func TestChartSchema(t *testing.T) {
	for _, c := range []struct{ name, values, want string }{
		{"unknown mode", "mode: daemonsets\n", "mode"},
		{"unknown key", "logformat: main\n", "logformat"},
		{"unknown key of daemonset", "daemonset: {container: [nginx]}\n", "container"},
		{"unknown preset", "logFormat: mian\n", "logFormat"},
		{"empty format", "logFormat: ''\n", "logFormat"},
		{"unknown escape", "logFormatEscape: jsn\n", "logFormatEscape"},
		{"unknown stream", "daemonset: {streams: [stdin]}\n", "streams"},
		{"no shard", "daemonset: {shards: 0}\n", "shards"},
		{"container name a glob", "daemonset: {containers: ['*']}\n", "containers"},
		{"port out of range", "mode: syslog\nsyslog: {port: 70000}\n", "port"},
		// The exporter refuses a snapshot interval that is not positive: a pod that never starts.
		{"no snapshot interval", "storage: {snapshotInterval: 0s}\n", "snapshotInterval"},
		// No stream named: the exporter would read stderr too, nginx's error log.
		{"no stream", "daemonset: {streams: []}\n", "streams"},
		// A value the templates need, dropped with null: the schema names it.
		{"no container", "daemonset: {containers: null}\n", "containers"},
		{"no hostPath", "storage: {hostPath: null}\n", "hostPath"},
		{"no rules key", "rules: {key: null}\n", "key"},
		{"syslog without its Service", "mode: syslog\nsyslog: {service: null}\n", "service"},
		{"syslog without its budget", "mode: syslog\nsyslog: {podDisruptionBudget: {maxUnavailable: null}}\n", "maxUnavailable"},
		{"no metrics port", "metricsPort: null\n", "metricsPort"},
		// What Kubernetes or the container runtime would refuse, a pod that never starts.
		{"repository with its tag", "image: {repository: registry.example.com/logwindow_exporter:0.1.0}\n", "repository"},
		{"tag a digest", "image: {tag: \"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}\n", "tag"},
		{"rules key a path", "rules: {key: rules/nginx.yaml}\n", "key"},
		// The API server refuses a ConfigMap key of . or .., or starting with .. (the
		// kubelet's own names in a mounted volume): the install would fail there, later.
		{"rules key a dot", "rules: {key: .}\n", "key"},
		{"rules key two dots", "rules: {key: ..}\n", "key"},
		{"rules key starting with two dots", "rules: {key: ..x}\n", "key"},
		{"rules key too long", "rules: {key: " + strings.Repeat("r", 254) + "}\n", "key"},
		// A budget that lets no pod go blocks every drain of a node running one.
		{"budget of none", "mode: syslog\nsyslog: {podDisruptionBudget: {maxUnavailable: 0}}\n", "maxUnavailable"},
		{"budget of no percent", "mode: syslog\nsyslog: {podDisruptionBudget: {maxUnavailable: 0%}}\n", "maxUnavailable"},
		{"budget over all", "mode: syslog\nsyslog: {podDisruptionBudget: {maxUnavailable: 101%}}\n", "maxUnavailable"},
		{"digest without its algorithm", "image: {digest: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef}\n", "digest"},
		{"digest cut short", "image: {digest: \"sha256:0123456789abcdef\"}\n", "digest"},
		{"budget in words", "mode: syslog\nsyslog: {podDisruptionBudget: {maxUnavailable: one}}\n", "maxUnavailable"},
		{"port name without a letter", "mode: sidecar\nsidecar: {portName: \"9907\"}\n", "portName"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cc := chartCase{values: c.values}
			_, err := installChart(t, cc)
			if err == nil || !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("install with %q: %v, want the schema refusing %s", c.values, err, c.want)
			}
			res := action.NewLint().Run([]string{chartDir}, cc.vals(t))
			if len(res.Errors) == 0 {
				t.Errorf("helm lint passes %q", c.values)
			}
		})
	}
}
