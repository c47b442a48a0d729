package surface

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// module is this module's import path.
const module = "github.com/median-go/median"

// shippedImports maps each package directory of the module (slash paths
// from the root, test files and testdata left out) to the module's
// packages its shipped files import.
func shippedImports(t *testing.T) map[string][]string {
	t.Helper()
	root := filepath.Join("..", "..", "..")
	fset := token.NewFileSet()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(rel)
		out[dir] = append(out[dir], nil...)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == module || strings.HasPrefix(p, module+"/") {
				out[dir] = append(out[dir], strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNoShippedCodeImportsATestHarness: internal/testonly holds the
// harnesses of the module's own tests; only other harnesses (and test
// files, which shippedImports leaves out) may import them.
func TestNoShippedCodeImportsATestHarness(t *testing.T) {
	seen := 0
	for dir, imports := range shippedImports(t) {
		if strings.HasPrefix(dir, "internal/testonly/") {
			seen++
			continue
		}
		for _, p := range imports {
			if strings.HasPrefix(p, "internal/testonly/") {
				t.Errorf("%s (shipped code) imports the test harness %s; move what it needs out of internal/testonly", dir, p)
			}
		}
	}
	if seen == 0 {
		t.Fatal("found no harness under internal/testonly; the check itself is broken")
	}
}

// TestRunTimeHelpersSitJustAboveTheCore: the run-time helpers that
// shipped code imports from internal/ (internal/adapt, internal/base)
// and the client side of the wire (conformance/internal) import, of the
// module's public packages, only the core (protocol), so that no import
// arrow runs back up to a package that imports them.
func TestRunTimeHelpersSitJustAboveTheCore(t *testing.T) {
	checked := 0
	for dir, imports := range shippedImports(t) {
		if !strings.HasPrefix(dir, "internal/adapt/") && !strings.HasPrefix(dir, "internal/base/") && !strings.HasPrefix(dir, "conformance/internal/") {
			continue
		}
		checked++
		for _, p := range imports {
			if p == "protocol" || strings.HasPrefix(p, "internal/adapt/") || strings.HasPrefix(p, "internal/base/") || strings.HasPrefix(p, "conformance/internal/") {
				continue
			}
			t.Errorf("%s imports %s; a run-time helper may import only protocol and other helpers", dir, p)
		}
	}
	if checked < 5 {
		t.Fatalf("checked only %d helper packages; the check itself is broken", checked)
	}
}
