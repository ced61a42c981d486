// Command image builds the logwindow_exporter image without Docker, with
// go-containerregistry: the release binary (static, stamped from the VERSION file and
// git, see internal/release) and example-rules.yaml on an empty base, run as the numeric
// non-root user 65532, written as an OCI image layout or a tarball `docker load` and
// `kind load image-archive` read. The image is the Dockerfile's, without the build stage
// and without distroless's files: no shell, no libc, nothing but the two files.
//
//	cd deploy && go run ./cmd/image -o ../dist/oci            # OCI image layout
//	cd deploy && go run ./cmd/image -format docker -o ../dist/image.tar
//	cd deploy && go run ./cmd/image -o ../dist/oci -binary ../dist/logwindow_exporter  # and the binary
//
// With SOURCE_DATE_EPOCH set (git log -1 --format=%ct), a rebuild of the same commit is
// the same image, digest and all. deploy/README.md says how to push it and point the
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
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
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

// run is main with its arguments and outputs, for the tests.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "where to write the image: a directory (oci, must not exist) or a file (docker)")
	format := fs.String("format", formatOCI, "output: oci (an OCI image layout) or docker (a docker save tarball)")
	arch := fs.String("arch", runtime.GOARCH, "GOARCH of the binary and the image (the OS is linux)")
	src := fs.String("src", "..", "the exporter's source tree (a git checkout)")
	binOut := fs.String("binary", "", "also write the image's binary here: the release binary for linux/-arch")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case *out == "":
		return errors.New("-o is required")
	case *format != formatOCI && *format != formatDocker:
		return fmt.Errorf("-format %q: want %s or %s", *format, formatOCI, formatDocker)
	}
	stamp, err := release.FromRepo(*src, time.Now())
	if err != nil {
		return err
	}
	img, binary, err := build(*src, stamp, *arch)
	if err != nil {
		return err
	}
	if *binOut != "" {
		if err := os.WriteFile(*binOut, binary, 0o755); err != nil {
			return err
		}
	}
	ref, err := reference(stamp)
	if err != nil {
		return err
	}
	if err := write(img, *format, *out, ref); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s@%s (linux/%s) written to %s (%s)\n", ref, digest, *arch, *out, *format)
	return nil
}

// reference is the name and tag the image is written with: the kustomize base's image name
// and the release version.
func reference(s release.Stamp) (name.Tag, error) {
	return name.NewTag(release.ImageName + ":" + s.Version)
}

// build compiles the release binary of the tree at src for linux/arch and makes the image
// of it.
func build(src string, s release.Stamp, arch string) (v1.Image, []byte, error) {
	tmp, err := os.MkdirTemp("", "logwindow-image")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "logwindow_exporter")
	if err := release.Build(src, s, "linux", arch, bin); err != nil {
		return nil, nil, err
	}
	binary, err := os.ReadFile(bin)
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
	if err := add(release.BinaryPath, 0o755, binary); err != nil {
		return nil, err
	}
	if err := add(release.RulesPath, 0o644, rules); err != nil {
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

// write writes img as format to out, named ref.
func write(img v1.Image, format, out string, ref name.Tag) error {
	if format == formatDocker {
		return tarball.WriteToFile(out, ref, img)
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("%s exists: the OCI layout is written to a new directory", out)
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	// The tag names the image in the layout, as skopeo (oci:DIR:TAG) and crane read it.
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
	}))
}
