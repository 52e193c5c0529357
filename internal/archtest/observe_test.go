package archtest

import (
	"strings"
	"testing"
)

// TestObservabilityImports keeps metrics out of the protocol code: the
// server, the PI, the DTP and the striping layer tell observers what
// happens (server.Observer, pi.Observer, xfer.Event) and never import
// Prometheus; internal/metrics and internal/translog implement the
// observer without importing the server.
func TestObservabilityImports(t *testing.T) {
	noProm := []string{"server", "internal/pi", "internal/dtp/...", "internal/stripe", "internal/xfer", "internal/translog"}
	for _, p := range packages(t) {
		for _, imp := range p.Imports {
			for _, from := range noProm {
				if matches(from, p.ImportPath) && strings.HasPrefix(imp, "github.com/prometheus/") {
					t.Errorf("%s imports %s: only internal/metrics and the commands know Prometheus", p.ImportPath, imp)
				}
			}
			for _, from := range []string{"internal/metrics", "internal/translog"} {
				if matches(from, p.ImportPath) && (imp == module+"/server" || imp == module+"/internal/pi") {
					t.Errorf("%s imports %s: observers do not know the server", p.ImportPath, imp)
				}
			}
		}
	}
}
