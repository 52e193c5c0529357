package gsi

import (
	"math/big"
	"time"
)

// CRLVersion says how recent the CRL a trust store holds for one CA is.
type CRLVersion struct {
	// File is the CRL's file name in the trust directory.
	File string
	// Number is the CRL Number extension; nil when the CRL has none.
	Number *big.Int
	// ThisUpdate is when the CA issued the CRL.
	ThisUpdate time.Time
}

// Older reports whether v was issued before w: a lower CRL Number (when
// both have one), or an earlier ThisUpdate.
func (v CRLVersion) Older(w CRLVersion) bool {
	if v.Number != nil && w.Number != nil && v.Number.Cmp(w.Number) < 0 {
		return true
	}
	return v.ThisUpdate.Before(w.ThisUpdate)
}

// CRLVersions returns, for each CA subject hash (as in <hash>.r0) with a
// CRL that parsed and was issued and signed by a CA of that hash, the
// newest of its CRLs.
func (ts *TrustStore) CRLVersions() map[string]CRLVersion {
	out := map[string]CRLVersion{}
	for h, list := range ts.crls {
		for _, e := range list {
			v := CRLVersion{File: e.file, Number: e.crl.Number, ThisUpdate: e.crl.ThisUpdate}
			if cur, seen := out[h]; !seen || cur.Older(v) {
				out[h] = v
			}
		}
	}
	return out
}

// CADN returns the subject of the store's CA whose subject hashes to
// hash, or "" when it has none.
func (ts *TrustStore) CADN(hash string) string {
	if cs := ts.byHash[hash]; len(cs) > 0 {
		return CertDN(cs[0])
	}
	return ""
}
