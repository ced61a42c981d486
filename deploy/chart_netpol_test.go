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

// TestChartSyslogServiceWarnings: a syslog Service of type NodePort or LoadBalancer
// takes datagrams from outside the cluster, where what the NetworkPolicy does with them is
// silent on both sides (UDP has no answer to fail). The chart cannot refuse these installs
// (an internal load balancer, an ipBlock of the nodes' addresses, a load balancer sending
// to the pods directly are right), so the notes `helm install` prints after the install
// warn, naming the values:
//   - open: no NetworkPolicy, so anyone who reaches the Service writes lines into the
//     windows, as nginx's;
//   - nat: syslogFrom's ipBlocks behind externalTrafficPolicy Cluster (Kubernetes'
//     default), which gives a sender outside the cluster the address of the node that
//     forwarded its datagram: no ipBlock of the senders' matches, and every line is dropped;
//   - closed: syslogFrom names pods alone, which no sender outside the cluster is: every
//     datagram through the Service from outside is dropped.
//
// A ClusterIP Service, or Local with ipBlocks, warns of nothing.
func TestChartSyslogServiceWarnings(t *testing.T) {
	const policy = "networkPolicy: {enabled: true, metricsFrom: [" + netpolPrometheus + "], syslogFrom: [%s]}\n"
	markers := map[string]string{"open": "no NetworkPolicy", "nat": "externalTrafficPolicy is Cluster", "closed": "names no ipBlock"}
	for _, c := range []struct {
		name, service, peers string // peers: syslogFrom's; empty: no NetworkPolicy
		want                 []string
	}{
		{"LoadBalancer, Cluster", "{type: LoadBalancer}", netpolNginx + ", " + netpolBlock, []string{"nat"}},
		{"NodePort, Cluster said", "{type: NodePort, externalTrafficPolicy: Cluster}", netpolBlock, []string{"nat"}},
		{"LoadBalancer, Local", "{type: LoadBalancer, externalTrafficPolicy: Local}", netpolBlock, nil},
		{"LoadBalancer, selectors alone", "{type: LoadBalancer}", netpolNginx, []string{"closed"}},
		{"NodePort, Local, selectors alone", "{type: NodePort, externalTrafficPolicy: Local}", netpolNginx, []string{"closed"}},
		{"LoadBalancer, no policy", "{type: LoadBalancer, externalTrafficPolicy: Local}", "", []string{"open"}},
		{"NodePort, no policy", "{type: NodePort}", "", []string{"open"}},
		{"ClusterIP", "{type: ClusterIP}", netpolBlock, nil},
		{"ClusterIP, no policy", "{type: ClusterIP}", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			values := "mode: syslog\nsyslog: {service: " + c.service + "}\n"
			if c.peers != "" {
				values += fmt.Sprintf(policy, c.peers)
			}
			rel, err := installRelease(t, chartCase{values: values})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, kind := range []string{"open", "nat", "closed"} {
				if strings.Contains(rel.Info.Notes, markers[kind]) {
					got = append(got, kind)
				}
			}
			if !slices.Equal(got, c.want) || strings.Count(rel.Info.Notes, "WARNING") != len(c.want) {
				t.Errorf("install with %q: NOTES warn of %q, want %q:\n%s", values, got, c.want, rel.Info.Notes)
			}
		})
	}
}

// TestChartNetworkPolicy: none by default, nor in sidecar mode (no pod of the chart's);
// enabled, a port nothing may reach (no peer given) or a peer of another mode's port fails
// the install naming the value; peers given without networkPolicy.enabled make none.
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
		// Peers without enabled make no policy (TestChartNetworkPolicyNotEnabled: the notes
		// warn of it).
		{"scrapers, not enabled", "networkPolicy: {metricsFrom: [" + netpolPrometheus + "]}\n", ""},
		{"senders alone, not enabled", "mode: syslog\nnetworkPolicy: {enabled: false, syslogFrom: [" + netpolNginx + "]}\n", ""},
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

// TestChartNetworkPolicyNotEnabled: peers given without networkPolicy.enabled make no
// policy, as a value switched off does in any chart (a values file shared by environments
// keeps its peers and switches enabled per environment), and the notes `helm install`
// prints say so, naming the value, since the exporters stay open to every pod while the
// values name who alone should reach them. Without peers, or with a policy, they say
// nothing of it.
func TestChartNetworkPolicyNotEnabled(t *testing.T) {
	const marker = "networkPolicy.enabled is false"
	for _, c := range []struct {
		name, values string
		warns        bool
	}{
		{"scrapers", "networkPolicy: {metricsFrom: [" + netpolPrometheus + "]}\n", true},
		{"senders", "mode: syslog\nnetworkPolicy: {enabled: false, metricsFrom: [" + netpolPrometheus + "], syslogFrom: [" + netpolBlock + "]}\n", true},
		{"no peers", "mode: syslog\n", false},
		{"enabled", "networkPolicy: {enabled: true, metricsFrom: [" + netpolPrometheus + "]}\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rel, err := installRelease(t, chartCase{values: c.values})
			if err != nil {
				t.Fatal(err)
			}
			if warned := strings.Contains(rel.Info.Notes, marker); warned != c.warns {
				t.Errorf("install with %q: notes warn of peers without a policy: %v, want %v:\n%s", c.values, warned, c.warns, rel.Info.Notes)
			}
		})
	}
}
