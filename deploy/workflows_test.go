package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/logwindow/logwindow_exporter/deploy/internal/release"
)

// workflow is what the tests read of a GitHub Actions workflow.
type workflow struct {
	Env map[string]string `json:"env"`
	// On is the workflow's triggers: YAML 1.1 reads the key on as true.
	On   map[string]any `json:"true"`
	Jobs map[string]struct {
		// Needs is a job's name or a list of them; Uses a reusable workflow's path.
		Needs any    `json:"needs"`
		Uses  string `json:"uses"`
		Steps []struct {
			Name string         `json:"name"`
			Uses string         `json:"uses"`
			Run  string         `json:"run"`
			With map[string]any `json:"with"`
		} `json:"steps"`
	} `json:"jobs"`
}

// needs is the jobs job waits for.
func (w workflow) needs(job string) []string {
	switch n := w.Jobs[job].Needs.(type) {
	case string:
		return []string{n}
	case []any:
		var out []string
		for _, v := range n {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	return nil
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

// localWorkflow is a uses: line of a job that runs a workflow of this repository, at the
// same commit.
var localWorkflow = regexp.MustCompile(`^\s*uses: \./\.github/workflows/[\w.-]+\.yml$`)

// TestWorkflows: each workflow pins its actions and passes actionlint; CI runs .ci/run;
// the release runs CI's workflow first and publishes nothing unless it passes (a tag on a
// red commit publishes nothing), the image where the chart's default points, with the
// command and the Helm the tests check, and the chart where the README says.
func TestWorkflows(t *testing.T) {
	read := func(t *testing.T, name string) workflow {
		t.Helper()
		text := string(mustRead(t, filepath.Join("../.github/workflows", name)))
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, "uses:") && !pinned.MatchString(line) && !localWorkflow.MatchString(line) {
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
		w := read(t, "ci.yml")
		if !strings.Contains(w.runs(), "bash .ci/run") {
			t.Error("ci.yml does not run .ci/run")
		}
		if _, ok := w.On["workflow_call"]; !ok {
			t.Error("ci.yml has no workflow_call: the release cannot run it before publishing")
		}
	})

	t.Run("actionlint", func(t *testing.T) {
		bin, err := exec.LookPath("actionlint")
		if err != nil {
			t.Skip("no actionlint (.ci/run installs it)")
		}
		// From the repository's root, so that a local reusable workflow is found.
		cmd := exec.Command(bin, ".github/workflows/ci.yml", ".github/workflows/release.yml")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("actionlint: %v\n%s", err, out)
		}
	})

	t.Run("release", func(t *testing.T) {
		w := read(t, "release.yml")
		if w.Env["IMAGE"] != release.Repository || w.Env["CHARTS"] != release.ChartRepository {
			t.Errorf("release.yml publishes to %s and %s, want %s and %s", w.Env["IMAGE"], w.Env["CHARTS"], release.Repository, release.ChartRepository)
		}
		var tests []string
		for name, j := range w.Jobs {
			if j.Uses == "./.github/workflows/ci.yml" {
				tests = append(tests, name)
			}
		}
		if len(tests) != 1 {
			t.Fatalf("release.yml runs ci.yml in jobs %q, want one", tests)
		}
		for name, j := range w.Jobs {
			if name != tests[0] && len(j.Steps) > 0 && !slices.Contains(w.needs(name), tests[0]) {
				t.Errorf("release.yml: job %s does not need %s: it would publish a commit whose tests fail", name, tests[0])
			}
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

// goVersionFile is the file both workflows take their Go from: one exact release.
const goVersionFile = ".go-version"

// TestWorkflowsGo: CI and the release set up the one Go release goVersionFile names, not
// the latest of a line (check-latest): the release job, run minutes after the tests or
// re-run alone days later, would otherwise build the published binaries and image with a
// Go the tests never ran with, and a rebuild of the tag could not tell which Go makes the
// same digest. The release named is one that builds the module (go.mod's go line or later).
func TestWorkflowsGo(t *testing.T) {
	text := strings.TrimSpace(string(mustRead(t, "../"+goVersionFile)))
	pinnedGo := regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)$`).FindStringSubmatch(text)
	if pinnedGo == nil {
		t.Fatalf("%s holds %q, want one release, major.minor.patch", goVersionFile, text)
	}
	m := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)\.(\d+)$`).FindStringSubmatch(string(mustRead(t, "../go.mod")))
	if m == nil {
		t.Fatal("go.mod: no go line of a release")
	}
	num := func(s []string) []int {
		var out []int
		for _, v := range s[1:] {
			n, _ := strconv.Atoi(v)
			out = append(out, n)
		}
		return out
	}
	if slices.Compare(num(pinnedGo), num(m)) < 0 {
		t.Errorf("%s: Go %s, older than go.mod's go %s.%s.%s, which it cannot build", goVersionFile, text, m[1], m[2], m[3])
	}
	for _, name := range []string{"ci.yml", "release.yml"} {
		var w workflow
		if err := yaml.Unmarshal(mustRead(t, "../.github/workflows/"+name), &w); err != nil {
			t.Fatal(err)
		}
		setups := 0
		for job, j := range w.Jobs {
			for _, s := range j.Steps {
				if !strings.HasPrefix(s.Uses, "actions/setup-go@") {
					continue
				}
				setups++
				if s.With["go-version-file"] != goVersionFile || s.With["go-version"] != nil || s.With["check-latest"] != nil {
					t.Errorf("%s: job %s sets up Go with %v, want go-version-file: %s alone (and no check-latest)", name, job, s.With, goVersionFile)
				}
			}
		}
		if setups == 0 {
			t.Errorf("%s sets up no Go", name)
		}
	}
}

// TestReleaseVersionStep runs release.yml's Version step as the runner does (bash -e, the
// tag in GITHUB_REF_NAME) over a checkout whose VERSION, tag and Chart.yaml agree or not:
// a mismatch stops the release before anything is pushed, naming what disagrees.
func TestReleaseVersionStep(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	var w workflow
	if err := yaml.Unmarshal(mustRead(t, "../.github/workflows/release.yml"), &w); err != nil {
		t.Fatal(err)
	}
	var script string
	for _, j := range w.Jobs {
		for _, s := range j.Steps {
			if s.Name == "Version" {
				script = s.Run
			}
		}
	}
	if script == "" {
		t.Fatal("release.yml has no step Version")
	}
	chart := string(mustRead(t, chartDir+"/Chart.yaml"))
	v := strings.TrimSpace(string(mustRead(t, "../VERSION")))
	for _, c := range []struct {
		name, tag, chart, want string // want: what the error names; empty: success
	}{
		{"agree", "v" + v, chart, ""},
		{"tag of another version", "v9.9.9", chart, "tag v9.9.9"},
		{"chart version behind", "v" + v, strings.Replace(chart, "\nversion: "+v+"\n", "\nversion: 0.0.1\n", 1), "version 0.0.1"},
		{"chart appVersion behind", "v" + v, strings.Replace(chart, "\nappVersion: \""+v+"\"\n", "\nappVersion: \"0.0.1\"\n", 1), "appVersion 0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"VERSION": v + "\n", chartDir + "/Chart.yaml": c.chart}
			for name, body := range files {
				p := filepath.Join(dir, "deploy", name)
				if name == "VERSION" {
					p = filepath.Join(dir, name)
				}
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "x"}} {
				if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
					t.Fatalf("git %q: %v\n%s", args, err, out)
				}
			}
			env := filepath.Join(dir, "github.env")
			cmd := exec.Command("bash", "-e", "-c", script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GITHUB_REF_NAME="+c.tag, "GITHUB_ENV="+env)
			out, err := cmd.CombinedOutput()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("the step fails: %v\n%s", err, out)
			case c.want == "" && !strings.Contains(string(mustRead(t, env)), "VERSION="+v+"\n"):
				t.Errorf("GITHUB_ENV %q lacks VERSION=%s", mustRead(t, env), v)
			case c.want != "" && (err == nil || !strings.Contains(string(out), "::error::") || !strings.Contains(string(out), c.want)):
				t.Errorf("the step: %v\n%s\nwant it to fail naming %s", err, out, c.want)
			}
		})
	}
}
