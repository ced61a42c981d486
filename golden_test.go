package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current output")

// TestReplayGolden replays bundled logs through the command line's one-shot mode and
// compares the exposition text with a golden file. After an intended change of output, run
// `go test -run TestReplayGolden -update .` and review the diff of testdata/.
func TestReplayGolden(t *testing.T) {
	cases := []struct {
		name   string
		config string
		logs   []string
	}{
		{"example-rules", "example-rules.yaml", []string{"examples/access.log"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"--config.file=" + c.config}
			for _, l := range c.logs {
				args = append(args, "--replay="+l)
			}
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			golden := filepath.Join("testdata", c.name+".prom")
			if *update {
				if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(stdout.Bytes(), want) {
				t.Errorf("replay output differs from %s; rerun with -update and review the diff.\n%s", golden, firstDiff(stdout.Bytes(), want))
			}
			// Replaying twice gives the same output: nothing depends on the wall clock.
			var again bytes.Buffer
			if code := run(args, &again, &stderr); code != 0 || !bytes.Equal(again.Bytes(), stdout.Bytes()) {
				t.Errorf("second replay differs from the first (exit %d)", code)
			}
		})
	}
}

// firstDiff shows the first line where got and want part.
func firstDiff(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < len(g) && i < len(w); i++ {
		if !bytes.Equal(g[i], w[i]) {
			return "got:  " + string(g[i]) + "\nwant: " + string(w[i])
		}
	}
	return "one output is a prefix of the other"
}
