package gsipki_test

import (
	"testing"
	"time"

	"github.com/ferrygrid/ferry/internal/gsi"
	"github.com/ferrygrid/ferry/internal/testutil/gsipki"
)

func TestPKI(t *testing.T) {
	p := gsipki.New(t, "")
	ts, err := gsi.LoadTrustDir(p.TrustDir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	host, err := gsi.LoadCredential(p.HostCert, p.HostKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"127.0.0.1", "localhost"} {
		if _, err := ts.VerifyHost(host.Chain, name, now); err != nil {
			t.Errorf("host certificate for %s: %v", name, err)
		}
	}
	for what, file := range map[string]string{"gsi proxy": p.Proxy(t, gsi.ProxyOptions{}), "grid-proxy-init": p.GCTProxy(t)} {
		cred, err := gsi.LoadCredential(file, "")
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		id, err := ts.Verify(cred.Chain, now)
		if err != nil || id.DN != gsipki.UserDN || !id.Proxy {
			t.Errorf("%s: Verify = %+v, %v", what, id, err)
		}
	}
	expired, err := gsi.LoadCredential(p.ExpiredProxy(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Verify(expired.Chain, now); err == nil {
		t.Error("the expired proxy verifies")
	}
	gm, err := gsi.LoadGridMap(p.GridMap)
	if err != nil {
		t.Fatal(err)
	}
	if acc, ok := gm.Lookup(gsipki.UserDN); !ok || len(acc) != 1 || acc[0] != p.Account {
		t.Errorf("grid-mapfile lookup = %v, %v", acc, ok)
	}
}
