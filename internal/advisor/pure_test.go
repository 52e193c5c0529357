package advisor

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPure keeps the advisor free of I/O: its non-test files import only
// the standard library's pure packages and internal/history (for its
// types).
func TestPure(t *testing.T) {
	allowed := map[string]bool{
		"cmp": true, "fmt": true, "math": true, "slices": true, "strings": true, "time": true,
		"github.com/ferrygrid/ferry/internal/history":  true,
		"github.com/ferrygrid/ferry/internal/progress": true, // the project's one set of formatters
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !allowed[p] {
				t.Errorf("%s imports %s: the advisor does no I/O (the caller passes history, probes and kernel limits in)", e.Name(), p)
			}
		}
	}
}
