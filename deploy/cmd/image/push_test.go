package main

import (
	"bytes"
	"debug/elf"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	helmregistry "helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"

	"github.com/logwindow/logwindow_exporter/deploy/internal/release"
)

// chartDir is the Helm chart, from this package.
const chartDir = src + "/deploy/helm/logwindow-exporter"

// TestPush publishes a release as .github/workflows/release.yml does, to a registry served
// in-process: the image of linux/amd64 and linux/arm64 as one index (also written as an
// OCI layout) with the release binaries beside it, then the chart, packaged and pushed with Helm's SDK. It pulls each
// back as a node of each architecture and a `helm install` would: the binary a node runs
// is of its machine, runs as a user that is not root, and the chart from the registry
// points at the image in it.
func TestPush(t *testing.T) {
	if err := exec.Command("git", "-C", src, "rev-parse", "HEAD").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	// The stamp run reads, fixed in time so that the test reads the same one.
	t.Setenv("SOURCE_DATE_EPOCH", "1772368496")
	stamp, err := release.FromRepo(src, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	repo := host + "/logwindow/" + release.ImageName
	tag, err := name.NewTag(repo + ":" + stamp.Version)
	if err != nil {
		t.Fatal(err)
	}

	dist := filepath.Join(t.TempDir(), "dist")
	oci := filepath.Join(dist, "oci")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-src", src, "-platforms", "linux/amd64,linux/arm64", "-push", tag.String(), "-dist", dist, "-o", oci}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	idx, err := remote.Index(tag)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if want := "\n" + tag.String() + "@" + digest.String() + " "; !strings.Contains(stdout.String(), want) {
		t.Errorf("output %q, want a line naming the pushed index %s", stdout.String(), want[1:])
	}
	// The OCI layout holds the same index, under the version.
	_, layoutIndex := readLayout(t, oci)
	if m := layoutIndex.Manifests; len(m) != 1 || m[0].MediaType != types.OCIImageIndex || m[0].Digest != digest ||
		m[0].Annotations["org.opencontainers.image.ref.name"] != stamp.Version {
		t.Errorf("OCI layout holds %+v, want the pushed index %s named %s", m, digest, stamp.Version)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex || len(im.Manifests) != 2 {
		t.Fatalf("pushed %s of %d manifests, want an OCI index of the two platforms", im.MediaType, len(im.Manifests))
	}
	if !maps.Equal(im.Annotations, labels(stamp)) {
		t.Errorf("index annotations %v, want the labels %v", im.Annotations, labels(stamp))
	}

	for i, c := range []struct {
		arch    string
		machine elf.Machine
	}{
		{"amd64", elf.EM_X86_64},
		{"arm64", elf.EM_AARCH64},
	} {
		t.Run(c.arch, func(t *testing.T) {
			if p := im.Manifests[i].Platform; p == nil || p.OS != "linux" || p.Architecture != c.arch {
				t.Errorf("manifest %d is for %v, want linux/%s", i, p, c.arch)
			}
			img, err := remote.Image(tag, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: c.arch}))
			if err != nil {
				t.Fatal(err)
			}
			if d, err := img.Digest(); err != nil || d != im.Manifests[i].Digest {
				t.Errorf("linux/%s pulls %v (%v), want the index's %v", c.arch, d, err, im.Manifests[i].Digest)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS != "linux" || cf.Architecture != c.arch {
				t.Errorf("config's platform %s/%s, want linux/%s", cf.OS, cf.Architecture, c.arch)
			}
			uid, _, _ := strings.Cut(cf.Config.User, ":")
			if n, err := strconv.Atoi(uid); err != nil || n == 0 {
				t.Errorf("user %q, want a numeric user that is not root", cf.Config.User)
			}
			if !maps.Equal(cf.Config.Labels, labels(stamp)) {
				t.Errorf("labels %v, want %v", cf.Config.Labels, labels(stamp))
			}
			binary := filesystem(t, img)[release.BinaryPath].body
			f, err := elf.NewFile(bytes.NewReader(binary))
			if err != nil {
				t.Fatalf("%s: %v", release.BinaryPath, err)
			}
			if f.Machine != c.machine {
				t.Errorf("%s is for %v, want %v", release.BinaryPath, f.Machine, c.machine)
			}
			// The binary a release attaches is the one its image runs.
			attached, err := os.ReadFile(filepath.Join(dist, release.DistName(stamp.Version, "linux", c.arch)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(attached, binary) {
				t.Error("the release binary is not the image's")
			}
		})
	}

	t.Run("chart", func(t *testing.T) {
		ch := pushPullChart(t, host)
		if ch.Metadata.AppVersion != stamp.Version {
			t.Errorf("chart's appVersion %s, want VERSION's %s", ch.Metadata.AppVersion, stamp.Version)
		}
		def := chartImages(t, ch, nil)
		if want := release.Repository + ":" + stamp.Version; len(def) != 1 || def[0] != want {
			t.Errorf("the chart runs %q by default, want the released %s", def, want)
		}
		// Installed with the registry's repository, the chart runs the index pushed above.
		images := chartImages(t, ch, map[string]any{"image": map[string]any{"repository": repo}})
		if len(images) != 1 {
			t.Fatalf("the chart runs %q, want one image", images)
		}
		ref, err := name.ParseReference(images[0])
		if err != nil {
			t.Fatal(err)
		}
		if d, err := remote.Head(ref); err != nil || d.Digest != digest {
			t.Errorf("the chart's image %s is %+v (%v), want the pushed index %s", ref, d, err, digest)
		}
	})
}

// pushPullChart packages the chart and pushes it under oci://host/logwindow/charts, as
// the release workflow pushes it to ghcr.io, then pulls it back as `helm pull` does.
func pushPullChart(t *testing.T, host string) *chart.Chart {
	t.Helper()
	// No Helm configuration of the machine's is read or written.
	for _, v := range []string{"HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"} {
		t.Setenv(v, t.TempDir())
	}
	rc, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP(), helmregistry.ClientOptWriter(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &action.Configuration{RegistryClient: rc, Log: func(string, ...any) {}}

	pkg := action.NewPackage()
	pkg.Destination = t.TempDir()
	tgz, err := pkg.Run(chartDir, nil)
	if err != nil {
		t.Fatalf("helm package: %v", err)
	}
	remoteRepo := "oci://" + host + "/logwindow/charts"
	push := action.NewPushWithOpts(action.WithPushConfig(cfg), action.WithPlainHTTP(true))
	if _, err := push.Run(tgz, remoteRepo); err != nil {
		t.Fatalf("helm push: %v", err)
	}
	local, err := loader.Load(tgz)
	if err != nil {
		t.Fatal(err)
	}

	pull := action.NewPullWithOpts(action.WithConfig(cfg))
	pull.Settings = cli.New()
	pull.PlainHTTP = true
	pull.Version = local.Metadata.Version
	pull.DestDir = t.TempDir()
	if _, err := pull.Run(remoteRepo + "/" + local.Metadata.Name); err != nil {
		t.Fatalf("helm pull: %v", err)
	}
	pulled := filepath.Join(pull.DestDir, local.Metadata.Name+"-"+local.Metadata.Version+".tgz")
	if a, b := mustRead(t, tgz), mustRead(t, pulled); !bytes.Equal(a, b) {
		t.Error("the chart pulled is not the one pushed")
	}
	ch, err := loader.Load(pulled)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// chartImages renders ch as `helm template` does with vals, and lists the images of its
// workloads' containers.
func chartImages(t *testing.T, ch *chart.Chart, vals map[string]any) []string {
	t.Helper()
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = "lw", "monitoring"
	rel, err := install.Run(ch, vals)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	var images []string
	for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
		var obj struct {
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Image string `json:"image"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		for _, c := range obj.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
	}
	return images
}

// mustRead reads a file the test needs.
func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
