package deploy

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/logwindow/logwindow_exporter/internal/testutil/deploytest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// localPod is a rendered pod run as local processes: each emptyDir volume is a directory
// under dir, and each container sees its mounts of them rewritten to those directories.
// Nothing else of the manifests changes, so nginx, the exporter and the rotator run with
// the configuration the pod gives them.
type localPod struct {
	dir     string
	spec    *corev1.PodSpec
	volumes map[string]string // emptyDir volume name → local directory
	port    int               // nginx's loopback port, for the pod's 8080
}

func newLocalPod(t *testing.T, target string) (*localPod, *manifests) {
	t.Helper()
	m := render(t, target)
	d := m.deployments["nginx"]
	if d == nil {
		t.Fatal("no Deployment nginx")
	}
	p := &localPod{dir: t.TempDir(), spec: &d.Spec.Template.Spec, volumes: map[string]string{}, port: testexec.FreePort(t)}
	for _, v := range p.spec.Volumes {
		if v.EmptyDir != nil {
			p.volumes[v.Name] = filepath.Join(p.dir, v.Name)
			if err := os.Mkdir(p.volumes[v.Name], 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	return p, m
}

// local rewrites the paths of c's emptyDir mounts in text to the local directories.
func (p *localPod) local(c *corev1.Container, text string) string {
	var pairs []string
	for _, vm := range c.VolumeMounts {
		if dir, ok := p.volumes[vm.Name]; ok {
			pairs = append(pairs, strings.TrimSuffix(vm.MountPath, "/")+"/", dir+"/")
		}
	}
	// One pass, so that a local directory (itself under /tmp) is not rewritten again.
	return strings.NewReplacer(pairs...).Replace(text)
}

// startNginx runs nginx with the pod's nginx.conf, listening on the loopback port.
func (p *localPod) startNginx(t *testing.T, m *manifests) (*syncbuf.Buffer, string) {
	t.Helper()
	bin := testexec.LookTools(t, "Debian: apt-get install nginx", "nginx")["nginx"]
	ngx := nginxContainer(t, m.deployments["nginx"])
	confPath, _ := flagValue(ngx.Command, "-c")
	text, _ := m.configMapFile(t, p.spec, ngx, confPath)
	text = p.local(ngx, text)
	if n := strings.Count(text, "listen 8080;"); n != 1 {
		t.Fatalf("nginx.conf has %d \"listen 8080;\", want one", n)
	}
	text = strings.Replace(text, "listen 8080;", fmt.Sprintf("listen 127.0.0.1:%d;", p.port), 1)
	if os.Geteuid() == 0 {
		// Workers reopen the log after a rotation; as root's default "nobody" they could
		// not enter the test's private directory (the pod's nginx is one user throughout).
		text = "user root;\n" + text
	}
	conf := filepath.Join(p.dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// stdout is a pipe, as a container's is: nginx opens /dev/stdout, which for a file
	// would be a second description writing from offset 0 over the first.
	cmd := exec.Command(bin, "-e", "stderr", "-p", p.dir, "-c", conf, "-g", "daemon off;")
	stdout := &syncbuf.Buffer{}
	cmd.Stdout = stdout
	stderr, err := os.Create(filepath.Join(p.dir, "nginx.err"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	proc, err := testexec.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	proc.Output = stderr.Name()
	t.Cleanup(func() {
		if err := proc.Stop(testexec.StopTimeout); err != nil {
			t.Errorf("nginx: %v", err)
		}
		if t.Failed() {
			t.Logf("end of nginx's stderr:\n%s", testexec.Tail(stderr.Name(), 40))
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", p.port)
	testexec.WaitHTTP(t, proc, base+"/healthz")
	return stdout, base
}

// startExporter runs the built exporter with the pod's arguments and rules, and returns it
// once it answers the pod's startup probe.
func (p *localPod) startExporter(t *testing.T, m *manifests) *testexec.Exporter {
	t.Helper()
	bin := builtBinary(t)
	exp := exporterContainer(t, m.deployments["nginx"])
	rulesPath, _ := flagValue(exp.Args, "--config.file")
	rules, _ := m.configMapFile(t, p.spec, exp, rulesPath)
	local := filepath.Join(p.dir, "rules.yaml")
	if err := os.WriteFile(local, []byte(p.local(exp, rules)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config.file=" + local}
	for _, a := range exp.Args {
		switch {
		case strings.HasPrefix(a, "--storage.path="):
			args = append(args, "--storage.path="+filepath.Join(p.dir, "storage")) // the pod's emptyDir
		case !strings.HasPrefix(a, "--config.file="):
			args = append(args, a)
		}
	}
	e := testexec.StartExporter(t, bin, args...)
	e.Get(t, exp.StartupProbe.HTTPGet.Path)
	return e
}

// getN sends n requests to url, reading each answer to its end, so that the next one
// reuses the connection: one nginx worker then logs them in order.
func getN(t *testing.T, client *http.Client, url string, n int) {
	t.Helper()
	for range n {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// waitCounted scrapes until the exporter has counted want requests, and returns the scrape.
func waitCounted(t *testing.T, e *testexec.Exporter, want float64) metrictest.Families {
	t.Helper()
	return e.WaitCheck(t, func(m metrictest.Families) error {
		if got := metrictest.Sum(m, "nginx_http_requests_total"); got != want {
			return fmt.Errorf("nginx_http_requests_total = %v, want %v (datagrams received %v, dropped %v)", got, want,
				metrictest.Sum(m, "logwindow_input_datagrams_total"), metrictest.Sum(m, "logwindow_input_dropped_datagrams_total"))
		}
		return nil
	})
}

// TestSyslogPod runs the base pod: nginx sends its access log to the exporter's syslog
// socket and to stdout. Every request is counted, no file is written on any volume (but
// nginx's pid and temp files), and nginx's stdout holds every line (what kubectl logs
// shows).
func TestSyslogPod(t *testing.T) {
	pod, m := newLocalPod(t, "k8s")
	// The exporter first, as its startup probe makes the pod wait for it.
	exporter := pod.startExporter(t, m)
	ngx, base := pod.startNginx(t, m)
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()

	const n = 250
	getN(t, client, base+"/", n-50)
	getN(t, client, base+"/missing", 50)
	waitCounted(t, exporter, n)
	// The input's counters and the rules' series are read at two moments of a scrape, so
	// the datagrams are waited for too: a scrape may count the lines of datagrams that
	// came after it read the counter.
	fams := exporter.WaitCheck(t, func(m metrictest.Families) error {
		if got := metrictest.Sum(m, "logwindow_input_datagrams_total"); got != n {
			return fmt.Errorf("datagrams received: %v, want %d", got, n)
		}
		return nil
	})

	for name, dir := range pod.volumes {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			// The storage directory's lock is taken at start, empty: the one file before
			// the snapshot written at shutdown.
			pid := name == "nginx-tmp" && strings.HasSuffix(p, "nginx.pid")
			lock := name == "storage" && filepath.Base(p) == "lock" && info.Size() == 0
			if !pid && !lock {
				t.Errorf("volume %s holds %s (%d bytes): want no file but nginx's pid and the storage lock", name, p, info.Size())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	out := ngx.String()
	if got := strings.Count(out, `"GET /`); got != n {
		t.Errorf("nginx's stdout holds %d access log lines, want %d", got, n)
	}
	// The dashboard --dashboard makes for the pod's rules selects only what the pod exposes.
	dash, err := exec.Command(builtBinary(t), "--dashboard", "--config.file="+filepath.Join(pod.dir, "rules.yaml")).Output()
	if err != nil {
		t.Fatal(err)
	}
	// A family may be absent only when its rule has counted nothing (the test's traffic
	// has no 5xx and no upstream), as a window that holds no value is.
	names, rules := dashboardMetrics(t, dash)
	exposed := 0
	for _, name := range names {
		family := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if f, ok := strings.CutSuffix(name, suffix); ok && fams[f] != nil {
				family = f
			}
		}
		if fams[family] != nil {
			exposed++
			continue
		}
		rule := ""
		for _, r := range rules {
			if strings.HasPrefix(name, r+"_") && len(r) > len(rule) {
				rule = r
			}
		}
		if rule == "" || metrictest.Sum(fams, rule+"_total") > 0 {
			t.Errorf("the dashboard of the pod's rules selects %s, which the pod does not expose", name)
		}
	}
	if exposed < len(names)/2 {
		t.Errorf("%d of the %d metrics the dashboard selects are exposed", exposed, len(names))
	}
	t.Logf("%d requests: counted %v, %v datagrams, %d lines on nginx's stdout, no file written", n,
		metrictest.Sum(fams, "nginx_http_requests_total"), metrictest.Sum(fams, "logwindow_input_datagrams_total"), strings.Count(out, `"GET /`))
}

// TestFileRotationPod runs the file overlay's pod with its rotator, at a size limit small
// enough to rotate many times: every request is counted across the rotations, and the
// volume never holds more than the two files the rotator keeps.
func TestFileRotationPod(t *testing.T) {
	pod, m := newLocalPod(t, "overlays/file")
	var rot *corev1.Container
	for i, c := range pod.spec.Containers {
		if c.Name == "logrotate" {
			rot = &pod.spec.Containers[i]
		}
	}
	if rot == nil {
		t.Fatal("no logrotate container")
	}
	exporter := pod.startExporter(t, m)
	_, base := pod.startNginx(t, m)
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()

	const maxBytes = 20000 // about 100 lines
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range rot.Env {
		v := pod.local(rot, e.Value)
		switch e.Name {
		case "MAX_BYTES":
			v = fmt.Sprint(maxBytes)
		case "INTERVAL":
			v = "0.05"
		}
		env = append(env, e.Name+"="+v)
	}
	cmd := exec.Command(rot.Command[0], rot.Command[1:]...)
	cmd.Env = env
	proc, err := testexec.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Kill() })

	logs := pod.volumes["logs"]
	size := func(name string) int64 {
		info, err := os.Stat(filepath.Join(logs, name))
		if err != nil {
			return -1 // between the rename and nginx's reopen
		}
		return info.Size()
	}
	inode := func() uint64 {
		info, err := os.Stat(filepath.Join(logs, "access.log"))
		if err != nil {
			return 0 // between the rename and nginx's reopen
		}
		return info.Sys().(*syscall.Stat_t).Ino
	}
	// The rotations are counted by the inode of access.log: the file reaches the limit at
	// most once a round, so no round hides two of them.
	const rounds, perRound = 20, 60
	if perRound*200 > maxBytes {
		t.Fatal("a round could hold two rotations")
	}
	// Past the limit, the test waits for the rotator (its INTERVAL is the bound it keeps),
	// so that traffic outpacing a slow machine's shell loop does not pile up.
	peak, rotated, last := int64(0), 0, inode()
	// One reading of the inode decides both the wait and the count: read again after the
	// wait, it could be 0 (the rotator between its rename and nginx's reopen) and count a
	// rotation twice, once as 0 and once as the new file.
	settle := func() {
		ino := inode()
		for deadline := time.Now().Add(10 * time.Second); ino == 0 || ino == last && size("access.log") >= maxBytes; ino = inode() {
			if time.Now().After(deadline) {
				t.Fatalf("access.log at %d bytes, not rotated within 10s", size("access.log"))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if ino != last {
			rotated++
			last = ino
		}
	}
	for range rounds {
		getN(t, client, base+"/", perRound)
		peak = max(peak, max(size("access.log"), 0)+max(size("access.log.1"), 0))
		settle()
	}
	// Below the limit now, with no more traffic, the rotator has nothing left to do.
	_ = proc.Kill()
	fams := waitCounted(t, exporter, rounds*perRound)
	// Every rename is a rotation: each but the last is followed by lines the exporter can
	// only have counted from the next file, which it opens in the same look that finds
	// the renamed one gone. The last may be followed by no line, so it is seen by the
	// next look (inotify's event, or the poll), which may come after the lines' count.
	early := metrictest.Sum(fams, "logwindow_input_rotations_total")
	fams = exporter.WaitFor(t, fmt.Sprintf("the exporter saw the %d rotations", rotated), func(m metrictest.Families) bool {
		return metrictest.Sum(m, "logwindow_input_rotations_total") >= float64(rotated)
	})
	rotations := metrictest.Sum(fams, "logwindow_input_rotations_total")
	if rotated < 3 || rotations != float64(rotated) {
		t.Errorf("the rotator renamed the log %d times, the exporter saw %v rotations: want at least 3, and as many", rotated, rotations)
	}
	entries, _ := os.ReadDir(logs)
	if len(entries) > 2 {
		t.Errorf("the volume holds %d files, want access.log and access.log.1", len(entries))
	}
	// Two files of the limit plus one round's lines each, at most.
	if bound := int64(2 * (maxBytes + perRound*200)); peak > bound { // a line is under 200 bytes
		t.Errorf("the volume held %d bytes at its peak, want at most %d", peak, bound)
	}
	t.Logf("%d requests counted across %d rotations (the exporter counted %v, %v of them when the last line was counted); the volume peaked at %d bytes (limit %d per file)",
		rounds*perRound, rotated, rotations, early, peak, maxBytes)
}

// dashboardMetrics returns the metric names a dashboard's panel queries select, and the
// rules its rows are titled by.
func dashboardMetrics(t *testing.T, dashboardJSON []byte) (names, rules []string) {
	t.Helper()
	d, err := deploytest.ParseDashboard(dashboardJSON)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			rules = append(rules, p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range selectorRe.FindAllStringSubmatch(tg.Expr, -1) {
				if !seen[m[1]] {
					seen[m[1]] = true
					names = append(names, m[1])
				}
			}
		}
	}
	return names, rules
}

// selectorRe finds a metric name followed by its label matchers in PromQL.
var selectorRe = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)
