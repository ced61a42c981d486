package main

import (
	"regexp"
	"runtime/debug"
	"testing"
)

func TestFillStamp(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	clone := vcs("vcs", "git", "vcs.revision", "0123abcd", "vcs.time", "2026-03-01T12:34:56Z", "vcs.modified", "false")
	cases := []struct {
		name string
		in   stamp
		bi   *debug.BuildInfo
		want stamp
	}{
		{
			name: "release build: ldflags win",
			in:   stamp{"1.2.3", "feedface", "20260401-00:00:00"},
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260301123456-0123abcd0000"}, Settings: clone},
			want: stamp{"1.2.3", "feedface", "20260401-00:00:00"},
		},
		{
			name: "go build in a clone",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20260301123456-0123abcd0000"}, Settings: clone},
			want: stamp{"0.1.1-0.20260301123456-0123abcd0000", "0123abcd", "20260301-12:34:56"},
		},
		{
			name: "uncommitted changes",
			bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20260301123456-0123abcd0000+dirty"},
				Settings: vcs("vcs.revision", "0123abcd", "vcs.modified", "true", "vcs.time", "2026-03-01T13:34:56+01:00")},
			want: stamp{"0.1.1-0.20260301123456-0123abcd0000+dirty", "0123abcd-modified", "20260301-12:34:56"},
		},
		{
			name: "go install at a tag",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}},
			want: stamp{Version: "0.2.0"},
		},
		{
			name: "go run, or -buildvcs=false",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			want: stamp{Version: "0.1.0-devel"},
		},
		{
			name: "docker build of a tree without .git, some args given",
			in:   stamp{Version: "", Revision: "feedface"},
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			want: stamp{Version: "0.1.0-devel", Revision: "feedface"},
		},
		{
			name: "no build info",
			want: stamp{Version: "0.1.0-devel"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := fillStamp(c.in, c.bi, "0.1.0\n"); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// The VERSION file names release images (the kustomize base's tag) and -devel builds.
func TestReleaseVersion(t *testing.T) {
	if !regexp.MustCompile(`^\d+\.\d+\.\d+\n$`).MatchString(releaseVersion) {
		t.Errorf("VERSION is %q, want one line MAJOR.MINOR.PATCH", releaseVersion)
	}
}
