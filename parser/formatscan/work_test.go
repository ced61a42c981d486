package formatscan

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// readEscapesEnv, set, makes TestEscapesLinear read its crafted lines itself, in the
// process cachegrind counts: the value is the line's escape sequences.
const readEscapesEnv = "FORMATSCAN_READ_ESCAPES"

// TestEscapesLinear counts, with valgrind's cachegrind, the instructions of a process that
// reads 256 KiB of lines of combined (escape=json) whose user agent is backslashes, each
// written \\: in lines of 1 KiB and of 64 KiB. The work of an escaped value is linear in
// its length: the larger lines may take at most a quarter more. The stop of the value,
// searched for again after every escape sequence, made a line's work the square of its
// length, the 64 KiB lines' twenty times the 1 KiB ones'. Counts, not time: the same on a
// loaded machine.
func TestEscapesLinear(t *testing.T) {
	f := format(t, "combined", logformat.EscapeJSON, false)
	if n := os.Getenv(readEscapesEnv); n != "" {
		escapes, err := strconv.Atoi(n)
		if err != nil {
			t.Fatal(err)
		}
		_, s := compiled(t, f)
		line := []byte(`1.2.3.4 - - [30/Nov/2026:23:19:46 +0000] "GET / HTTP/1.1" 401 157 "-" "` + strings.Repeat(`\\`, escapes) + `"`)
		caps := make([]int, 2*(len(f.Captures)+1))
		for range 256 << 10 / len(line) {
			if !s.Match(line, caps) {
				t.Fatal("the line does not fit")
			}
		}
		return
	}
	if testing.Short() || race.Enabled {
		t.Skip("runs the test binary under valgrind; the race detector's counts are not a normal build's")
	}
	testexec.LookTools(t, "Debian: apt-get install valgrind", "valgrind")
	refs := regexp.MustCompile(`I\s+refs:\s+([0-9,]+)`)
	count := func(escapes int) uint64 {
		cmd := exec.Command("valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
			os.Args[0], "-test.run=^TestEscapesLinear$", "-test.count=1")
		// valgrind 3.19 does not know RDTSCP, which Go's runtime reads the clock with.
		cmd.Env = append(os.Environ(), readEscapesEnv+"="+strconv.Itoa(escapes), "GODEBUG=cpu.rdtscp=off", "GOMAXPROCS=1", "GOGC=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		m := refs.FindSubmatch(stderr.Bytes())
		if m == nil {
			t.Fatalf("no instruction count in cachegrind's output:\n%s", stderr.String())
		}
		n, err := strconv.ParseUint(strings.ReplaceAll(string(m[1]), ",", ""), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	small, large := count(1<<10/2), count(64<<10/2)
	t.Logf("256 KiB in lines of 1 KiB: %d instructions; of 64 KiB: %d", small, large)
	if large > small+small/4 {
		t.Errorf("lines of 64 KiB take %d instructions, %.2f times the %d of lines of 1 KiB: want at most 1.25 times", large, float64(large)/float64(small), small)
	}
}
