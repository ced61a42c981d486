package pipeline

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
	"github.com/logwindow/logwindow_exporter/parser"
)

// kubeletTree is a node's /var/log/pods under a test's directory: a pod's container logs
// at <root>/<namespace>_<pod>_<uid>/<container>/<restart>.log, as the kubelet lays them.
type kubeletTree struct {
	t    *testing.T
	root string
}

func (k kubeletTree) dir(namespace, pod, container string) string {
	return filepath.Join(k.root, fmt.Sprintf("%s_%s_%x", namespace, pod, len(namespace+pod)*0x1f3d5b79), container)
}

// write appends requests to the container's current log as the runtime writes them: CRI
// lines, each message in one F line, or split into P parts and an F when split is set.
func (k kubeletTree) write(namespace, pod, container string, statuses []string, split bool) {
	k.t.Helper()
	dir := k.dir(namespace, pod, container)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		k.t.Fatal(err)
	}
	appendCRI(k.t, filepath.Join(dir, "0.log"), statuses, split)
}

func appendCRI(t *testing.T, path string, statuses []string, split bool) {
	t.Helper()
	var b strings.Builder
	for _, s := range statuses {
		const at = "2024-03-01T12:00:00.000000000Z stdout "
		msg := "GET /index.html " + s
		if split {
			fmt.Fprintf(&b, "%sP %s\n%sF %s\n", at, msg[:7], at, msg[7:])
		} else {
			fmt.Fprintf(&b, "%sF %s\n", at, msg)
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
}

func repeat(s string, n int) []string { return slices.Repeat([]string{s}, n) }

// One exporter on a node counts every pod's nginx from the kubelet's tree by namespace,
// pod and container, read from each file's path: exactly, the sidecar container beside
// nginx not read, a pod started later picked up, the kubelet's rotation of a log (0.log
// renamed to 0.log.<timestamp> while the runtime still writes to it, a new 0.log, the
// renamed one compressed and removed later) losing and doubling nothing, and the series
// of a pod deleted from the node expiring as idle series do, on the injected clock: its
// windows once idle past the longest, its counter once past counter_ttl.
// With shards, several followers share the glob's files, dealt by directory: the same
// counts, each file read by one of them.
func TestNodePodLogs(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) { nodePodLogs(t, shards) })
	}
}

func nodePodLogs(t *testing.T, shards int) {
	k := kubeletTree{t: t, root: t.TempDir()}
	clock := testclock.New(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC))
	// Written before the exporter starts: read from their first line (start_at: beginning).
	k.write("web", "front-1", "nginx", repeat("200", 30), false)
	k.write("web", "front-1", "istio-proxy", repeat("200", 50), false) // looks like nginx: must not be read
	k.write("web", "front-2", "nginx", append(repeat("200", 7), repeat("503", 2)...), true)
	k.write("shop", "cart-1", "nginx", repeat("404", 11), false)

	text := fmt.Sprintf(`
global: {windows: [1m, 5m], counter_ttl: 10m}
inputs:
  - name: pods
    path: '%s/*_*_*/nginx/*.log'
    wrapper: cri
    start_at: beginning
    path_captures: '^%s/(?P<namespace>[^_/]+)_(?P<pod>[^_/]+)_[^/]+/(?P<container>[^/]+)/'
    shards: %d
rules:
  - name: nginx_http_requests
    match: '^(?P<method>[A-Z]+) \S+ (?P<status>\d{3})$'
    labels: {namespace: '${namespace}', pod: '${pod}', container: '${container}', status: '${status}'}
`, k.root, regexp.QuoteMeta(k.root), shards)
	cfg, err := config.Parse([]byte(text), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cfg, Options{Now: clock.Now, PollInterval: 10 * time.Millisecond, RotationGrace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)

	series := func(ns, pod, status string) string {
		return fmt.Sprintf(`nginx_http_requests_total{container="nginx",namespace=%q,pod=%q,status=%q}`, ns, pod, status)
	}
	window := func(ns, pod, status, w string) string {
		return fmt.Sprintf(`nginx_http_requests_window{container="nginx",namespace=%q,pod=%q,status=%q,window=%q}`, ns, pod, status, w)
	}
	want := map[string]float64{
		series("web", "front-1", "200"): 30,
		series("web", "front-2", "200"): 7,
		series("web", "front-2", "503"): 2,
		series("shop", "cart-1", "404"): 11,
	}
	// check waits until the pipeline's counters are want's and holds them for a few polls,
	// so that a line counted twice would show; the families of the rule hold nothing else.
	check := func(step string) map[string]float64 {
		t.Helper()
		var got map[string]float64
		if !await.Until(t, func() bool {
			if got = totals(gatherPipeline(t, p)); !maps.Equal(got, want) {
				return false
			}
			time.Sleep(100 * time.Millisecond) // ten polls
			got = totals(gatherPipeline(t, p))
			return maps.Equal(got, want)
		}) {
			t.Fatalf("%s: counters\n%s\nwant\n%s", step, showSamples(got), showSamples(want))
		}
		return gatherPipeline(t, p)
	}
	all := check("at start")
	if got := all[`logwindow_input_files{input="pods"}`]; got != 3 {
		t.Errorf("files followed: %v, want the three nginx logs (not the sidecar's)", got)
	}
	p.mu.Lock()
	followers, files := len(p.inputs), 0
	for _, in := range p.inputs {
		files += len(in.running.Stats().Files)
	}
	p.mu.Unlock()
	if followers != shards || files != 3 {
		t.Errorf("%d followers following %d files in all, want %d following each of the 3 once", followers, files, shards)
	}

	// A pod scheduled on the node after the exporter started.
	k.write("shop", "cart-2", "nginx", repeat("200", 5), false)
	want[series("shop", "cart-2", "200")] = 5
	check("a new pod")

	// The kubelet rotates front-1's log: rename, the runtime writes on to the renamed file
	// until it reopens, then to a new 0.log; later the renamed file is compressed.
	dir := k.dir("web", "front-1", "nginx")
	rotated := filepath.Join(dir, "0.log.20240301-120500")
	if err := os.Rename(filepath.Join(dir, "0.log"), rotated); err != nil {
		t.Fatal(err)
	}
	appendCRI(t, rotated, repeat("200", 4), false)
	k.write("web", "front-1", "nginx", append(repeat("200", 6), "500"), false)
	want[series("web", "front-1", "200")] += 10
	want[series("web", "front-1", "500")] = 1
	check("the kubelet's rotation")
	// Once the runtime has reopened, the kubelet compresses the renamed file, at its next
	// rotation: neither the .gz nor the file it replaces is read again.
	time.Sleep(200 * time.Millisecond) // past the rotation grace: the renamed file is closed
	if err := os.WriteFile(rotated+".gz", []byte("\x1f\x8b not read"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(rotated); err != nil {
		t.Fatal(err)
	}
	k.write("web", "front-1", "nginx", repeat("200", 3), true)
	want[series("web", "front-1", "200")] += 3
	all = check("after compression")
	if got := all[`logwindow_input_rotations_total{input="pods"}`]; got != 1 {
		t.Errorf("rotations %v, want 1", got)
	}

	// front-2 is deleted: the kubelet removes its directory. Its series go as any idle
	// series: past the longest window (5m) its windows, past counter_ttl (10m) its counter.
	if err := os.RemoveAll(filepath.Dir(k.dir("web", "front-2", "nginx"))); err != nil {
		t.Fatal(err)
	}
	live := func(step string) map[string]float64 {
		t.Helper()
		for _, pod := range []struct{ ns, pod string }{{"web", "front-1"}, {"shop", "cart-1"}, {"shop", "cart-2"}} {
			k.write(pod.ns, pod.pod, "nginx", []string{"200"}, false)
			want[series(pod.ns, pod.pod, "200")]++
		}
		return check(step)
	}
	clock.Add(6 * time.Minute)
	all = live("past the longest window")
	if _, ok := all[window("web", "front-2", "200", "5m")]; ok {
		t.Errorf("the deleted pod's 5m window is still exposed 6m after its last line")
	}
	if got := all[window("web", "front-1", "200", "1m")]; got != 1 {
		t.Errorf("a live pod's 1m window: %v, want its one line since", got)
	}
	clock.Add(5 * time.Minute)
	// Gone with them: the label sets of live pods that had no line since the start.
	for _, s := range []string{series("web", "front-2", "200"), series("web", "front-2", "503"), series("shop", "cart-1", "404"), series("web", "front-1", "500")} {
		delete(want, s)
	}
	all = live("past counter_ttl")
	if got := all[`logwindow_input_files{input="pods"}`]; got != 3 {
		t.Errorf("files followed: %v, want the three live nginx logs", got)
	}
}

// totals keeps the samples of the rule's _total family.
func totals(all map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range all {
		if strings.HasPrefix(k, "nginx_http_requests_total{") {
			out[k] = v
		}
	}
	return out
}

func showSamples(m map[string]float64) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		lines = append(lines, fmt.Sprintf("  %s %v", k, m[k]))
	}
	return strings.Join(lines, "\n")
}

// A replay of a pod's log file gives its lines the captures of its path, as following it
// does; the file after it, of an input without path captures, none of them.
func TestReplayPathCaptures(t *testing.T) {
	k := kubeletTree{t: t, root: t.TempDir()}
	k.write("shop", "cart-1", "nginx", repeat("404", 3), true)
	other := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(other, []byte("GET / 200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
inputs:
  - {name: pods, path: '%s/*/nginx/*.log', wrapper: cri, path_captures: '/(?P<namespace>[^_/]+)_(?P<pod>[^_/]+)_[^/]+/nginx/'}
  - {name: local, path: '%s'}
rules:
  - {name: by_pod, match: ' (?P<status>\d{3})$', labels: {pod: '${namespace}/${pod}', status: '${status}'}, inputs: [pods]}
  - {name: all, match: ' (?P<status>\d{3})$', labels: {status: '${status}'}}
`, k.root, other)), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	files := []string{filepath.Join(k.dir("shop", "cart-1", "nginx"), "0.log"), other}
	if err := Replay(cfg, files, Options{Now: time.Now}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`by_pod_total{pod="shop/cart-1",status="404"} 3`, `all_total{status="404"} 3`, `all_total{status="200"} 1`} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("replay lacks %s:\n%s", want, out.String())
		}
	}
}

// An input works a path's captures out once and keeps them; a path the regex does not
// match has none; past maxKnownPaths the paths kept are forgotten, not the values given.
func TestPathValues(t *testing.T) {
	cfg, err := config.Parse([]byte(`
inputs: [{path: /p/*/*.log, path_captures: '^/p/(?P<pod>[a-z0-9-]+)/(?:(?P<restart>[0-9]+)\.log)?'}]
rules: [{name: r, match: '(?P<s>x)', labels: {pod: '${pod}', restart: 'r${restart}'}}]
`), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gen, err := newGeneration(cfg, nil, Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	pv := newPathValues(cfg.Inputs[0], gen.parser, time.Now)
	s := gen.parser.NewSession()
	sink := &keySink{}
	for i, tc := range []struct{ path, want string }{
		{"/p/web-1/0.log", "web-1\xffr0"},
		{"/p/web-1/0.log", "web-1\xffr0"},
		{"/p/web-2/x.log", "web-2\xffr"},
		{"/elsewhere/0.log", "\xffr"},
		{"/p/web-1/3.log", "web-1\xffr3"},
	} {
		pv.set(s, tc.path)
		s.ParseWrapped("", []byte("x"), nil, sink)
		if sink.key != tc.want {
			t.Errorf("line %d from %s: key %q, want %q", i, tc.path, sink.key, tc.want)
		}
	}
	for i := range maxKnownPaths + 1 {
		pv.set(s, fmt.Sprintf("/p/pod-%d/0.log", i))
	}
	if len(pv.known) > maxKnownPaths {
		t.Errorf("%d paths kept, more than %d", len(pv.known), maxKnownPaths)
	}
	s.ParseWrapped("", []byte("x"), nil, sink)
	if want := fmt.Sprintf("pod-%d\xffr0", maxKnownPaths); sink.key != want {
		t.Errorf("after the paths kept were forgotten: key %q, want %q", sink.key, want)
	}
}

// keySink keeps the key of the last event.
type keySink struct{ key string }

func (s *keySink) Event(e *parser.Event)       { s.key = string(e.Key) }
func (s *keySink) Drop(int, parser.DropReason) {}
