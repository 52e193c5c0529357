package leak

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	const pkg = "github.com/ferrygrid/ferry/internal/testutil/leak"
	if err := Check(pkg); err != nil {
		t.Fatalf("no leak, but: %v", err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the leak
		defer close(done)
		<-stop
	}()
	err := Check(pkg)
	close(stop)
	<-done
	if err == nil || !strings.Contains(err.Error(), "leaked goroutines") {
		t.Fatalf("leak not found: %v", err)
	}
}
