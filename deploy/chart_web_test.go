package deploy

import (
	"cmp"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// webPassword is the password of the user prometheus, whose bcrypt hash (of cost 4: cheap
// for the tests) is webHash.
const (
	webPassword = "s3cret, for the tests"
	webHash     = "$2a$04$ksUm32mXDmawR4X/9Kx5aenb3iRYfNk2KrfII022r1CitcNR6fBF."
)

// webServerName is the DNS name of the certificate the tests' exporter serves: not the
// pod's IP, by which Prometheus scrapes it.
const webServerName = "lw-logwindow-exporter.monitoring.svc"

// The values of the web cases: the Secrets they name are webSecrets'.
const (
	webTLSValues      = "web: {tls: {secretName: lw-tls}}\n"
	webPodMonitorTLS  = "tlsConfig: {ca: {secret: {name: lw-tls, key: ca.crt}}, serverName: " + webServerName + "}"
	webPodMonitorMTLS = "tlsConfig: {ca: {secret: {name: lw-tls, key: ca.crt}}, serverName: " + webServerName +
		", cert: {secret: {name: prom-client, key: tls.crt}}, keySecret: {name: prom-client, key: tls.key}}"
	webPodMonitorAuth = "basicAuth: {username: {name: scrape-auth, key: username}, password: {name: scrape-auth, key: password}}"
	webUsers          = "basicAuth: {users: {prometheus: \"" + webHash + "\"}}"
)

// webCases are the installs of web.* that TestChartValues renders, runs and scrapes: the
// probes each must render, and whether the kubelet's GET would be refused.
var webCases = []chartValueCase{
	{"web TLS", webTLSValues + "podMonitor: {" + webPodMonitorTLS + "}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		checkWebPod(t, m, spec, corev1.URISchemeHTTPS)
	}},
	{"web basic auth", "web: {" + webUsers + "}\npodMonitor: {" + webPodMonitorAuth + "}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		checkWebPod(t, m, spec, "")
	}},
	{"web TLS and basic auth", "web: {tls: {secretName: lw-tls}, " + webUsers + "}\npodMonitor: {" + webPodMonitorTLS + ", " + webPodMonitorAuth + "}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		checkWebPod(t, m, spec, "")
	}},
	{"web client certificates required", "web: {tls: {secretName: lw-tls, clientAuthType: RequireAndVerifyClientCert, clientCASecretName: client-ca}}\npodMonitor: {" + webPodMonitorMTLS + "}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		checkWebPod(t, m, spec, "")
	}},
	// A client certificate verified when given: the kubelet gives none, and its GET passes.
	{"web client certificates if given", "web: {tls: {secretName: lw-tls, clientAuthType: VerifyClientCertIfGiven, clientCASecretName: client-ca}}\npodMonitor: {" + webPodMonitorMTLS + "}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		checkWebPod(t, m, spec, corev1.URISchemeHTTPS)
	}},
}

// webSecrets are the Secrets of the user the web cases name, by name and key, as the
// cluster holds them: the exporter's certificate and key and their CA (lw-tls, as
// cert-manager writes them), the CA of the client certificates (client-ca), Prometheus'
// client certificate (prom-client) and its password (scrape-auth).
var webSecrets = sync.OnceValue(func() map[string]map[string][]byte {
	ca, caKey := newCert(nil, nil, x509.Certificate{
		Subject: pkix.Name{CommonName: "logwindow test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign,
	})
	server, serverKey := newCert(ca, caKey, x509.Certificate{
		Subject: pkix.Name{CommonName: webServerName}, DNSNames: []string{webServerName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	})
	client, clientKey := newCert(ca, caKey, x509.Certificate{
		Subject: pkix.Name{CommonName: "prometheus"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	})
	return map[string]map[string][]byte{
		"lw-tls":      {"tls.crt": certPEM(server), "tls.key": keyPEM(serverKey), "ca.crt": certPEM(ca)},
		"client-ca":   {"ca.crt": certPEM(ca)},
		"prom-client": {"tls.crt": certPEM(client), "tls.key": keyPEM(clientKey)},
		"scrape-auth": {"username": []byte("prometheus"), "password": []byte(webPassword)},
	}
})

// newCert makes a certificate of template valid from an hour ago for a day, signed by
// parent's key (self-signed when parent is nil), and returns it and its key.
func newCert(parent *x509.Certificate, parentKey *ecdsa.PrivateKey, template x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	template.SerialNumber = big.NewInt(time.Now().UnixNano())
	template.NotBefore, template.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = &template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, &template, parent, &key.PublicKey, parentKey)
	if err != nil {
		panic(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	return c, key
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func keyPEM(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// secretKey is the value of key in the Secret name: the chart's (m) or the user's
// (webSecrets).
func secretKey(t *testing.T, m *manifests, name, key string) []byte {
	t.Helper()
	if s := m.secrets[name]; s != nil {
		if v, ok := s.Data[key]; ok {
			return v
		}
	} else if v, ok := webSecrets()[name][key]; ok {
		return v
	}
	t.Fatalf("no Secret %s with a key %s, among the chart's and the user's", name, key)
	return nil
}

// checkWebPod checks the install of a web config: the exporter reads the chart's web.yml
// beside the files of the user's Secrets, each probe is a GET over probeScheme or, when
// that is empty, a TCP connection, and the PodMonitor's endpoint scrapes with its
// credentials. Then it runs the pod's exporter with those files and does what the kubelet
// and Prometheus do: the exporter takes the web config (it refuses one that does not
// load at its start), every probe passes, the PodMonitor's scrape is answered, and where
// the probes are TCP connections, the GET the kubelet would send is refused, which is why.
func checkWebPod(t *testing.T, m *manifests, spec *corev1.PodSpec, probeScheme corev1.URIScheme) {
	t.Helper()
	exp := chartExporter(t, spec)
	if _, ok := flagValue(exp.Args, "--web.config.file"); !ok {
		t.Fatalf("args %q: no --web.config.file", exp.Args)
	}
	webConfig := localWebConfig(t, m, spec)

	probes := map[string]*corev1.Probe{"startup": exp.StartupProbe, "liveness": exp.LivenessProbe, "readiness": exp.ReadinessProbe}
	for name, p := range probes {
		switch {
		case p == nil:
			t.Fatalf("no %s probe", name)
		case probeScheme == "" && (p.TCPSocket == nil || p.TCPSocket.Port.String() != "metrics"):
			t.Errorf("%s probe %+v: want a TCP connection to the port metrics (the kubelet has no credentials)", name, p.ProbeHandler)
		case probeScheme != "" && (p.HTTPGet == nil || p.HTTPGet.Scheme != probeScheme || len(p.HTTPGet.HTTPHeaders) > 0):
			t.Errorf("%s probe %+v: want a GET over %s, with no header", name, p.ProbeHandler, probeScheme)
		}
	}

	var endpoint monitoringv1.PodMetricsEndpoint
	for _, pm := range m.podMonitors {
		endpoint = pm.Spec.PodMetricsEndpoints[0]
	}
	tlsOn := strings.Contains(string(secretKey(t, m, "lw-logwindow-exporter-web-config", "web.yml")), "tls_server_config")
	if wantScheme := map[bool]string{true: "https", false: ""}[tlsOn]; ptrString(endpoint.Scheme) != wantScheme || (tlsOn != (endpoint.TLSConfig != nil)) {
		t.Errorf("PodMonitor endpoint scheme %q, tlsConfig %+v: want scheme %q and a tlsConfig with TLS", ptrString(endpoint.Scheme), endpoint.TLSConfig, wantScheme)
	}

	// The pod, run as a local process.
	args, _ := localDaemonSetArgs(t, m, spec)
	addr, err := testexec.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if strings.HasPrefix(a, "--web.config.file=") {
			args[i] = "--web.config.file=" + webConfig
		}
	}
	argv := append([]string{builtBinary(t), "--web.listen-address=" + addr}, args...)
	p := testexec.StartTest(t, t.TempDir(), "logwindow_exporter", argv)

	// The kubelet: the startup probe until it passes (within the pod's failureThreshold
	// periods; longer on a loaded machine), then the others once.
	deadline := time.Now().Add(testexec.DefaultTimeout)
	for err := kubeletProbe(exp.StartupProbe, addr); err != nil; err = kubeletProbe(exp.StartupProbe, addr) {
		if gone, _ := p.Exited(); gone || time.Now().After(deadline) {
			t.Fatalf("the startup probe does not pass: %v\n%s", err, testexec.Tail(p.Output, 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for name, probe := range probes {
		if err := kubeletProbe(probe, addr); err != nil {
			t.Errorf("%s probe: %v", name, err)
		}
	}
	if probeScheme == "" {
		get := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/-/healthy", Scheme: map[bool]corev1.URIScheme{true: corev1.URISchemeHTTPS, false: corev1.URISchemeHTTP}[tlsOn]}}}
		if err := kubeletProbe(get, addr); err == nil {
			t.Error("the kubelet's GET of /-/healthy passes: a TCP probe is not needed")
		}
	}

	// Prometheus, with the PodMonitor's endpoint.
	if body, err := scrapeEndpoint(t, m, endpoint, addr); err != nil {
		t.Errorf("the PodMonitor's scrape: %v", err)
	} else if !strings.Contains(body, "logwindow_build_info") {
		t.Errorf("the PodMonitor's scrape has no logwindow_build_info:\n%.500s", body)
	}
}

// localWebConfig lays out the volume of the pod's --web.config.file in a temporary
// directory, as the kubelet does (the chart's web.yml beside the files of the user's
// Secrets), and returns the web config's path there. The volume must be a read-only mount
// of its own, projected from the Secrets, so that a renewed certificate reaches it.
func localWebConfig(t *testing.T, m *manifests, spec *corev1.PodSpec) string {
	t.Helper()
	exp := chartExporter(t, spec)
	file, _ := flagValue(exp.Args, "--web.config.file")
	dir := t.TempDir()
	mount := slices.IndexFunc(exp.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.MountPath == filepath.Dir(file) })
	if mount < 0 || !exp.VolumeMounts[mount].ReadOnly {
		t.Fatalf("%s is not in a read-only mount of its own: %+v", file, exp.VolumeMounts)
	}
	vol := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == exp.VolumeMounts[mount].Name })
	if vol < 0 || spec.Volumes[vol].Projected == nil {
		t.Fatalf("volume %s: want a projected volume of the Secrets (a renewed certificate reaches it)", exp.VolumeMounts[mount].Name)
	}
	for _, src := range spec.Volumes[vol].Projected.Sources {
		if src.Secret == nil {
			t.Fatalf("projected source %+v: not a Secret", src)
		}
		for _, item := range src.Secret.Items {
			if err := os.WriteFile(filepath.Join(dir, item.Path), secretKey(t, m, src.Secret.Name, item.Key), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	local := filepath.Join(dir, filepath.Base(file))
	if _, err := os.Stat(local); err != nil {
		t.Fatalf("the volume has no %s: %v", filepath.Base(file), err)
	}
	return local
}

func ptrString[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// kubeletProbe is probe's handler as the kubelet runs it against the pod's port at addr:
// a TCP connection, or a GET with no credentials that passes with 200 to 399, over HTTPS
// without verifying the certificate.
func kubeletProbe(probe *corev1.Probe, addr string) error {
	if probe.TCPSocket != nil {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}
	g := probe.HTTPGet
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(strings.ToLower(string(cmp.Or(g.Scheme, corev1.URISchemeHTTP))) + "://" + addr + g.Path)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("GET %s: %s", g.Path, resp.Status)
	}
	return nil
}

// scrapeEndpoint scrapes the exporter at addr as Prometheus does with the PodMonitor's
// endpoint: its scheme, its CA, server name and client certificate, and its basic auth,
// each from the Secret it names.
func scrapeEndpoint(t *testing.T, m *manifests, e monitoringv1.PodMetricsEndpoint, addr string) (string, error) {
	t.Helper()
	transport := &http.Transport{}
	if c := e.TLSConfig; c != nil {
		config := &tls.Config{ServerName: ptrString(c.ServerName)}
		if c.CA.Secret != nil {
			config.RootCAs = x509.NewCertPool()
			config.RootCAs.AppendCertsFromPEM(secretKey(t, m, c.CA.Secret.Name, c.CA.Secret.Key))
		}
		if c.Cert.Secret != nil && c.KeySecret != nil {
			pair, err := tls.X509KeyPair(secretKey(t, m, c.Cert.Secret.Name, c.Cert.Secret.Key), secretKey(t, m, c.KeySecret.Name, c.KeySecret.Key))
			if err != nil {
				t.Fatal(err)
			}
			config.Certificates = []tls.Certificate{pair}
		}
		transport.TLSClientConfig = config
	}
	req, err := http.NewRequest(http.MethodGet, cmp.Or(ptrString(e.Scheme), "http")+"://"+addr+e.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := e.BasicAuth; a != nil {
		req.SetBasicAuth(string(secretKey(t, m, a.Username.Name, a.Username.Key)), string(secretKey(t, m, a.Password.Name, a.Password.Key)))
	}
	resp, err := (&http.Client{Timeout: testexec.DefaultTimeout, Transport: transport}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s", resp.Status)
	}
	return string(body), err
}

// TestChartWebMistakes: web.* and the PodMonitor's credentials that the exporter would
// refuse, or with which every scrape would fail, fail the install naming the value; the
// schema refuses a password given instead of its hash and an unknown client_auth_type.
func TestChartWebMistakes(t *testing.T) {
	for _, c := range []struct {
		name, values string
		operator     bool
		want         string // what the error names; empty: the install succeeds
	}{
		{"TLS without the PodMonitor's tlsConfig", webTLSValues, true, "podMonitor.tlsConfig"},
		{"basic auth without the PodMonitor's", "web: {" + webUsers + "}\n", true, "podMonitor.basicAuth"},
		// Without the operator there is no PodMonitor to scrape with them.
		{"TLS without the operator", webTLSValues, false, ""},
		{"the PodMonitor's tlsConfig without TLS", "podMonitor: {" + webPodMonitorTLS + "}\n", true, "podMonitor.tlsConfig"},
		{"the PodMonitor's basicAuth without users", "podMonitor: {" + webPodMonitorAuth + "}\n", true, "podMonitor.basicAuth"},
		{"client certificates without TLS", "web: {tls: {clientAuthType: RequireAnyClientCert}}\n", false, "web.tls.secretName"},
		{"client certificates verified without their CA", "web: {tls: {secretName: lw-tls, clientAuthType: RequireAndVerifyClientCert}}\n", false, "web.tls.clientCASecretName"},
		{"a client CA verifying nothing", "web: {tls: {secretName: lw-tls, clientCASecretName: client-ca}}\n", false, "web.tls.clientAuthType"},
		// exporter-toolkit takes it, and lets in any certificate.
		{"a client CA with certificates required, not verified", "web: {tls: {secretName: lw-tls, clientAuthType: RequireAnyClientCert, clientCASecretName: client-ca}}\n", false, "would be ignored"},
		{"the web config in extraArgs too", webTLSValues + "extraArgs: [--web.config.file=/etc/web.yml]\n", false, "extraArgs"},
		{"web in sidecar mode", "mode: sidecar\n" + webTLSValues, false, "web"},
		{"a password, not its hash", "web: {basicAuth: {users: {prometheus: s3cret}}}\n", false, "schema"},
		{"a user name with a colon", "web: {basicAuth: {users: {\"a:b\": \"" + webHash + "\"}}}\n", false, "schema"},
		{"an unknown client auth type", "web: {tls: {secretName: lw-tls, clientAuthType: RequireClientCert}}\n", false, "clientAuthType"},
		{"a Secret name that is none", "web: {tls: {secretName: LW_TLS}}\n", false, "secretName"},
		// The operator's CRD prunes a field it does not know, without a word.
		{"a typo in the PodMonitor's tlsConfig", webTLSValues + "podMonitor: {tlsConfig: {serverNmae: x}}\n", true, "serverNmae"},
		{"a typo in the PodMonitor's basicAuth", "web: {" + webUsers + "}\npodMonitor: {basicAuth: {user: {name: a, key: b}}}\n", true, "user"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := installChart(t, chartCase{values: c.values, operator: c.operator})
			switch {
			case c.want == "" && err != nil:
				t.Errorf("install with %q: %v", c.values, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("install with %q: %v, want an error naming %s", c.values, err, c.want)
			}
		})
	}
}

// TestChartWebSecret: the chart's web.yml holds the hashes of web.basicAuth.users and
// names the certificate, key and client CA files the volume puts beside it, and nothing
// is made without web.*.
func TestChartWebSecret(t *testing.T) {
	m := renderChart(t, chartCase{name: "none", mode: "daemonset"})
	if len(m.secrets) != 0 {
		t.Errorf("Secrets %v made without web.*", m.objects)
	}
	m = renderChart(t, chartCase{name: "all", mode: "daemonset", values: "web: {tls: {secretName: lw-tls, clientAuthType: RequireAndVerifyClientCert, clientCASecretName: client-ca}, " + webUsers + "}\n"})
	s := m.secrets["lw-logwindow-exporter-web-config"]
	if s == nil {
		t.Fatalf("no Secret lw-logwindow-exporter-web-config among %v", m.objects)
	}
	var got, want map[string]any
	if err := yaml.Unmarshal(s.Data["web.yml"], &got); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte("tls_server_config: {cert_file: tls.crt, key_file: tls.key, client_auth_type: RequireAndVerifyClientCert, client_ca_file: client-ca.crt}\nbasic_auth_users: {prometheus: \""+webHash+"\"}\n"), &want); err != nil {
		t.Fatal(err)
	}
	if !equalJSON(t, got, want) {
		t.Errorf("web.yml:\n%s", s.Data["web.yml"])
	}
}

// TestChartSidecarWebScrape: in sidecar mode the web config is the container's the user
// adds (the README's sidecar), which the chart cannot see: the PodMonitor scrapes it with
// the TLS and basic auth podMonitor.tlsConfig and podMonitor.basicAuth give, over HTTPS
// with a tlsConfig, rather than refusing them and scraping an HTTPS or password-guarded
// endpoint in plain HTTP, every scrape failing.
func TestChartSidecarWebScrape(t *testing.T) {
	for _, c := range []struct {
		name, podMonitor string
		scheme           string
		tls, auth        bool
	}{
		{"plain", "{}", "", false, false},
		{"TLS", "{" + webPodMonitorTLS + "}", "https", true, false},
		{"basic auth", "{" + webPodMonitorAuth + "}", "", false, true},
		{"client certificate and basic auth", "{" + webPodMonitorMTLS + ", " + webPodMonitorAuth + "}", "https", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := renderChart(t, chartCase{name: c.name, mode: "sidecar", operator: true, values: "mode: sidecar\npodMonitor: " + c.podMonitor + "\n"})
			if len(m.podMonitors) != 1 {
				t.Fatalf("PodMonitors among %v, want one", m.objects)
			}
			for _, pm := range m.podMonitors {
				e := pm.Spec.PodMetricsEndpoints[0]
				scheme := ""
				if e.Scheme != nil {
					scheme = strings.ToLower(e.Scheme.String())
				}
				if scheme != c.scheme || (e.TLSConfig != nil) != c.tls || (e.BasicAuth != nil) != c.auth {
					t.Errorf("endpoint scheme %q, tlsConfig %v, basicAuth %v; want scheme %q, tlsConfig %v, basicAuth %v", scheme, e.TLSConfig != nil, e.BasicAuth != nil, c.scheme, c.tls, c.auth)
				}
			}
		})
	}
}
