// Command mutation measures how well the core's tests catch a changed
// line: it applies one mutation at a time to the core's security-relevant
// files and runs their packages' tests against each mutant. A mutant the
// tests fail on (or time out on) is killed; one they pass survives, and
// names a behaviour no test holds.
//
// Run it from the module root (the whole sweep takes 30 to 60 minutes on
// two shared cores; docs/SECURITY.md, "Mutation testing", holds the last
// score and its survivors):
//
//	nice -n 10 go run ./internal/testonly/mutation -json /tmp/mutation.json > /tmp/mutation.md
//
// and, after writing tests, run again only the survivors of that run (the
// report covers all its mutants):
//
//	go run ./internal/testonly/mutation -from /tmp/mutation.json -json /tmp/mutation2.json
//
// Mutations (parsed with go/ast): conditional boundaries (< <=, > >=),
// negated conditionals (== !=, < >=, …), arithmetic (+ - * / %, +=
// -= *= /=), ++ --, && ||, a removed !, every integer constant ±1 (switch
// cases and constant declarations included; array lengths, which are
// types, left out), a dropped call statement (other than locking, wait
// groups and log lines), a returned err made nil, and an early return
// dropped (the body of an if that ends in a return made to run never).
//
// The work tree is never touched: files are replaced with go test
// -overlay, under a private GOCACHE (removed at the end). Most mutants are
// compiled into one build (schema.go: each mutated node becomes a switch
// on the MEDIAN_MUTANT environment variable, so a mutant costs a test run,
// not a build); the rest (constant declarations, statements where only a
// simple one fits) are built one at a time, each with its file replaced by
// the mutated copy. A mutant that does not compile is discarded. A mutant
// on a line no test runs (by a coverage run first) is not run and counts
// as a survivor. A package's tests run in phases, each with -failfast: the
// tests of the mutated file's own _test files, then the quick tests, then
// those over 0.2 s in the clean run, each phase with a timeout of three
// times its clean run (at least 10 s); a timeout counts as killed and is
// reported as such. At most -j mutants run at once (default 2), under nice.
//
// It is a harness of the module's own tests (internal/testonly): no
// shipped code imports it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// defaultFiles are the core's files under test, and the packages whose
// tests run against each (in order; the first that fails kills).
var defaultFiles = []string{
	"protocol/signature.go",
	"protocol/key.go",
	"protocol/replay.go",
	"protocol/answer.go",
	"protocol/body.go",
	"protocol/policy.go",
	"protocol/keysource.go",
	"protocol/internal/memstore/memstore.go",
}

// packagesOf returns the packages (slash dirs from the module root) whose
// tests run against a mutant of file: its own, and for the memory store
// also the core, whose tests drive it through MemoryStore.
func packagesOf(file string) []string {
	dir := filepath.ToSlash(filepath.Dir(file))
	if dir == "protocol/internal/memstore" {
		return []string{dir, "protocol"}
	}
	return []string{dir}
}

// slowTest is the clean-run duration from which a test runs in the
// second phase.
const slowTest = 200 * time.Millisecond

type options struct {
	files   []string
	jobs    int
	factor  float64
	only    *regexp.Regexp
	from    string
	jsonOut string
	list    bool
	nice    int
	cover   bool
	gocache string
	verbose bool
}

type result struct {
	mutant
	Status   string  `json:"status"` // killed, survived, uncovered, uncompiled
	Timeout  bool    `json:"timeout,omitempty"`
	KilledBy string  `json:"killedBy,omitempty"` // package: test
	Seconds  float64 `json:"seconds"`
}

func main() {
	var opt options
	var files, only string
	flag.StringVar(&files, "files", strings.Join(defaultFiles, ","), "comma-separated files to mutate, slash paths from the module root")
	flag.IntVar(&opt.jobs, "j", 2, "mutants run at once")
	flag.Float64Var(&opt.factor, "timeout", 3, "a test phase times out after this many times its clean run (at least 10 s)")
	flag.StringVar(&only, "only", "", "run only mutants whose file:line matches this regexp")
	flag.StringVar(&opt.from, "from", "", "run again only the survivors (and uncovered) of this earlier -json result; the report and -json cover all its mutants")
	flag.StringVar(&opt.jsonOut, "json", "", "write every mutant's result to this file")
	flag.BoolVar(&opt.list, "list", false, "list the mutants and exit (with -cover, after a coverage run, marking those on lines no test runs)")
	flag.IntVar(&opt.nice, "nice", 10, "run builds and tests under nice -n this (0: not)")
	flag.BoolVar(&opt.cover, "cover", true, "skip mutants on lines no test runs (they count as survivors)")
	flag.StringVar(&opt.gocache, "gocache", "", "GOCACHE for the mutants' builds (default: a temporary one, removed at the end)")
	flag.BoolVar(&opt.verbose, "v", false, "print each mutant's result as it comes")
	flag.Parse()
	opt.files = strings.Split(files, ",")
	if only != "" {
		opt.only = regexp.MustCompile(only)
	}
	if err := run(opt, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mutation:", err)
		os.Exit(1)
	}
}

// runner holds what every mutant's run shares.
type runner struct {
	opt     options
	root    string // module root
	tmp     string
	env     []string
	phases  map[string][]phase  // by package
	own     map[string][]string // by mutated file: the tests of its own _test files
	bins    map[string]string   // by package: the switched build's test binary
	modPath string
	log     io.Writer
}

// phase is one run of a package's test binary: its arguments and limit.
type phase struct {
	name  string
	args  []string
	limit time.Duration
}

func run(opt options, stdout, stderr io.Writer) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "median-mutation-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	r := &runner{opt: opt, root: root, tmp: tmp, log: stderr, phases: map[string][]phase{}, own: map[string][]string{}}
	if r.modPath, err = r.goOutput("list", "-m"); err != nil {
		return err
	}
	r.modPath = strings.TrimSpace(r.modPath)
	cache := opt.gocache
	if cache == "" {
		cache = filepath.Join(tmp, "gocache")
	}
	r.env = append(os.Environ(), "GOCACHE="+cache)
	start := time.Now()

	// Mutants, numbered over all files in order; each package's files
	// parsed (and type-checked) once.
	srcs := map[string]*pkgSource{}
	var all []*mutant
	for _, f := range opt.files {
		dir := filepath.ToSlash(filepath.Dir(f))
		p, ok := srcs[dir]
		if !ok {
			if p, err = r.loadPackage(dir); err != nil {
				return err
			}
			srcs[dir] = p
		}
		file, ok := p.files[f]
		if !ok {
			return fmt.Errorf("%s is not a file of package %s", f, dir)
		}
		for _, m := range mutantsOf(p.fset, file, f, p.srcs[f]) {
			all = append(all, &m)
		}
	}
	for i, m := range all {
		m.ID = i + 1
	}
	if opt.only != nil {
		all = filter(all, func(m *mutant) bool { return opt.only.MatchString(fmt.Sprintf("%s:%d", m.File, m.Line)) })
	}
	var earlier []result
	if opt.from != "" {
		if earlier, err = readResults(opt.from); err != nil {
			return err
		}
		keep := map[string]bool{}
		for _, r := range earlier {
			if r.Status == "survived" || r.Status == "uncovered" {
				keep[key(r.mutant)] = true
			}
		}
		all = filter(all, func(m *mutant) bool { return keep[key(*m)] })
	}
	if opt.list {
		var cov coverage
		if opt.cover {
			pkgs := map[string]bool{}
			for _, f := range opt.files {
				for _, p := range packagesOf(f) {
					pkgs[p] = true
				}
			}
			if cov, err = r.coverage(pkgs); err != nil {
				return err
			}
		}
		for _, m := range all {
			note := ""
			if cov != nil && !cov.runs(*m) {
				note = " (no test runs the line)"
			}
			fmt.Fprintf(stdout, "%4d %s:%d:%d %s %s%s\n", m.ID, m.File, m.Line, m.Col, m.Kind, m.Desc, note)
		}
		return nil
	}

	pkgs := map[string]bool{}
	for _, f := range opt.files {
		for _, p := range packagesOf(f) {
			pkgs[p] = true
		}
		r.own[f] = ownTests(root, f)
	}
	var testPkgs []string
	for p := range pkgs {
		testPkgs = append(testPkgs, p)
	}
	sort.Strings(testPkgs)
	r.bins, err = r.buildSchema(srcs, all, testPkgs)
	if err != nil {
		return err
	}
	for _, p := range testPkgs {
		if err := r.calibrate(p); err != nil {
			return err
		}
	}
	results := make([]result, len(all))
	var todo []int
	var cov coverage
	if opt.cover {
		if cov, err = r.coverage(pkgs); err != nil {
			return err
		}
	}
	for i, m := range all {
		results[i] = result{mutant: *m}
		if cov != nil && !cov.runs(*m) {
			results[i].Status = "uncovered"
			continue
		}
		todo = append(todo, i)
	}
	// The switched mutants first (a test run each), then those built on
	// their own.
	sort.SliceStable(todo, func(i, j int) bool { return all[todo[i]].schema && !all[todo[j]].schema })
	fmt.Fprintf(stderr, "mutation: %d mutants, %d on lines no test runs; running %d, %d at a time\n",
		len(all), len(all)-len(todo), len(todo), opt.jobs)

	var mu sync.Mutex
	done := 0
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < max(opt.jobs, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var res result
				if all[i].schema {
					res = r.runSwitched(*all[i])
				} else {
					res = r.runMutant(*all[i])
				}
				mu.Lock()
				results[i] = res
				done++
				if opt.verbose || res.Status == "survived" {
					fmt.Fprintf(stderr, "[%d/%d] %s:%d %s: %s %s (%.1fs)\n", done, len(todo), res.File, res.Line, res.Desc, res.Status, res.KilledBy, res.Seconds)
				} else if done%25 == 0 {
					fmt.Fprintf(stderr, "[%d/%d] %s\n", done, len(todo), time.Since(start).Round(time.Second))
				}
				mu.Unlock()
			}
		}()
	}
	for _, i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()

	if earlier != nil {
		// The earlier run's results, those run again replaced.
		again := map[string]result{}
		for _, r := range results {
			again[key(r.mutant)] = r
		}
		for i, r := range earlier {
			if n, ok := again[key(r.mutant)]; ok {
				earlier[i] = n
			}
		}
		results = earlier
	}
	if opt.jsonOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(opt.jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	report(stdout, opt.files, results, time.Since(start))
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run this from inside the module")
	}
	return filepath.Dir(mod), nil
}

func filter(ms []*mutant, keep func(*mutant) bool) []*mutant {
	var out []*mutant
	for _, m := range ms {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

func key(m mutant) string { return fmt.Sprintf("%s:%d:%d:%s", m.File, m.Line, m.Col, m.Desc) }

func readResults(path string) ([]result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rs []result
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

// command returns cmd under nice when asked.
func (r *runner) command(ctx context.Context, dir string, name string, args ...string) *exec.Cmd {
	if r.opt.nice > 0 {
		if nice, err := exec.LookPath("nice"); err == nil {
			args = append([]string{"-n", strconv.Itoa(r.opt.nice), name}, args...)
			name = nice
		}
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = r.env
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// build compiles pkg's test binary into bin, with overlay when not "".
func (r *runner) build(pkg, overlay, bin string) error {
	args := []string{"test", "-c", "-o", bin}
	if overlay != "" {
		args = append(args, "-overlay="+overlay)
	}
	args = append(args, "./"+pkg)
	cmd := r.command(context.Background(), r.root, "go", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	return nil
}

var testLine = regexp.MustCompile(`^--- (PASS|SKIP): (\S+) \(([0-9.]+)s\)`)
var failLine = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)

// calibrate runs pkg's clean tests once, splits them into a quick and a
// slow phase and sets each phase's limit.
func (r *runner) calibrate(pkg string) error {
	// The switched build with no mutant active is the code as written:
	// its tests must pass (a test that fails now and then under load is
	// given three tries).
	bin := r.bins[pkg]
	fmt.Fprintf(r.log, "mutation: timing the clean tests of %s\n", pkg)
	var out []byte
	for try := 1; ; try++ {
		cmd := r.command(context.Background(), filepath.Join(r.root, pkg), bin, "-test.count=1", "-test.v")
		var err error
		if out, err = cmd.CombinedOutput(); err == nil {
			break
		}
		if try == 3 {
			return fmt.Errorf("the clean tests of %s fail; fix them first:\n%s", pkg, tail(out))
		}
	}
	var slow []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if m := testLine.FindStringSubmatch(sc.Text()); m != nil {
			if d, _ := strconv.ParseFloat(m[3], 64); d >= slowTest.Seconds() {
				slow = append(slow, regexp.QuoteMeta(m[2]))
			}
		}
	}
	base := []string{"-test.count=1", "-test.failfast"}
	var ps []phase
	if len(slow) == 0 {
		ps = []phase{{name: "all", args: base}}
	} else {
		re := "^(" + strings.Join(slow, "|") + ")$"
		ps = []phase{
			{name: "quick", args: append(append([]string{}, base...), "-test.skip="+re)},
			{name: "slow", args: append(append([]string{}, base...), "-test.run="+re)},
		}
	}
	for i := range ps {
		t0 := time.Now()
		for try := 1; ; try++ {
			cmd := r.command(context.Background(), filepath.Join(r.root, pkg), bin, ps[i].args...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				break
			}
			if try == 3 {
				return fmt.Errorf("the clean %s tests of %s fail; fix them first:\n%s", ps[i].name, pkg, tail(out))
			}
			t0 = time.Now()
		}
		ps[i].limit = max(time.Duration(r.opt.factor*float64(time.Since(t0))), 10*time.Second)
		fmt.Fprintf(r.log, "mutation: %s %s phase: %s clean, limit %s\n", pkg, ps[i].name, time.Since(t0).Round(10*time.Millisecond), ps[i].limit.Round(10*time.Millisecond))
	}
	r.phases[pkg] = ps
	return nil
}

// runMutant builds and tests one mutant.
func (r *runner) runMutant(m mutant) (res result) {
	res = result{mutant: m}
	t0 := time.Now()
	defer func() { res.Seconds = time.Since(t0).Seconds() }()
	dir := filepath.Join(r.tmp, fmt.Sprintf("m%d", m.ID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	orig := filepath.Join(r.root, filepath.FromSlash(m.File))
	src, err := os.ReadFile(orig)
	if err != nil {
		panic(err)
	}
	mutated := filepath.Join(dir, filepath.Base(m.File))
	overlay := filepath.Join(dir, "overlay.json")
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {orig: mutated}})
	if err := os.WriteFile(mutated, m.apply(src), 0o644); err != nil {
		panic(err)
	}
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		panic(err)
	}
	for i, pkg := range packagesOf(m.File) {
		bin := filepath.Join(dir, fmt.Sprintf("p%d.test", i))
		if err := r.build(pkg, overlay, bin); err != nil {
			if i == 0 {
				res.Status = "uncompiled"
				return res
			}
			res.Status, res.KilledBy = "killed", pkg+": build"
			return res
		}
		if killed, by, timedOut := r.runPhases(m, pkg, bin, nil); killed {
			res.Status, res.KilledBy, res.Timeout = "killed", pkg+": "+by, timedOut
			return res
		}
	}
	res.Status = "survived"
	return res
}

// runSwitched tests one mutant of the switched build.
func (r *runner) runSwitched(m mutant) (res result) {
	res = result{mutant: m}
	t0 := time.Now()
	defer func() { res.Seconds = time.Since(t0).Seconds() }()
	for _, pkg := range packagesOf(m.File) {
		if killed, by, timedOut := r.runPhases(m, pkg, r.bins[pkg], []string{mutantEnv + "=" + strconv.Itoa(m.ID)}); killed {
			res.Status, res.KilledBy, res.Timeout = "killed", pkg+": "+by, timedOut
			return res
		}
	}
	res.Status = "survived"
	return res
}

// runPhases runs pkg's tests from bin against mutant m: the tests of m's
// file's own _test files first (when they are pkg's), then the quick
// ones, then the slow ones, each stopping at the first failure.
func (r *runner) runPhases(m mutant, pkg, bin string, env []string) (killed bool, by string, timedOut bool) {
	phases := r.phases[pkg]
	if own := r.own[m.File]; len(own) > 0 && filepath.ToSlash(filepath.Dir(m.File)) == pkg && len(phases) > 0 {
		limit := phases[0].limit
		for _, p := range phases[1:] {
			limit = max(limit, p.limit)
		}
		phases = append([]phase{{name: "own", args: []string{"-test.count=1", "-test.failfast", "-test.run=^(" + strings.Join(own, "|") + ")$"}, limit: limit}}, phases...)
	}
	for _, ph := range phases {
		ctx, cancel := context.WithTimeout(context.Background(), ph.limit)
		args := append(append([]string{}, ph.args...), "-test.timeout="+(2*ph.limit).String())
		cmd := r.command(ctx, filepath.Join(r.root, pkg), bin, args...)
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if err != nil || timedOut {
			return true, firstFailure(out, timedOut), timedOut
		}
	}
	return false, "", false
}

// ownTests lists the tests of file's own _test files (signature.go's are
// in signature_test.go and signature_*_test.go).
func ownTests(root, file string) []string {
	base := strings.TrimSuffix(filepath.Base(file), ".go")
	dir := filepath.Join(root, filepath.FromSlash(filepath.Dir(file)))
	var names []string
	for _, pattern := range []string{base + "_test.go", base + "_*_test.go"} {
		paths, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, p := range paths {
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
			if err != nil {
				continue
			}
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") {
					names = append(names, regexp.QuoteMeta(fd.Name.Name))
				}
			}
		}
	}
	return names
}

func firstFailure(out []byte, timedOut bool) string {
	if timedOut {
		return "timeout"
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if m := failLine.FindStringSubmatch(sc.Text()); m != nil {
			return m[1]
		}
	}
	if bytes.Contains(out, []byte("panic:")) {
		return "panic"
	}
	return "exit status"
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// coverage holds the blocks a coverage run of the clean tests recorded.
type coverage map[string][]block // by file, slash path from the module root

type block struct {
	l0, c0, l1, c1 int
	count          int
}

// runs reports whether a test runs m's position: a position inside a
// block that ran, or inside no block at all (declarations outside
// functions), counts as run.
func (c coverage) runs(m mutant) bool {
	inZero := false
	for _, b := range c[m.File] {
		in := (m.Line > b.l0 || m.Line == b.l0 && m.Col >= b.c0) && (m.Line < b.l1 || m.Line == b.l1 && m.Col <= b.c1)
		if !in {
			continue
		}
		if b.count > 0 {
			return true
		}
		inZero = true
	}
	return !inZero
}

func (r *runner) coverage(pkgs map[string]bool) (coverage, error) {
	mod, err := os.ReadFile(filepath.Join(r.root, "go.mod"))
	if err != nil {
		return nil, err
	}
	modPath := ""
	for _, l := range strings.Split(string(mod), "\n") {
		if rest, ok := strings.CutPrefix(l, "module "); ok {
			modPath = strings.TrimSpace(rest)
		}
	}
	var list, coverpkg []string
	for p := range pkgs {
		list = append(list, "./"+p)
	}
	sort.Strings(list)
	dirs := map[string]bool{}
	for _, f := range r.opt.files {
		dirs["./"+filepath.ToSlash(filepath.Dir(f))] = true
	}
	for d := range dirs {
		coverpkg = append(coverpkg, d)
	}
	sort.Strings(coverpkg)
	prof := filepath.Join(r.tmp, "cover.out")
	fmt.Fprintf(r.log, "mutation: coverage run of %s\n", strings.Join(list, " "))
	args := append([]string{"test", "-count=1", "-coverprofile=" + prof, "-coverpkg=" + strings.Join(coverpkg, ",")}, list...)
	// A test that fails now and then under load must not stop the sweep:
	// the run is tried again, and a profile from a failed run is used (a
	// line it misses counts against the score, not for it).
	for try := 1; ; try++ {
		cmd := r.command(context.Background(), r.root, "go", args...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			break
		}
		if try == 3 {
			if _, serr := os.Stat(prof); serr != nil {
				return nil, fmt.Errorf("coverage run: %w\n%s", err, tail(out))
			}
			fmt.Fprintf(r.log, "mutation: the coverage run failed three times; using its last profile:\n%s\n", tail(out))
			break
		}
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		return nil, err
	}
	cov := coverage{}
	lineRe := regexp.MustCompile(`^(.+):(\d+)\.(\d+),(\d+)\.(\d+) \d+ (\d+)$`)
	for _, l := range strings.Split(string(b), "\n") {
		m := lineRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		file := strings.TrimPrefix(strings.TrimPrefix(m[1], modPath), "/")
		n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
		cov[file] = append(cov[file], block{n(2), n(3), n(4), n(5), n(6)})
	}
	// A block appears once per test binary; merge counts by summing is
	// done by runs(), which looks for any block that ran.
	return cov, nil
}

// report writes the per-file scores and the survivors, in Markdown.
func report(w io.Writer, files []string, rs []result, took time.Duration) {
	type tally struct{ killed, timeouts, survived, uncovered, uncompiled int }
	by := map[string]*tally{}
	var total tally
	for _, f := range files {
		by[f] = &tally{}
	}
	for _, r := range rs {
		t := by[r.File]
		for _, t := range []*tally{t, &total} {
			switch r.Status {
			case "killed":
				t.killed++
				if r.Timeout {
					t.timeouts++
				}
			case "survived":
				t.survived++
			case "uncovered":
				t.uncovered++
			case "uncompiled":
				t.uncompiled++
			}
		}
	}
	score := func(t tally) string {
		n := t.killed + t.survived + t.uncovered
		if n == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(t.killed)/float64(n))
	}
	fmt.Fprintf(w, "Mutation run of %s (%s)\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), took.Round(time.Second))
	fmt.Fprintln(w, "| file | killed (by timeout) | survived (not run) | not compiled | score |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	row := func(name string, t tally) {
		fmt.Fprintf(w, "| %s | %d (%d) | %d (%d) | %d | %s |\n", name, t.killed, t.timeouts, t.survived+t.uncovered, t.uncovered, t.uncompiled, score(t))
	}
	for _, f := range files {
		row(f, *by[f])
	}
	row("**all**", total)
	fmt.Fprintln(w, "\nSurvivors:")
	for _, r := range rs {
		switch r.Status {
		case "survived":
			fmt.Fprintf(w, "- %s:%d:%d %s (%s)\n", r.File, r.Line, r.Col, r.Desc, r.Kind)
		case "uncovered":
			fmt.Fprintf(w, "- %s:%d:%d %s (%s; no test runs the line)\n", r.File, r.Line, r.Col, r.Desc, r.Kind)
		}
	}
}
