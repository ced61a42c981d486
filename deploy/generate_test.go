package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// update rewrites the generated manifests instead of comparing them:
//
//	cd deploy && go test -run TestGenerated -update
var update = flag.Bool("update", false, "rewrite the generated manifests under k8s/ from their sources")

// exampleLabels are the labels every object of the example carries.
var exampleLabels = map[string]string{
	"app.kubernetes.io/name":     "nginx",
	"app.kubernetes.io/instance": "logwindow-example",
}

// generated is one manifest made from a source file, so that the two never drift apart.
type generated struct {
	path   string // the manifest, relative to this package
	source string // the file it is made from
	// make returns the object the manifest holds, or the file's text as a string for a
	// file that is not a manifest (a configMapGenerator's source).
	make func(source []byte) (any, error)
	// bare: the file is written without the header saying it is generated (JSON has no
	// comments).
	bare bool
}

// The access log as the base sends it (to the exporter's socket, and to stdout) and as the
// file overlay writes it; and the input of the rules that reads each.
const (
	socketAccessLog = "    access_log syslog:server=127.0.0.1:5140,tag=nginx main;\n    access_log /dev/stdout main;\n"
	fileAccessLog   = "    access_log /var/log/nginx/access.log main;\n"
	socketInput     = "    syslog: udp://127.0.0.1:5140\n"
	fileInput       = "    path: /var/log/nginx/access.log\n    start_at: end\n"
)

// replaceOnce replaces old, which must occur exactly once in text.
func replaceOnce(text, old, repl, what string) (string, error) {
	if n := strings.Count(text, old); n != 1 {
		return "", fmt.Errorf("%s holds %q %d times, want once", what, old, n)
	}
	return strings.Replace(text, old, repl, 1), nil
}

// rulesConfigMap is the ConfigMap of a rule file, as the exporter mounts it.
func rulesConfigMap(rules string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "logwindow-rules", Labels: exampleLabels},
		Data:       map[string]string{"rules.yaml": rules},
	}
}

// chartRules is example-rules.yaml without its inputs (from "inputs:" to the blank line
// before "rules:"): the chart writes the mode's inputs, with the log format of values.yaml.
func chartRules(src []byte) (string, error) {
	text := string(src)
	start := strings.Index(text, "\ninputs:\n")
	end := strings.Index(text, "\n\nrules:\n")
	if start < 0 || end < start {
		return "", fmt.Errorf("example-rules.yaml: no inputs: section before rules:")
	}
	return text[:start+1] + text[end+2:], nil
}

// podLabelTemplates label a rule's series by the pod a line came from (the chart's
// daemonset inputs' path captures).
const podLabelTemplates = "      namespace: '${namespace}'\n      pod: '${pod}'\n      container: '${container}'\n"

// withPodLabels adds podLabelTemplates to every rule of a rule file whose rules are
// written as example-rules.yaml's: labels in block style, or none (then after its help).
func withPodLabels(rules string) (string, error) {
	head, body, ok := strings.Cut(rules, "\nrules:\n")
	if !ok {
		return "", fmt.Errorf("no rules: section")
	}
	items := strings.Split("\n"+body, "\n  - name: ")
	for i := 1; i < len(items); i++ {
		it := items[i]
		switch {
		case strings.Contains(it, "\n    labels:\n"):
			it = strings.Replace(it, "\n    labels:\n", "\n    labels:\n"+podLabelTemplates, 1)
		default:
			// No labels: they go after the rule's help (or its name).
			end := strings.Index(it, "\n")
			if h := strings.Index(it, "\n    help: "); h >= 0 {
				end = h + 1 + strings.Index(it[h+1:], "\n")
			}
			it = it[:end+1] + "    labels:\n" + podLabelTemplates + it[end+1:]
		}
		items[i] = it
	}
	return head + "\nrules:" + strings.Join(items, "\n  - name: "), nil
}

// timingCaptures are the captures of the chart's rules that only some log formats give:
// the chart ships the rules reading each in a file of their own, which it adds to the rule
// file only when the format has the variable (a rule naming a capture its input's format
// lacks does not load). "base" holds the rules every format of nginx gives.
var timingCaptures = []string{"request_time", "upstream_response_time"}

// splitRules cuts a rule file written as example-rules.yaml's into the part from global:
// through the rules that read no timing capture ("base"), and the rules reading each of
// timingCaptures, each with the comments just above it.
func splitRules(rules string) (map[string]string, error) {
	start := strings.Index(rules, "\nglobal:\n")
	if start < 0 {
		return nil, fmt.Errorf("no global: section")
	}
	head, body, ok := strings.Cut(rules[start+1:], "\nrules:\n")
	if !ok {
		return nil, fmt.Errorf("no rules: section")
	}
	// A rule starts at "  - name:", or at the comment lines right above it.
	lines := strings.SplitAfter(body, "\n")
	var items []string
	begin := 0
	for i, l := range lines {
		if !strings.HasPrefix(l, "  - name: ") {
			continue
		}
		first := i
		for first > begin && strings.HasPrefix(lines[first-1], "  #") {
			first--
		}
		if i > 0 {
			items = append(items, strings.Join(lines[begin:first], ""))
		}
		begin = first
	}
	items = append(items, strings.Join(lines[begin:], ""))
	parts := map[string]string{"base": head + "\nrules:\n"}
	for _, it := range items {
		part := "base"
		for _, c := range timingCaptures {
			// A capture the rule reads, not the $variable its help or comments name.
			if regexp.MustCompile(`(?m)^    [^#]*[^$\w]` + c + `\b`).MatchString(it) {
				if part != "base" {
					return nil, fmt.Errorf("rule %q reads both %s and %s", strings.TrimSpace(it), part, c)
				}
				part = c
			}
		}
		if part != "base" {
			// The chart adds these files after base, which ends with a rule: a blank
			// line first, as between the rules of one file.
			it = "\n" + strings.TrimRight(it, "\n") + "\n"
		}
		parts[part] += it
	}
	for _, c := range timingCaptures {
		if parts[c] == "" {
			return nil, fmt.Errorf("no rule reads %s", c)
		}
	}
	return parts, nil
}

// chartRuleFiles are the chart's rule files made from example-rules.yaml: files/rules/
// for the syslog and sidecar modes, whose inputs the chart writes, files/rules-pods/ for
// the daemonset mode's, every rule labelled by the pod; each cut by splitRules.
func chartRuleFiles() []generated {
	var out []generated
	for _, dir := range []string{"rules", "rules-pods"} {
		for _, part := range append([]string{"base"}, timingCaptures...) {
			out = append(out, generated{
				path:   "helm/logwindow-exporter/files/" + dir + "/" + part + ".yaml",
				source: "../example-rules.yaml",
				make: func(src []byte) (any, error) {
					rules, err := chartRules(src)
					if err == nil && dir == "rules-pods" {
						rules, err = withPodLabels(rules)
					}
					if err != nil {
						return nil, err
					}
					parts, err := splitRules(rules)
					return parts[part], err
				},
			})
		}
	}
	return out
}

// copyOf is a generated file that is its source as it is: a copy inside the Helm chart,
// which reads no file outside its directory.
func copyOf(src []byte) (any, error) { return string(src), nil }

var generatedManifests = slices.Concat([]generated{
	{path: "helm/logwindow-exporter/files/alerts.yaml", source: "alerts.yaml", make: copyOf},
	{path: "helm/logwindow-exporter/files/grafana-dashboard.json", source: "grafana-dashboard.json", make: copyOf, bare: true},
}, chartRuleFiles(), []generated{
	{
		// The base: example-rules.yaml receiving from the socket nginx sends to.
		path:   "k8s/configmap-rules.yaml",
		source: "../example-rules.yaml",
		make: func(src []byte) (any, error) {
			rules, err := replaceOnce(string(src), fileInput, socketInput, "example-rules.yaml")
			return rulesConfigMap(rules), err
		},
	},
	{
		path:   "overlays/file/configmap-rules.yaml",
		source: "../example-rules.yaml",
		make: func(src []byte) (any, error) {
			return rulesConfigMap(string(src)), nil
		},
	},
	{
		// The file overlay's nginx.conf is the base's, writing a file instead.
		path:   "overlays/file/nginx.conf",
		source: "k8s/nginx.conf",
		make: func(src []byte) (any, error) {
			return replaceOnce(string(src), socketAccessLog, fileAccessLog, "nginx.conf")
		},
	},
	{
		// The Grafana sidecar (kube-prometheus-stack's default) loads ConfigMaps labelled
		// grafana_dashboard: "1" from its own namespace, so this one is applied there.
		path:   "k8s/grafana/configmap-dashboard.yaml",
		source: "grafana-dashboard.json",
		make: func(src []byte) (any, error) {
			return &corev1.ConfigMap{
				TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{
					Name:   "logwindow-grafana-dashboard",
					Labels: map[string]string{"grafana_dashboard": "1"},
				},
				Data: map[string]string{"logwindow-nginx.json": string(src)},
			}, nil
		},
	},
	{
		path:   "k8s/operator/prometheusrule.yaml",
		source: "alerts.yaml",
		make: func(src []byte) (any, error) {
			var f ruleFile
			if err := yaml.UnmarshalStrict(src, &f); err != nil {
				return nil, err
			}
			return &monitoringv1.PrometheusRule{
				TypeMeta:   metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "PrometheusRule"},
				ObjectMeta: metav1.ObjectMeta{Name: "logwindow-alerts", Labels: exampleLabels},
				Spec:       monitoringv1.PrometheusRuleSpec{Groups: f.Groups},
			}, nil
		},
	},
})

// render makes the text of a generated manifest.
func (g generated) render() ([]byte, error) {
	src, err := os.ReadFile(g.source)
	if err != nil {
		return nil, err
	}
	obj, err := g.make(src)
	if err != nil {
		return nil, err
	}
	var body []byte
	if text, ok := obj.(string); ok {
		body = []byte(text)
	} else if body, err = yaml.Marshal(obj); err != nil {
		return nil, err
	}
	// The API server fills creationTimestamp; an explicit null is noise in a manifest.
	body = bytes.Replace(body, []byte("  creationTimestamp: null\n"), nil, 1)
	if g.bare {
		return body, nil
	}
	header := "# Code generated from " + path.Join("deploy", g.source) + " by `cd deploy && go test -run TestGenerated -update`. DO NOT EDIT.\n"
	return append([]byte(header), body...), nil
}

func TestGeneratedManifests(t *testing.T) {
	for _, g := range generatedManifests {
		t.Run(g.path, func(t *testing.T) {
			want, err := g.render()
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.MkdirAll(path.Dir(g.path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(g.path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := os.ReadFile(g.path)
			if err != nil {
				t.Fatalf("%v (generate it: cd deploy && go test -run TestGenerated -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is out of date with %s: run (cd deploy && go test -run TestGenerated -update)", g.path, g.source)
			}
			// The YAML encoding must give back the source exactly (block scalars, escapes).
			obj, err := g.make(mustRead(t, g.source))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := obj.(string); ok {
				return
			}
			back := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
			if err := yaml.UnmarshalStrict(got, back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, obj) {
				t.Errorf("%s does not decode to what %s holds", g.path, g.source)
			}
		})
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
