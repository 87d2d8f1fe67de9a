package wiretest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyTestsImportWiretest fails when a non-test Go file anywhere in
// the module imports wiretest, which is test support (the package doc).
// It reads every file's imports whatever its build constraints, so a file
// built for one platform only is checked too.
func TestOnlyTestsImportWiretest(t *testing.T) {
	const own = "github.com/kraftd/kraftd/internal/wiretest"
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == own {
				t.Errorf("%s imports %s outside a test", path, own)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
