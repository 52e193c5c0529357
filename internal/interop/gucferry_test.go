package interop

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/testutil/gct"
)

// The globus-url-copy tests run twice: once with GCT's globus-url-copy,
// and once (TestGlobusURLCopyIsFerryDropIn) with the ferry binary
// installed as globus-url-copy, first on PATH. Setting gucIsFerryEnv to 1
// makes TestMain do that installing; ferryBinEnv hands the child run the
// binary the parent built.
const (
	gucIsFerryEnv = "FERRY_INTEROP_GUC_IS_FERRY"
	ferryBinEnv   = "FERRY_INTEROP_BIN"
)

// gucIsFerry reports whether this run has Ferry as globus-url-copy.
func gucIsFerry() bool { return os.Getenv(gucIsFerryEnv) == "1" }

// gucTestsRE selects the tests that run globus-url-copy, against Ferry's
// server and GCT's.
const gucTestsRE = `^(TestGlobusURLCopy.*|TestGSIRefusals|TestGSIRunsAsMappedUser|TestStripedGCT|TestStripedGSI|TestStripedGlobusURLCopy|TestStripedMoversReload|TestStripedThirdParty|TestGUCIsFerry|TestGUCGlobusMappingAnonymous|TestS3Storage|TestStripedS3GlobusURLCopy)$`

// installGUCLink puts a directory under dir first on PATH whose
// globus-url-copy is a symbolic link to bin.
func installGUCLink(dir, bin string) error {
	d := filepath.Join(dir, "guc")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(bin, filepath.Join(d, "globus-url-copy")); err != nil {
		return err
	}
	return os.Setenv("PATH", d+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestGUCIsFerry: in the run with Ferry as globus-url-copy, the
// globus-url-copy found on PATH is Ferry's (its -version says so); in
// the other, GCT's.
func TestGUCIsFerry(t *testing.T) {
	r := run(t, "", "", "globus-url-copy", "-version")
	isFerry := strings.Contains(r.stderr, "(ferry ")
	if isFerry != gucIsFerry() || r.code != 1 || !strings.HasPrefix(r.stderr, "globus-url-copy: ") {
		t.Fatalf("globus-url-copy -version (want Ferry: %v): %v", gucIsFerry(), r)
	}
}

// TestGlobusURLCopyIsFerryDropIn runs the globus-url-copy tests (gucTestsRE)
// again in a child test process, with the ferry binary installed as
// globus-url-copy first on PATH: they must pass unchanged.
func TestGlobusURLCopyIsFerryDropIn(t *testing.T) {
	if gucIsFerry() {
		t.Skip("this is the run with Ferry as globus-url-copy")
	}
	if testing.Short() {
		t.Skip("-short: the globus-url-copy tests run once, with GCT's")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", gucTestsRE, "-test.count=1", "-test.v", "-test.timeout=25m")
	cmd.Env = append(os.Environ(), gucIsFerryEnv+"=1", ferryBinEnv+"="+ferryBin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	passed := strings.Count(out.String(), "--- PASS: ")
	if err != nil || !strings.Contains(out.String(), "--- PASS: TestGUCIsFerry ") || strings.Contains(out.String(), "--- FAIL") {
		t.Fatalf("the globus-url-copy tests with Ferry as globus-url-copy: %v\n%s", err, out.String())
	}
	t.Logf("with Ferry as globus-url-copy: %d tests and subtests passed", passed)
}

// TestGlobusURLCopyGCTServer copies to and from GCT's server with
// globus-url-copy, in stream mode and MODE E, and lists a directory.
func TestGlobusURLCopyGCTServer(t *testing.T) {
	root := gct.Dir(t)
	addr := gct.Start(t, root)
	local := t.TempDir()
	want := writeRandom(t, filepath.Join(root, "src.bin"), 3<<20+5, 77)
	for _, mode := range gucModes {
		t.Run(mode.name, func(t *testing.T) {
			got := filepath.Join(local, mode.name)
			// GCT's anonymous sessions see the whole file system.
			mustRun(t, "", "", "globus-url-copy", append(slices.Clone(mode.flags), "ftp://"+addr+filepath.Join(root, "src.bin"), "file://"+got)...)
			sameFile(t, got, want)
			up := filepath.Join(root, "up-"+mode.name)
			mustRun(t, "", "", "globus-url-copy", append(slices.Clone(mode.flags), "file://"+got, "ftp://"+addr+up)...)
			sameFile(t, up, want)
		})
	}
	out := mustRun(t, "", "", "globus-url-copy", "-list", "ftp://"+addr+root+"/")
	got := lines(out)
	if len(got) == 0 || !slices.Contains(got, "src.bin") || !slices.Contains(got, fmt.Sprintf("up-%s", gucModes[0].name)) {
		t.Errorf("globus-url-copy -list of GCT's server:\n%s", out)
	}
}

// TestGUCTestsListed: every test of this package that runs
// globus-url-copy is among those TestGlobusURLCopyIsFerryDropIn runs
// again (gucTestsRE).
func TestGUCTestsListed(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	re := regexp.MustCompile(gucTestsRE)
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
				continue
			}
			uses := false
			ast.Inspect(fn.Body, func(x ast.Node) bool {
				if lit, ok := x.(*ast.BasicLit); ok && lit.Kind == token.STRING && lit.Value == `"globus-url-copy"` {
					uses = true
				}
				return !uses
			})
			if !uses {
				continue
			}
			n++
			if !re.MatchString(fn.Name.Name) {
				t.Errorf("%s runs globus-url-copy but gucTestsRE leaves it out of the run with Ferry as globus-url-copy", fn.Name.Name)
			}
		}
	}
	if n < 10 {
		t.Errorf("found only %d tests that run globus-url-copy", n)
	}
}
