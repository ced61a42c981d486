package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

var update = flag.Bool("update", false, "rewrite testdata/instructions.json from this tree's counts")

func TestPackageOf(t *testing.T) {
	cases := []struct{ symbol, want string }{
		{"github.com/logwindow/logwindow_exporter/parser.(*scratch).apply", "parser"},
		{"github.com/logwindow/logwindow_exporter/parser/formatscan.(*Scanner).scanFrom", "parser/formatscan"},
		{"github.com/logwindow/logwindow_exporter/internal/store.(*Sink).Event.func1", "internal/store"},
		{"github.com/logwindow/logwindow_exporter/windows/sketch.init", "windows/sketch"},
		{"main.main", ""},
		{"runtime.mallocgc", ""},
		{"github.com/prometheus/client_golang/prometheus.(*Registry).Gather", ""},
		{"github.com/logwindow/logwindow_exporter/", ""},
	}
	for _, tc := range cases {
		t.Run(tc.symbol, func(t *testing.T) {
			if got := packageOf(tc.symbol); got != tc.want {
				t.Errorf("packageOf(%q) = %q, want %q", tc.symbol, got, tc.want)
			}
		})
	}
}

func TestParseCachegrind(t *testing.T) {
	in, err := readCachegrind(filepath.Join("testdata", "cachegrind.out"))
	if err != nil {
		t.Fatal(err)
	}
	// A function's package is its symbol's, not its file's: parseBlock, with parser's
	// files.go inlined, counts for the pipeline.
	want := map[string]uint64{"parser": 1300, "parser/formatscan": 3000, "internal/pipeline": 500}
	if in.total != 5307 || !maps.Equal(in.packages, want) || in.module() != 4800 {
		t.Errorf("read %d in all, %v (module %d); want 5307, %v (module 4800)", in.total, in.packages, in.module(), want)
	}
	bad := []struct{ name, text string }{
		{"no summary", "events: Ir\nfn=github.com/logwindow/logwindow_exporter/parser.f\n1 2\n"},
		{"bad count", "events: Ir\nfn=github.com/logwindow/logwindow_exporter/parser.f\n1 x\nsummary: 2\n"},
		{"bad summary", "events: Ir\nsummary: many\n"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseCachegrind(strings.NewReader(tc.text)); err == nil {
				t.Error("no error")
			}
		})
	}
}

// budget is testdata/instructions.json: the instructions a line the exporter built from
// the tree executed, under cachegrind, in the benchmark's run of Lines lines of each rule
// file, with the Go release that built it.
type budget struct {
	Go    string                `json:"go"`
	Lines int                   `json:"lines"`
	Rules map[string]ruleBudget `json:"rules"`
}

// ruleBudget is one rule file's instructions a line: a line's parse (parsePackages), the
// store's, the module's code, and the process.
type ruleBudget struct {
	Parse   float64 `json:"parse"`
	Store   float64 `json:"store"`
	Module  float64 `json:"module"`
	Process float64 `json:"process"`
}

// Budget margins, the most each count may grow. The parse moves by a hundredth of a
// percent from one run to the next; the store by a tenth or two, more on a loaded machine (how
// far behind the clock the lines are read); the module's code by up to 3% more when a run crosses the wall
// clock's minute and every series' slots roll up; the process by up to 7% on a loaded
// machine (the runtime's scheduling, collections and spinning threads). The parse may not
// fall by 2% either, so that a gain is written down (-update) before a later change can
// spend it unseen.
const (
	parseOver, parseUnder = 1.003, 0.98
	storeOver             = 1.03
	moduleOver            = 1.04
	processOver           = 1.15
	// otherGo is the margin when another Go release builds the exporter than the one the
	// budget was counted with: its compiler may place and inline differently.
	otherGo = 1.10
)

// TestInstructionBudget counts, under valgrind's cachegrind, the instructions a line the
// exporter executes in the benchmark's live run of the example rules and of -like-mtail's,
// and holds them to testdata/instructions.json. Unlike CPU time, a count no neighbour on a
// shared machine moves: a change that makes the module's per-line work half a percent
// longer fails here, where a timed benchmark needs many runs on a quiet machine to see
// 2%. A change that is meant to cost instructions (or that saves them) rewrites the budget
// with -update, and its commit says why.
func TestInstructionBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the exporter and runs it under valgrind")
	}
	testexec.LookTools(t, "Debian: apt-get install valgrind", "valgrind")
	gen := generator(t)
	bin := testexec.BuildExporter(t, false)
	version, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "instructions.json")
	var b budget
	if data, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(data, &b); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	goVersion := strings.TrimSpace(string(version))
	counted := budget{Go: goVersion, Lines: b.Lines, Rules: map[string]ruleBudget{}}
	row := func(out, name string) float64 {
		m := regexp.MustCompile(`(?m)^\s*` + name + `\s+([0-9.]+)\s*$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no %q row in the benchmark's output:\n%s", name, out)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	for _, rules := range []string{"example", "like-mtail"} {
		t.Run(rules, func(t *testing.T) {
			args := []string{"-gen", gen, "-bin", bin, "-config", filepath.Join("..", "example-rules.yaml"),
				"-instructions", "-runs", "1", "-lines", strconv.Itoa(b.Lines), "-timeout", "2m"}
			if rules == "like-mtail" {
				args = append(args, "-like-mtail")
			}
			var out, errOut bytes.Buffer
			if code := run(args, &out, &errOut); code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
			}
			got := ruleBudget{Parse: row(out.String(), "parse"), Store: row(out.String(), "store"),
				Module: row(out.String(), "module"), Process: row(out.String(), "process")}
			t.Logf("%s: instructions a line %+v (budget %+v, %s)", rules, got, b.Rules[rules], b.Go)
			if counted.Rules[rules] = got; *update {
				return
			}
			want, ok := b.Rules[rules]
			if !ok {
				t.Fatalf("%s has no budget for %s: run with -update", path, rules)
			}
			under := parseUnder
			checks := []struct {
				what      string
				got, want float64
				over      float64
			}{
				{"a line's parse", got.Parse, want.Parse, parseOver},
				{"the store", got.Store, want.Store, storeOver},
				{"the module's code", got.Module, want.Module, moduleOver},
				{"the process", got.Process, want.Process, processOver},
			}
			if goVersion != b.Go {
				t.Logf("the budget was counted with %s, this is %s: margins of %.0f%%", b.Go, goVersion, 100*(otherGo-1))
				under = 1 / otherGo
				for i := range checks {
					checks[i].over = max(checks[i].over, otherGo)
				}
			}
			for _, c := range checks {
				if c.got > c.want*c.over {
					t.Errorf("%s executes %.1f instructions a line, %.2f%% over its budget of %.1f: find the change, or rewrite the budget with -update and say why", c.what, c.got, 100*(c.got/c.want-1), c.want)
				}
			}
			if got.Parse < want.Parse*under {
				t.Errorf("a line's parse executes %.1f instructions, %.2f%% under its budget of %.1f: keep the gain with -update", got.Parse, 100*(1-got.Parse/want.Parse), want.Parse)
			}
		})
	}
	if *update && !t.Failed() {
		data, err := json.MarshalIndent(counted, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
