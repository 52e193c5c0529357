package archtest

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/ferrygrid/ferry"

type pkg struct {
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
		{"client", "internal/dtp/...", "the client library does not depend on the server"},
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
