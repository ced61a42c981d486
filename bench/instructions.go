package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
)

// modulePrefix begins the symbol of every function of the module's packages but main.
const modulePrefix = "github.com/logwindow/logwindow_exporter/"

// cachegrind is the command line -instructions runs the exporter under: valgrind's
// cachegrind counting the instructions executed (no cache simulation, which would slow
// it several times more), its counts written to out.
func cachegrind(out string) []string {
	return []string{"valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=" + out}
}

// cachegrindEnv is added to the environment of a program run under cachegrind: Go's
// runtime reads the clock with RDTSCP where the CPU has it, an instruction valgrind 3.19
// cannot run (SIGILL).
const cachegrindEnv = "GODEBUG=cpu.rdtscp=off"

// instructions are the instructions one run executed, as cachegrind counted them.
type instructions struct {
	// total is every instruction of the process: its start, the reading, the parse and
	// the store, the scrapes, the runtime and the garbage collector.
	total uint64
	// packages are the instructions in the functions of each of the module's packages
	// ("parser/formatscan"), the runtime's and the standard library's they call not
	// included: the part of total a change of the module moves, to the instruction, from
	// one run to the next (the rest, the runtime's, moves by a percent).
	packages map[string]uint64
}

// module is the sum of the module's packages.
func (in instructions) module() uint64 {
	var n uint64
	for _, v := range in.packages {
		n += v
	}
	return n
}

// parsePackages are the packages whose instructions are a line's parse and nothing else:
// the same to a hundredth of a percent from one run to the next, whatever the load. The
// store's move by a tenth or two with how far behind the clock the lines are when read
// (the log is dated to end when it is written, the run starts later); the wheels' and the
// sketches' by a few percent when a run crosses the wall clock's minute and every series'
// slots roll up.
var parsePackages = []string{"parser", "parser/formatscan", "internal/pipeline"}

// parse is the sum of parsePackages.
func (in instructions) parse() uint64 {
	var n uint64
	for _, p := range parsePackages {
		n += in.packages[p]
	}
	return n
}

// readCachegrind reads the counts cachegrind wrote: each function's lines ("fn=" then
// "line count" pairs) summed by the package of the function, and the total from the
// "summary:" line.
func readCachegrind(path string) (instructions, error) {
	f, err := os.Open(path)
	if err != nil {
		return instructions{}, err
	}
	defer f.Close()
	return parseCachegrind(f)
}

func parseCachegrind(r io.Reader) (instructions, error) {
	in := instructions{packages: map[string]uint64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	pkg, summary := "", false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "fn="):
			pkg = packageOf(line[len("fn="):])
		case strings.HasPrefix(line, "summary:"):
			v, err := strconv.ParseUint(strings.TrimSpace(line[len("summary:"):]), 10, 64)
			if err != nil {
				return in, fmt.Errorf("cachegrind summary %q: %w", line, err)
			}
			in.total, summary = v, true
		case pkg != "" && line != "" && line[0] >= '0' && line[0] <= '9':
			_, count, ok := strings.Cut(line, " ")
			v, err := strconv.ParseUint(count, 10, 64)
			if !ok || err != nil {
				return in, fmt.Errorf("cachegrind line %q: want a line number and a count", line)
			}
			in.packages[pkg] += v
		}
	}
	if err := sc.Err(); err != nil {
		return in, err
	}
	if !summary {
		return in, fmt.Errorf("no summary: line (did cachegrind finish?)")
	}
	return in, nil
}

// packageOf is the module's package of a function's symbol, without the module's path,
// or "" for a function of another module or of the main package.
func packageOf(symbol string) string {
	rest, ok := strings.CutPrefix(symbol, modulePrefix)
	if !ok {
		return ""
	}
	slash := strings.LastIndexByte(rest, '/') + 1
	dot := strings.IndexByte(rest[slash:], '.')
	if dot < 0 {
		return ""
	}
	return rest[:slash+dot]
}

// medianInstructions is the median of each count over the runs (the total's and each
// package's on its own).
func medianInstructions(us []usage) instructions {
	pick := func(f func(usage) uint64) uint64 {
		v := make([]float64, len(us))
		for i, u := range us {
			v[i] = float64(f(u))
		}
		slices.Sort(v)
		return uint64(sortedMedian(v))
	}
	m := instructions{total: pick(func(u usage) uint64 { return u.instr.total }), packages: map[string]uint64{}}
	for _, u := range us {
		for p := range u.instr.packages {
			if _, done := m.packages[p]; !done {
				m.packages[p] = pick(func(u usage) uint64 { return u.instr.packages[p] })
			}
		}
	}
	return m
}

// printInstructions prints each program's median instructions a line, whole and in the
// module's code, and the module's packages that take the most, a column a program.
func printInstructions(w io.Writer, names []string, med []instructions, lines []int) {
	perLine := func(v uint64, j int) string { return strconv.FormatFloat(float64(v)/float64(lines[j]), 'f', 1, 64) }
	fmt.Fprint(w, "instructions a line (cachegrind, medians)\t")
	for _, n := range names {
		fmt.Fprintf(w, "%s\t", n)
	}
	fmt.Fprintln(w)
	row := func(label string, f func(instructions) uint64) {
		fmt.Fprintf(w, "%s\t", label)
		for j, m := range med {
			fmt.Fprintf(w, "%s\t", perLine(f(m), j))
		}
		fmt.Fprintln(w)
	}
	row("process", func(m instructions) uint64 { return m.total })
	row("module", instructions.module)
	row("parse", instructions.parse)
	row("store", func(m instructions) uint64 { return m.packages["internal/store"] })
	all := map[string]uint64{}
	for _, m := range med {
		for p, v := range m.packages {
			all[p] = max(all[p], v)
		}
	}
	pkgs := slices.SortedFunc(maps.Keys(all), func(a, b string) int { return cmp.Compare(all[b], all[a]) })
	for _, p := range pkgs[:min(len(pkgs), 8)] {
		row("  "+p, func(m instructions) uint64 { return m.packages[p] })
	}
}
