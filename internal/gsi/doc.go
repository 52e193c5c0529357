// Package gsi implements the X.509 side of the Grid Security
// Infrastructure (GSI) the way the Grid Community Toolkit (GCT) speaks it:
// credentials and their discovery, RFC 3820 proxy certificates (creation,
// delegation requests, signing), a trust directory in GCT's layout
// (hashed CA certificates, signing policies, CRLs), proxy-aware chain
// validation and grid-mapfiles.
//
//	TLS/GSSAPI engine, server, client, CLI
//	         │             │
//	Credential, NewProxy   TrustStore.Verify ──► Identity ──► GridMap.Lookup
//	(proxy.go, cred.go)    (trust.go, policy.go)              (gridmap.go)
//	         └───── DN, SubjectHash (dn.go) ─────┘
//
// Go's crypto/x509 parses the certificates and checks signatures, but its
// Verify does not understand proxy certificates: the path validation here
// is our own. It follows RFC 5280 for the CA part and RFC 3820 §4 for the
// proxy part, with GCT's rules on top (observed in ../shared/gsi.md §8):
//
//   - a CA is trusted only as <hash>.0 (also .1, …) in the trust directory,
//     where hash is OpenSSL's X509_NAME_hash of its subject;
//   - every certificate a CA signs must be allowed by the CA's
//     <hash>.signing_policy (EACL format: access_id_CA, pos_rights,
//     cond_subjects); a CA without one signs nothing;
//   - CRLs (<hash>.r0, …) are optional but enforced when present;
//   - proxies: subject = issuer subject + one CN, issued by an end-entity
//     certificate or proxy whose key usage (if present) allows
//     digitalSignature, pcPathLenConstraint honoured, limited-ness
//     propagates down, legacy GT2 "CN=proxy" proxies refused;
//   - RSA keys under 2048 bits and MD5/SHA-1 signatures are refused.
//
// For test and tool PKIs (ferry cert, the benchmarks, the test helpers
// gsipki and dcsectest) the package also issues certificates (issue.go):
// NewCA makes a CA with a signing policy for its own DN prefix, CA.Issue
// makes host and user certificates with GCT's key usages, CA.WriteTrustDir
// and CA.WriteCRL write its trust directory entries in the layout
// LoadTrustDir reads, and WriteCredential writes a certificate and key
// pair with modes 0644 and 0600.
//
// References: RFC 3820 (proxy certificates), RFC 5280 (PKIX), RFC 2986
// (PKCS #10), GFD.78 (GSI delegation), the OGF "EACL" signing-policy format.
package gsi
