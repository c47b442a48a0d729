package surface

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// limits is the most exported names and methods each package may have,
// by directory from the repository root.
var limits = map[string]int{
	"protocol":    83,
	"conformance": 25,
}

// exported returns the exported names of the non-test Go files in dir:
// each exported top-level type, function, constant and variable, and each
// exported method of an exported type ("Type.Method"), sorted.
func exported(dir string) ([]string, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		names = append(names, fileExports(f)...)
	}
	slices.Sort(names)
	return names, nil
}

// fileExports returns the exported names declared in f.
func fileExports(f *ast.File) []string {
	var names []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				names = append(names, d.Name.Name)
				continue
			}
			if recv := receiverType(d.Recv.List[0].Type); ast.IsExported(recv) {
				names = append(names, recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						names = append(names, s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							names = append(names, n.Name)
						}
					}
				}
			}
		}
	}
	return names
}

// receiverType returns the name of a method's receiver type: T for T, *T,
// T[P] and *T[P, Q].
func receiverType(expr ast.Expr) string {
	for {
		switch e := expr.(type) {
		case *ast.StarExpr:
			expr = e.X
		case *ast.IndexExpr:
			expr = e.X
		case *ast.IndexListExpr:
			expr = e.X
		case *ast.ParenExpr:
			expr = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}

func TestExportedSurface(t *testing.T) {
	for dir, limit := range limits {
		names, err := exported(filepath.Join("..", "..", "..", dir))
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if len(names) > limit {
			t.Errorf("package %s exports %d names and methods, more than its limit of %d; make some unexported, a field or a sub-package:\n\t%s",
				dir, len(names), limit, strings.Join(names, "\n\t"))
		} else {
			t.Logf("package %s exports %d of at most %d: %s", dir, len(names), limit, strings.Join(names, ", "))
		}
	}
}

// TestExportedCountsEachKindOfDeclaration checks the counter on a file
// with one declaration of each kind, exported or not.
func TestExportedCountsEachKindOfDeclaration(t *testing.T) {
	const src = `package p

type T struct{ Field int }
type G[A any, B any] struct{}
type hidden struct{}

const C, c = 1, 2
const (
	D = iota
	e
)
var V, w int

func F()           {}
func f()           {}
func (T) M()       {}
func (*T) N()      {}
func (T) m()       {}
func (G[A, B]) O() {}
func (hidden) P()  {}
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := fileExports(f)
	slices.Sort(got)
	want := []string{"C", "D", "F", "G", "G.O", "T", "T.M", "T.N", "V"}
	if !slices.Equal(got, want) {
		t.Errorf("fileExports = %v, want %v", got, want)
	}
}
