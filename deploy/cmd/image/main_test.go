package main

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"

	"github.com/logwindow/logwindow_exporter/deploy/internal/release"
	"github.com/logwindow/logwindow_exporter/internal/testutil/deploytest"
)

// src is the exporter's tree, from this package.
const src = "../../.."

// testStamp is recognisable in --version and the labels.
var testStamp = release.Stamp{
	Version:   "9.8.7-image-test",
	Revision:  "0123456789abcdef0123456789abcdef01234567",
	Branch:    "test-branch",
	BuildUser: "image-test@ci",
	Date:      time.Date(2026, 3, 1, 12, 34, 56, 0, time.UTC),
}

// file is one entry of the image's filesystem.
type file struct {
	hdr  tar.Header
	body []byte
}

// filesystem flattens img's layers, as a runtime unpacks them.
func filesystem(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	fs := map[string]file{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return fs
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		fs["/"+strings.TrimSuffix(path.Clean(h.Name), "/")] = file{*h, body}
	}
}

// contents are the digests of img's config and of its layers.
func contents(t *testing.T, img v1.Image) (v1.Hash, []v1.Hash) {
	t.Helper()
	config, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var digests []v1.Hash
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	return config, digests
}

// TestImage builds the image as `go run ./cmd/image` does (with a fixed stamp), writes it in
// both formats, reads each back and checks what a runtime would run: the config, the
// files, and the binary itself.
func TestImage(t *testing.T) {
	img, _, err := build(src, testStamp, runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := reference(testStamp)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ociDir, tarPath := filepath.Join(dir, "oci"), filepath.Join(dir, "image.tar")
	if err := write(img, formatOCI, ociDir, ref); err != nil {
		t.Fatal(err)
	}
	if err := write(img, formatDocker, tarPath, ref); err != nil {
		t.Fatal(err)
	}
	if err := write(img, formatOCI, ociDir, ref); err == nil {
		t.Error("a second OCI layout written over the first")
	}

	// The layout: one image, tagged with the version.
	idx, im := readLayout(t, ociDir)
	if len(im.Manifests) != 1 {
		t.Fatalf("layout holds %d manifests, want 1", len(im.Manifests))
	}
	desc := im.Manifests[0]
	if got := desc.Annotations["org.opencontainers.image.ref.name"]; got != testStamp.Version {
		t.Errorf("layout's ref.name %q, want the version %s", got, testStamp.Version)
	}
	fromLayout, err := idx.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	// The tarball: the same image, under the name the kustomize base and the chart run.
	tag, err := name.NewTag(release.Repository + ":" + testStamp.Version)
	if err != nil {
		t.Fatal(err)
	}
	fromTar, err := tarball.ImageFromPath(tarPath, &tag)
	if err != nil {
		t.Fatalf("tarball has no %s: %v", tag, err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d, err := fromLayout.Digest(); err != nil || d != want || desc.Digest != want {
		t.Errorf("layout: image %v (%v), descriptor %v, want the one built, %v", d, err, desc.Digest, want)
	}
	// A docker save tarball keeps the config and the layers but no manifest (docker load
	// makes its own), so the two are compared by those.
	wantConfig, wantLayers := contents(t, img)
	if config, layers := contents(t, fromTar); config != wantConfig || !slices.Equal(layers, wantLayers) {
		t.Errorf("tarball: config %v, layers %v; want %v, %v", config, layers, wantConfig, wantLayers)
	}

	t.Run("manifest", func(t *testing.T) {
		m, err := fromLayout.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
			t.Errorf("media types %s, %s: want an OCI image", m.MediaType, m.Config.MediaType)
		}
		if len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
			t.Errorf("layers %+v, want one gzipped OCI layer", m.Layers)
		}
		if !maps.Equal(m.Annotations, labels(testStamp)) {
			t.Errorf("manifest annotations %v, want the labels %v", m.Annotations, labels(testStamp))
		}
	})

	t.Run("config", func(t *testing.T) {
		cf, err := fromLayout.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
			t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
		}
		if !cf.Created.Equal(testStamp.Date) {
			t.Errorf("created %v, want the stamp's %v", cf.Created, testStamp.Date)
		}
		// Numeric and not root, so that runAsNonRoot can check it without a passwd file.
		if c.User != "65532:65532" {
			t.Errorf("user %q, want 65532:65532", c.User)
		}
		if !slices.Equal(c.Entrypoint, []string{"/bin/logwindow_exporter"}) {
			t.Errorf("entrypoint %q, want the binary alone (exec form: there is no shell)", c.Entrypoint)
		}
		if !slices.Equal(c.Cmd, []string{"--config.file=/etc/logwindow_exporter/rules.yaml"}) {
			t.Errorf("cmd %q, want the image's rules", c.Cmd)
		}
		if _, ok := c.ExposedPorts["9907/tcp"]; !ok || len(c.ExposedPorts) != 1 {
			t.Errorf("exposed ports %v, want 9907/tcp", c.ExposedPorts)
		}
		wantLabels := map[string]string{
			"org.opencontainers.image.title":    "logwindow_exporter",
			"org.opencontainers.image.source":   "https://github.com/logwindow/logwindow_exporter",
			"org.opencontainers.image.version":  testStamp.Version,
			"org.opencontainers.image.revision": testStamp.Revision,
			"org.opencontainers.image.created":  "2026-03-01T12:34:56Z",
		}
		if !maps.Equal(c.Labels, wantLabels) {
			t.Errorf("labels %v, want %v", c.Labels, wantLabels)
		}
	})

	fs := filesystem(t, fromTar)
	t.Run("filesystem", func(t *testing.T) {
		wantFiles := []string{"/bin", "/bin/logwindow_exporter", "/etc", "/etc/logwindow_exporter", "/etc/logwindow_exporter/rules.yaml"}
		if got := slices.Sorted(maps.Keys(fs)); !slices.Equal(got, wantFiles) {
			t.Errorf("files %q, want only %q", got, wantFiles)
		}
		for p, f := range fs {
			if base := path.Base(p); slices.Contains([]string{"sh", "bash", "ash", "dash", "busybox"}, base) {
				t.Errorf("%s: a shell in the image", p)
			}
			if f.hdr.Uid != 0 || f.hdr.Gid != 0 || f.hdr.Mode&0o022 != 0 {
				t.Errorf("%s: owner %d:%d mode %o, want root's and not writable by others (the exporter runs as 65532)", p, f.hdr.Uid, f.hdr.Gid, f.hdr.Mode)
			}
			if !f.hdr.ModTime.Equal(testStamp.Date) {
				t.Errorf("%s: modified %v, want the stamp's date so the layer is reproducible", p, f.hdr.ModTime)
			}
		}
		if m := fs["/bin/logwindow_exporter"].hdr.Mode; m != 0o755 {
			t.Errorf("binary mode %o, want 755", m)
		}
		rules, err := os.ReadFile(filepath.Join(src, "example-rules.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fs["/etc/logwindow_exporter/rules.yaml"].body, rules) {
			t.Error("/etc/logwindow_exporter/rules.yaml is not example-rules.yaml")
		}
	})

	// The binary as the image holds it, taken out of the layer.
	bin := filepath.Join(dir, "logwindow_exporter")
	if err := os.WriteFile(bin, fs["/bin/logwindow_exporter"].body, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Run("static", func(t *testing.T) {
		deploytest.CheckStatic(t, bin, "on an image with no libc it would not start")
	})
	t.Run("version", func(t *testing.T) {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("--version: %v\n%s", err, out)
		}
		t.Logf("the image's logwindow_exporter --version:\n%s", out)
		for what, v := range map[string]string{
			"version":    "version " + testStamp.Version,
			"revision":   "revision: " + testStamp.Revision,
			"branch":     "branch: " + testStamp.Branch,
			"build user": testStamp.BuildUser,
			"build date": "20260301-12:34:56",
		} {
			if !strings.Contains(string(out), v) {
				t.Errorf("--version does not show the %s %q", what, v)
			}
		}
	})
	t.Run("rules load", func(t *testing.T) {
		rules := filepath.Join(dir, "rules.yaml")
		if err := os.WriteFile(rules, fs["/etc/logwindow_exporter/rules.yaml"].body, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bin, "--config.check", "--config.file="+rules).CombinedOutput(); err != nil {
			t.Errorf("--config.check of the image's rules: %v\n%s", err, out)
		}
	})

	t.Run("reproducible", func(t *testing.T) {
		binary, rules := fs["/bin/logwindow_exporter"].body, fs["/etc/logwindow_exporter/rules.yaml"].body
		again, err := makeImage(binary, rules, testStamp, runtime.GOARCH)
		if err != nil {
			t.Fatal(err)
		}
		if d, err := again.Digest(); err != nil || d != want {
			t.Errorf("the same files and stamp make image %v (%v), want %v", d, err, want)
		}
		later := testStamp
		later.Date = later.Date.Add(time.Second)
		other, err := makeImage(binary, rules, later, runtime.GOARCH)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := other.Digest(); d == want {
			t.Error("another date made the same image: the stamp does not reach it")
		}
	})
}

// TestRun runs the command as the release build in docs/operations.md does: the stamp from
// the checkout, the image and the binary, into a dist/ it makes.
func TestRun(t *testing.T) {
	if err := exec.Command("git", "-C", src, "rev-parse", "HEAD").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	head, err := exec.Command("git", "-C", src, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	version, err := os.ReadFile(filepath.Join(src, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	// dist/ as in a fresh clone: not there yet.
	dist := filepath.Join(t.TempDir(), "dist")
	oci, bin := filepath.Join(dist, "oci"), filepath.Join(dist, "logwindow_exporter")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-src", src, "-o", oci, "-binary", bin}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	_, im := readLayout(t, oci)
	if len(im.Manifests) != 1 {
		t.Fatalf("index %+v: want one image", im)
	}
	v := strings.TrimSpace(string(version))
	if want := release.Repository + ":" + v + "@" + im.Manifests[0].Digest.String(); !strings.HasPrefix(stdout.String(), want+" ") {
		t.Errorf("output %q, want it to name %s", stdout.String(), want)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	for _, want := range []string{"version " + v + " ", "revision: " + strings.TrimSpace(string(head))} {
		if !strings.Contains(string(out), want) {
			t.Errorf("--version of the release binary does not show %q:\n%s", want, out)
		}
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(info.Settings, func(s debug.BuildSetting) bool { return s.Key == "-pgo" }); i < 0 || info.Settings[i].Value != release.PGO {
		t.Errorf("the release binary's build settings %v, want -pgo=%s", info.Settings, release.PGO)
	}
}

func TestRunFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no output", nil, "-o or -push is required"},
		{"bad format", []string{"-o", "x", "-format", "zip"}, `-format "zip"`},
		{"stray argument", []string{"-o", "x", "y"}, "unexpected arguments"},
		{"unknown flag", []string{"-sign"}, "not defined"},
		{"bad push reference", []string{"-push", "Registry.example.com/UPPER:tag"}, "-push"},
		{"platform without arch", []string{"-o", "x", "-platforms", "linux"}, "want GOOS/GOARCH"},
		{"platform with a variant", []string{"-o", "x", "-platforms", "linux/arm/v7"}, "want GOOS/GOARCH"},
		{"image for darwin", []string{"-o", "x", "-platforms", "darwin/arm64"}, "runs on linux"},
		{"platform twice", []string{"-o", "x", "-platforms", "linux/amd64,linux/amd64"}, "named twice"},
		{"docker tarball of two", []string{"-o", "x", "-format", "docker", "-platforms", "linux/amd64,linux/arm64"}, "one platform"},
		{"binary of two", []string{"-o", "x", "-binary", "b", "-platforms", "linux/amd64,linux/arm64"}, "-binary takes one platform"},
		{"dist platforms alone", []string{"-o", "x", "-dist-platforms", "darwin/arm64"}, "without -dist"},
		{"bad dist platform", []string{"-o", "x", "-dist", "d", "-dist-platforms", "darwin"}, "-dist-platforms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(c.args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("error %v, want %q", err, c.wantErr)
			}
		})
	}
}

// TestParseArgsBeforeBuild: what the command can tell from its arguments alone fails
// before the minutes of building every platform, and before any file is written: an OCI
// layout's directory that exists, a platform Go does not build for.
func TestParseArgsBeforeBuild(t *testing.T) {
	exists := t.TempDir()
	for _, c := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"layout exists", []string{"-o", exists, "-dist", filepath.Join(t.TempDir(), "dist")}, exists + " exists"},
		{"unknown image platform", []string{"-o", "x", "-platforms", "linux/amd64,linux/amd46"}, "linux/amd46"},
		{"unknown dist platform", []string{"-o", "x", "-dist", "d", "-dist-platforms", "darwin/arm64,darwin/ppc"}, "darwin/ppc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := parseArgs(c.args, io.Discard); err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("parseArgs(%q): %v, want an error naming %s", c.args, err, c.wantErr)
			}
		})
	}
}

// readLayout opens the OCI layout at dir and reads its index.
func readLayout(t *testing.T, dir string) (v1.ImageIndex, *v1.IndexManifest) {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return idx, im
}

// commitTime is the committer date of the commits gitRepo makes, as SOURCE_DATE_EPOCH
// gives it.
const commitTime = "1772368496"

// gitRepo makes a git repository holding VERSION 1.2.3, a main.go, the .go-version
// goVersion (without its "go") and files (by path), committed at commitTime and tagged tag
// (none if empty). Without a go.mod in files it is no module: a run that gets past its
// checks fails at its build.
func gitRepo(t *testing.T, goVersion, tag string, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	all := map[string]string{"VERSION": "1.2.3\n", "main.go": "package main\n\nfunc main() {}\n", ".go-version": goVersion + "\n"}
	maps.Copy(all, files)
	for name, body := range all {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "add", ".")
	commit(t, dir)
	if tag != "" {
		git(t, dir, "tag", tag)
	}
	return dir
}

// git runs git in dir, its commits dated commitTime, and returns its output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_COMMITTER_DATE=@"+commitTime+" +0000")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %q: %v\n%s", args, err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

// commit commits what dir's index holds, or nothing.
func commit(t *testing.T, dir string) {
	t.Helper()
	git(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "x")
}

// TestRunRefusesModifiedRelease: pushing to the release's repository from a tree with
// changes no commit holds fails, before the minutes of building, naming them: such an
// image would be published as the release while no commit makes it again. A push of the
// same tree elsewhere (a user's registry, patches of their own) goes on.
func TestRunRefusesModifiedRelease(t *testing.T) {
	dir := gitRepo(t, goVersion(t), "v1.2.3", nil)
	if err := os.WriteFile(filepath.Join(dir, "extra.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", commitTime)
	for _, c := range []struct {
		push    string
		refused bool
	}{
		{release.Repository + ":1.2.3", true},
		{release.Repository + ":latest", true},
		{"registry.example.com/logwindow_exporter:1.2.3", false},
	} {
		t.Run(c.push, func(t *testing.T) {
			// The tree is no module: a push that goes on fails at its build.
			err := run([]string{"-src", dir, "-push", c.push}, io.Discard, io.Discard)
			if got := err != nil && strings.Contains(err.Error(), "uncommitted"); got != c.refused {
				t.Errorf("push to %s from a modified tree: %v; want refused %v", c.push, err, c.refused)
			}
		})
	}
}

// goVersion is the Go release that builds here, as .go-version names it.
func goVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "go")
}

// TestRunRefusesMistakenRelease: a push to the release's repository that would publish
// what the release is not fails before building, naming the mistake: a tag other than
// the VERSION file's (the chart and the kustomize base pull that one, so they would pull
// an image that is not there, or an old one), or a build another build of the commit
// does not make again (SOURCE_DATE_EPOCH unset: the date of the build and the builder's
// user@host; or not the commit's time; a Go other than .go-version's), or a commit that
// is not the release's tag v<VERSION> (it would replace the tag's image with one a
// rebuild of the tag does not make). Elsewhere the same pushes go on.
func TestRunRefusesMistakenRelease(t *testing.T) {
	// The Go a go.mod's toolchain line names is looked for on PATH, never downloaded.
	t.Setenv("GOTOOLCHAIN", "local+path")
	pinned := gitRepo(t, goVersion(t), "v1.2.3", nil)
	otherGo := gitRepo(t, "1.25.0", "v1.2.3", nil)
	untagged := gitRepo(t, goVersion(t), "", nil)
	otherTag := gitRepo(t, goVersion(t), "v1.2.4", nil)
	afterTag := gitRepo(t, goVersion(t), "v1.2.3", nil)
	commit(t, afterTag)
	// go.mod's toolchain line selects another Go than .go-version's, whatever runs the command.
	toolchain := gitRepo(t, goVersion(t), "v1.2.3", map[string]string{"go.mod": "module example.com/x\n\ngo 1.26.0\n\ntoolchain go1.999.0\n"})
	for _, c := range []struct {
		name, src, push, epoch string
		refused                string // what the error names; "" when the push goes on
	}{
		{"the release", pinned, release.Repository + ":1.2.3", commitTime, ""},
		{"the git tag's v", pinned, release.Repository + ":v1.2.3", commitTime, "1.2.3"},
		{"another version", pinned, release.Repository + ":1.2.4", commitTime, "1.2.3"},
		{"no tag", pinned, release.Repository, commitTime, "1.2.3"},
		{"a digest", pinned, release.Repository + "@sha256:" + strings.Repeat("0", 64), commitTime, "1.2.3"},
		{"no SOURCE_DATE_EPOCH", pinned, release.Repository + ":1.2.3", "", "SOURCE_DATE_EPOCH"},
		{"SOURCE_DATE_EPOCH not the commit's", pinned, release.Repository + ":1.2.3", "1772368497", "SOURCE_DATE_EPOCH"},
		{"another Go", otherGo, release.Repository + ":1.2.3", commitTime, "go1.25.0"},
		{"an untagged commit", untagged, release.Repository + ":1.2.3", commitTime, "git checkout v1.2.3"},
		{"a commit of another tag", otherTag, release.Repository + ":1.2.3", commitTime, "git checkout v1.2.3"},
		{"a commit after the tag", afterTag, release.Repository + ":1.2.3", commitTime, "git checkout v1.2.3"},
		{"go.mod's toolchain", toolchain, release.Repository + ":1.2.3", commitTime, "go1.999.0"},
		{"another registry, untagged", untagged, "registry.example.com/logwindow_exporter:1.2.3", commitTime, ""},
		{"another registry, another tag", pinned, "registry.example.com/logwindow_exporter:v1.2.3", "", ""},
		{"another registry, another Go", otherGo, "registry.example.com/logwindow_exporter:1.2.3", commitTime, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("SOURCE_DATE_EPOCH", c.epoch)
			err := run([]string{"-src", c.src, "-push", c.push}, io.Discard, io.Discard)
			// A push that goes on fails at the build, whose error is go build's.
			refused := err != nil && strings.HasPrefix(err.Error(), "-push ")
			switch {
			case c.refused == "" && refused:
				t.Errorf("push to %s refused: %v", c.push, err)
			case c.refused != "" && (!refused || !strings.Contains(err.Error(), c.refused)):
				t.Errorf("push to %s: %v; want it refused, naming %s", c.push, err, c.refused)
			}
		})
	}
}

// TestReleaseWorkflowPasses runs release.yml's push as GitHub runs it on the tag
// v<VERSION>: over actions/checkout's clone (one commit deep, the tag alone, fetched as
// +<commit>:refs/tags/<tag>), with the GITHUB_ENV its Version step writes (VERSION,
// SOURCE_DATE_EPOCH) and the workflow's env, the Image step's command, in its working
// directory and with its arguments as bash expands them, gets past every check of a push
// to the release's repository: a workflow that stamped no SOURCE_DATE_EPOCH, or pushed the
// git tag's "v", would fail there, on the tag, after CI passed.
func TestReleaseWorkflowPasses(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	type step struct {
		Name             string `json:"name"`
		Run              string `json:"run"`
		WorkingDirectory string `json:"working-directory"`
	}
	var w struct {
		Env  map[string]string `json:"env"`
		Jobs map[string]struct {
			Steps []step `json:"steps"`
		} `json:"jobs"`
	}
	text, err := os.ReadFile(filepath.Join(src, ".github/workflows/release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(text, &w); err != nil {
		t.Fatal(err)
	}
	steps := map[string]step{}
	for _, j := range w.Jobs {
		for _, s := range j.Steps {
			steps[s.Name] = s
		}
	}
	versionStep, imageStep := steps["Version"], steps["Image and binaries"]
	if versionStep.Run == "" || imageStep.Run == "" {
		t.Fatal(`release.yml has no step "Version" or "Image and binaries"`)
	}

	const tag = "v1.2.3"
	origin := gitRepo(t, goVersion(t), tag, map[string]string{
		"deploy/helm/logwindow-exporter/Chart.yaml": "version: 1.2.3\nappVersion: \"1.2.3\"\n",
	})
	checkout := t.TempDir()
	git(t, checkout, "init", "-q")
	git(t, checkout, "fetch", "-q", "--no-tags", "--depth=1", "file://"+origin, "+"+git(t, origin, "rev-parse", "HEAD")+":refs/tags/"+tag)
	git(t, checkout, "checkout", "-q", "refs/tags/"+tag)

	githubEnv := filepath.Join(t.TempDir(), "github.env")
	cmd := exec.Command("bash", "-e", "-c", versionStep.Run)
	cmd.Dir = checkout
	cmd.Env = append(os.Environ(), "GITHUB_REF_NAME="+tag, "GITHUB_ENV="+githubEnv)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("step Version: %v\n%s", err, out)
	}
	env := maps.Clone(w.Env)
	env["GITHUB_REF_NAME"] = tag
	written, err := os.ReadFile(githubEnv)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(written)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}

	// The step's go, a function printing its arguments, one per NUL.
	dir := filepath.Join(checkout, imageStep.WorkingDirectory)
	cmd = exec.Command("bash", "-e", "-c", "go() { printf '%s\\0' \"$@\"; }\n"+imageStep.Run)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("step Image and binaries: %v", err)
	}
	args := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(args) < 2 || args[0] != "run" || args[1] != "./cmd/image" {
		t.Fatalf("step Image and binaries runs go %q, want go run ./cmd/image", args)
	}

	for k, v := range env {
		t.Setenv(k, v)
	}
	t.Chdir(dir)
	// The checkout is no module: a run that gets past the checks fails at its build.
	if err := run(args[2:], io.Discard, io.Discard); err == nil || !strings.HasPrefix(err.Error(), "go build ") {
		t.Errorf("go %q: %v; want it past the checks, failing at the build", args, err)
	}
}
