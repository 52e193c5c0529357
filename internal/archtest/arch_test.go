package archtest

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ferrygrid/ferry"

type pkg struct {
	Dir        string
	ImportPath string
	Doc        string
	Name       string
	Imports    []string
}

func packages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// rule forbids packages matching from to import packages matching to.
type rule struct {
	from, to, why string
}

func matches(pattern, path string) bool {
	pattern = module + "/" + pattern
	if strings.HasSuffix(pattern, "/...") {
		base := strings.TrimSuffix(pattern, "/...")
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func TestImportRules(t *testing.T) {
	rules := []rule{
		{"internal/wire", "...", "the wire vocabulary imports only the standard library"},
		{"internal/xfer", "...", "the transfer vocabulary imports only the standard library"},
		{"dsi", "...", "the public DSI imports only the standard library"},
		{"dsi/posix", "internal/...", "back-ends see only the dsi contract"},
		{"dsi/memory", "internal/...", "back-ends see only the dsi contract"},
		{"dsi/null", "internal/...", "back-ends see only the dsi contract"},
		{"internal/pi", "internal/dtp/...", "the PI reaches data movers only through its DTP interface"},
		{"internal/pi", "server", "the PI does not know the server"},
		{"internal/pi", "dsi/posix", "the PI does not know storage back-ends"},
		{"internal/pi", "dsi/memory", "the PI does not know storage back-ends"},
		{"internal/pi", "dsi/null", "the PI does not know storage back-ends"},
		{"internal/dtp/...", "internal/pi", "the DTP never parses commands"},
		{"client", "server", "the client library does not depend on the server"},
		{"client", "internal/pi", "the client library does not depend on the server"},
		{"transfer", "cmd/...", "the copy engine is a library under the commands"},
		{"transfer", "server", "the copy engine is a client-side library"},
		{"transfer", "internal/pi", "the copy engine is a client-side library"},
	}
	for _, p := range packages(t) {
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") && imp != module {
				continue
			}
			for _, r := range rules {
				// "..." alone stands for every package of this module.
				if matches(r.from, p.ImportPath) && (r.to == "..." || matches(r.to, imp)) {
					t.Errorf("%s imports %s: %s", p.ImportPath, imp, r.why)
				}
			}
		}
	}
}

func TestPackageDocs(t *testing.T) {
	for _, p := range packages(t) {
		if p.Doc == "" {
			t.Errorf("%s has no package doc comment", p.ImportPath)
		}
	}
}

// TestClientDataPlane enforces one data plane: the client's data
// connections are made, accepted and secured by internal/dtp, the same
// code as the server's (dtp.Listen, dtp.Dial, dtp.Acceptor). The client
// must import internal/dtp, and its non-test files call no listen, dial
// or accept of their own, except Dial's dial of the control connection.
func TestClientDataPlane(t *testing.T) {
	var dir string
	for _, p := range packages(t) {
		if p.ImportPath != module+"/client" {
			continue
		}
		if !slices.Contains(p.Imports, module+"/internal/dtp") {
			t.Errorf("%s does not import internal/dtp: its data connections must go through the DTP", p.ImportPath)
		}
		dir = p.Dir
	}
	if dir == "" {
		t.Fatal("no client package")
	}
	// The network calls that make, await or take a connection: methods
	// (of a net.Dialer, net.ListenConfig or listener) and net's functions.
	methods := map[string]bool{"DialContext": true, "Listen": true, "ListenPacket": true, "Accept": true, "AcceptTCP": true}
	netFuncs := map[string]bool{"Dial": true, "DialTCP": true, "DialTimeout": true, "Listen": true, "ListenTCP": true, "FileListener": true}
	allowed := map[string]bool{"Dial": true} // client.Dial: the control connection
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd.Recv == nil && allowed[fd.Name.Name] {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg := ""
				if x, ok := sel.X.(*ast.Ident); ok {
					pkg = x.Name
				}
				if pkg == "dtp" || !methods[sel.Sel.Name] && !(pkg == "net" && netFuncs[sel.Sel.Name]) {
					return true
				}
				t.Errorf("%s: %s calls %s: the client's data connections go through internal/dtp (dtp.Listen, dtp.Dial, dtp.Acceptor)",
					fset.Position(call.Pos()), fd.Name.Name, sel.Sel.Name)
				return true
			})
		}
	}
}
