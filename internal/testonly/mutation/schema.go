package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// One build for all mutants (mutant schemata): each mutated node is
// rewritten into a switch on the mutant that is active in this run (the
// MEDIAN_MUTANT environment variable; 0 runs the code as written), so
// each mutant costs a test run, not a build of the package. An operand is
// evaluated once whichever branch runs. A mutant whose rewrite does not
// compile (a constant declaration, a statement where only a simple one
// fits) is built on its own, with its file replaced by the mutated copy.

// mutantEnv selects the active mutant of a schemata build.
const mutantEnv = "MEDIAN_MUTANT"

// pkgSource is a package whose files are mutated: every non-test file
// parsed with one FileSet, and their types when the check succeeds.
type pkgSource struct {
	dir   string // slash path from the module root
	name  string
	fset  *token.FileSet
	files map[string]*ast.File // by slash path from the module root
	srcs  map[string][]byte
	info  *types.Info // nil when the package could not be type-checked
	pkg   *types.Package
}

// loadPackage parses dir's non-test files (as go list sees them) and
// type-checks them against the export data of their imports.
func (r *runner) loadPackage(dir string) (*pkgSource, error) {
	out, err := r.goOutput("list", "-f", "{{.Name}}\n{{join .GoFiles \"\\n\"}}", "./"+dir)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	p := &pkgSource{dir: dir, name: lines[0], fset: token.NewFileSet(), files: map[string]*ast.File{}, srcs: map[string][]byte{}}
	var all []*ast.File
	for _, name := range lines[1:] {
		rel := dir + "/" + name
		src, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(p.fset, rel, src, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		p.files[rel], p.srcs[rel] = f, src
		all = append(all, f)
	}
	exports, err := r.exportData(dir)
	if err != nil {
		fmt.Fprintf(r.log, "mutation: no types for %s (%v); its constants and arithmetic are built one by one\n", dir, err)
		return p, nil
	}
	conf := types.Config{Importer: importer.ForCompiler(p.fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	pkg, err := conf.Check(r.modPath+"/"+dir, p.fset, all, info)
	if err != nil {
		fmt.Fprintf(r.log, "mutation: no types for %s (%v); its constants and arithmetic are built one by one\n", dir, err)
		return p, nil
	}
	p.info, p.pkg = info, pkg
	return p, nil
}

// exportData maps each dependency of dir to its compiled export data.
func (r *runner) exportData(dir string) (map[string]string, error) {
	out, err := r.goOutput("list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", "./"+dir)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m, nil
}

// schemaSupport is the file added to each mutated package.
const schemaSupport = `package %s

import (
	"os"
	"strconv"
)

var zzmActive = func() int { n, _ := strconv.Atoi(os.Getenv(%q)); return n }()

type zzmNum interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr | ~float32 | ~float64
}

type zzmInt interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

func zzmLit[T zzmNum](up, down int, v T) T {
	switch {
	case zzmActive == 0:
	case zzmActive == up:
		return v + 1
	case zzmActive == down:
		return v - 1
	}
	return v
}

func zzmAdd[T zzmNum](id int, a, b T) T {
	if zzmActive == id {
		return a - b
	}
	return a + b
}

func zzmSub[T zzmNum](id int, a, b T) T {
	if zzmActive == id {
		return a + b
	}
	return a - b
}

func zzmMul[T zzmNum](id int, a, b T) T {
	if zzmActive == id {
		return a / b
	}
	return a * b
}

func zzmQuo[T zzmNum](id int, a, b T) T {
	if zzmActive == id {
		return a * b
	}
	return a / b
}

func zzmRem[T zzmInt](id int, a, b T) T {
	if zzmActive == id {
		return a * b
	}
	return a %% b
}

func zzmZero[E any](id int, e E) E {
	if zzmActive == id {
		var zero E
		return zero
	}
	return e
}
`

var arithHelper = map[token.Token]string{token.ADD: "zzmAdd", token.SUB: "zzmSub", token.MUL: "zzmMul", token.QUO: "zzmQuo", token.REM: "zzmRem"}

// errNoSchema marks a node whose mutants cannot be switched at run time.
var errNoSchema = errors.New("no run-time switch")

// renderer rewrites one file with the enabled mutants switched.
type renderer struct {
	p     *pkgSource
	rel   string
	src   []byte
	file  *ast.File
	sites map[ast.Node][]*mutant
	bad   map[ast.Node]bool // nodes whose switch failed: their mutants are built one by one
}

func (r *renderer) off(p token.Pos) int { return r.p.fset.Position(p).Offset }

// render returns n's source with its children rendered and its own
// mutants switched.
func (r *renderer) render(n ast.Node) string {
	start, end := r.off(n.Pos()), r.off(n.End())
	if _, ok := n.(*ast.File); ok {
		start, end = 0, len(r.src) // with the comments around the package clause
	}
	var kids []ast.Node
	ast.Inspect(n, func(c ast.Node) bool {
		if c == n {
			return true
		}
		if c != nil {
			if _, ok := c.(*ast.CommentGroup); !ok {
				kids = append(kids, c)
			}
		}
		return false
	})
	var b strings.Builder
	cur := start
	for _, c := range kids {
		cs, ce := r.off(c.Pos()), r.off(c.End())
		if cs < cur || ce > end {
			continue
		}
		b.Write(r.src[cur:cs])
		kid := r.render(c)
		if ifs, ok := n.(*ast.IfStmt); ok && c == ast.Node(ifs.Body) && len(r.sites[n]) > 0 && !r.sites[n][0].inConst {
			// The early-return mutant: the body runs only when it is
			// not the active one.
			kid = fmt.Sprintf("{%s if zzmActive != %d {%s} }", bodyMark(ifs), r.sites[n][0].ID, kid[1:len(kid)-1])
		}
		b.WriteString(kid)
		cur = ce
	}
	b.Write(r.src[cur:end])
	plain := b.String()
	ms := r.sites[n]
	if len(ms) == 0 {
		return plain
	}
	out, err := r.switched(n, ms, plain)
	if err != nil {
		r.bad[n] = true
		return plain
	}
	return out
}

// flat puts an operand that is written twice on one line, so the switched
// file keeps the original's line numbers; code with a comment or a
// function literal in it cannot be.
func flat(s string) (string, error) {
	if !strings.Contains(s, "\n") {
		return s, nil
	}
	if strings.Contains(s, "//") || strings.Contains(s, "/*") || strings.Contains(s, "func") {
		return "", errNoSchema
	}
	return strings.ReplaceAll(s, "\n", " "), nil
}

// typeName returns the source name of the type of e in the file, or
// errNoSchema.
func (r *renderer) typeName(e ast.Expr) (string, error) {
	if r.p.info == nil {
		return "", errNoSchema
	}
	tv, ok := r.p.info.Types[e]
	if !ok || tv.Type == nil {
		return "", errNoSchema
	}
	if b, ok := tv.Type.Underlying().(*types.Basic); !ok || b.Info()&types.IsUntyped != 0 || b.Info()&types.IsNumeric == 0 {
		return "", errNoSchema
	}
	names := map[string]string{}
	for _, imp := range r.file.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		if imp.Name != nil {
			names[path] = imp.Name.Name
		}
	}
	failed := false
	s := types.TypeString(tv.Type, func(p *types.Package) string {
		if p == r.p.pkg {
			return ""
		}
		if name, ok := names[p.Path()]; ok {
			return name
		}
		for _, imp := range r.file.Imports {
			if strings.Trim(imp.Path.Value, `"`) == p.Path() {
				return p.Name()
			}
		}
		failed = true
		return p.Name()
	})
	if failed {
		return "", errNoSchema
	}
	return s, nil
}

// switched is the rewrite of node n (rendered as plain) that runs each of
// ms when it is the active mutant.
func (r *renderer) switched(n ast.Node, ms []*mutant, plain string) (string, error) {
	if ms[0].inConst {
		return "", errNoSchema
	}
	active := func(m *mutant) string { return fmt.Sprintf("zzmActive == %d", m.ID) }
	switch n := n.(type) {
	case *ast.BinaryExpr:
		x, err := flat(r.render(n.X))
		if err != nil {
			return "", err
		}
		y, err := flat(r.render(n.Y))
		if err != nil {
			return "", err
		}
		if h, ok := arithHelper[n.Op]; ok {
			t, err := r.typeName(n)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s[%s](%d, %s, %s)", h, t, ms[0].ID, x, y), nil
		}
		var parts, none []string
		for _, m := range ms {
			parts = append(parts, fmt.Sprintf("%s && (%s %s %s)", active(m), x, m.to, y))
			none = append(none, fmt.Sprintf("zzmActive != %d", m.ID))
		}
		parts = append(parts, fmt.Sprintf("%s && (%s %s %s)", strings.Join(none, " && "), x, n.Op, y))
		return "(" + strings.Join(parts, " || ") + ")", nil
	case *ast.UnaryExpr: // a removed !: true != !x is x
		return fmt.Sprintf("((%s) != %s)", active(ms[0]), plain), nil
	case *ast.BasicLit:
		t, err := r.typeName(n)
		if err != nil {
			return "", err
		}
		up, down := 0, 0
		for _, m := range ms {
			if m.to == token.INC {
				up = m.ID
			} else {
				down = m.ID
			}
		}
		return fmt.Sprintf("zzmLit[%s](%d, %d, %s)", t, up, down, plain), nil
	case *ast.Ident: // a returned err
		return fmt.Sprintf("zzmZero(%d, %s)", ms[0].ID, plain), nil
	case *ast.AssignStmt, *ast.IncDecStmt:
		m := ms[0]
		var lhs, rhs, op string
		var err error
		switch n := n.(type) {
		case *ast.AssignStmt:
			if len(n.Lhs) != 1 || len(n.Rhs) != 1 {
				return "", errNoSchema
			}
			if lhs, err = flat(r.render(n.Lhs[0])); err != nil {
				return "", err
			}
			if rhs, err = flat(r.render(n.Rhs[0])); err != nil {
				return "", err
			}
			op = n.Tok.String()
		case *ast.IncDecStmt:
			if lhs, err = flat(r.render(n.X)); err != nil {
				return "", err
			}
			op = n.Tok.String()
		}
		return fmt.Sprintf("if %s { %s %s %s } else { %s %s %s }", active(m), lhs, m.to, rhs, lhs, op, rhs), nil
	case *ast.ExprStmt: // a dropped call
		return fmt.Sprintf("if zzmActive != %d { %s }", ms[0].ID, plain), nil
	case *ast.IfStmt: // an early return dropped: the body runs unless active
		return strings.Replace(plain, bodyMark(n), "", 1), nil
	}
	return "", errNoSchema
}

// bodyMark is what render puts at the start of an if's body whose early
// return is a mutant, for switched to find.
func bodyMark(n *ast.IfStmt) string { return fmt.Sprintf("/*zzm-body-%d*/", n.Body.Lbrace) }
