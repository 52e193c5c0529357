package krb5kdc

import (
	"os"
	"testing"
)

func TestKerberosKDCStarts(t *testing.T) {
	k := Start(t)
	k.AddPrincipal(t, "alice")
	cc := k.Kinit(t, "alice")
	if fi, err := os.Stat(cc); err != nil || fi.Size() == 0 {
		t.Fatalf("no credential cache: %v", err)
	}
}
