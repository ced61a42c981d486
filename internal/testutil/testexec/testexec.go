// Package testexec runs programs as subprocesses for the tests and the benchmark: it builds
// the exporter, finds a free loopback port, starts a program so that it is always stopped
// or killed, children included, and shows the end of its output when a test fails. Its
// Exporter starts the built exporter, waits until it listens and is ready, scrapes it and
// waits on its metrics, for the black-box suites (e2e/, deploy/) and bench alike; LookTools
// finds the other programs they run, or skips.
package testexec

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// Race is set when this program was built with the race detector. The end-to-end tests
// build the exporter with it then, so that go test -race also checks the real binary
// under real traffic: a race found makes it exit non-zero, which Stop reports.
const Race = race.Enabled

// exporterPackage is the exporter's main package. Building it by import path works from
// any directory of the module, so a caller need not know where the module root is.
const exporterPackage = "github.com/logwindow/logwindow_exporter"

// Build builds the exporter into dir, with the race detector when race is set, and
// returns the binary's path. It must run inside the module.
//
// Without the race detector, which needs cgo, the binary is static as the release's is
// (CGO_ENABLED=0): the dynamic one cgo makes takes more CPU to start (the loader, libc's
// start, more page faults), which the benchmark would otherwise count against every run.
// It is built without the release's profile (release.pgo), which would compile every
// package again for each test binary that builds the exporter.
func Build(dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "logwindow_exporter")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	args = append(args, exporterPackage)
	cmd := exec.Command("go", args...)
	if !race {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin, nil
}

// builds are the exporters BuildExporter built in this test binary, one for each race
// setting, in a directory Main removes. A build that failed is kept as its error: the
// next test would fail the same way.
var builds struct {
	mu   sync.Mutex
	main bool     // Main runs the tests
	dir  string   // made by the first build
	held *os.File // locked while the binary runs (makeBuildsDir)
	of   map[bool]build
}

// buildsPrefix begins the name of each test binary's directory of builds in the temporary
// directory, and heldName is the file in it that the binary holds locked while it runs.
const (
	buildsPrefix = "logwindow-testexec-"
	heldName     = "held"
)

// buildsDir makes the directory of this test binary's builds, held (makeBuildsDir) until
// the binary ends.
func buildsDir() (string, error) {
	dir, held, err := makeBuildsDir()
	if err == nil {
		builds.held = held
	}
	return dir, err
}

// makeBuildsDir makes a directory of builds in the temporary directory and returns it with
// its held file, locked until it is closed or the process ends. The file is locked before
// it takes its name, so that removeEnded, in another test binary, never finds it unlocked
// while this one runs.
func makeBuildsDir() (string, *os.File, error) {
	dir, err := os.MkdirTemp("", buildsPrefix+"*")
	if err != nil {
		return "", nil, err
	}
	held, err := os.CreateTemp(dir, heldName+".tmp-*")
	if err == nil {
		err = syscall.Flock(int(held.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			err = os.Rename(held.Name(), filepath.Join(dir, heldName))
		}
		if err != nil {
			held.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, held, nil
}

// removeEnded removes the directories of builds in the temporary directory whose test
// binary ended without removing them (Main does not return from a test that panicked, the
// -timeout's panic included): its held file is unlocked, the lock gone with the process.
func removeEnded() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), buildsPrefix+"*"))
	for _, dir := range dirs {
		held, err := os.Open(filepath.Join(dir, heldName))
		if err != nil {
			continue // not one of these directories, or its binary is making it
		}
		if syscall.Flock(int(held.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		held.Close()
	}
}

// build is an exporter built for one race setting, or why it did not build.
type build struct {
	bin string
	err error
}

// Main runs m's tests and then removes the exporters BuildExporter built for them; before,
// it removes those that test binaries which ended without that left (removeEnded). The
// TestMain of a package whose tests call BuildExporter is os.Exit(testexec.Main(m)).
func Main(m *testing.M) int {
	removeEnded()
	builds.mu.Lock()
	builds.main = true
	builds.mu.Unlock()
	code := m.Run()
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		if err := os.RemoveAll(builds.dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return max(code, 1)
		}
	}
	return code
}

// BuildExporter returns the exporter (see Build) by a name in a temporary directory of tb,
// and fails tb when it does not build. It is built once per test binary and race
// setting, or once per run of the tests when SharedBuildsEnv names a directory: linking
// it takes seconds of CPU (more under the race detector), which each of e2e's dozens of
// tests paid. The name is a hard link, not a copy: a copy written in the
// test binary could be held open by a process it forks meanwhile, and fail to start with
// ETXTBSY. Tests only run the file, never write it. The package's TestMain must call Main.
func BuildExporter(tb testing.TB, race bool) string {
	tb.Helper()
	src, err := built(race)
	if err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(tb.TempDir(), filepath.Base(src))
	if err := os.Link(src, bin); err != nil {
		tb.Fatal(err)
	}
	return bin
}

// SharedBuildsEnv names the environment variable of a directory where the test binaries
// of one run of the tests share their builds of the exporter (.ci/run sets it): each
// package that runs it (e2e, bench, the root, this one) otherwise builds it in its own
// test binary, compiling the same packages and linking the same binary once each, at the
// same time when go test runs them side by side. The directory must be new for the run,
// whose sources do not change meanwhile, and on the temporary directory's file system;
// its maker removes it.
const SharedBuildsEnv = "LOGWINDOW_EXPORTER_BUILDS"

// built returns the exporter built for race in this test binary, building it first if
// need be, or taking it from the shared directory of builds when SharedBuildsEnv names one.
func built(race bool) (string, error) {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if !builds.main {
		return "", errors.New("testexec.BuildExporter: the package's TestMain does not call testexec.Main, which removes the built exporters")
	}
	if b, ok := builds.of[race]; ok {
		return b.bin, b.err
	}
	if builds.of == nil {
		builds.of = map[bool]build{}
	}
	if shared := os.Getenv(SharedBuildsEnv); shared != "" {
		bin, err := sharedBuild(shared, race)
		builds.of[race] = build{bin, err}
		return bin, err
	}
	if builds.dir == "" {
		dir, err := buildsDir()
		if err != nil {
			return "", err
		}
		builds.dir = dir
	}
	dir := filepath.Join(builds.dir, buildName(race))
	bin, err := "", os.Mkdir(dir, 0o755)
	if err == nil {
		bin, err = Build(dir, race)
	}
	builds.of[race] = build{bin, err}
	return bin, err
}

// buildName names the directory of the build for race.
func buildName(race bool) string {
	if race {
		return "race"
	}
	return "plain"
}

// sharedBuild returns the exporter built for race in the shared directory of builds,
// building it there first if no test binary did: under a lock on the directory's file of
// that build, so that the test binaries that want it at the same time wait for one build.
// The binary takes its name once it is whole; a build that failed is tried again by the
// next test binary.
func sharedBuild(shared string, race bool) (string, error) {
	name := buildName(race)
	lock, err := os.OpenFile(filepath.Join(shared, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close() // which lets go of the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	dir := filepath.Join(shared, name)
	bin := filepath.Join(dir, "logwindow_exporter")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	tmp, err := os.MkdirTemp(shared, name+".tmp-*")
	if err != nil {
		return "", err
	}
	if _, err := Build(tmp, race); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return bin, nil
}

// FreeAddr returns a loopback address, "127.0.0.1:port", that nothing listened on a
// moment ago. Another program may take it before the caller's program binds it, which
// then fails loudly rather than talking to the wrong server.
func FreeAddr() (string, error) {
	a, err := freeTCPAddr()
	if err != nil {
		return "", err
	}
	return a.String(), nil
}

// FreePort is the port of a FreeAddr, failing tb when there is none.
func FreePort(tb testing.TB) int {
	tb.Helper()
	a, err := freeTCPAddr()
	if err != nil {
		tb.Fatal(err)
	}
	return a.Port
}

// FreeUDPPort is a loopback UDP port nothing received on a moment ago, for a syslog input:
// its address may not name port 0, which no sender could be given.
func FreeUDPPort(tb testing.TB) int {
	tb.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

func freeTCPAddr() (*net.TCPAddr, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr), nil
}

// Required is set by LOGWINDOW_E2E=1, as CI runs the tests after installing every program
// they use: a test that misses one fails then instead of skipping.
var Required = os.Getenv("LOGWINDOW_E2E") == "1"

// LookTools returns the path of each named program, looked for on PATH, then in /usr/sbin
// (where Debian installs nginx, off a non-root user's PATH). When any is missing it skips
// tb, naming them all and install (how to get them), or fails it when Required.
func LookTools(tb testing.TB, install string, names ...string) map[string]string {
	tb.Helper()
	paths := map[string]string{}
	var missing []string
	for _, name := range names {
		p, err := exec.LookPath(name)
		if err != nil {
			p, err = exec.LookPath(filepath.Join("/usr/sbin", name))
		}
		if err != nil {
			missing = append(missing, name)
			continue
		}
		paths[name] = p
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("%s not on PATH nor in /usr/sbin (%s)", strings.Join(missing, ", "), install)
		if Required {
			tb.Fatal(msg + " with LOGWINDOW_E2E=1")
		}
		tb.Skip(msg)
	}
	return paths
}

// Tail returns about the last n lines of a file, for failure reports; the error's text
// when the file cannot be read, since a report should not fail for want of it.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
