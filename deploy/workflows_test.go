package deploy

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/logwindow/logwindow_exporter/deploy/internal/release"
)

// workflow is what the tests read of a GitHub Actions workflow.
type workflow struct {
	Env  map[string]string `json:"env"`
	Jobs map[string]struct {
		Steps []struct {
			Uses string `json:"uses"`
			Run  string `json:"run"`
		} `json:"steps"`
	} `json:"jobs"`
}

// runs is every run: script of w, in order.
func (w workflow) runs() string {
	var all []string
	for _, j := range w.Jobs {
		for _, s := range j.Steps {
			all = append(all, s.Run)
		}
	}
	return strings.Join(all, "\n")
}

// pinned is a uses: line as every action is named: by the full commit, with the version it
// is the commit of, so that a moved tag changes nothing that runs.
var pinned = regexp.MustCompile(`^\s*(- )?uses: [\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*$`)

// TestWorkflows: each workflow pins its actions; CI runs .ci/run; the release publishes
// the image where the chart's default points, with the command and the Helm the tests
// check, and the chart where the README says.
func TestWorkflows(t *testing.T) {
	read := func(t *testing.T, name string) workflow {
		t.Helper()
		text := string(mustRead(t, filepath.Join("../.github/workflows", name)))
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, "uses:") && !pinned.MatchString(line) {
				t.Errorf("%s: %q: want uses: owner/action@<commit> # v<version>", name, strings.TrimSpace(line))
			}
		}
		var w workflow
		if err := yaml.Unmarshal([]byte(text), &w); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return w
	}

	t.Run("ci", func(t *testing.T) {
		if w := read(t, "ci.yml"); !strings.Contains(w.runs(), "bash .ci/run") {
			t.Error("ci.yml does not run .ci/run")
		}
	})

	t.Run("release", func(t *testing.T) {
		w := read(t, "release.yml")
		if w.Env["IMAGE"] != release.Repository || w.Env["CHARTS"] != release.ChartRepository {
			t.Errorf("release.yml publishes to %s and %s, want %s and %s", w.Env["IMAGE"], w.Env["CHARTS"], release.Repository, release.ChartRepository)
		}
		runs := w.runs()
		for _, want := range []string{
			`go run ./cmd/image -platforms linux/amd64,linux/arm64 -push "$IMAGE:$VERSION"`,
			`-dist-platforms linux/amd64,linux/arm64,darwin/arm64`,
			`helm push "dist/logwindow-exporter-$VERSION.tgz" "$CHARTS"`,
			`SHA256SUMS`,
		} {
			if !strings.Contains(runs, want) {
				t.Errorf("release.yml does not run %s", want)
			}
		}
		helm := regexp.MustCompile(`(?m)^\s*helm\.sh/helm/v3 (v\S+)`).FindSubmatch(mustRead(t, "go.mod"))
		if helm == nil {
			t.Fatal("go.mod requires no helm.sh/helm/v3")
		}
		if w.Env["HELM_VERSION"] != string(helm[1]) {
			t.Errorf("release.yml packages the chart with Helm %s; the tests with go.mod's %s", w.Env["HELM_VERSION"], helm[1])
		}
	})
}
