package main

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// goOutput runs the go command in the module root and returns its output.
func (r *runner) goOutput(args ...string) (string, error) {
	cmd := r.command(context.Background(), r.root, "go", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, tail([]byte(stderr.String())))
	}
	return string(out), nil
}

var compileError = regexp.MustCompile(`(?m)^\S*?([^/\s]+\.go):(\d+):(\d+): (.*)$`)

// buildSchema builds the test binaries of pkgs with every mutant it can
// switch at run time. It returns the binaries by package and marks the
// mutants left to be built one by one (schema false).
func (r *runner) buildSchema(srcs map[string]*pkgSource, ms []*mutant, testPkgs []string) (map[string]string, error) {
	dir := filepath.Join(r.tmp, "schema")
	byFile := map[string][]*mutant{}
	for _, m := range ms {
		m.schema = true
		byFile[m.File] = append(byFile[m.File], m)
	}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	for round := 1; round <= 12; round++ {
		replace := map[string]string{}
		for _, rel := range files {
			p := srcs[filepath.ToSlash(filepath.Dir(rel))]
			rd := &renderer{p: p, rel: rel, src: p.srcs[rel], file: p.files[rel], sites: map[ast.Node][]*mutant{}, bad: map[ast.Node]bool{}}
			for _, m := range byFile[rel] {
				if m.schema {
					rd.sites[m.node] = append(rd.sites[m.node], m)
				}
			}
			out := rd.render(rd.file)
			for n := range rd.bad {
				for _, m := range rd.sites[n] {
					m.schema = false
				}
			}
			path := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				return nil, err
			}
			replace[filepath.Join(r.root, filepath.FromSlash(rel))] = path
		}
		for d, p := range srcs {
			path := filepath.Join(dir, filepath.FromSlash(d), "zz_mutant_schema.go")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(path, fmt.Appendf(nil, schemaSupport, p.name, mutantEnv), 0o644); err != nil {
				return nil, err
			}
			replace[filepath.Join(r.root, filepath.FromSlash(d), "zz_mutant_schema.go")] = path
		}
		overlay := filepath.Join(dir, "overlay.json")
		ov, _ := json.Marshal(map[string]map[string]string{"Replace": replace})
		if err := os.WriteFile(overlay, ov, 0o644); err != nil {
			return nil, err
		}
		bins := map[string]string{}
		var failed []byte
		for _, pkg := range testPkgs {
			bin := filepath.Join(dir, strings.ReplaceAll(pkg, "/", "_")+".test")
			var gcflags []string
			for d := range srcs {
				gcflags = append(gcflags, "-gcflags="+r.modPath+"/"+d+"=-e")
			}
			args := append([]string{"test", "-c", "-o", bin, "-overlay=" + overlay}, gcflags...)
			args = append(args, "./"+pkg)
			out, err := r.command(context.Background(), r.root, "go", args...).CombinedOutput()
			if err != nil {
				failed = out
				break
			}
			bins[pkg] = bin
		}
		if failed == nil {
			n := 0
			for _, m := range ms {
				if m.schema {
					n++
				}
			}
			fmt.Fprintf(r.log, "mutation: one build switches %d of %d mutants (round %d); the rest are built one by one\n", n, len(ms), round)
			return bins, nil
		}
		disabled := r.disableAt(failed, srcs, byFile)
		if disabled == 0 {
			return nil, fmt.Errorf("the switched build fails where no mutant is:\n%s", tail(failed))
		}
		fmt.Fprintf(r.log, "mutation: switched build round %d: %d mutants left to be built one by one\n", round, disabled)
	}
	return nil, fmt.Errorf("the switched build still fails after 12 rounds")
}

// disableAt takes the mutants out of the switched build where the
// compiler reported errors: those whose node starts on the error's line,
// else the innermost around it; a missing return disables the early
// returns of the function that ends there.
func (r *runner) disableAt(out []byte, srcs map[string]*pkgSource, byFile map[string][]*mutant) int {
	n := 0
	for _, e := range compileError.FindAllSubmatch(out, -1) {
		base, line, msg := string(e[1]), atoi(string(e[2])), string(e[4])
		for rel, ms := range byFile {
			if filepath.Base(rel) != base {
				continue
			}
			p := srcs[filepath.ToSlash(filepath.Dir(rel))]
			lines := func(m *mutant) (int, int) {
				return p.fset.Position(m.node.Pos()).Line, p.fset.Position(m.node.End()).Line
			}
			if strings.Contains(msg, "missing return") {
				ast.Inspect(p.files[rel], func(x ast.Node) bool {
					var body *ast.BlockStmt
					switch f := x.(type) {
					case *ast.FuncDecl:
						body = f.Body
					case *ast.FuncLit:
						body = f.Body
					}
					if body != nil && p.fset.Position(body.Rbrace).Line == line {
						for _, m := range ms {
							if _, ok := m.node.(*ast.IfStmt); ok && m.schema && m.node.Pos() >= body.Lbrace && m.node.End() <= body.Rbrace {
								m.schema = false
								n++
							}
						}
					}
					return true
				})
				continue
			}
			var starting []*mutant
			var inner *mutant
			for _, m := range ms {
				if !m.schema {
					continue
				}
				l0, l1 := lines(m)
				if l0 == line {
					starting = append(starting, m)
				}
				if l0 <= line && line <= l1 {
					if inner == nil || m.node.End()-m.node.Pos() < inner.node.End()-inner.node.Pos() {
						inner = m
					}
				}
			}
			if len(starting) == 0 && inner != nil {
				for _, m := range ms {
					if m.schema && m.node == inner.node {
						starting = append(starting, m)
					}
				}
			}
			for _, m := range starting {
				m.schema = false
				n++
			}
		}
	}
	return n
}

func atoi(s string) int { v, _ := strconv.Atoi(s); return v }
