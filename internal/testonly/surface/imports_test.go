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

// jsonImports are the import names each JSON library goes by in every Go
// file of the module, tests included, so that json always means
// encoding/json.
var jsonImports = map[string]string{
	"github.com/go-json-experiment/json": "jsonv2",
	"encoding/json":                      "json",
}

// TestJSONImportNames checks that every file imports each JSON library
// under its one name.
func TestJSONImportNames(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			want, ok := jsonImports[p]
			if !ok {
				continue
			}
			got := filepath.Base(p)
			if imp.Name != nil {
				got = imp.Name.Name
			}
			if got != want {
				t.Errorf("%s imports %s as %s; import it as %s, its one name in this module", path, p, got, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
