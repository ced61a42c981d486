package release

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestLDFlags(t *testing.T) {
	good := Stamp{Version: "0.1.0", Revision: "abc", Branch: "main", BuildUser: "me@host", Date: time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))}
	got, err := good.LDFlags()
	if err != nil {
		t.Fatal(err)
	}
	want := "-s -w -X github.com/prometheus/common/version.Version=0.1.0 -X github.com/prometheus/common/version.Revision=abc" +
		" -X github.com/prometheus/common/version.Branch=main -X github.com/prometheus/common/version.BuildUser=me@host" +
		" -X github.com/prometheus/common/version.BuildDate=20260301-11:00:00"
	if got != want {
		t.Errorf("LDFlags() =\n%s\nwant\n%s", got, want)
	}
	for _, c := range []struct {
		name   string
		change func(*Stamp)
	}{
		{"empty", func(s *Stamp) { s.Branch = "" }},
		{"space", func(s *Stamp) { s.BuildUser = "John Doe@host" }},
		{"quote", func(s *Stamp) { s.Version = `0.1.0"` }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := good
			c.change(&s)
			if flags, err := s.LDFlags(); err == nil {
				t.Errorf("LDFlags() = %q, want an error", flags)
			}
		})
	}
}

func TestFromRepo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	if err := exec.Command("git", "-C", "../../..", "rev-parse", "HEAD").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1772368496")
	s, err := FromRepo("../../..", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	version, err := os.ReadFile("../../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if s.Version != strings.TrimSpace(string(version)) {
		t.Errorf("version %q, want VERSION's %q", s.Version, version)
	}
	if !regexp.MustCompile(`^[0-9a-f]{40}(-modified)?$`).MatchString(s.Revision) {
		t.Errorf("revision %q, want a commit", s.Revision)
	}
	if s.Branch == "" || !strings.Contains(s.BuildUser, "@") {
		t.Errorf("branch %q, user %q", s.Branch, s.BuildUser)
	}
	if want := time.Unix(1772368496, 0).UTC(); !s.Date.Equal(want) {
		t.Errorf("date %v, want SOURCE_DATE_EPOCH's %v", s.Date, want)
	}
	if _, err := s.LDFlags(); err != nil {
		t.Error(err)
	}

	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if _, err := FromRepo("../../..", time.Now()); err == nil {
		t.Error("a SOURCE_DATE_EPOCH that is no number was taken")
	}
}
