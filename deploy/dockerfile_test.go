package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/deploy/internal/release"
	"github.com/logwindow/logwindow_exporter/internal/testutil/deploytest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int    // where it starts, for messages
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// parseDockerfile splits a Dockerfile into instructions as docker's parser does for the
// default escape character: comment lines dropped (also inside a continuation), a trailing
// backslash joining the next line.
func parseDockerfile(text string) ([]instruction, error) {
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(l)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if body, ok := strings.CutSuffix(strings.TrimRight(l, " \t"), `\`); ok {
			cur.WriteString(body)
			continue
		}
		cur.WriteString(l)
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("line %d: continuation at the end of the file", start)
	}
	return out, nil
}

// shellWords splits a shell command line the way sh would for the simple commands a
// Dockerfile RUN should hold: quotes, backslash escapes and ${VAR}/$VAR expansion from env.
// Anything that would make sh do more (; | & < > ( ) `, $(...), globs, an unset variable,
// an unquoted expansion that would be split) is an error, which keeps the RUN line simple
// enough to be run here exactly as docker runs it.
func shellWords(s string, env map[string]string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	expand := func(i int, quoted bool) (int, error) {
		j := i + 1
		var name string
		switch {
		case j < len(s) && s[j] == '{':
			end := strings.IndexByte(s[j:], '}')
			if end < 0 {
				return 0, fmt.Errorf("unclosed ${ at %d", i)
			}
			name, j = s[j+1:j+end], j+end+1
		case j < len(s) && s[j] == '(':
			return 0, fmt.Errorf("command substitution at %d", i)
		default:
			k := j
			for k < len(s) && (s[k] == '_' || s[k] >= 'A' && s[k] <= 'Z' || s[k] >= 'a' && s[k] <= 'z' || k > j && s[k] >= '0' && s[k] <= '9') {
				k++
			}
			name, j = s[j:k], k
		}
		v, ok := env[name]
		if !ok {
			return 0, fmt.Errorf("$%s is not a declared ARG", name)
		}
		if !quoted && strings.ContainsAny(v, " \t\n*?[") {
			return 0, fmt.Errorf("unquoted $%s expands to %q, which sh would split or glob", name, v)
		}
		w.WriteString(v)
		return j, nil
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			i++
		case strings.IndexByte(";|&<>()`", c) >= 0:
			return nil, fmt.Errorf("shell operator %q at %d", c, i)
		case strings.IndexByte("*?[", c) >= 0:
			return nil, fmt.Errorf("unquoted glob %q at %d", c, i)
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unclosed ' at %d", i)
			}
			w.WriteString(s[i+1 : i+1+end])
			inWord, i = true, i+end+2
		case c == '"':
			inWord = true
			i++
			for {
				if i >= len(s) {
					return nil, fmt.Errorf("unclosed \"")
				}
				switch d := s[i]; {
				case d == '"':
					i++
				case d == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\", s[i+1]) >= 0:
					w.WriteByte(s[i+1])
					i += 2
					continue
				case d == '`':
					return nil, fmt.Errorf("command substitution at %d", i)
				case d == '$':
					j, err := expand(i, true)
					if err != nil {
						return nil, err
					}
					i = j
					continue
				default:
					w.WriteByte(d)
					i++
					continue
				}
				break
			}
		case c == '\\':
			if i+1 < len(s) {
				w.WriteByte(s[i+1])
			}
			inWord, i = true, i+2
		case c == '$':
			j, err := expand(i, false)
			if err != nil {
				return nil, err
			}
			inWord, i = true, j
		default:
			w.WriteByte(c)
			inWord = true
			i++
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

func TestShellWords(t *testing.T) {
	env := map[string]string{"V": "1.2", "SP": "a b"}
	cases := []struct {
		name, in string
		want     []string
		wantErr  string
	}{
		{"plain", "go build  -o /out/x .", []string{"go", "build", "-o", "/out/x", "."}, ""},
		{"double quotes expand", `-ldflags "-X a.V=${V}  -X a.W=$V"`, []string{"-ldflags", "-X a.V=1.2  -X a.W=1.2"}, ""},
		{"single quotes do not", `'$V' "\$V"`, []string{"$V", "$V"}, ""},
		{"quoted space kept", `"$SP"`, []string{"a b"}, ""},
		{"joined pieces", `a"b"'c'\ d`, []string{"abc d"}, ""},
		{"env assignment", "CGO_ENABLED=0 go build", []string{"CGO_ENABLED=0", "go", "build"}, ""},
		{"unknown var", "go build -X=$NOPE", nil, "not a declared ARG"},
		{"unquoted split", "echo $SP", nil, "would split"},
		{"operator", "go mod download && go build", nil, "shell operator"},
		{"glob", "go build ./cmd/*", nil, "unquoted glob"},
		{"default value", "echo ${V:-x}", nil, "not a declared ARG"},
		{"substitution", `echo "$(date)"`, nil, "command substitution"},
		{"unclosed", `echo "x`, nil, "unclosed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := shellWords(c.in, env)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// dockerfile is what the tests need of ../Dockerfile.
type dockerfile struct {
	stages   [][]instruction // instructions after each FROM, FROM first
	globalGo string          // default of the GO_VERSION ARG before the first FROM
}

func loadDockerfile(t *testing.T) *dockerfile {
	t.Helper()
	text, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	ins, err := parseDockerfile(string(text))
	if err != nil {
		t.Fatal(err)
	}
	df := &dockerfile{}
	for _, in := range ins {
		switch {
		case in.cmd == "FROM":
			df.stages = append(df.stages, []instruction{in})
		case len(df.stages) == 0 && in.cmd == "ARG":
			if v, ok := strings.CutPrefix(in.args, "GO_VERSION="); ok {
				df.globalGo = v
			}
		case len(df.stages) == 0:
			t.Fatalf("Dockerfile:%d: %s before FROM", in.line, in.cmd)
		default:
			df.stages[len(df.stages)-1] = append(df.stages[len(df.stages)-1], in)
		}
	}
	if len(df.stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a runtime stage", len(df.stages))
	}
	return df
}

// execForm decodes a JSON-array (exec form) instruction argument.
func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	var args []string
	if err := json.Unmarshal([]byte(in.args), &args); err != nil {
		t.Fatalf("Dockerfile:%d: %s is not in exec form (a JSON array): %v", in.line, in.cmd, err)
	}
	return args
}

// buildCommand returns the build stage's `go build` as docker would run it with the given
// build args, and the path the binary is written to.
func (df *dockerfile) buildCommand(t *testing.T, buildArgs map[string]string) (env, argv []string, out string) {
	t.Helper()
	vars := map[string]string{}
	var run *instruction
	for i, in := range df.stages[0] {
		switch in.cmd {
		case "ARG":
			name, def, _ := strings.Cut(in.args, "=")
			vars[name] = def
			if v, ok := buildArgs[name]; ok {
				vars[name] = v
			}
		case "RUN":
			if strings.Contains(in.args, "go build") {
				if run != nil {
					t.Fatalf("Dockerfile:%d: a second go build", in.line)
				}
				run = &df.stages[0][i]
			}
		}
	}
	if run == nil {
		t.Fatal("no RUN go build in the first stage")
	}
	for name := range buildArgs {
		if _, ok := vars[name]; !ok {
			t.Fatalf("build arg %s is not declared in the build stage", name)
		}
	}
	words, err := shellWords(run.args, vars)
	if err != nil {
		t.Fatalf("Dockerfile:%d: %v", run.line, err)
	}
	for len(words) > 0 && regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`).MatchString(words[0]) {
		env, words = append(env, words[0]), words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		t.Fatalf("Dockerfile:%d: RUN is %q, want a plain go build", run.line, words)
	}
	out, ok := flagValue(words, "-o")
	if !ok {
		t.Fatalf("Dockerfile:%d: go build without -o", run.line)
	}
	return env, words, out
}

func TestDockerfile(t *testing.T) {
	df := loadDockerfile(t)
	build, final := df.stages[0], df.stages[len(df.stages)-1]

	from := strings.Fields(build[0].args)
	if len(from) != 3 || !strings.EqualFold(from[1], "AS") || from[0] != "golang:${GO_VERSION}" {
		t.Errorf("build stage is FROM %s, want golang:${GO_VERSION} AS <name>", build[0].args)
	}
	// The Go the tests ran with, which TestWorkflowsGo holds to one that builds the module:
	// a floating golang:1.26 would build the image with whatever 1.26.x is newest that day.
	if pinned := strings.TrimSpace(string(mustRead(t, "../"+goVersionFile))); df.globalGo != pinned {
		t.Errorf("ARG GO_VERSION=%s, want %s's %s, the Go the tests and the release run with", df.globalGo, goVersionFile, pinned)
	}

	env, argv, out := df.buildCommand(t, nil)
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("go build runs with %q, want CGO_ENABLED=0 for a static binary", env)
	}
	if !slices.Contains(argv, "-trimpath") {
		t.Error("go build without -trimpath: the binary would hold the build machine's paths")
	}
	if !slices.Contains(argv, "-pgo="+release.PGO) {
		t.Errorf("go build %q without -pgo=%s: the image's binary would not be cmd/image's, optimized by the release profile", argv, release.PGO)
	}
	if argv[len(argv)-1] != "." {
		t.Errorf("go build of %q, want the root package .", argv[len(argv)-1])
	}

	base := strings.Fields(final[0].args)[0]
	if base != "scratch" && !strings.HasPrefix(base, "gcr.io/distroless/static") {
		t.Errorf("runtime stage FROM %s, want scratch or distroless static", base)
	}
	byCmd := map[string][]instruction{}
	for _, in := range final[1:] {
		byCmd[in.cmd] = append(byCmd[in.cmd], in)
	}
	for _, cmd := range []string{"USER", "EXPOSE", "ENTRYPOINT", "CMD"} {
		if len(byCmd[cmd]) != 1 {
			t.Fatalf("runtime stage has %d %s, want one", len(byCmd[cmd]), cmd)
		}
	}
	uid, _, _ := strings.Cut(byCmd["USER"][0].args, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %s, want a numeric non-root uid (Kubernetes' runAsNonRoot checks it)", byCmd["USER"][0].args)
	}
	if got := byCmd["EXPOSE"][0].args; got != "9907" {
		t.Errorf("EXPOSE %s, want the default port 9907", got)
	}

	copies := map[string]string{} // destination -> source, --from= included
	modes := map[string]string{}  // destination -> --chmod=
	for _, in := range byCmd["COPY"] {
		f := strings.Fields(in.args)
		var src []string
		for _, w := range f[:len(f)-1] {
			if mode, ok := strings.CutPrefix(w, "--chmod="); ok {
				modes[f[len(f)-1]] = mode
			} else {
				src = append(src, w)
			}
		}
		copies[f[len(f)-1]] = strings.Join(src, " ")
	}
	entry := execForm(t, byCmd["ENTRYPOINT"][0])
	stageName := strings.Fields(build[0].args)[2]
	if len(entry) != 1 || copies[entry[0]] != "--from="+stageName+" "+out {
		t.Errorf("ENTRYPOINT %q is not the binary built to %s and copied from stage %s (copies: %q)", entry, out, stageName, copies)
	}
	config, ok := flagValue(execForm(t, byCmd["CMD"][0]), "--config.file")
	if !ok || copies[config] != "example-rules.yaml" {
		t.Errorf("CMD runs with --config.file=%s, want the path example-rules.yaml is copied to (copies: %q)", config, copies)
	}

	// The image cmd/image builds without Docker is this one: the same paths, user, port,
	// build flags and labels.
	t.Run("as cmd/image", func(t *testing.T) {
		if got := byCmd["USER"][0].args; got != release.User {
			t.Errorf("USER %s, want cmd/image's %s", got, release.User)
		}
		if port, _, _ := strings.Cut(release.Port, "/"); byCmd["EXPOSE"][0].args != port {
			t.Errorf("EXPOSE %s, want cmd/image's %s", byCmd["EXPOSE"][0].args, port)
		}
		if len(entry) != 1 || entry[0] != release.BinaryPath || config != release.RulesPath {
			t.Errorf("ENTRYPOINT %q with --config.file=%s, want cmd/image's %s and %s", entry, config, release.BinaryPath, release.RulesPath)
		}
		// COPY keeps the build context's mode: from a clone made under a umask of 027 or
		// 077 the rules would be root's alone, and the exporter, not root, could not read
		// them. The image sets cmd/image's modes instead.
		for p, want := range map[string]int{release.BinaryPath: release.BinaryMode, release.RulesPath: release.RulesMode} {
			if got, err := strconv.ParseUint(modes[p], 8, 32); err != nil || got != uint64(want) {
				t.Errorf("COPY to %s with --chmod=%q, want cmd/image's %04o, whatever the mode of the build context's file", p, modes[p], want)
			}
		}
		date, err := time.Parse(release.DateLayout, testBuildArgs["BUILD_DATE"])
		if err != nil {
			t.Fatal(err)
		}
		want, err := release.Stamp{
			Version:   testBuildArgs["VERSION"],
			Revision:  testBuildArgs["REVISION"],
			Branch:    testBuildArgs["BRANCH"],
			BuildUser: testBuildArgs["BUILD_USER"],
			Date:      date,
		}.LDFlags()
		if err != nil {
			t.Fatal(err)
		}
		_, argv, _ := df.buildCommand(t, testBuildArgs)
		if got, _ := flagValue(argv, "-ldflags"); !slices.Equal(strings.Fields(got), strings.Fields(want)) {
			t.Errorf("go build -ldflags %q,\nwant cmd/image's %q", got, want)
		}
		args := map[string]bool{}
		labels := map[string]string{}
		for _, in := range final[1:] {
			switch in.cmd {
			case "ARG":
				args[in.args] = true
			case "LABEL":
				for _, m := range regexp.MustCompile(`([\w.-]+)="([^"]*)"`).FindAllStringSubmatch(in.args, -1) {
					labels[m[1]] = m[2]
				}
			}
		}
		wantLabels := map[string]string{
			"org.opencontainers.image.title":    release.ImageName,
			"org.opencontainers.image.source":   release.Source,
			"org.opencontainers.image.version":  "${VERSION}",
			"org.opencontainers.image.revision": "${REVISION}",
		}
		if !maps.Equal(labels, wantLabels) {
			t.Errorf("LABEL %v, want %v", labels, wantLabels)
		}
		// An ARG of the build stage is unset in the runtime stage until declared again.
		if !args["VERSION"] || !args["REVISION"] {
			t.Errorf("runtime stage declares ARG %v: the labels would be empty", args)
		}
	})
}

// dockerignore reads ../.dockerignore; only the pattern forms it needs are supported
// (no ! exceptions), so that the test's reading is docker's.
func dockerignore(t *testing.T) []*regexp.Regexp {
	t.Helper()
	text, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var res []*regexp.Regexp
	for _, l := range strings.Split(string(text), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "!") || strings.ContainsAny(l, "[\\") {
			t.Fatalf(".dockerignore: %q: keep to plain paths, * , ? and **", l)
		}
		re := regexp.QuoteMeta(strings.Trim(filepath.ToSlash(filepath.Clean(l)), "/"))
		re = strings.NewReplacer(`\*\*/`, `(.*/)?`, `\*\*`, `.*`, `\*`, `[^/]*`, `\?`, `[^/]`).Replace(re)
		res = append(res, regexp.MustCompile("^"+re+"$"))
	}
	return res
}

// ignored says whether docker leaves p (slash-separated, relative to the context) out of
// the build context: when p or a directory above it matches a pattern.
func ignored(patterns []*regexp.Regexp, p string) bool {
	for dir := p; dir != "."; dir = filepath.ToSlash(filepath.Dir(dir)) {
		for _, re := range patterns {
			if re.MatchString(dir) {
				return true
			}
		}
	}
	return false
}

func TestDockerignoreMatching(t *testing.T) {
	patterns := []*regexp.Regexp{}
	for _, p := range []string{`^deploy$`, `^(.*/)?[^/]*\.log$`} {
		patterns = append(patterns, regexp.MustCompile(p))
	}
	cases := []struct {
		path string
		want bool
	}{
		{"deploy/k8s/x.yaml", true},
		{"deployment.go", false},
		{"a.log", true},
		{"follow/testdata/b.log", true},
		{"follow/log.go", false},
	}
	for _, c := range cases {
		if got := ignored(patterns, c.path); got != c.want {
			t.Errorf("ignored(%s) = %v, want %v", c.path, got, c.want)
		}
	}
}

// testBuildArgs are recognisable build args, so --version shows they reached the binary.
var testBuildArgs = map[string]string{
	"VERSION":    "9.8.7-dockerfile-test",
	"REVISION":   "0123456789abcdef",
	"BRANCH":     "test-branch",
	"BUILD_USER": "deploy-test",
	"BUILD_DATE": "20240301-12:00:00",
}

// binary is the exporter built once per test run by builtBinary.
var binary struct {
	once sync.Once
	dir  string // removed by TestMain
	path string
	skip string // why the exporter could not be built
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// builtBinary builds the exporter with the Dockerfile's own go build command and
// testBuildArgs, so the tests see what the image would hold. It skips while the exporter
// does not build (and fails then under LOGWINDOW_E2E=1).
func builtBinary(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("../main.go"); err != nil {
		t.Skip("no main.go yet: the exporter is not written")
	}
	env, argv, out := loadDockerfile(t).buildCommand(t, testBuildArgs)
	binary.once.Do(func() {
		dir, err := os.MkdirTemp("", "logwindow-deploy-test")
		if err != nil {
			binary.skip = err.Error()
			return
		}
		binary.dir = dir
		bin := filepath.Join(dir, filepath.Base(out))
		i := slices.Index(argv, "-o")
		argv = slices.Concat(argv[:i+1], []string{bin}, argv[i+2:])
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), env...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			binary.skip = fmt.Sprintf("the exporter does not build (%q: %v):\n%s", argv, err, msg)
			return
		}
		binary.path = bin
	})
	if binary.path == "" {
		if testexec.Required {
			t.Fatal(binary.skip)
		}
		t.Skip(binary.skip)
	}
	return binary.path
}

func TestDockerfileBuild(t *testing.T) {
	bin := builtBinary(t)

	t.Run("static", func(t *testing.T) {
		deploytest.CheckStatic(t, bin, "it is dynamically linked and will not run on distroless static")
	})
	t.Run("version", func(t *testing.T) {
		out := runTool(t, ".", bin, "--version")
		for name, v := range testBuildArgs {
			if !strings.Contains(out, v) {
				t.Errorf("--version does not show build arg %s=%s:\n%s", name, v, out)
			}
		}
	})
	t.Run("default port", func(t *testing.T) {
		out, _ := exec.Command(bin, "--help").CombinedOutput()
		if !regexp.MustCompile(`--web\.listen-address=\S*:9907\b`).Match(out) {
			t.Errorf("--help does not show :9907 as the default listen address, which EXPOSE and the manifests use:\n%s", out)
		}
	})
	t.Run("image config is valid", func(t *testing.T) {
		runTool(t, ".", bin, "--config.check", "--config.file=../example-rules.yaml")
	})
	t.Run("dockerignore keeps the build inputs", func(t *testing.T) {
		patterns := dockerignore(t)
		cmd := exec.Command("go", "list", "-deps", "-f", `{{if .Module}}{{if .Module.Main}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{range .EmbedFiles}} {{.}}{{end}}{{end}}{{end}}`, ".")
		cmd.Dir = ".."
		list, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		root, err := filepath.Abs("..")
		if err != nil {
			t.Fatal(err)
		}
		need := []string{"go.mod", "go.sum", "example-rules.yaml"}
		for _, l := range strings.Split(strings.TrimSpace(string(list)), "\n") {
			f := strings.Fields(l)
			rel, err := filepath.Rel(root, f[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range f[1:] {
				need = append(need, filepath.ToSlash(filepath.Join(rel, name)))
			}
		}
		for _, p := range need {
			if ignored(patterns, p) {
				t.Errorf(".dockerignore leaves out %s, which the build needs", p)
			}
		}
	})
}
