package client_test

import (
	"fmt"
	"testing"

	"github.com/ferrygrid/ferry/client"
	"github.com/ferrygrid/ferry/internal/gsi"
)

// TestDataCredentialGCT: with a DCSC data channel credential (generated,
// as -data-cred auto, or read from a proxy file, as -data-cred PATH) the
// client's transfers with GCT's server run, both ways, in stream mode and
// MODE E, with PROT C and P; without delegation too, since the server
// then needs no credential of the user's for its data channels.
func TestDataCredentialGCT(t *testing.T) {
	e := newGSIEnv(t, nil)
	ours := loadCred(t, e.pki.Proxy(t, gsi.ProxyOptions{}))
	auto, err := client.NewDataCredential()
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := client.LoadDataCredential(e.pki.Proxy(t, gsi.ProxyOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(t, 3<<20+7)
	for cname, dc := range map[string]*client.Credential{"auto": auto, "path": fromFile} {
		for _, m := range []struct {
			name    string
			prot    client.Protection
			noDeleg bool
		}{
			{"dcau-a", 0, false},
			{"dcpriv", client.ProtPrivate, false},
			{"dcsafe-nodelegation", client.ProtSafe, true},
		} {
			t.Run(cname+"/"+m.name, func(t *testing.T) {
				c := gsiLogin(t, e.srv.Addr, &client.GSIConfig{Credential: ours, Trust: e.trust, Protection: m.prot, NoDelegation: m.noDeleg, DataCredential: dc}, false)
				ctx := testCtx(t)
				for _, p := range []int{1, 4} {
					roundTrip(t, ctx, c, e, fmt.Sprintf("dcsc-%s-%s-p%d", cname, m.name, p), data, p)
				}
			})
		}
	}
}
