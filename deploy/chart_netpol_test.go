package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// The peers of the NetworkPolicy cases: Prometheus' pods in the namespace monitoring, the
// nginx pods of the namespace web, and an address block.
const (
	netpolPrometheus = "{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}, podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}}"
	netpolNginx      = "{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: web}}, podSelector: {matchLabels: {app: nginx}}}"
	netpolBlock      = "{ipBlock: {cidr: 10.20.0.0/16}}"
)

// netpolCases are the installs of networkPolicy.* that TestChartValues renders.
var netpolCases = []chartValueCase{
	{"network policy", "networkPolicy: {enabled: true, metricsFrom: [" + netpolPrometheus + "]}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		checkNetworkPolicy(t, m, map[string][]string{"metrics": {netpolPrometheus}})
	}},
	{"network policy of syslog", "mode: syslog\nnetworkPolicy: {enabled: true, metricsFrom: [" + netpolPrometheus + "], syslogFrom: [" + netpolNginx + ", " + netpolBlock + "]}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		checkNetworkPolicy(t, m, map[string][]string{"metrics": {netpolPrometheus}, "syslog": {netpolNginx, netpolBlock}})
	}},
}

// checkNetworkPolicy checks the one NetworkPolicy: it selects the exporter's pods, limits
// their ingress alone, and lets in, to each named port of the pod, the peers of from (as
// values) and nothing else.
func checkNetworkPolicy(t *testing.T, m *manifests, from map[string][]string) {
	t.Helper()
	if len(m.netPolicies) != 1 {
		t.Fatalf("%d NetworkPolicies, want one", len(m.netPolicies))
	}
	spec := chartPodSpec(m)
	var pod *metav1.ObjectMeta
	for _, d := range m.daemonSets {
		pod = &d.Spec.Template.ObjectMeta
	}
	for _, d := range m.deployments {
		pod = &d.Spec.Template.ObjectMeta
	}
	for _, np := range m.netPolicies {
		s, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || s.Empty() || !s.Matches(labels.Set(pod.Labels)) {
			t.Errorf("NetworkPolicy selects %v, not the exporter's pods (%v)", np.Spec.PodSelector, pod.Labels)
		}
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
			t.Errorf("policyTypes %v: want Ingress alone (the exporter's egress is left as it is)", np.Spec.PolicyTypes)
		}
		got := map[string][]networkingv1.NetworkPolicyPeer{}
		for _, rule := range np.Spec.Ingress {
			if len(rule.Ports) != 1 || rule.Ports[0].Port == nil {
				t.Fatalf("ingress rule %+v: want one port each", rule)
			}
			p := rule.Ports[0]
			c, port := containerPort(spec, p.Port.String())
			if c == nil || p.Protocol == nil || *p.Protocol != port.Protocol {
				t.Errorf("ingress to port %s/%v: not a port of the pod", p.Port, p.Protocol)
			}
			if len(rule.From) == 0 {
				t.Errorf("ingress to port %s from anywhere", p.Port)
			}
			got[p.Port.String()] = append(got[p.Port.String()], rule.From...)
		}
		for port, peers := range from {
			var want []networkingv1.NetworkPolicyPeer
			for _, p := range peers {
				want = append(want, decodePeer(t, p))
			}
			if !equalJSON(t, got[port], want) {
				t.Errorf("ingress to port %s from %+v, want %s", port, got[port], strings.Join(peers, ", "))
			}
			delete(got, port)
		}
		if len(got) > 0 {
			t.Errorf("ingress to ports %v beyond %v", got, from)
		}
	}
}

func decodePeer(t *testing.T, text string) networkingv1.NetworkPolicyPeer {
	t.Helper()
	var p networkingv1.NetworkPolicyPeer
	if err := yaml.UnmarshalStrict([]byte(text), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestChartNetworkPolicyNATWarning: behind a NodePort or LoadBalancer Service of
// externalTrafficPolicy Cluster (Kubernetes' default), a sender outside the cluster reaches
// the pod with the address of the node that forwarded its datagram: an ipBlock of the
// senders' addresses matches none of them, and every line is dropped without a word on
// either side. The chart cannot refuse it (an ipBlock of the nodes' addresses, a load
// balancer that sends to the pods directly, keep working), so the install says it after
// the install as `helm install` prints, naming the values; not with Local, which keeps the
// senders' addresses, nor without an ipBlock or an external Service.
func TestChartNetworkPolicyNATWarning(t *testing.T) {
	const policy = "networkPolicy: {enabled: true, metricsFrom: [" + netpolPrometheus + "], syslogFrom: [%s]}\n"
	for _, c := range []struct {
		name, service, peers string
		warned               bool
	}{
		{"LoadBalancer, Cluster", "{type: LoadBalancer}", netpolNginx + ", " + netpolBlock, true},
		{"NodePort, Cluster said", "{type: NodePort, externalTrafficPolicy: Cluster}", netpolBlock, true},
		{"LoadBalancer, Local", "{type: LoadBalancer, externalTrafficPolicy: Local}", netpolBlock, false},
		{"LoadBalancer, selectors alone", "{type: LoadBalancer}", netpolNginx, false},
		{"ClusterIP", "{type: ClusterIP}", netpolBlock, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			values := "mode: syslog\nsyslog: {service: " + c.service + "}\n" + fmt.Sprintf(policy, c.peers)
			rel, err := installRelease(t, chartCase{values: values})
			if err != nil {
				t.Fatal(err)
			}
			warned := strings.Contains(rel.Info.Notes, "WARNING") && strings.Contains(rel.Info.Notes, "externalTrafficPolicy") && strings.Contains(rel.Info.Notes, "ipBlock")
			if warned != c.warned {
				t.Errorf("install with %q: NOTES warn of the senders' addresses: %v, want %v:\n%s", values, warned, c.warned, rel.Info.Notes)
			}
		})
	}
}

// TestChartNetworkPolicy: none by default, nor in sidecar mode (no pod of the chart's);
// enabled, a port nothing may reach (no peer given) or a peer of another mode's port fails
// the install naming the value, and so do peers given without networkPolicy.enabled.
func TestChartNetworkPolicy(t *testing.T) {
	for _, c := range []struct {
		name, values string
		want         string // what the error names; empty: the install succeeds
	}{
		{"default", "", ""},
		{"syslog default", "mode: syslog\n", ""},
		{"no scraper", "networkPolicy: {enabled: true}\n", "networkPolicy.metricsFrom"},
		{"no sender", "mode: syslog\nnetworkPolicy: {enabled: true, metricsFrom: [" + netpolPrometheus + "]}\n", "networkPolicy.syslogFrom"},
		{"senders in daemonset mode", "networkPolicy: {enabled: true, metricsFrom: [" + netpolPrometheus + "], syslogFrom: [" + netpolBlock + "]}\n", "networkPolicy.syslogFrom"},
		{"sidecar mode", "mode: sidecar\nnetworkPolicy: {enabled: true, metricsFrom: [" + netpolPrometheus + "]}\n", "networkPolicy"},
		// Peers without enabled make no policy: the exporters would stay open to every pod
		// (and, behind a LoadBalancer, to anyone) while the values say who may reach them.
		{"scrapers, not enabled", "networkPolicy: {metricsFrom: [" + netpolPrometheus + "]}\n", "networkPolicy.enabled"},
		{"senders, not enabled", "mode: syslog\nnetworkPolicy: {metricsFrom: [" + netpolPrometheus + "], syslogFrom: [" + netpolBlock + "]}\n", "networkPolicy.enabled"},
		{"senders alone, not enabled", "mode: syslog\nnetworkPolicy: {enabled: false, syslogFrom: [" + netpolNginx + "]}\n", "networkPolicy.enabled"},
		{"a peer of a typo", "networkPolicy: {enabled: true, metricsFrom: [{podselector: {}}]}\n", "podselector"},
		// The API server refuses both in one peer, and an address block that is none.
		{"an ipBlock beside a selector", "networkPolicy: {enabled: true, metricsFrom: [{ipBlock: {cidr: 10.0.0.0/8}, podSelector: {}}]}\n", "ipBlock"},
		{"an ipBlock of an address", "networkPolicy: {enabled: true, metricsFrom: [{ipBlock: {cidr: 10.0.0.1}}]}\n", "cidr"},
	} {
		t.Run(c.name, func(t *testing.T) {
			manifest, err := installChart(t, chartCase{values: c.values, operator: true})
			switch {
			case c.want == "" && err != nil:
				t.Errorf("install with %q: %v", c.values, err)
			case c.want == "" && strings.Contains(manifest, "kind: NetworkPolicy"):
				t.Errorf("install with %q makes a NetworkPolicy", c.values)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("install with %q: %v, want an error naming %s", c.values, err, c.want)
			}
		})
	}
}
