package deploy

import (
	_ "embed"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"
)

// dashboardJSON is the Grafana dashboard, as imported by hand or loaded by the sidecar.
//
//go:embed grafana-dashboard.json
var dashboardJSON []byte

// alertsYAML is the Prometheus rule file with the alerting rule examples.
//
//go:embed alerts.yaml
var alertsYAML []byte

// nginxConf is the example's nginx configuration, made a ConfigMap by the base's
// kustomization.
//
//go:embed k8s/nginx.conf
var nginxConf []byte

// ruleFile is a Prometheus rule file. Its groups use the prometheus-operator types so that
// the same value becomes the spec of a PrometheusRule object.
type ruleFile struct {
	Groups []monitoringv1.RuleGroup `json:"groups"`
}

// parseAlerts strictly decodes alertsYAML: an unknown key is an error, as in Prometheus.
func parseAlerts() (*ruleFile, error) {
	var f ruleFile
	if err := yaml.UnmarshalStrict(alertsYAML, &f); err != nil {
		return nil, fmt.Errorf("alerts.yaml: %w", err)
	}
	return &f, nil
}
