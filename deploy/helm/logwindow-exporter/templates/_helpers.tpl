{{/* The chart's name, and the release's objects' name. */}}
{{- define "logwindow.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "logwindow.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the release's pods. */}}
{{- define "logwindow.selectorLabels" -}}
app.kubernetes.io/name: {{ include "logwindow.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "logwindow.labels" -}}
{{ include "logwindow.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* repository@digest when pinned by digest, else repository:tag. */}}
{{- define "logwindow.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/*
The path the exporter serves its metrics on, which the PodMonitor scrapes: /metrics, or
extraArgs' --web.telemetry-path (as --flag=value or --flag value; the exporter refuses it
twice); in sidecar mode, whose exporter's flags are those of the container the user adds,
sidecar.telemetryPath.
*/}}
{{- define "logwindow.metricsPath" -}}
{{- $path := "/metrics" -}}
{{- if eq .Values.mode "sidecar" -}}
{{- $path = .Values.sidecar.telemetryPath -}}
{{- end -}}
{{- $next := false -}}
{{- $flag := "^--?web\\.telemetry-path" -}}
{{- range .Values.extraArgs -}}
{{- if $next -}}
{{- $path = . -}}
{{- $next = false -}}
{{- else if regexMatch (printf "%s=" $flag) . -}}
{{- $path = regexReplaceAll (printf "%s=" $flag) . "" -}}
{{- else if regexMatch (printf "%s$" $flag) . -}}
{{- $next = true -}}
{{- end -}}
{{- end -}}
{{- $path -}}
{{- end -}}

{{/* The ConfigMap holding the rule file: the user's, or the chart's. */}}
{{- define "logwindow.rulesConfigMap" -}}
{{- .Values.rules.existingConfigMap | default (printf "%s-rules" (include "logwindow.fullname" .)) -}}
{{- end -}}

{{/*
The exporter's user and group, as the kubelet picks them: the container's securityContext
over the pod's, else the image's 65532.
*/}}
{{- define "logwindow.runAs" -}}
{{- $psc := .Values.podSecurityContext | default dict -}}
{{- $sc := .Values.securityContext | default dict -}}
{{- $user := ternary $sc.runAsUser (ternary $psc.runAsUser 65532 (hasKey $psc "runAsUser")) (hasKey $sc "runAsUser") -}}
{{- $group := ternary $sc.runAsGroup (ternary $psc.runAsGroup 65532 (hasKey $psc "runAsGroup")) (hasKey $sc "runAsGroup") -}}
{{- printf "%d:%d" (int64 $user) (int64 $group) -}}
{{- end -}}

{{/*
What values.schema.json cannot say: values that render a pod Kubernetes refuses to start,
or a rule file the exporter refuses, fail the install naming them.
*/}}
{{- define "logwindow.checkValues" -}}
{{- if not (has .Values.mode (list "daemonset" "syslog" "sidecar")) -}}
{{- fail (printf "mode: %q is none of daemonset, syslog, sidecar" .Values.mode) -}}
{{- end -}}
{{- if and .Values.image.digest .Values.image.tag -}}
{{- fail (printf "image.tag: %s beside image.digest: the runtime pulls the digest and ignores the tag: give one of them" .Values.image.tag) -}}
{{- end -}}
{{- $f := .Values.logFormat | trim -}}
{{- if and (or .Values.rules.content .Values.rules.existingConfigMap) (or (ne $f "auto") .Values.logFormatEscape) -}}
{{- fail "logFormat and logFormatEscape make the chart's rule file, which rules.content or rules.existingConfigMap replaces: give the log_format in your rule file's inputs" -}}
{{- end -}}
{{- if .Values.logFormatEscape -}}
{{- if eq $f "auto" -}}
{{- fail (printf "logFormatEscape: %s applies to one format string or preset, not to logFormat: auto, whose candidates are read each with its own escape (the JSON one with escape=json): drop logFormatEscape, or set logFormat to your format" .Values.logFormatEscape) -}}
{{- else if regexMatch "^(\\s*#[^\\n]*\\n)*\\s*log_format\\s" $f -}}
{{- fail (printf "logFormatEscape: %s with a pasted log_format directive, which says its own escape=: drop logFormatEscape" .Values.logFormatEscape) -}}
{{- end -}}
{{- end -}}
{{- /* A format string or directive (presets and auto have every variable) without one of
  the variables every rule of the chart's reads: the exporter refuses the rule file. A
  directive's whole-line # comments are not nginx's format; nginx, and the exporter, read a
  variable whatever its case. */ -}}
{{- if and (not (or .Values.rules.content .Values.rules.existingConfigMap)) (contains "$" $f) -}}
{{- $read := include "logwindow.formatRead" . -}}
{{- $missing := list -}}
{{- range list "remote_addr" "status" "body_bytes_sent" -}}
{{- if not (regexMatch (printf "(?i)\\$\\{?%s\\b" .) $read) }}{{ $missing = append $missing (printf "$%s" .) }}{{ end -}}
{{- end -}}
{{- if not (include "logwindow.formatTime" .) -}}
{{- $missing = append $missing "$time_local (or $time_iso8601 or $msec)" -}}
{{- end -}}
{{- /* The rules' method and path are $request's, or nginx's own $request_method and $uri. */ -}}
{{- if not (or (regexMatch "(?i)\\$\\{?request\\b" $read) (and (regexMatch "(?i)\\$\\{?request_method\\b" $read) (regexMatch "(?i)\\$\\{?uri\\b" $read))) -}}
{{- $missing = append $missing "$request (or $request_method and $uri)" -}}
{{- end -}}
{{- with $missing -}}
{{- fail (printf "logFormat: has no %s, which the chart's rules read (they need the variables of combined: $remote_addr, $time_local or another time the exporter reads, $request, $status, $body_bytes_sent), so the exporter would refuse its rule file and never start: add them to nginx's log_format, or give rules of your own in rules.content" (join ", " .)) -}}
{{- end -}}
{{- end -}}
{{- $flags := list "config.file" -}}
{{- if .Values.configWatch }}{{ $flags = append $flags "config.watch" }}{{ end -}}
{{- if .Values.storage.enabled }}{{ $flags = concat $flags (list "storage.path" "storage.snapshot-interval") }}{{ end -}}
{{- if include "logwindow.web" . }}{{ $flags = append $flags "web.config.file" }}{{ end -}}
{{- /* --no-config.watch is kingpin's --config.watch=false: the same flag again. */ -}}
{{- range .Values.extraArgs -}}
{{- $name := regexReplaceAll "^--?(no-)?([^=]*).*$" . "${2}" -}}
{{- if and (hasPrefix "-" .) (has $name $flags) -}}
{{- fail (printf "extraArgs: %s is a flag the chart passes already (rules.key, configWatch, storage.*, web.*), which the exporter refuses twice" .) -}}
{{- end -}}
{{- /* Without storage the pod mounts no writable directory (its root filesystem is
  read-only): the exporter would warn at every snapshot and keep nothing. */ -}}
{{- if and (hasPrefix "-" .) (hasPrefix "storage." $name) (not $.Values.storage.enabled) -}}
{{- fail (printf "extraArgs: %s with storage.enabled: false, which mounts no writable directory for it (the root filesystem is read-only): the exporter would keep nothing; set storage.enabled: true (storage.* set the flags) instead" .) -}}
{{- end -}}
{{- end -}}
{{- range list "app.kubernetes.io/name" "app.kubernetes.io/instance" -}}
{{- if hasKey ($.Values.podLabels | default dict) . -}}
{{- fail (printf "podLabels: %s is the label the chart's selectors select its pods by: use another (nameOverride names the pods' app.kubernetes.io/name)" .) -}}
{{- end -}}
{{- end -}}
{{- include "logwindow.checkModeValues" . -}}
{{- include "logwindow.checkRulesContent" . -}}
{{- include "logwindow.checkWeb" . -}}
{{- include "logwindow.checkNetworkPolicy" . -}}
{{- $psc := .Values.podSecurityContext | default dict -}}
{{- $sc := .Values.securityContext | default dict -}}
{{- $nonRoot := ternary $sc.runAsNonRoot $psc.runAsNonRoot (hasKey $sc "runAsNonRoot") -}}
{{- if and (ne .Values.mode "sidecar") $nonRoot (hasPrefix "0:" (include "logwindow.runAs" .)) -}}
{{- fail "podSecurityContext (or securityContext) runAsUser: 0 with runAsNonRoot: true, a container the kubelet refuses to start: to run the exporter as root (a runtime that writes the logs 0600), set runAsNonRoot: false too" -}}
{{- end -}}
{{- end -}}

{{/*
The inputs of rules.content that can read nothing in the pod the chart runs fail the
install, naming what they read. In syslog mode the Service sends nginx's datagrams to
syslog.port of a pod's address: a rule file none of whose inputs receives there (on the
loopback of the sidecar examples, on another port, a file, no input at all) would count
nothing, with no error and no alert on either side. In daemonset mode the node's
daemonset.podLogs is all the pod mounts, and no Service sends it datagrams: a file
elsewhere (nginx's own path, the kubelet's /var/log/containers) is never there, and a rule
file with no file there reads nothing. A file that is not YAML, or whose inputs are not a
list, is left to the exporter, which refuses it loudly.
*/}}
{{- define "logwindow.checkRulesContent" -}}
{{- $file := .Values.rules.content | default "" | fromYaml -}}
{{- $inputs := $file.inputs | default list -}}
{{- if and .Values.rules.content (not (hasKey $file "Error")) (kindIs "slice" $inputs) -}}
{{- if eq .Values.mode "daemonset" -}}
{{- $podLogs := include "logwindow.podLogs" . -}}
{{- $reads := false -}}
{{- range $i, $in := $inputs -}}
{{- if and (kindIs "map" $in) (kindIs "string" $in.path) -}}
{{- if not (hasPrefix (printf "%s/" (trimSuffix "/" $podLogs)) (clean $in.path)) -}}
{{- fail (printf "rules.content: input %s reads %s, outside daemonset.podLogs %s, the only logs the DaemonSet's pods mount (read-only, from the node): it would never have a file; read the pods' logs there (%s/<namespace>_<pod>_<uid>/<container>/*.log, wrapper: cri), or set daemonset.podLogs" (ternary (printf "#%d" (add1 $i)) (toString $in.name) (empty $in.name)) $in.path $podLogs $podLogs) -}}
{{- end -}}
{{- $reads = true -}}
{{- end -}}
{{- end -}}
{{- if not $reads -}}
{{- fail (printf "rules.content has no input reading a file under daemonset.podLogs %s, the only logs the DaemonSet's pods mount (no Service sends them datagrams): it would count nothing; read the pods' logs there (%s/<namespace>_<pod>_<uid>/<container>/*.log, wrapper: cri), or set mode: syslog to receive nginx's datagrams" $podLogs $podLogs) -}}
{{- end -}}
{{- else if eq .Values.mode "syslog" -}}
{{- $port := int .Values.syslog.port -}}
{{- $found := list -}}
{{- $receives := false -}}
{{- range $inputs -}}
{{- if and (kindIs "map" .) (kindIs "string" .syslog) -}}
{{- $found = append $found .syslog -}}
{{- /* The port as written may have leading zeros, which int would read as octal. */ -}}
{{- if and (regexMatch "^udp://(|0\\.0\\.0\\.0|\\[[0:]*\\]):[0-9]+$" .syslog) (eq (regexReplaceAll "^.*:0*" .syslog "") (toString $port)) }}{{ $receives = true }}{{ end -}}
{{- end -}}
{{- end -}}
{{- if not $receives -}}
{{- fail (printf "rules.content receives on %s, not on every address at syslog.port %d, where the Service sends nginx's datagrams (udp://0.0.0.0:%d): every line would be lost without a word; give an input syslog: udp://0.0.0.0:%d, or set syslog.port to the port it receives on" (ternary "no syslog address" (join ", " $found) (empty $found)) $port $port $port) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The values that only some modes read, with values.yaml's defaults: daemonset.*, syslog.* and
sidecar.* their own mode's, the rest the pods the chart runs (daemonset and syslog mode;
sidecar mode runs none). One of them set in a mode that does not read it would be ignored
without a word. Helm shows a template the merged values only, not which the user set: this
copy of the defaults (kept equal to values.yaml's by the chart tests' install of each mode
with the defaults) tells.
*/}}
{{- define "logwindow.modeDefaults" -}}
imagePullSecrets: []
configWatch: true
extraArgs: []
storage:
  enabled: true
  hostPath: /var/lib/logwindow-exporter
  snapshotInterval: 10s
  initImage: busybox:1.37
daemonset:
  shards: 1
  podLogs: /var/log/pods
  containers: [nginx, controller]
  streams: [stdout]
  tolerations:
    - operator: Exists
  supplementalGroups: [0]
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 1
syslog:
  replicas: 2
  port: 5140
  service:
    type: ClusterIP
    externalTrafficPolicy: ""
    annotations: {}
  podDisruptionBudget:
    maxUnavailable: 1
sidecar:
  port: 5140
  portName: logwindow
  podSelector: {}
  telemetryPath: /metrics
resources:
  requests:
    cpu: 50m
    memory: 64Mi
  limits:
    cpu: 500m
    memory: 256Mi
podSecurityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  seccompProfile:
    type: RuntimeDefault
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: ["ALL"]
podAnnotations: {}
podLabels: {}
nodeSelector:
  kubernetes.io/os: linux
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions:
            - key: kubernetes.io/arch
              operator: In
              values: [amd64, arm64]
tolerations: []
priorityClassName: ""
web:
  tls:
    secretName: ""
    clientAuthType: ""
    clientCASecretName: ""
  basicAuth:
    users: {}
networkPolicy:
  enabled: false
  metricsFrom: []
  syslogFrom: []
{{- end -}}

{{/*
A value the mode does not read, set (not the default), fails the install naming each, rather
than being ignored: another mode's by its key under daemonset, syslog or sidecar, with the
mode it belongs to; in sidecar mode the workload's too, whose sidecar counterparts go on the
container added to the other chart's pods.
*/}}
{{- define "logwindow.checkModeValues" -}}
{{- $mode := .Values.mode -}}
{{- $defaults := include "logwindow.modeDefaults" . | fromYaml -}}
{{- $set := list -}}
{{- range $key := keys $defaults | sortAlpha -}}
{{- $owner := ternary $key "" (has $key (list "daemonset" "syslog" "sidecar")) -}}
{{- if or (and $owner (ne $owner $mode)) (and (not $owner) (eq $mode "sidecar")) -}}
{{- $d := index $defaults $key -}}
{{- $v := index $.Values $key -}}
{{- $named := ternary (printf " (mode: %s's)" $owner) "" (and (ne $owner "") (ne $mode "sidecar")) -}}
{{- if and $owner (kindIs "map" $d) (kindIs "map" $v) -}}
{{- range $sub := keys (merge (deepCopy $v) $d) | sortAlpha -}}
{{- if ne (toYaml (index $v $sub)) (toYaml (index $d $sub)) -}}
{{- $set = append $set (printf "%s.%s%s" $key $sub $named) -}}
{{- end -}}
{{- end -}}
{{- else if ne (toYaml $v) (toYaml $d) -}}
{{- $set = append $set (printf "%s%s" $key $named) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* storage is read by both workload modes, but only daemonset mode keeps it on the node. */ -}}
{{- if eq $mode "syslog" -}}
{{- range $sub := list "hostPath" "initImage" -}}
{{- if ne (toYaml (index $.Values.storage $sub)) (toYaml (index $defaults.storage $sub)) -}}
{{- $set = append $set (printf "storage.%s (mode: daemonset's)" $sub) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- with $set -}}
{{- if eq $mode "sidecar" -}}
{{- fail (printf "mode: sidecar runs no pod of the chart, so %s (which shape only the chart's DaemonSet or Deployment) would be ignored: drop them here and set the sidecar's resources, args, securityContext and the like on the container you add to the other chart's pods (ingress-nginx's controller.extraContainers: the chart's README, sidecar)" (join ", " .)) -}}
{{- else -}}
{{- fail (printf "mode: %s does not read %s, which would be ignored: drop them, or install in the mode they belong to" $mode (join ", " .)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
A surge pod starts on the node while the old one still runs and holds the storage
directory, and the old one is stopped only once the new one is ready: the new one cannot
restore the old one's snapshot, starts empty, and writes over that snapshot once the old one
is gone. Every rollout would lose the windows and counters storage keeps.
*/}}
{{- define "logwindow.checkSurge" -}}
{{- $strategy := .Values.daemonset.updateStrategy | default dict -}}
{{- $surge := toString ((get ($strategy.rollingUpdate | default dict) "maxSurge") | default 0) -}}
{{- if and .Values.storage.enabled (ne (toString $strategy.type) "OnDelete") (not (has $surge (list "0" "0%"))) -}}
{{- fail (printf "daemonset.updateStrategy.rollingUpdate.maxSurge: %s with storage.enabled: a node's new pod would start while its old one holds the storage directory, start empty and write over the old one's snapshot, losing the windows and counters at every rollout; keep maxSurge at 0 (maxUnavailable: 1, the default), or set storage.enabled: false" $surge) -}}
{{- end -}}
{{- end -}}

{{/*
The timing variables the log format gives, among request_time and upstream_response_time,
each followed by a space: the chart adds the rules reading each (files/rules/<variable>.yaml, files/rules-pods/ in daemonset mode)
only then, as a rule naming a capture its input's format lacks does not load. auto gives
both: its candidates with them time the files written in them, and the rules do not apply
to the others.
*/}}
{{- define "logwindow.formatTimings" -}}
{{- $f := .Values.logFormat | trim -}}
{{- $both := "request_time upstream_response_time " -}}
{{- $presets := dict "auto" $both "upstreaminfo" $both "combined_upstream_time" $both "main_upstream_time" $both "combined_request_time" "request_time " "main_request_time" "request_time " "combined" "" "main" "" -}}
{{- if hasKey $presets $f -}}
{{- get $presets $f -}}
{{- else -}}
{{- range list "request_time" "upstream_response_time" -}}
{{- if regexMatch (printf "\\$%s\\b" .) $f }}{{ . }} {{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The variables of a format string or directive as nginx reads them: a directive's whole-line
# comments are not its format.
*/}}
{{- define "logwindow.formatRead" -}}
{{- $f := .Values.logFormat | trim -}}
{{- if regexMatch "^(\\s*#[^\\n]*\\n)*\\s*log_format\\s" $f }}{{ regexReplaceAll "(?m)^[ \\t]*#.*$" $f "" }}{{ else }}{{ $f }}{{ end -}}
{{- end -}}

{{/*
The time the chart's rules place a line by (their timestamp: capture): $time_local, else
the other times whose layout the exporter knows, $time_iso8601 or $msec, the first the
format has (nginx, and the exporter, read a variable whatever its case); nothing when it has
none. Presets and auto have $time_local.
*/}}
{{- define "logwindow.formatTime" -}}
{{- $f := .Values.logFormat | trim -}}
{{- if not (contains "$" $f) -}}
time_local
{{- else -}}
{{- $read := include "logwindow.formatRead" . -}}
{{- $found := "" -}}
{{- range list "time_local" "time_iso8601" "msec" -}}
{{- if and (not $found) (regexMatch (printf "(?i)\\$\\{?%s\\b" .) $read) }}{{ $found = . }}{{ end -}}
{{- end -}}
{{- $found -}}
{{- end -}}
{{- end -}}

{{/*
The input's log_format (and log_format_escape) lines: a directive pasted over several lines
as a | block, so that it reads as in nginx.conf; else a JSON string, which is also a YAML
one and needs no escaping of its quotes.
*/}}
{{- define "logwindow.logFormat" -}}
{{- $f := .Values.logFormat | trim -}}
{{- if contains "\n" $f }}
log_format: |
  {{- $f | nindent 2 }}
{{- else }}
log_format: {{ $f | toJson }}
{{- end }}
{{- with .Values.logFormatEscape }}
log_format_escape: {{ . }}
{{- end }}
{{- end -}}

{{/*
The node's pod log directory (daemonset.podLogs) as one path: cleaned, since the exporter
reads files under the cleaned path, which path_captures must match as the glob gives it
(/var/log//pods would leave every series without namespace, pod and container).
*/}}
{{- define "logwindow.podLogs" -}}
{{- .Values.daemonset.podLogs | clean -}}
{{- end }}

{{/*
The rule file of the mode: the mode's inputs, then the chart's nginx rules (files/), or the
user's whole file (rules.content).
*/}}
{{- define "logwindow.rules" -}}
{{- if .Values.rules.content -}}
{{- .Values.rules.content -}}
{{- else -}}
# The chart's nginx rules (deploy/example-rules.yaml) with the mode's inputs. Every
# $variable of the log format is a capture of that name; $request also gives
# request_method, request_uri, uri and server_protocol, $status gives status_class.
inputs:
{{- if eq .Values.mode "daemonset" }}
{{- $logs := include "logwindow.podLogs" . | trimSuffix "/" }}
{{- range .Values.daemonset.containers }}
  # The logs of every pod's {{ . }} container on the node, labelled by the pod from the path.
  - name: {{ . | quote }}
    path: {{ printf "%s/*_*_*/%s/*.log" $logs . | quote }}
    wrapper: cri
{{- with $.Values.daemonset.streams }}
    streams: {{ toJson . }}
{{- end }}
    path_captures: {{ printf "^%s/(?P<namespace>[^_/]+)_(?P<pod>[^_/]+)_[^/]+/(?P<container>[^/]+)/" (regexQuoteMeta $logs) | quote }}
    {{- include "logwindow.logFormat" $ | trim | nindent 4 }}
{{- if gt (int $.Values.daemonset.shards) 1 }}
    shards: {{ $.Values.daemonset.shards }}
{{- end }}
{{- end }}
{{- else if eq .Values.mode "syslog" }}
  # nginx anywhere in the cluster: access_log syslog:server=<the Service>:{{ .Values.syslog.port }}
  - name: nginx
    syslog: {{ printf "udp://0.0.0.0:%d" (int .Values.syslog.port) | quote }}
    {{- include "logwindow.logFormat" . | trim | nindent 4 }}
{{- else }}
  # nginx in the same pod: access_log syslog:server=127.0.0.1:{{ .Values.sidecar.port }}
  - name: nginx
    syslog: {{ printf "udp://127.0.0.1:%d" (int .Values.sidecar.port) | quote }}
    {{- include "logwindow.logFormat" . | trim | nindent 4 }}
{{- end }}

{{ $dir := ternary "files/rules-pods" "files/rules" (eq .Values.mode "daemonset") -}}
{{- /* Each file without its first line, which says it is generated; its rules placed by the
  format's time (its anchor's capture, which the rules after it alias). */ -}}
{{- $time := printf "capture: %s\n" (include "logwindow.formatTime" . | default "time_local") }}
{{ .Files.Get (printf "%s/base.yaml" $dir) | splitList "\n" | rest | join "\n" | replace "capture: time_local\n" $time }}
{{- range splitList " " (include "logwindow.formatTimings" . | trim) }}
{{- if . }}
{{- $.Files.Get (printf "%s/%s.yaml" $dir .) | splitList "\n" | rest | join "\n" }}
{{- end }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* The exporter's container, as the DaemonSet, the Deployment and a sidecar run it. */}}
{{- define "logwindow.container" -}}
name: logwindow-exporter
image: {{ include "logwindow.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
args:
  - --config.file=/etc/logwindow_exporter/{{ .Values.rules.key }}
  - --web.listen-address=:{{ .Values.metricsPort }}
{{- if .Values.configWatch }}
  - --config.watch
{{- end }}
{{- if .Values.storage.enabled }}
  - --storage.path=/var/lib/logwindow-exporter
  - --storage.snapshot-interval={{ .Values.storage.snapshotInterval }}
{{- end }}
{{- if include "logwindow.web" . }}
  - --web.config.file={{ include "logwindow.webDir" . }}/web.yml
{{- end }}
{{- range .Values.extraArgs }}
  - {{ . | quote }}
{{- end }}
ports:
  - name: metrics
    containerPort: {{ .Values.metricsPort }}
    protocol: TCP
{{- if eq .Values.mode "syslog" }}
  - name: syslog
    containerPort: {{ .Values.syslog.port }}
    protocol: UDP
{{- end }}
# /-/ready: the inputs are open (files positioned, socket bound). A sidecar's readiness
# is its pod's: only a startupProbe holds the pod out of its Service while it starts.
startupProbe:
  {{- include "logwindow.probe" (list . "/-/ready") | nindent 2 }}
  periodSeconds: 1
  failureThreshold: 60
{{- if ne .Values.mode "sidecar" }}
readinessProbe:
  {{- include "logwindow.probe" (list . "/-/ready") | nindent 2 }}
  periodSeconds: 10
{{- end }}
livenessProbe:
  {{- include "logwindow.probe" (list . "/-/healthy") | nindent 2 }}
  periodSeconds: 20
  failureThreshold: 3
resources:
  {{- toYaml .Values.resources | nindent 2 }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
volumeMounts:
  - name: rules
    mountPath: /etc/logwindow_exporter
    readOnly: true
{{- if eq .Values.mode "daemonset" }}
  - name: pod-logs
    mountPath: {{ include "logwindow.podLogs" . | quote }}
    readOnly: true
{{- end }}
{{- if .Values.storage.enabled }}
  - name: storage
    mountPath: /var/lib/logwindow-exporter
{{- end }}
{{- if include "logwindow.web" . }}
  - name: web-config
    mountPath: {{ include "logwindow.webDir" . }}
    readOnly: true
{{- end }}
{{- end -}}

{{/* The pod spec of the DaemonSet and the Deployment. */}}
{{- define "logwindow.podSpec" -}}
# The exporter does not talk to the Kubernetes API: no token in the pod.
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
securityContext:
  {{- $psc := deepCopy (.Values.podSecurityContext | default dict) }}
  {{- if and (eq .Values.mode "daemonset") .Values.daemonset.supplementalGroups }}
  {{- $_ := set $psc "supplementalGroups" .Values.daemonset.supplementalGroups }}
  {{- end }}
  {{- /* A port below 1024: the pod's network namespace lets the exporter's user bind it
    (a safe sysctl, which every Pod Security Standard allows); without, containerd 1.x
    runtimes refuse the bind. */}}
  {{- $low := int .Values.metricsPort }}
  {{- if eq .Values.mode "syslog" }}{{ $low = min $low (int .Values.syslog.port) }}{{ end }}
  {{- if lt $low 1024 }}
  {{- $sysctls := $psc.sysctls | default list }}
  {{- $given := false }}
  {{- range $sysctls }}{{ if eq .name "net.ipv4.ip_unprivileged_port_start" }}{{ $given = true }}{{ end }}{{ end }}
  {{- if not $given }}
  {{- $_ := set $psc "sysctls" (append $sysctls (dict "name" "net.ipv4.ip_unprivileged_port_start" "value" (toString $low))) }}
  {{- end }}
  {{- end }}
  {{- toYaml $psc | nindent 2 }}
{{- if and .Values.storage.enabled (eq .Values.mode "daemonset") }}
initContainers:
  - name: storage-owner
    image: {{ .Values.storage.initImage }}
    imagePullPolicy: {{ .Values.image.pullPolicy }}
    command: [chown, -R, {{ include "logwindow.runAs" . | quote }}, /var/lib/logwindow-exporter]
    {{- /* The exporter's: a namespace's ResourceQuota refuses a pod any container of which
      lacks what it counts, and the pod's own resources (the larger of an init container's
      and its containers' sum) stay the same. */}}
    {{- with .Values.resources }}
    resources:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    securityContext:
      runAsUser: 0
      runAsNonRoot: false
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities:
        drop: ["ALL"]
        add: ["CHOWN"]
    volumeMounts:
      - name: storage
        mountPath: /var/lib/logwindow-exporter
{{- end }}
containers:
  - {{- include "logwindow.container" . | nindent 4 }}
volumes:
  - name: rules
    configMap:
      name: {{ include "logwindow.rulesConfigMap" . }}
{{- if eq .Values.mode "daemonset" }}
  - name: pod-logs
    hostPath:
      path: {{ include "logwindow.podLogs" . | quote }}
      type: Directory
{{- end }}
{{- if include "logwindow.web" . }}
  {{- /* One directory: web.yml names the files beside it. A projected volume, not
    subPath mounts, so that a renewed certificate (cert-manager's) reaches the exporter,
    which reads it again at the next handshake. */}}
  - name: web-config
    projected:
      sources:
        - secret:
            name: {{ include "logwindow.fullname" . }}-web-config
            items: [{key: web.yml, path: web.yml}]
{{- with .Values.web.tls.secretName }}
        - secret:
            name: {{ . }}
            items: [{key: tls.crt, path: tls.crt}, {key: tls.key, path: tls.key}]
{{- end }}
{{- with .Values.web.tls.clientCASecretName }}
        - secret:
            name: {{ . }}
            items: [{key: ca.crt, path: client-ca.crt}]
{{- end }}
{{- end }}
{{- if .Values.storage.enabled }}
  - name: storage
{{- if eq .Values.mode "daemonset" }}
    hostPath:
      path: {{ trimSuffix "/" .Values.storage.hostPath }}/{{ .Release.Namespace }}/{{ .Release.Name }}
      type: DirectoryOrCreate
{{- else }}
    emptyDir:
      sizeLimit: 256Mi
{{- end }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $tolerations := .Values.tolerations }}
{{- if eq .Values.mode "daemonset" }}
{{- $tolerations = concat (.Values.daemonset.tolerations | default list) (.Values.tolerations | default list) }}
{{- end }}
{{- with $tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
The pod template's metadata. With configWatch the exporter reloads the rule file the
kubelet updates, keeping the windows of the rules that did not change: the rules' checksum
is not in it, or every change of rules would replace the pods and empty their windows.
Without, nothing rereads the file: the checksum of the chart's rules rolls the pods when
they change, so that each starts on the new ones.
*/}}
{{- define "logwindow.podMetadata" -}}
labels:
  {{- include "logwindow.selectorLabels" . | nindent 2 }}
  {{- with .Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- $annotations := deepCopy (.Values.podAnnotations | default dict) }}
{{- if and (not .Values.configWatch) (not .Values.rules.existingConfigMap) }}
{{- $_ := set $annotations "checksum/rules" (include "logwindow.rules" . | sha256sum) }}
{{- end }}
{{- with $annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}


{{/*
The web config (exporter-toolkit's --web.config.file): "true" when web.tls or
web.basicAuth asks for one, else empty.
*/}}
{{- define "logwindow.web" -}}
{{- if or .Values.web.tls.secretName .Values.web.basicAuth.users }}true{{ end -}}
{{- end -}}

{{/*
"true" when the PodMonitor scrapes over HTTPS: the chart's exporter serves web.tls, or, in
sidecar mode, the PodMonitor is given a tlsConfig for the sidecar's own web config.
*/}}
{{- define "logwindow.scrapesTLS" -}}
{{- if or .Values.web.tls.secretName (and (eq .Values.mode "sidecar") .Values.podMonitor.tlsConfig) }}true{{ end -}}
{{- end -}}

{{/* Where the web config and the files it names are mounted. */}}
{{- define "logwindow.webDir" -}}
/etc/logwindow_exporter_web
{{- end -}}

{{/* The web config, the chart's Secret's web.yml: the files it names are beside it. */}}
{{- define "logwindow.webConfig" -}}
{{- with .Values.web.tls }}
{{- if .secretName }}
tls_server_config:
  cert_file: tls.crt
  key_file: tls.key
{{- with .clientAuthType }}
  client_auth_type: {{ . }}
{{- end }}
{{- if .clientCASecretName }}
  client_ca_file: client-ca.crt
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.web.basicAuth.users }}
basic_auth_users:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
"true" when the kubelet's probes cannot be HTTP requests: it sends no password and no
client certificate, so under basic auth or a required client certificate /-/ready and
/-/healthy, which the web config covers as every endpoint, would answer 401 or refuse the
handshake, and the pod would be restarted over and over.
*/}}
{{- define "logwindow.tcpProbes" -}}
{{- if or .Values.web.basicAuth.users (and .Values.web.tls.secretName (has .Values.web.tls.clientAuthType (list "RequireAnyClientCert" "RequireAndVerifyClientCert"))) }}true{{ end -}}
{{- end -}}

{{/*
A probe's handler, of (list <root> <path>): a GET of the path, over HTTPS with web.tls (the
kubelet does not verify the certificate), or, where a GET cannot pass (see
logwindow.tcpProbes), a connection to the port: the exporter listens once its inputs have
started.
*/}}
{{- define "logwindow.probe" -}}
{{- $root := index . 0 -}}
{{- if include "logwindow.tcpProbes" $root -}}
tcpSocket:
  port: metrics
{{- else -}}
httpGet:
  path: {{ index . 1 }}
  port: metrics
{{- if $root.Values.web.tls.secretName }}
  scheme: HTTPS
{{- end }}
{{- end -}}
{{- end -}}

{{/*
web.* and the PodMonitor's credentials, which the schema cannot judge alone: what the
exporter or Prometheus would refuse, or a scrape that would fail on every target, fails
the install naming the value.
*/}}
{{- define "logwindow.checkWeb" -}}
{{- $tls := .Values.web.tls -}}
{{- $verifies := list "VerifyClientCertIfGiven" "RequireAndVerifyClientCert" -}}
{{- if and (not $tls.secretName) (or $tls.clientAuthType $tls.clientCASecretName) -}}
{{- fail "web.tls.clientAuthType and web.tls.clientCASecretName need web.tls.secretName: client certificates are asked for in a TLS handshake, which the exporter serves only with its own certificate and key" -}}
{{- end -}}
{{- if and $tls.clientCASecretName (not (has $tls.clientAuthType $verifies)) -}}
{{- fail (printf "web.tls.clientCASecretName with web.tls.clientAuthType %q, which verifies no client certificate: the CA would be ignored (exporter-toolkit refuses it without a clientAuthType), letting in any certificate; set clientAuthType to RequireAndVerifyClientCert (or VerifyClientCertIfGiven)" $tls.clientAuthType) -}}
{{- end -}}
{{- if and (has $tls.clientAuthType $verifies) (not $tls.clientCASecretName) -}}
{{- fail (printf "web.tls.clientAuthType: %s without web.tls.clientCASecretName: give the Secret whose ca.crt is the CA of the client certificates" $tls.clientAuthType) -}}
{{- end -}}
{{- $pm := .Values.podMonitor -}}
{{- /* In sidecar mode the web config is the container's the user adds, which the chart
  does not see: the PodMonitor's credentials are the only word of it. */ -}}
{{- if ne .Values.mode "sidecar" -}}
{{- if and $pm.tlsConfig (not $tls.secretName) -}}
{{- fail "podMonitor.tlsConfig without web.tls.secretName: the exporter serves plain HTTP, which the PodMonitor scrapes without TLS; drop it, or give web.tls" -}}
{{- end -}}
{{- if and $pm.basicAuth (not .Values.web.basicAuth.users) -}}
{{- fail "podMonitor.basicAuth without web.basicAuth.users: the exporter asks for no password; drop it, or give web.basicAuth.users" -}}
{{- end -}}
{{- end -}}
{{- if and $pm.enabled (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") -}}
{{- if and $tls.secretName (not $pm.tlsConfig) -}}
{{- fail "web.tls.secretName without podMonitor.tlsConfig: Prometheus would verify the exporter's certificate against its system CAs and for the pod's IP, and every scrape would fail; give podMonitor.tlsConfig: the CA (ca: {secret: {name: <Secret>, key: ca.crt}}) and serverName, a name of the certificate (and cert and keySecret, Prometheus' client certificate, with a web.tls.clientAuthType that asks for one)" -}}
{{- end -}}
{{- if and .Values.web.basicAuth.users (not $pm.basicAuth) -}}
{{- fail "web.basicAuth.users without podMonitor.basicAuth: every scrape would be answered 401; give podMonitor.basicAuth: {username: {name: <Secret>, key: username}, password: {name: <Secret>, key: password}}, a Secret of the release's namespace holding the password of one of the users" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The NetworkPolicy lets in only the peers given: a port of none would take nothing (an
empty from would take anything), syslogFrom in daemonset mode, which has no syslog
port, would be ignored, and a peer of an ipBlock and a selector the API server refuses.
Peers without networkPolicy.enabled make no policy, as a value switched off does in any
chart (a values file shared by environments keeps its peers and switches enabled per
environment); the notes warn of it.
*/}}
{{- define "logwindow.checkNetworkPolicy" -}}
{{- $np := .Values.networkPolicy -}}
{{- $svc := .Values.syslog.service -}}
{{- if and $svc.externalTrafficPolicy (eq $svc.type "ClusterIP") -}}
{{- fail (printf "syslog.service.externalTrafficPolicy: %s with syslog.service.type: ClusterIP, which has no external traffic: the API server refuses it; set type NodePort or LoadBalancer, or drop it" $svc.externalTrafficPolicy) -}}
{{- end -}}
{{- if and (eq .Values.mode "daemonset") $np.syslogFrom -}}
{{- fail "networkPolicy.syslogFrom (mode: syslog's): the DaemonSet receives no syslog, so it would be ignored: drop it, or install in syslog mode" -}}
{{- end -}}
{{- range $key := list "metricsFrom" "syslogFrom" -}}
{{- range (index $np $key) -}}
{{- if and .ipBlock (or .podSelector .namespaceSelector (hasKey . "podSelector") (hasKey . "namespaceSelector")) -}}
{{- fail (printf "networkPolicy.%s: a peer with ipBlock and a selector, which the API server refuses: give the ipBlock as a peer of its own" $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and $np.enabled (ne .Values.mode "sidecar") -}}
{{- if not $np.metricsFrom -}}
{{- fail "networkPolicy.metricsFrom is empty: with networkPolicy.enabled nothing could scrape the exporters; give the peers of your Prometheus (e.g. [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}, podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}}])" -}}
{{- end -}}
{{- if and (eq .Values.mode "syslog") (not $np.syslogFrom) -}}
{{- fail "networkPolicy.syslogFrom is empty: with networkPolicy.enabled no nginx could send its log, and the datagrams would be dropped without a word on either side; give the peers of your nginx pods (podSelector, namespaceSelector) or address blocks (ipBlock)" -}}
{{- end -}}
{{- end -}}
{{- end -}}
