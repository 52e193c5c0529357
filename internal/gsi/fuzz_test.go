package gsi

import (
	"crypto/x509"
	"testing"
	"time"
)

func FuzzParseGridMap(f *testing.F) {
	f.Add([]byte("\"/O=Grid/CN=Jane \\\"Q\\\" Doe\" jane,jdoe\n# c\n/O=x y\n"))
	f.Add([]byte(`"/O=Grid/CN=J\xc3" a`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseGridMap(data)
		if err == nil {
			g.Lookup("/O=Grid/CN=Jane")
		}
	})
}

func FuzzParseSigningPolicy(f *testing.F) {
	f.Add([]byte("access_id_CA X509 '/O=G/CN=CA'\npos_rights globus CA:sign\ncond_subjects globus '\"/O=G/*\"'\n"))
	f.Add([]byte("access_id_CA X509 '/O=G/CN=CA' cond_subjects globus '/O=*'"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseSigningPolicy(data)
		if err == nil {
			p.Allows("/O=G/CN=CA", "/O=G/CN=x")
		}
	})
}

func FuzzProxyCertInfo(f *testing.F) {
	f.Add(mustHex("3012020103300D060B2B060104019B5001010109"), false)
	f.Add(mustHex("3011300A06082B06010505071501A103020103"), true)
	f.Fuzz(func(t *testing.T, data []byte, draft bool) {
		parseProxyCertInfo(data, draft)
	})
}

func FuzzParseName(f *testing.F) {
	der, _ := ParseDN("/C=US/O=Grid/CN=Jane Doe")
	f.Add(der)
	f.Fuzz(func(t *testing.T, data []byte) {
		SubjectHash(data)
		rawDN(data)
		nameEqual(data, der)
	})
}

func FuzzParseCredentialPEM(f *testing.F) {
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ParseCredentialPEM(data)
	})
}

// FuzzVerify mutates one certificate of a valid proxy chain: Verify must
// not panic, and must refuse anything that no longer parses the same.
func FuzzVerify(f *testing.F) {
	l := getLab(f)
	uc, uk := l.user(f)
	user := loadCred(f, uc, uk)
	p, err := NewProxy(user, ProxyOptions{Limited: true})
	if err != nil {
		f.Fatal(err)
	}
	ts := l.store(f)
	ca := l.caCert(f)
	chain := append(p.Chain, ca)
	for i := range chain {
		f.Add(uint8(i), uint16(100), uint8(1))
	}
	f.Fuzz(func(t *testing.T, which uint8, pos uint16, flip uint8) {
		i := int(which) % len(chain)
		der := append([]byte(nil), chain[i].Raw...)
		der[int(pos)%len(der)] ^= flip
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return
		}
		mutated := append([]*x509.Certificate(nil), chain...)
		mutated[i] = c
		id, err := ts.Verify(mutated, time.Now())
		if err == nil && flip != 0 && i < 2 && id.DN != labUserDN {
			t.Errorf("mutated chain verified with identity %s", id.DN)
		}
		ProxyInfoOf(c)
	})
}
