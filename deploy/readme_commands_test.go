package deploy

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/deploy/internal/release"
)

var (
	// readmeDockerBuild is the docker build command of README.md, over its continued lines.
	readmeDockerBuild = regexp.MustCompile("(?m)^docker build (?:.*\\\\\n)*.*$")
	// buildArg is one --build-arg of it, with its value.
	buildArg = regexp.MustCompile(`--build-arg ([A-Z_]+)=(\$\([^)]*\)|\S+)`)
	// dateCommand is the date command a value is made by, and its format.
	dateCommand = regexp.MustCompile(`^\$\(date -u \+(\S+)\)$`)
)

// TestReadmeDockerBuild holds README.md's docker build command to the build the Dockerfile
// tests run: the same build args, which TestDockerfile shows reach the version stamp, and a
// BUILD_DATE the stamp's layout reads.
func TestReadmeDockerBuild(t *testing.T) {
	command := readmeDockerBuild.Find(mustRead(t, "README.md"))
	if command == nil {
		t.Fatal("README.md shows no docker build command")
	}
	args := map[string]string{}
	for _, m := range buildArg.FindAllSubmatch(command, -1) {
		args[string(m[1])] = string(m[2])
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
var kubectlApply = regexp.MustCompile(`(?m)^kubectl apply (?:-n \S+ )?-k deploy/(\S+)`)

// TestReadmeKubectlApply renders each kustomization README.md applies, as kubectl apply -k
// would build it: each must be one the manifest tests check.
func TestReadmeKubectlApply(t *testing.T) {
	checked := append(slices.Clone(renderTargets), "k8s/grafana")
	applied := kubectlApply.FindAllSubmatch(mustRead(t, "README.md"), -1)
	if len(applied) == 0 {
		t.Fatal("README.md shows no kubectl apply -k command")
	}
	for _, m := range applied {
		dir := string(m[1])
		t.Run(dir, func(t *testing.T) {
			if !slices.Contains(checked, dir) {
				t.Errorf("README applies %s, which the manifest tests do not render (%v)", dir, checked)
			}
			render(t, dir)
		})
	}
}
