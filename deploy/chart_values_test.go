package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/logwindow/logwindow_exporter/config"
)

// TestChartValueMistakes: values the schema cannot judge alone, whose pod Kubernetes would
// refuse to start or whose rule file the exporter would refuse, fail the install (helm
// install, upgrade and template; helm lint logs a template's fail and goes on) with an
// error naming the value, instead of a pod that never runs.
func TestChartValueMistakes(t *testing.T) {
	for _, c := range []struct{ name, values, want string }{
		// auto's candidates are each of their own escape; the exporter refuses one for all.
		{"escape with auto", "logFormatEscape: json\n", "logFormatEscape"},
		{"escape with auto in syslog mode", "mode: syslog\nlogFormatEscape: none\n", "logFormatEscape"},
		// A pasted directive says its own escape=.
		{"escape with a directive", "logFormat: |\n  log_format x escape=json '$remote_addr [$time_local] \"$request\" $status $body_bytes_sent';\nlogFormatEscape: none\n", "logFormatEscape"},
		// The kubelet refuses to run a container as root that must not be root.
		{"pod as root and non-root", "podSecurityContext: {runAsUser: 0}\n", "runAsNonRoot"},
		{"container as root and non-root", "securityContext: {runAsUser: 0}\n", "runAsNonRoot"},
		{"syslog pod as root and non-root", "mode: syslog\npodSecurityContext: {runAsUser: 0}\n", "runAsNonRoot"},
		// The user's rule file says its inputs' formats: the chart's would be ignored.
		{"log format with rules.content", "mode: syslog\nlogFormat: main\n" + readmeRules, "logFormat"},
		{"escape with an existing ConfigMap", "logFormat: combined\nlogFormatEscape: json\nrules: {existingConfigMap: mine}\n", "logFormat"},
		// A format without a variable every rule of the chart's reads: the exporter
		// refuses the rule file, and its pods would never start.
		{"log format without a time", "logFormat: '$remote_addr [$time_local_x] \"$request\" $status $body_bytes_sent'\n", "has no $time_local (or $time_iso8601 or $msec), which"},
		{"directive of a time only under a comment", "logFormat: |\n  # log_format old '$remote_addr [$time_local] \"$request\" $status $body_bytes_sent';\n  log_format new '$remote_addr \"$request\" $status $body_bytes_sent';\n", "has no $time_local (or $time_iso8601 or $msec), which"},
		{"log format without the body's bytes", "mode: syslog\nlogFormat: '$remote_addr [$time_local] \"$request\" $status $bytes_sent'\n", "has no $body_bytes_sent, which"},
		{"log format without the client", "logFormat: '$realip_remote_addr [$time_local] \"$request\" $status $body_bytes_sent'\n", "has no $remote_addr, which"},
		// A commented-out line names what the directive nginx reads lacks.
		{"log format without the request", "logFormat: '$remote_addr [$time_local] $status $body_bytes_sent'\n", "has no $request (or $request_method and $uri), which"},
		{"JSON template whose request key holds the target", `logFormat: '{"remote_addr":"$remote_addr","time_local":"$time_local","request":"$request_uri","status":$status,"body_bytes_sent":$body_bytes_sent}'` + "\nlogFormatEscape: json\n", "has no $request (or $request_method and $uri), which"},
		{"log format of the method without the path", "logFormat: '$remote_addr [$time_local] $request_method $request_uri $status $body_bytes_sent'\n", "has no $request (or $request_method and $uri), which"},
		// A flag the chart passes: the exporter refuses it twice, and would not start.
		{"extraArgs repeating the chart's storage", "extraArgs: [--storage.path=/data]\n", "extraArgs"},
		{"extraArgs repeating the chart's rule file", "mode: syslog\nextraArgs: [--config.file, /etc/rules.yaml]\n", "extraArgs"},
		// kingpin's negation of a bool flag is that flag again.
		{"extraArgs negating the chart's watch", "extraArgs: [--no-config.watch]\n", "extraArgs"},
		// Without storage.enabled the pod has no writable directory (the root filesystem is
		// read-only): the exporter would run, warn at every snapshot, and keep nothing.
		{"extraArgs storing without storage", "storage: {enabled: false}\nextraArgs: [--storage.path=/data]\n", "storage.enabled"},
		{"extraArgs storing without storage in syslog mode", "mode: syslog\nstorage: {enabled: false}\nextraArgs: [--storage.snapshot-interval, 1m]\n", "storage.enabled"},
		// The workload's selector would no longer select its pods.
		{"pod label of the selector", "podLabels: {app.kubernetes.io/instance: web}\n", "podLabels"},
		// The API server refuses an externalTrafficPolicy on a Service of no external traffic.
		{"externalTrafficPolicy of a ClusterIP", "mode: syslog\nsyslog: {service: {externalTrafficPolicy: Local}}\n", "syslog.service.externalTrafficPolicy"},
		// In syslog mode the Service sends to syslog.port of the pod's address: a rule file
		// of the user's receiving elsewhere (the loopback of the sidecar examples, another
		// port) would count nothing, with no error and no alert anywhere.
		{"rules.content on the loopback in syslog mode", "mode: syslog\n" + strings.Replace(readmeRules, "udp://0.0.0.0:5140", "udp://127.0.0.1:5140", 1), "rules.content"},
		{"rules.content on another port in syslog mode", "mode: syslog\nsyslog: {port: 1514}\n" + readmeRules, "syslog.port"},
		{"rules.content reading a file in syslog mode", "mode: syslog\nrules:\n  content: |\n    inputs:\n      - {name: nginx, path: /var/log/nginx/access.log}\n    rules:\n      - {name: r, match: x}\n", "rules.content"},
		// A file of rules alone: the exporter runs with no input, counting nothing.
		{"rules.content without inputs in syslog mode", "mode: syslog\nrules:\n  content: |\n    rules:\n      - {name: r, match: x}\n", "receives on no syslog address"},
		// In daemonset mode the node's pod logs are all the pod mounts: a file of the user's
		// rules elsewhere (nginx's own path, the kubelet's /var/log/containers) is never
		// there.
		{"rules.content reading nginx's path in daemonset mode", "rules:\n  content: |\n    inputs:\n      - {name: nginx, path: /var/log/nginx/access.log}\n    rules:\n      - {name: r, match: x}\n", "daemonset.podLogs"},
		{"rules.content reading /var/log/containers in daemonset mode", "rules:\n  content: |\n    inputs:\n      - {name: pods, path: '/var/log/pods/*/nginx/*.log', wrapper: cri}\n      - {name: nginx, path: '/var/log/containers/*_nginx-*.log', wrapper: cri}\n    rules:\n      - {name: r, match: x}\n", "/var/log/containers/*_nginx-*.log"},
		// A directory beside daemonset.podLogs whose name begins as its does is not under it.
		{"rules.content reading beside daemonset.podLogs", "rules:\n  content: |\n    inputs:\n      - {name: nginx, path: '/var/log/pods.old/*/nginx/*.log', wrapper: cri}\n    rules:\n      - {name: r, match: x}\n", "/var/log/pods.old/*/nginx/*.log, outside daemonset.podLogs"},
		// An input without a name is named as the exporter's messages name it, by position.
		{"unnamed input of rules.content reading nginx's path", "rules:\n  content: |\n    inputs:\n      - {name: pods, path: '/var/log/pods/*/nginx/*.log', wrapper: cri}\n      - {path: /var/log/nginx/access.log}\n    rules:\n      - {name: r, match: x}\n", "input #2 reads /var/log/nginx/access.log"},
		// No input reads the pods' logs, the only logs in the DaemonSet's pods, and no
		// Service sends them datagrams.
		{"rules.content without inputs in daemonset mode", "rules:\n  content: |\n    rules:\n      - {name: r, match: x}\n", "daemonset.podLogs"},
		{"rules.content of a syslog input in daemonset mode", "rules:\n  content: |\n    inputs:\n      - {name: nginx, syslog: 'udp://0.0.0.0:5140'}\n    rules:\n      - {name: r, match: x}\n", "daemonset.podLogs"},
		// A tag beside a digest would be ignored by the runtime, which pulls the digest.
		{"tag and digest", "image: {tag: 9.9.9, digest: \"sha256:" + strings.Repeat("0f", 32) + "\"}\n", "image.digest"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := installChart(t, chartCase{values: c.values}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("install with %q: %v, want an error naming %s", c.values, err, c.want)
			}
		})
	}
}

// TestChartSyslogRulesContent: in syslog mode, a rule file of rules.content receiving on
// every address at syslog.port installs, however the address is spelled; one receiving
// elsewhere fails (TestChartValueMistakes).
func TestChartSyslogRulesContent(t *testing.T) {
	for _, addr := range []string{"udp://0.0.0.0:1514", "udp://:1514", "udp://[::]:1514", "udp://0.0.0.0:01514"} {
		t.Run(addr, func(t *testing.T) {
			values := "mode: syslog\nsyslog: {port: 1514}\nrules:\n  content: |\n    inputs:\n      - {name: other, syslog: 'udp://127.0.0.1:1515'}\n      - {name: nginx, syslog: '" + addr + "'}\n    rules:\n      - {name: r, match: x}\n"
			if _, err := installChart(t, chartCase{values: values}); err != nil {
				t.Errorf("install with %q: %v", values, err)
			}
		})
	}
}

// TestChartDaemonSetRulesContent: in daemonset mode, a rule file of rules.content reading
// files under daemonset.podLogs, however the path is spelled, installs; one reading
// elsewhere fails (TestChartValueMistakes).
func TestChartDaemonSetRulesContent(t *testing.T) {
	for _, path := range []string{"/data/pods/*_*_*/web/*.log", "/data//pods/./*/web/*.log", "/data/pods/web_front_1/web/0.log"} {
		t.Run(path, func(t *testing.T) {
			values := "daemonset: {podLogs: /data/pods/}\nrules:\n  content: |\n    inputs:\n      - {name: web, path: '" + path + "', wrapper: cri}\n      - {name: nginx, syslog: 'udp://127.0.0.1:5140'}\n    rules:\n      - {name: r, match: x}\n"
			if _, err := installChart(t, chartCase{values: values}); err != nil {
				t.Errorf("install with %q: %v", values, err)
			}
		})
	}
}

// TestChartSidecarWorkloadValues: in sidecar mode the chart renders no pod, so a value that
// only shapes the chart's DaemonSet or Deployment would be ignored; set in sidecar mode
// (anything but the chart's default), it fails the install naming each such value and
// saying where the sidecar's own go. The defaults, and the values sidecar mode reads,
// install.
func TestChartSidecarWorkloadValues(t *testing.T) {
	for _, c := range []struct {
		name, values string
		want         []string // the values the error names; none: the install succeeds
	}{
		{"defaults", "", nil},
		{"a default restated", "resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {cpu: 500m, memory: 256Mi}}\nconfigWatch: true\n", nil},
		{"what sidecar mode reads", "metricsPort: 9100\nimage: {tag: \"1.0.0\"}\nsidecar: {port: 6514}\nlogFormat: main\n", nil},
		{"resources", "resources: {limits: {cpu: \"1\"}}\n", []string{"resources"}},
		{"extraArgs", "extraArgs: [--log.level=debug]\n", []string{"extraArgs"}},
		{"securityContext", "securityContext: {readOnlyRootFilesystem: false}\n", []string{"securityContext"}},
		{"several", "podAnnotations: {a: b}\ntolerations: [{operator: Exists}]\nnodeSelector: null\nstorage: {enabled: false}\n",
			[]string{"podAnnotations", "tolerations", "nodeSelector", "storage"}},
		{"another mode's", "daemonset: {shards: 2}\nsyslog: {replicas: 3}\n", []string{"daemonset", "syslog"}},
		{"the workload's pod", "imagePullSecrets: [{name: reg}]\npriorityClassName: high\npodLabels: {a: b}\npodSecurityContext: {runAsUser: 1000}\naffinity: {podAntiAffinity: {}}\n",
			[]string{"imagePullSecrets", "priorityClassName", "podLabels", "podSecurityContext", "affinity"}},
		{"configWatch", "configWatch: false\n", []string{"configWatch"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := installChart(t, chartCase{values: "mode: sidecar\n" + c.values})
			if len(c.want) == 0 {
				if err != nil {
					t.Errorf("install with %q: %v", c.values, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("install with %q succeeds, want an error naming %s", c.values, c.want)
			}
			for _, w := range append(c.want, "extraContainers") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("install with %q: %v, want it to name %s", c.values, err, w)
				}
			}
		})
	}
}

// TestChartOtherModeValues: a value only another mode reads (daemonset.*, syslog.*,
// sidecar.*), set to anything but its default, fails the install naming the value and the
// mode it belongs to, instead of being ignored. The defaults restated, and each mode's own,
// install.
func TestChartOtherModeValues(t *testing.T) {
	for _, c := range []struct {
		name, values string
		want         []string // what the error names; none: the install succeeds
	}{
		{"daemonset defaults", "", nil},
		{"syslog defaults", "mode: syslog\n", nil},
		{"daemonset's own", "daemonset: {shards: 4}\n", nil},
		{"syslog's own", "mode: syslog\nsyslog: {replicas: 3}\n", nil},
		{"defaults restated", "mode: syslog\ndaemonset: {shards: 1, streams: [stdout]}\nsidecar: {port: 5140}\n", nil},
		{"shards in syslog mode", "mode: syslog\ndaemonset: {shards: 4}\n", []string{"mode: syslog", "daemonset.shards (mode: daemonset's)"}},
		{"surge in syslog mode", "mode: syslog\ndaemonset: {updateStrategy: {rollingUpdate: {maxSurge: 1}}}\n", []string{"daemonset.updateStrategy (mode: daemonset's)"}},
		{"dropped in syslog mode", "mode: syslog\ndaemonset: {tolerations: null}\n", []string{"daemonset.tolerations (mode: daemonset's)"}},
		{"syslog's in daemonset mode", "syslog: {port: 1514, service: {type: LoadBalancer}}\n",
			[]string{"mode: daemonset", "syslog.port (mode: syslog's)", "syslog.service (mode: syslog's)"}},
		{"the node's storage in syslog mode", "mode: syslog\nstorage: {hostPath: /x, initImage: 'busybox:1'}\n",
			[]string{"storage.hostPath (mode: daemonset's)", "storage.initImage (mode: daemonset's)"}},
		{"storage of both in syslog mode", "mode: syslog\nstorage: {snapshotInterval: 30s}\n", nil},
		{"sidecar's in syslog mode", "mode: syslog\nsidecar: {podSelector: {app: web}}\n", []string{"sidecar.podSelector (mode: sidecar's)"}},
		{"both others'", "syslog: {replicas: 3}\nsidecar: {portName: lw}\n", []string{"syslog.replicas (mode: syslog's)", "sidecar.portName (mode: sidecar's)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := installChart(t, chartCase{values: c.values})
			if len(c.want) == 0 {
				if err != nil {
					t.Errorf("install with %q: %v", c.values, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("install with %q succeeds, want an error naming %s", c.values, c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("install with %q: %v, want it to name %s", c.values, err, w)
				}
			}
		})
	}
}

// TestChartRunAsUser: a DaemonSet run as another user, root for a runtime that writes the
// logs 0600 as the README says (runAsUser 0 with runAsNonRoot false), or a user the
// container's securityContext sets, gets its snapshot directory chowned to the user it
// runs as, so that the snapshot can be written.
func TestChartRunAsUser(t *testing.T) {
	for _, c := range []struct{ name, values, owner string }{
		{"default", "", "65532:65532"},
		{"root, as the README says for CRI-O", "podSecurityContext: {runAsUser: 0, runAsNonRoot: false}\n", "0:65532"},
		{"the container's user", "securityContext: {runAsUser: 1000, runAsGroup: 1000}\n", "1000:1000"},
		{"the image's user", "podSecurityContext: {runAsUser: null, runAsGroup: null}\n", "65532:65532"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := renderChart(t, chartCase{name: c.name, values: c.values, mode: "daemonset"})
			for _, d := range m.daemonSets {
				spec := &d.Spec.Template.Spec
				k := slices.IndexFunc(spec.InitContainers, func(c corev1.Container) bool { return c.Name == "storage-owner" })
				if k < 0 {
					t.Fatal("no init container storage-owner")
				}
				dir, _ := flagValue(chartExporter(t, spec).Args, "--storage.path")
				if got := spec.InitContainers[k].Command; !slices.Equal(got, []string{"chown", "-R", c.owner, dir}) {
					t.Errorf("init container runs %q, want chown -R %s %s", got, c.owner, dir)
				}
				lintChart(t, chartCase{values: c.values}.vals(t))
			}
		})
	}
}

// chartValueCase is an install setting values the other chart tests leave at their
// defaults, with what each must change in what is rendered.
type chartValueCase struct {
	name, values string
	check        func(t *testing.T, m *manifests, spec *corev1.PodSpec)
}

var chartValueCases = []chartValueCase{
	{"image pull policy and secrets", "image: {pullPolicy: Always}\nimagePullSecrets: [{name: regcred}]\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
			if c.ImagePullPolicy != corev1.PullAlways {
				t.Errorf("container %s: imagePullPolicy %s", c.Name, c.ImagePullPolicy)
			}
		}
		if len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "regcred" {
			t.Errorf("imagePullSecrets %v", spec.ImagePullSecrets)
		}
	}},
	// Pinned by digest, as deploy/README.md recommends: the image is repository@digest,
	// which names one build whatever a tag is moved to.
	{"image digest", "image: {repository: registry.example.com/logwindow_exporter, digest: \"sha256:" + strings.Repeat("0f", 32) + "\"}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if want := "registry.example.com/logwindow_exporter@sha256:" + strings.Repeat("0f", 32); chartExporter(t, spec).Image != want {
			t.Errorf("image %s, want %s", chartExporter(t, spec).Image, want)
		}
	}},
	{"nameOverride", "nameOverride: lwx\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if m.daemonSets["lw-lwx"] == nil || m.configMaps["lw-lwx-rules"] == nil {
			t.Errorf("objects %v: want them named lw-lwx", m.objects)
		}
	}},
	{"fullnameOverride", "fullnameOverride: edge-logs\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if m.daemonSets["edge-logs"] == nil || m.configMaps["edge-logs-rules"] == nil {
			t.Errorf("objects %v: want them named edge-logs", m.objects)
		}
	}},
	{"rules key", "rules: {key: nginx.yaml}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if file, _ := flagValue(chartExporter(t, spec).Args, "--config.file"); file != "/etc/logwindow_exporter/nginx.yaml" {
			t.Errorf("--config.file=%s", file)
		}
	}},
	{"storage off", "storage: {enabled: false}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if _, ok := flagValue(chartExporter(t, spec).Args, "--storage.path"); ok || len(spec.InitContainers) > 0 {
			t.Error("storage off, the pod still keeps a snapshot")
		}
	}},
	// A flag's value as an element of its own, as kubectl and Helm users write them: each
	// stays a string, a number and a bracketed address included.
	{"extraArgs as separate values", "mode: syslog\nextraArgs: [--web.max-requests, \"20\", --web.listen-address, \"[::]:9100\", --log.level, \"debug\"]\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		args := chartExporter(t, spec).Args
		if i := slices.Index(args, "--web.max-requests"); i < 0 || !slices.Equal(args[i:], []string{"--web.max-requests", "20", "--web.listen-address", "[::]:9100", "--log.level", "debug"}) {
			t.Errorf("args %q", args)
		}
	}},
	// Helm's way to drop a default is null: the install still renders, Kubernetes' defaults
	// apply, and the snapshot's directory goes to the image's user.
	{"defaults dropped with null", "podLabels: null\npodSecurityContext: null\nsecurityContext: null\ndaemonset: {updateStrategy: null, tolerations: null}\ntolerations: null\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if len(spec.Tolerations) != 0 {
			t.Errorf("tolerations %+v, want none", spec.Tolerations)
		}
		if s := m.daemonSets["lw-logwindow-exporter"].Spec.UpdateStrategy; s.Type != "" || s.RollingUpdate != nil {
			t.Errorf("updateStrategy %+v: want Kubernetes' default", s)
		}
		if got := spec.InitContainers[0].Command[2]; got != "65532:65532" {
			t.Errorf("the snapshot's directory is given to %s, want the image's user", got)
		}
	}},
	{"configWatch off", "configWatch: false\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if args := chartExporter(t, spec).Args; slices.Contains(args, "--config.watch") {
			t.Errorf("args %q", args)
		}
	}},
	{"storage", "storage: {hostPath: /data/lw/, snapshotInterval: 30s, initImage: registry.example.com/busybox:1.37}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if v, _ := flagValue(chartExporter(t, spec).Args, "--storage.snapshot-interval"); v != "30s" {
			t.Errorf("--storage.snapshot-interval=%s", v)
		}
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "storage" })
		if i < 0 || spec.Volumes[i].HostPath == nil || spec.Volumes[i].HostPath.Path != "/data/lw/monitoring/lw" {
			t.Errorf("volumes %+v: want the hostPath /data/lw/monitoring/lw", spec.Volumes)
		}
		if len(spec.InitContainers) != 1 || spec.InitContainers[0].Image != "registry.example.com/busybox:1.37" {
			t.Errorf("init containers %+v", spec.InitContainers)
		}
	}},
	{"daemonset", "daemonset: {shards: 4, podLogs: /data/pods/, containers: [web], streams: [stdout, stderr], supplementalGroups: [4]," +
		" tolerations: [{key: edge, operator: Exists, effect: NoSchedule}], updateStrategy: {type: OnDelete}}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		d := m.daemonSets["lw-logwindow-exporter"]
		// Kubernetes refuses a rollingUpdate with type OnDelete: the default's must not stay.
		if d.Spec.UpdateStrategy.Type != "OnDelete" || d.Spec.UpdateStrategy.RollingUpdate != nil {
			t.Errorf("updateStrategy %+v", d.Spec.UpdateStrategy)
		}
		if !slices.Equal(spec.SecurityContext.SupplementalGroups, []int64{4}) {
			t.Errorf("supplementalGroups %v", spec.SecurityContext.SupplementalGroups)
		}
		if len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != "edge" {
			t.Errorf("tolerations %+v: want daemonset.tolerations' alone", spec.Tolerations)
		}
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "pod-logs" })
		j := slices.IndexFunc(chartExporter(t, spec).VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.Name == "pod-logs" })
		if i < 0 || j < 0 || spec.Volumes[i].HostPath.Path != "/data/pods" || spec.Containers[0].VolumeMounts[j].MountPath != "/data/pods" {
			t.Errorf("the node's /data/pods/ is not mounted at /data/pods, where the rules read")
		}
		cfg := renderedRules(t, m, spec)
		if len(cfg.Inputs) != 1 {
			t.Fatalf("%d inputs, want one of the container web", len(cfg.Inputs))
		}
		in := cfg.Inputs[0]
		if in.File == nil || in.File.Path != "/data/pods/*_*_*/web/*.log" || in.File.Shards != 4 || in.Streams != config.StreamStdout|config.StreamStderr {
			t.Errorf("input %s: path %q, %d shards, streams %v", in.Name, in.Source(), in.File.Shards, in.Streams)
		}
	}},
	{"rules content, the README's", "mode: syslog\n" + readmeRules, func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if cfg := renderedRules(t, m, spec); !slices.Equal(ruleNames(cfg), []string{"nginx_http_requests"}) {
			t.Errorf("rules %v: want the README's", ruleNames(cfg))
		}
	}},
	// A container name YAML reads as null names the input (its logwindow_input_* label) as
	// any other.
	{"container named null", "daemonset: {containers: [\"null\"]}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if cfg := renderedRules(t, m, spec); len(cfg.Inputs) != 1 || cfg.Inputs[0].Name != "null" {
			t.Errorf("inputs %+v: want one named null", cfg.Inputs)
		}
	}},
	// externalTrafficPolicy Local keeps the senders' addresses, which networkPolicy's
	// ipBlocks then match.
	{"syslog Service and budget", "mode: syslog\nsyslog: {service: {type: LoadBalancer, externalTrafficPolicy: Local, annotations: {lb.example.com/internal: \"true\"}}, podDisruptionBudget: {maxUnavailable: 50%}}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		s := m.services["lw-logwindow-exporter"]
		if s == nil || s.Spec.Type != corev1.ServiceTypeLoadBalancer || s.Annotations["lb.example.com/internal"] != "true" || s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			t.Errorf("Service %+v", s)
		}
		b := m.budgets["lw-logwindow-exporter"]
		if b == nil || b.Spec.MaxUnavailable == nil || b.Spec.MaxUnavailable.String() != "50%" {
			t.Errorf("PodDisruptionBudget %+v", b)
		}
	}},
	{"sidecar", "mode: sidecar\nsidecar: {port: 6514, portName: lw-metrics, podSelector: {app: web}, telemetryPath: /lw}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		cfg := renderedRules(t, m, spec)
		if !receivesOn(cfg.Inputs[0], "udp://127.0.0.1:6514") {
			t.Errorf("the sidecar receives on %s", cfg.Inputs[0].Source())
		}
		pm := m.podMonitors["lw-logwindow-exporter"]
		if pm == nil || *pm.Spec.PodMetricsEndpoints[0].Port != "lw-metrics" || pm.Spec.PodMetricsEndpoints[0].Path != "/lw" || pm.Spec.Selector.MatchLabels["app"] != "web" || len(pm.Spec.Selector.MatchLabels) != 1 {
			t.Errorf("PodMonitor endpoints %+v, selector %v: want the path /lw of the port lw-metrics of the pods app=web", pm.Spec.PodMetricsEndpoints, pm.Spec.Selector)
		}
	}},
	// Ports below 1024, syslog's own: the pod lets the exporter's user bind them, which
	// containerd 1.x refuses a process that is not root otherwise.
	{"low ports", "mode: syslog\nsyslog: {port: 514}\nmetricsPort: 907\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if i := slices.IndexFunc(spec.SecurityContext.Sysctls, func(s corev1.Sysctl) bool { return s.Name == "net.ipv4.ip_unprivileged_port_start" }); i < 0 || spec.SecurityContext.Sysctls[i].Value != "514" {
			t.Errorf("sysctls %+v: want net.ipv4.ip_unprivileged_port_start 514", spec.SecurityContext.Sysctls)
		}
	}},
	{"metricsPort", "mode: syslog\nmetricsPort: 9100\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		exp := chartExporter(t, spec)
		_, port := containerPort(spec, "metrics")
		if addr, _ := flagValue(exp.Args, "--web.listen-address"); port == nil || port.ContainerPort != 9100 || addr != ":9100" {
			t.Errorf("port %+v, --web.listen-address=%s", port, addr)
		}
	}},
	{"resources", "resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: 1, memory: 512Mi}}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		r := chartExporter(t, spec).Resources
		if r.Requests.Cpu().String() != "100m" || r.Requests.Memory().String() != "128Mi" || r.Limits.Cpu().String() != "1" || r.Limits.Memory().String() != "512Mi" {
			t.Errorf("resources %+v", r)
		}
	}},
	{"security contexts", "podSecurityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000}\nsecurityContext: {privileged: false}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		psc, sc := spec.SecurityContext, chartExporter(t, spec).SecurityContext
		if *psc.RunAsUser != 1000 || psc.FSGroup == nil || !*psc.RunAsNonRoot || sc.Privileged == nil || *sc.Privileged || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("securityContexts %+v, %+v: want the values merged into the defaults", psc, sc)
		}
		if got := spec.InitContainers[0].Command[2]; got != "1000:1000" {
			t.Errorf("the snapshot's directory is given to %s", got)
		}
	}},
	{"pod metadata and scheduling", "podAnnotations: {example.com/a: b}\npodLabels: {team: web}\nnodeSelector: {pool: edge}\n" +
		"affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [edge]}]}]}}}\n" +
		"tolerations: [{key: gpu, operator: Exists}]\npriorityClassName: system-node-critical\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		meta := m.daemonSets["lw-logwindow-exporter"].Spec.Template.ObjectMeta
		if meta.Annotations["example.com/a"] != "b" || meta.Labels["team"] != "web" {
			t.Errorf("pod metadata %+v", meta)
		}
		if spec.NodeSelector["pool"] != "edge" || spec.NodeSelector["kubernetes.io/os"] != "linux" || spec.Affinity == nil || spec.Affinity.NodeAffinity == nil || spec.PriorityClassName != "system-node-critical" {
			t.Errorf("scheduling: nodeSelector %v, affinity %+v, priorityClassName %q", spec.NodeSelector, spec.Affinity, spec.PriorityClassName)
		}
		if len(spec.Tolerations) != 2 || spec.Tolerations[1].Key != "gpu" {
			t.Errorf("tolerations %+v: want daemonset.tolerations' and then tolerations'", spec.Tolerations)
		}
	}},
	{"architectures unrestricted", "affinity: null\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if spec.Affinity != nil {
			t.Errorf("affinity %+v: want none (affinity: null drops the default's architectures)", spec.Affinity)
		}
	}},
	{"architectures with a pod anti-affinity", "affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {a: b}}}}]}}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if got, want := archAffinity(spec), publishedArchs(t); !slices.Equal(got, want) || spec.Affinity.PodAntiAffinity == nil {
			t.Errorf("affinity %+v: want the default's architectures %v kept beside the anti-affinity", spec.Affinity, want)
		}
	}},
	{"operator objects and dashboard", "podMonitor: {interval: 15s, labels: {release: kps}}\nprometheusRule: {labels: {release: kps}}\ndashboard: {labels: {grafana_dashboard: \"1\", team: web}, namespace: grafana}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		pm, pr := m.podMonitors["lw-logwindow-exporter"], m.prometheusRules["lw-logwindow-exporter"]
		if pm == nil || pm.Labels["release"] != "kps" || pm.Spec.PodMetricsEndpoints[0].Interval != "15s" {
			t.Errorf("PodMonitor %+v", pm)
		}
		if pr == nil || pr.Labels["release"] != "kps" {
			t.Errorf("PrometheusRule %+v", pr)
		}
		if d := m.configMaps["lw-logwindow-exporter-dashboard"]; d == nil || d.Namespace != "grafana" || d.Labels["team"] != "web" {
			t.Errorf("dashboard ConfigMap %+v", d)
		}
	}},
	// The PodMonitor scrapes the path the exporter serves its metrics on.
	{"telemetry path", "extraArgs: [--web.telemetry-path=/prom]\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if pm := m.podMonitors["lw-logwindow-exporter"]; pm == nil || pm.Spec.PodMetricsEndpoints[0].Path != "/prom" {
			t.Errorf("PodMonitor scrapes path %q, want /prom, where the exporter serves its metrics", pm.Spec.PodMetricsEndpoints[0].Path)
		}
	}},
	{"telemetry path as a separate value", "mode: syslog\nextraArgs: [--web.telemetry-path, /prom]\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if pm := m.podMonitors["lw-logwindow-exporter"]; pm == nil || pm.Spec.PodMetricsEndpoints[0].Path != "/prom" {
			t.Errorf("PodMonitor scrapes path %q, want /prom, where the exporter serves its metrics", pm.Spec.PodMetricsEndpoints[0].Path)
		}
	}},
	{"operator objects off", "podMonitor: {enabled: false}\nprometheusRule: {enabled: false}\n", func(t *testing.T, m *manifests, spec *corev1.PodSpec) {
		if len(m.podMonitors)+len(m.prometheusRules) != 0 {
			t.Errorf("objects %v: want no operator objects", m.objects)
		}
	}},
}

// readmeRules is the chart README's example of rules.content, as values.
var readmeRules = func() string {
	readme, err := os.ReadFile(chartDir + "/README.md")
	if err != nil {
		panic(err)
	}
	_, block, _ := strings.Cut(string(readme), "```yaml\nrules:\n  content: |\n")
	block, _, _ = strings.Cut(block, "```")
	return "rules:\n  content: |\n" + block
}()

// renderedRules is the rule file the rendered exporter reads: its pod's, or in sidecar mode the
// chart's ConfigMap.
func renderedRules(t *testing.T, m *manifests, spec *corev1.PodSpec) *config.Config {
	t.Helper()
	return loadRules(t, renderedRuleText(t, m, spec))
}

func renderedRuleText(t *testing.T, m *manifests, spec *corev1.PodSpec) string {
	t.Helper()
	if spec == nil {
		for name, cm := range m.configMaps {
			if strings.HasSuffix(name, "-rules") {
				return cm.Data["rules.yaml"]
			}
		}
		t.Fatal("no rules ConfigMap")
	}
	exp := chartExporter(t, spec)
	file, _ := flagValue(exp.Args, "--config.file")
	text, _ := m.configMapFile(t, spec, exp, file)
	return text
}

// exporterConfigCheck runs the built exporter's --config.check with the rendered container's
// arguments, its rule file and its web config (laid out as the kubelet lays out their
// volumes) in temporary directories: the flags, the rules and the web config must be what
// the exporter starts with. In sidecar mode, the rule file and the path the PodMonitor
// scrapes.
func exporterConfigCheck(t *testing.T, m *manifests, spec *corev1.PodSpec) {
	t.Helper()
	local := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(local, []byte(renderedRuleText(t, m, spec)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config.file=" + local, "--config.check"}
	if spec != nil {
		for _, a := range chartExporter(t, spec).Args {
			switch {
			case strings.HasPrefix(a, "--web.config.file="):
				args = append(args, "--web.config.file="+localWebConfig(t, m, spec))
			case !strings.HasPrefix(a, "--config.file="):
				args = append(args, a)
			}
		}
	} else {
		// The sidecar's flags are the user's: the path the PodMonitor scrapes is the
		// --web.telemetry-path the NOTES tell them to give it.
		for _, pm := range m.podMonitors {
			args = append(args, "--web.telemetry-path="+pm.Spec.PodMetricsEndpoints[0].Path)
		}
	}
	out, err := exec.Command(builtBinary(t), args...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), ": OK") {
		t.Errorf("logwindow_exporter %q: %v\n%s", args, err, out)
	}
}

// chartPodSpec is the pod of the DaemonSet or Deployment rendered, nil in sidecar mode.
func chartPodSpec(m *manifests) *corev1.PodSpec {
	for _, d := range m.daemonSets {
		return &d.Spec.Template.Spec
	}
	for _, d := range m.deployments {
		return &d.Spec.Template.Spec
	}
	return nil
}

// The cases of web.* and networkPolicy.* are theirs, in files of their own.
func init() { chartValueCases = slices.Concat(chartValueCases, webCases, netpolCases) }

// TestChartValues renders each value the other chart tests leave at its default with
// Helm's own engine, checks that it arrives where it should, lints it, and runs the
// exporter's own --config.check on the rendered arguments and rules.
func TestChartValues(t *testing.T) {
	for _, c := range chartValueCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // as TestChartLogFormat's cases
			cc := chartCase{name: c.name, values: c.values, operator: true}
			m := renderChart(t, cc)
			spec := chartPodSpec(m)
			c.check(t, m, spec)
			lintChart(t, cc.vals(t))
			exporterConfigCheck(t, m, spec)
		})
	}
}

// TestChartPodLogsPath: daemonset.podLogs as a user may write it (a doubled slash, a dot,
// a trailing slash, characters YAML or a regex quote) is mounted, globbed and matched by
// path_captures as one path, the cleaned one the exporter reads files under: a
// path_captures regex of another spelling matches none of them, and every series would
// lose its namespace, pod and container.
func TestChartPodLogsPath(t *testing.T) {
	for _, c := range []struct{ name, podLogs, want string }{
		{"doubled slash", "/var/log//pods", "/var/log/pods"},
		{"dot and trailing slash", "/var/log/./pods/", "/var/log/pods"},
		{"apostrophe", "/var/log/node's pods", "/var/log/node's pods"},
		{"colon and hash", "/logs: k8s #1/pods", "/logs: k8s #1/pods"},
		{"regex characters", "/mnt/k8s+logs.d/(pods)", "/mnt/k8s+logs.d/(pods)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			values, err := json.Marshal(map[string]any{"daemonset": map[string]any{"podLogs": c.podLogs, "containers": []string{"nginx"}}})
			if err != nil {
				t.Fatal(err)
			}
			m := renderChart(t, chartCase{name: c.name, values: string(values)})
			spec := chartPodSpec(m)
			i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "pod-logs" })
			j := slices.IndexFunc(chartExporter(t, spec).VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.Name == "pod-logs" })
			if i < 0 || j < 0 || spec.Volumes[i].HostPath.Path != c.want || chartExporter(t, spec).VolumeMounts[j].MountPath != c.want {
				t.Errorf("the node's %s is not mounted at %[1]s", c.want)
			}
			cfg := renderedRules(t, m, spec)
			if len(cfg.Inputs) != 1 || cfg.Inputs[0].File == nil {
				t.Fatalf("inputs %+v: want one of the container nginx", cfg.Inputs)
			}
			in := cfg.Inputs[0]
			if want := c.want + "/*_*_*/nginx/*.log"; in.File.Path != want {
				t.Errorf("input path %q, want %q", in.File.Path, want)
			}
			file := c.want + "/web_front-1_0d2f3c4e-1111-4222-8333-000000000001/nginx/0.log"
			got := in.File.PathCaptures.FindStringSubmatch(file)
			if got == nil {
				t.Fatalf("path_captures %s does not match %s", in.File.PathCaptures, file)
			}
			for name, want := range map[string]string{"namespace": "web", "pod": "front-1", "container": "nginx"} {
				if v := got[in.File.PathCaptures.SubexpIndex(name)]; v != want {
					t.Errorf("path capture %s = %q, want %q", name, v, want)
				}
			}
			exporterConfigCheck(t, m, spec)
		})
	}
}

// TestChartValuesCovered: every value values.schema.json takes is in values.yaml (whose
// every value the README's table names: TestChartReadmeValues), and is set by some install
// the chart tests render (chartCases, chartLogFormats, chartValueCases), so that no value
// goes undocumented or unrendered.
func TestChartValuesCovered(t *testing.T) {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(mustRead(t, chartDir+"/values.schema.json"), &schema); err != nil {
		t.Fatal(err)
	}
	var leaves []string
	var walk func(prefix string, props map[string]json.RawMessage)
	walk = func(prefix string, props map[string]json.RawMessage) {
		for k, raw := range props {
			var sub struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			if err := json.Unmarshal(raw, &sub); err != nil {
				t.Fatal(err)
			}
			if len(sub.Properties) == 0 {
				leaves = append(leaves, prefix+k)
			} else {
				walk(prefix+k+".", sub.Properties)
			}
		}
	}
	walk("", schema.Properties)

	var defaults map[string]any
	if err := yaml.Unmarshal(mustRead(t, chartDir+"/values.yaml"), &defaults); err != nil {
		t.Fatal(err)
	}
	for _, leaf := range leaves {
		var v any = defaults
		for k := range strings.SplitSeq(leaf, ".") {
			sub, ok := v.(map[string]any)[k]
			if !ok {
				t.Errorf("values.schema.json takes %s, which values.yaml does not have", leaf)
				break
			}
			v = sub
		}
	}

	var set []string
	var collect func(prefix string, v any)
	collect = func(prefix string, v any) {
		set = append(set, prefix)
		if m, ok := v.(map[string]any); ok {
			for k, sub := range m {
				collect(prefix+"."+k, sub)
			}
		}
	}
	var installs []string
	for _, c := range chartCases {
		installs = append(installs, c.values)
	}
	for _, f := range chartLogFormats {
		installs = append(installs, f.values)
	}
	for _, c := range chartValueCases {
		installs = append(installs, c.values)
	}
	for _, values := range installs {
		for k, v := range (chartCase{values: values}).vals(t) {
			collect(k, v)
		}
	}
	for _, leaf := range slices.Sorted(slices.Values(leaves)) {
		if !slices.ContainsFunc(set, func(p string) bool { return p == leaf || strings.HasPrefix(p, leaf+".") }) {
			t.Errorf("no chart test renders %s", leaf)
		}
	}
}

// TestChartReadmeDaemonSetInput: the input the README shows for daemonset mode is the
// first one the chart's defaults render.
func TestChartReadmeDaemonSetInput(t *testing.T) {
	_, block, ok := strings.Cut(string(mustRead(t, chartDir+"/README.md")), "```yaml\ninputs:\n")
	if !ok {
		t.Fatal("README: no ```yaml block of inputs:")
	}
	block, _, _ = strings.Cut(block, "```")
	var shown, rendered struct {
		Inputs []map[string]any `json:"inputs"`
	}
	if err := yaml.Unmarshal([]byte("inputs:\n"+block), &shown); err != nil {
		t.Fatal(err)
	}
	m := renderChart(t, chartCase{name: "daemonset", mode: "daemonset"})
	if err := yaml.Unmarshal([]byte(renderedRuleText(t, m, chartPodSpec(m))), &rendered); err != nil {
		t.Fatal(err)
	}
	if len(shown.Inputs) != 1 || len(rendered.Inputs) == 0 || !equalJSON(t, shown.Inputs[0], rendered.Inputs[0]) {
		t.Errorf("README shows the input %v; the chart renders %v", shown.Inputs, rendered.Inputs)
	}
}
