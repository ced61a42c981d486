package main

import (
	_ "embed"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/common/version"
)

// releaseVersion is the version the next release from this tree will carry (the VERSION
// file, as promu reads it). A release build stamps it with -ldflags; a build the toolchain
// could not name (go run, -buildvcs=false, a source tarball) reports it with "-devel".
//
//go:embed VERSION
var releaseVersion string

// buildDateLayout is how promu writes the build date, so that stamped and derived dates
// read alike.
const buildDateLayout = "20060102-15:04:05"

// stampFromBuildInfo fills in what -ldflags did not set (a go build or go install rather
// than a release build) from what the Go toolchain recorded in the binary, so --version,
// the status page, the start-up log and logwindow_build_info say which code this is.
func stampFromBuildInfo() {
	bi, _ := debug.ReadBuildInfo()
	s := fillStamp(stamp{
		Version:   version.Version,
		Revision:  version.Revision,
		BuildDate: version.BuildDate,
	}, bi, releaseVersion)
	version.Version, version.Revision, version.BuildDate = s.Version, s.Revision, s.BuildDate
}

// stamp is the part of prometheus/common/version a build may leave empty and the build
// info can fill.
type stamp struct{ Version, Revision, BuildDate string }

// fillStamp returns s with its empty fields taken from bi (nil when the binary has none):
//   - Version: the main module's version (v1.2.3 from go install ...@v1.2.3, a
//     pseudo-version from go build in a clone, both without the "v"); when the toolchain
//     knew none ("(devel)"), release with "-devel".
//   - Revision: vcs.revision, with "-modified" for a tree with uncommitted changes, as
//     prometheus/common's GetRevision reports it (Revision itself is what its Slog logs).
//   - BuildDate: vcs.time, the commit's time, in promu's layout: a build from a clone is
//     that commit's code, whenever it was compiled.
func fillStamp(s stamp, bi *debug.BuildInfo, release string) stamp {
	var mainVersion string
	settings := map[string]string{}
	if bi != nil {
		mainVersion = bi.Main.Version
		for _, kv := range bi.Settings {
			settings[kv.Key] = kv.Value
		}
	}
	if s.Version == "" {
		if mainVersion != "" && mainVersion != "(devel)" {
			s.Version = strings.TrimPrefix(mainVersion, "v")
		} else if release = strings.TrimSpace(release); release != "" {
			s.Version = release + "-devel"
		}
	}
	if rev := settings["vcs.revision"]; s.Revision == "" && rev != "" {
		if settings["vcs.modified"] == "true" {
			rev += "-modified"
		}
		s.Revision = rev
	}
	if s.BuildDate == "" {
		if t, err := time.Parse(time.RFC3339, settings["vcs.time"]); err == nil {
			s.BuildDate = t.UTC().Format(buildDateLayout)
		}
	}
	return s
}
