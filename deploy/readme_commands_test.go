package deploy

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/logwindow/logwindow_exporter/deploy/internal/release"
	"github.com/logwindow/logwindow_exporter/internal/testutil/doccmd"
)

var (
	// buildArg is one --build-arg of a docker build command, with its value.
	buildArg = regexp.MustCompile(`--build-arg ([A-Z_]+)=(\$\([^)]*\)|\S+)`)
	// dateCommand is the date command a value is made by, and its format.
	dateCommand = regexp.MustCompile(`^\$\(date -u \+(\S+)\)$`)
)

// TestReadmeDockerBuild holds README.md's docker build command to the build the Dockerfile
// tests run: the same build args, which TestDockerfile shows reach the version stamp, and a
// BUILD_DATE the stamp's layout reads.
func TestReadmeDockerBuild(t *testing.T) {
	lines := doccmd.Lines(mustRead(t, "README.md"))
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "docker build ") })
	if i < 0 {
		t.Fatal("README.md shows no docker build command")
	}
	args := map[string]string{}
	for _, m := range buildArg.FindAllStringSubmatch(lines[i], -1) {
		args[m[1]] = m[2]
	}
	if got, want := slices.Sorted(maps.Keys(args)), slices.Sorted(maps.Keys(testBuildArgs)); !slices.Equal(got, want) {
		t.Errorf("README's docker build passes the build args %v, want the Dockerfile's %v", got, want)
	}
	m := dateCommand.FindStringSubmatch(args["BUILD_DATE"])
	if m == nil {
		t.Fatalf("README's BUILD_DATE %q is not made by date -u +FORMAT", args["BUILD_DATE"])
	}
	at := time.Date(2024, 3, 1, 12, 34, 56, 0, time.UTC)
	date := strings.NewReplacer("%Y", "2024", "%m", "03", "%d", "01", "%H", "12", "%M", "34", "%S", "56").Replace(m[1])
	if got, err := time.Parse(release.DateLayout, date); err != nil || !got.Equal(at) {
		t.Errorf("README's BUILD_DATE format %q writes %q, which the stamp's layout %q reads as %v, %v", m[1], date, release.DateLayout, got, err)
	}
}

// kubectlApply is a kubectl apply -k command of README.md, with its kustomization.
var kubectlApply = regexp.MustCompile(`^kubectl apply (?:-n \S+ )?-k deploy/(\S+)`)

// TestReadmeKubectlApply renders each kustomization README.md applies, as kubectl apply -k
// would build it: each must be one the manifest tests check.
func TestReadmeKubectlApply(t *testing.T) {
	checked := append(slices.Clone(renderTargets), "k8s/grafana")
	ran := 0
	for _, line := range doccmd.Lines(mustRead(t, "README.md")) {
		m := kubectlApply.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		dir := m[1]
		t.Run(dir, func(t *testing.T) {
			if !slices.Contains(checked, dir) {
				t.Errorf("README applies %s, which the manifest tests do not render (%v)", dir, checked)
			}
			render(t, dir)
		})
		ran++
	}
	if ran == 0 {
		t.Fatal("README.md shows no kubectl apply -k command")
	}
}

var (
	// helmInstall is a helm install command of the chart's README, its release's name and
	// the --set values of the rest of its line.
	helmInstall = regexp.MustCompile(`^helm install (\S+) \S+(.*)$`)
	helmSet     = regexp.MustCompile(`--set (\S+)`)
)

// TestChartReadmeInstall renders the chart as each helm install command of its README
// installs it (the chart of this tree standing in for the published one), with its --set
// values, which the chart's schema checks.
func TestChartReadmeInstall(t *testing.T) {
	ran := 0
	for _, line := range doccmd.Lines(mustRead(t, chartDir+"/README.md")) {
		m := helmInstall.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		vals := map[string]any{}
		for _, set := range helmSet.FindAllStringSubmatch(m[2], -1) {
			if err := strvals.ParseInto(set[1], vals); err != nil {
				t.Fatalf("%s: --set %s: %v", line, set[1], err)
			}
		}
		values, err := yaml.Marshal(vals)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(line, func(t *testing.T) {
			renderChart(t, chartCase{name: line, values: string(values), release: m[1]})
		})
		ran++
	}
	if ran == 0 {
		t.Fatal("the chart's README shows no helm install command")
	}
}

// remoteBase is a kustomization of this repository as an overlay's resources or components
// name it remotely: its directory and the ?ref= query.
var remoteBase = regexp.MustCompile(`github\.com/logwindow/logwindow_exporter//(\S*?)(?:\?ref=(\S+))?(?:\s|$)`)

// TestReadmeRemoteBases: the overlay README.md shows names the base and the operator
// Component at the release tag of VERSION (?ref=v<VERSION>), the release its images: tag
// is; without a ref kustomize fetches the default branch, whose manifests may pass the
// exporter flags the released image does not have, and change under the user between two
// applies. Each names a kustomization of the tree.
func TestReadmeRemoteBases(t *testing.T) {
	version := strings.TrimSpace(string(mustRead(t, "../VERSION")))
	found := remoteBase.FindAllStringSubmatch(string(mustRead(t, "README.md")), -1)
	if len(found) == 0 {
		t.Fatal("README.md names no remote kustomization")
	}
	for _, m := range found {
		if m[2] != "v"+version {
			t.Errorf("README.md names %s with ref %q, want ?ref=v%s, the release of VERSION", m[1], m[2], version)
		}
		dir, ok := strings.CutPrefix(m[1], "deploy/")
		if !ok || !slices.Contains(append(slices.Clone(renderTargets), "k8s/operator"), dir) {
			t.Errorf("README.md names %s, not a kustomization the manifest tests render", m[1])
		}
	}
}
