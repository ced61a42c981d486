// Command image builds the logwindow_exporter image without Docker, with
// go-containerregistry: the release binary (static, stamped from the VERSION file and
// git, see internal/release) and example-rules.yaml on an empty base, run as the numeric
// non-root user 65532, for one or more linux platforms. It writes it as an OCI image
// layout, as a tarball `docker load` and `kind load image-archive` read, or pushes it to a
// registry as one index of its platforms. The image is the Dockerfile's, without the build
// stage and without distroless's files: no shell, no libc, nothing but the two files.
//
//	cd deploy && go run ./cmd/image -o ../dist/oci            # OCI image layout
//	cd deploy && go run ./cmd/image -format docker -o ../dist/image.tar
//	cd deploy && go run ./cmd/image -o ../dist/oci -binary ../dist/logwindow_exporter  # and the binary
//	cd deploy && SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) go run ./cmd/image -platforms linux/amd64,linux/arm64 -push ghcr.io/logwindow/logwindow_exporter:0.1.0
//
// -dist writes the release binaries of a release beside it, the same files the image holds
// (and any other platform -dist-platforms names, darwin's among them).
//
// With SOURCE_DATE_EPOCH set (git log -1 --format=%ct), a rebuild of the same commit with
// the same Go, on any machine, is the same image, digest and all. deploy/README.md says how to push it and point the
// kustomize base at it.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/logwindow/logwindow_exporter/deploy/internal/release"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// Output formats.
const (
	formatOCI    = "oci"    // an OCI image layout directory (skopeo, crane, containerd, podman)
	formatDocker = "docker" // a docker save tarball (docker load, kind load image-archive)
)

// options are the command's flags, checked.
type options struct {
	out, format, src, binary, dist string
	platforms, distPlatforms       []platform
	push                           name.Reference // nil: no push
}

// parseArgs reads and checks the command line.
func parseArgs(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.out, "o", "", "where to write the image: a directory (oci, must not exist) or a file (docker)")
	fs.StringVar(&o.format, "format", formatOCI, "output: oci (an OCI image layout) or docker (a docker save tarball, one platform)")
	platformList := fs.String("platforms", "linux/"+runtime.GOARCH, "the image's platforms, comma-separated linux/GOARCH")
	push := fs.String("push", "", "push the image, an index of its platforms, to this registry reference (the docker config's credentials)")
	fs.StringVar(&o.src, "src", "..", "the exporter's source tree (a git checkout)")
	fs.StringVar(&o.binary, "binary", "", "also write the image's binary here (one platform)")
	fs.StringVar(&o.dist, "dist", "", "also write the release binaries to this directory, named "+release.DistName("VERSION", "OS", "ARCH"))
	distList := fs.String("dist-platforms", "", "the platforms of -dist, comma-separated GOOS/GOARCH (default: the image's)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.platforms, err = parsePlatforms(*platformList, true); err != nil {
		return o, fmt.Errorf("-platforms: %w", err)
	}
	o.distPlatforms = o.platforms
	if *distList != "" {
		if o.distPlatforms, err = parsePlatforms(*distList, false); err != nil {
			return o, fmt.Errorf("-dist-platforms: %w", err)
		}
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.out == "" && *push == "":
		return o, errors.New("-o or -push is required")
	case o.format != formatOCI && o.format != formatDocker:
		return o, fmt.Errorf("-format %q: want %s or %s", o.format, formatOCI, formatDocker)
	case o.out != "" && o.format == formatDocker && len(o.platforms) > 1:
		return o, errors.New("-format docker holds one platform: write an OCI layout or -push")
	case o.binary != "" && len(o.platforms) > 1:
		return o, errors.New("-binary takes one platform: -dist writes one binary a platform")
	case *distList != "" && o.dist == "":
		return o, errors.New("-dist-platforms without -dist")
	}
	if *push != "" {
		if o.push, err = name.ParseReference(*push); err != nil {
			return o, fmt.Errorf("-push: %w", err)
		}
	}
	// Checked here, not when written: the builds take minutes, and -dist and -binary are
	// written before the layout.
	if o.out != "" && o.format == formatOCI {
		if _, err := os.Stat(o.out); err == nil {
			return o, fmt.Errorf("-o: %s exists: the OCI layout is written to a new directory", o.out)
		}
	}
	if err := checkBuildable(slices.Concat(o.platforms, o.distPlatforms)); err != nil {
		return o, err
	}
	return o, nil
}

// checkBuildable fails on a platform the Go toolchain does not build for, before any
// other is built. Without `go tool dist list` to ask, the build says so itself.
func checkBuildable(platforms []platform) error {
	out, err := exec.Command("go", "tool", "dist", "list").Output()
	if err != nil {
		return nil
	}
	known := strings.Fields(string(out))
	for _, p := range platforms {
		if !slices.Contains(known, p.String()) {
			return fmt.Errorf("%s: Go builds for no such platform (go tool dist list)", p)
		}
	}
	return nil
}

// run is main with its arguments and outputs, for the tests.
func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	stamp, err := release.FromRepo(o.src, time.Now())
	if err != nil {
		return err
	}
	if err := checkPublishable(o.push, stamp, o.src); err != nil {
		return err
	}
	ref, err := reference(stamp)
	if err != nil {
		return err
	}
	// Nothing is written before every binary is built, so a failed build leaves no half
	// release behind.
	binaries, err := buildBinaries(o.src, stamp, o.platforms, o.distPlatforms, o.dist != "")
	if err != nil {
		return err
	}
	rules, err := os.ReadFile(filepath.Join(o.src, "example-rules.yaml"))
	if err != nil {
		return err
	}
	imgs := make([]v1.Image, len(o.platforms))
	for i, p := range o.platforms {
		if imgs[i], err = makeImage(binaries[p], rules, stamp, p.arch); err != nil {
			return err
		}
	}
	idx, err := makeIndex(imgs, stamp)
	if err != nil {
		return err
	}
	if o.binary != "" {
		if err := writeFile(o.binary, binaries[o.platforms[0]]); err != nil {
			return err
		}
	}
	if o.dist != "" {
		for _, p := range o.distPlatforms {
			if err := writeFile(filepath.Join(o.dist, release.DistName(stamp.Version, p.os, p.arch)), binaries[p]); err != nil {
				return err
			}
		}
	}
	// One platform is written as that image, as before there were more; several as
	// their index.
	var written artifact = idx
	if len(imgs) == 1 {
		written = imgs[0]
	}
	what := platformNames(o.platforms)
	if o.out != "" {
		if err := write(written, o.format, o.out, ref); err != nil {
			return err
		}
		digest, err := written.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s@%s (%s) written to %s (%s)\n", ref, digest, what, o.out, o.format)
	}
	if o.push != nil {
		if err := remote.WriteIndex(o.push, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return err
		}
		digest, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s@%s (%s) pushed\n", o.push, digest, what)
	}
	return nil
}

// checkPublishable refuses a push to the release's repository of what the release cannot
// be: an image of a tree with changes no commit holds (published as the release while no
// commit makes it again); a tag other than the VERSION file's, the one the chart's
// appVersion and the kustomize base pull (the git tag's "v0.1.0" is not it); a stamp
// without SOURCE_DATE_EPOCH, or with another time than the commit's, which a rebuild of
// the commit by the documented command does not make again; a Go other than the one
// .go-version pins, which compiles another binary; a commit the tag v<VERSION> does not
// name, whose image would replace the release's with one no rebuild of the tag makes. A
// push elsewhere (a user's registry, with patches of their own) goes on, a modified tree
// stamped -modified.
func checkPublishable(push name.Reference, s release.Stamp, src string) error {
	if push == nil || push.Context().Name() != release.Repository {
		return nil
	}
	switch {
	case strings.HasSuffix(s.Revision, "-modified"):
		return fmt.Errorf("-push %s: the source tree has uncommitted changes or files git neither tracks nor ignores (git status): a release is built from its commit alone; commit or remove them, or push to a repository of yours", push)
	case push.Identifier() != s.Version:
		return fmt.Errorf("-push %s: a release's image is tagged %s, the VERSION file's version, which the chart (appVersion) and the kustomize base pull: -push %s:%s", push, s.Version, release.Repository, s.Version)
	case s.BuildUser != release.ReproducibleUser || !s.Date.Equal(s.Committed):
		return fmt.Errorf("-push %s: SOURCE_DATE_EPOCH=%q is not the commit's time, %d: a release is stamped with it, SOURCE_DATE_EPOCH=$(git log -1 --format=%%ct), so that a rebuild of the commit is the same image", push, os.Getenv("SOURCE_DATE_EPOCH"), s.Committed.Unix())
	}
	if err := checkGo(src); err != nil {
		return fmt.Errorf("-push %s: %w", push, err)
	}
	cmd := exec.Command("git", "tag", "--points-at", "HEAD")
	cmd.Dir = src
	tags, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("-push %s: git tag --points-at HEAD: %w", push, err)
	}
	if tag := "v" + s.Version; !slices.Contains(strings.Fields(string(tags)), tag) {
		return fmt.Errorf("-push %s: the commit is not the release's tag %s (its tags: %q): a release is published from its tag, whose rebuild must make the same image; check the tag out (git checkout %s), or tag this commit if it is the release (git tag %s)", push, tag, strings.Fields(string(tags)), tag, tag)
	}
	return nil
}

// goVersionFile names the one Go release the tests run with and a release is built with
// (the workflows' go-version-file).
const goVersionFile = ".go-version"

// checkGo fails unless the Go that builds the tree at src, as GOTOOLCHAIN and go.mod
// select it, is the release goVersionFile names.
func checkGo(src string) error {
	pin, err := os.ReadFile(filepath.Join(src, goVersionFile))
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "env", "GOVERSION")
	cmd.Dir = src
	out, err := cmd.Output()
	if err != nil {
		// Its stderr says why: a toolchain go.mod names that GOTOOLCHAIN cannot get.
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
		}
		return fmt.Errorf("go env GOVERSION: %w", err)
	}
	want := "go" + strings.TrimSpace(string(pin))
	if got := strings.TrimSpace(string(out)); got != want {
		return fmt.Errorf("the build's Go is %s, not %s, the release %s names: another Go compiles another binary, which a rebuild of the commit does not make again (GOTOOLCHAIN=%s selects it)", got, want, goVersionFile, want)
	}
	return nil
}

// platform is a GOOS/GOARCH a binary is built for.
type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

// parsePlatforms reads a comma-separated list of GOOS/GOARCH, linux's alone when the list
// is an image's.
func parsePlatforms(list string, image bool) ([]platform, error) {
	var ps []platform
	for _, s := range strings.Split(list, ",") {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(s), "/")
		p := platform{goos, goarch}
		switch {
		case !ok || goos == "" || goarch == "" || strings.Contains(goarch, "/"):
			return nil, fmt.Errorf("%q: want GOOS/GOARCH", s)
		case image && goos != "linux":
			return nil, fmt.Errorf("%q: the image runs on linux", s)
		case slices.Contains(ps, p):
			return nil, fmt.Errorf("%s named twice", p)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// platformNames is platforms as the output names them.
func platformNames(platforms []platform) string {
	names := make([]string, len(platforms))
	for i, p := range platforms {
		names[i] = p.String()
	}
	return strings.Join(names, ", ")
}

// writeFile writes an executable, making its directory: dist/ is in no fresh clone.
func writeFile(file string, body []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, body, 0o755)
}

// reference is the name and tag the image is written with: the repository a release
// publishes to, which the kustomize base and the chart run, and the release version.
func reference(s release.Stamp) (name.Tag, error) {
	return name.NewTag(release.Repository + ":" + s.Version)
}

// buildBinaries compiles the release binary of the tree at src for every platform of the
// image and, when dist is set, of the release, each once.
func buildBinaries(src string, s release.Stamp, image, rel []platform, dist bool) (map[platform][]byte, error) {
	binaries := map[platform][]byte{}
	all := image
	if dist {
		all = append(append([]platform(nil), image...), rel...)
	}
	for _, p := range all {
		if _, ok := binaries[p]; ok {
			continue
		}
		b, err := buildBinary(src, s, p.os, p.arch)
		if err != nil {
			return nil, err
		}
		binaries[p] = b
	}
	return binaries, nil
}

// buildBinary compiles the release binary of the tree at src for goos/goarch.
func buildBinary(src string, s release.Stamp, goos, goarch string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "logwindow-image")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "logwindow_exporter")
	if err := release.Build(src, s, goos, goarch, bin); err != nil {
		return nil, err
	}
	return os.ReadFile(bin)
}

// build compiles the release binary of the tree at src for linux/arch and makes the image
// of it.
func build(src string, s release.Stamp, arch string) (v1.Image, []byte, error) {
	binary, err := buildBinary(src, s, "linux", arch)
	if err != nil {
		return nil, nil, err
	}
	rules, err := os.ReadFile(filepath.Join(src, "example-rules.yaml"))
	if err != nil {
		return nil, nil, err
	}
	img, err := makeImage(binary, rules, s, arch)
	return img, binary, err
}

// labels are the image's OCI annotations, as config labels and on the manifest.
func labels(s release.Stamp) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    release.ImageName,
		"org.opencontainers.image.source":   release.Source,
		"org.opencontainers.image.version":  s.Version,
		"org.opencontainers.image.revision": s.Revision,
		"org.opencontainers.image.created":  s.Date.UTC().Format(time.RFC3339),
	}
}

// makeImage is an OCI image of one layer holding the binary and the rules, owned by root
// and read-only to the user the image runs as. Every time in it is the stamp's date, so
// the same inputs give the same digest.
func makeImage(binary, rules []byte, s release.Stamp, arch string) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	add := func(p string, mode int64, body []byte) error {
		var parents []string
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if d := parents[i]; !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755, ModTime: s.Date}); err != nil {
					return err
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(p, "/"), Mode: mode, Size: int64(len(body)), ModTime: s.Date}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if err := add(release.BinaryPath, release.BinaryMode, binary); err != nil {
		return nil, err
	}
	if err := add(release.RulesPath, release.RulesMode, rules); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}

	created := v1.Time{Time: s.Date.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: created, CreatedBy: "deploy/cmd/image: " + release.BinaryPath + ", " + release.RulesPath},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, created
	cf.Config = v1.Config{
		User:         release.User,
		Entrypoint:   []string{release.BinaryPath},
		Cmd:          []string{"--config.file=" + release.RulesPath},
		ExposedPorts: map[string]struct{}{release.Port: {}},
		WorkingDir:   "/",
		Labels:       labels(s),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels(s)).(v1.Image), nil
}

// makeIndex is the OCI index of one image a platform, labelled as they are.
func makeIndex(imgs []v1.Image, s release.Stamp) (v1.ImageIndex, error) {
	adds := make([]mutate.IndexAddendum, len(imgs))
	for i, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		adds[i] = mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: cf.Platform()}}
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	return mutate.Annotations(idx, labels(s)).(v1.ImageIndex), nil
}

// artifact is what write writes: a v1.Image or a v1.ImageIndex.
type artifact interface {
	Digest() (v1.Hash, error)
}

// write writes img, an image or an index, as format to out, named ref.
func write(img artifact, format, out string, ref name.Tag) error {
	if format == formatDocker {
		one, ok := img.(v1.Image)
		if !ok {
			return errors.New("a docker tarball holds one platform")
		}
		return tarball.WriteToFile(out, ref, one)
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("%s exists: the OCI layout is written to a new directory", out)
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	// The tag names the image in the layout, as skopeo (oci:DIR:TAG) and crane read it.
	name := layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
	})
	if idx, ok := img.(v1.ImageIndex); ok {
		return p.AppendIndex(idx, name)
	}
	return p.AppendImage(img.(v1.Image), name)
}
