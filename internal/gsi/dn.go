package gsi

import (
	"bytes"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Attribute types with the short names OpenSSL prints; anything else is
// printed as a dotted OID.
var (
	oidCountry      = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidCommonName   = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidOrganization = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidEmailAddress = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	oidDC           = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
)

var shortNames = []struct {
	name string
	oid  asn1.ObjectIdentifier
}{
	{"C", oidCountry},
	{"ST", asn1.ObjectIdentifier{2, 5, 4, 8}},
	{"L", asn1.ObjectIdentifier{2, 5, 4, 7}},
	{"O", oidOrganization},
	{"OU", asn1.ObjectIdentifier{2, 5, 4, 11}},
	{"CN", oidCommonName},
	{"DC", oidDC},
	{"emailAddress", oidEmailAddress},
	{"UID", asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}},
	{"serialNumber", asn1.ObjectIdentifier{2, 5, 4, 5}},
	{"street", asn1.ObjectIdentifier{2, 5, 4, 9}},
	{"title", asn1.ObjectIdentifier{2, 5, 4, 12}},
	{"SN", asn1.ObjectIdentifier{2, 5, 4, 4}},
	{"GN", asn1.ObjectIdentifier{2, 5, 4, 42}},
	{"initials", asn1.ObjectIdentifier{2, 5, 4, 43}},
	{"postalCode", asn1.ObjectIdentifier{2, 5, 4, 17}},
	{"dnQualifier", asn1.ObjectIdentifier{2, 5, 4, 46}},
	{"pseudonym", asn1.ObjectIdentifier{2, 5, 4, 65}},
}

func shortName(oid asn1.ObjectIdentifier) string {
	for _, s := range shortNames {
		if s.oid.Equal(oid) {
			return s.name
		}
	}
	return oid.String()
}

func oidForName(name string) (asn1.ObjectIdentifier, bool) {
	for _, s := range shortNames {
		if s.name == name {
			return s.oid, true
		}
	}
	// Aliases found in old grid-mapfiles and signing policies.
	switch name {
	case "Email", "E":
		return oidEmailAddress, true
	case "USERID":
		return shortNames[8].oid, true
	}
	var oid asn1.ObjectIdentifier
	for part := range strings.SplitSeq(name, ".") {
		var n int
		if part == "" || len(part) > 9 {
			return nil, false
		}
		for _, c := range part {
			if c < '0' || c > '9' {
				return nil, false
			}
			n = n*10 + int(c-'0')
		}
		oid = append(oid, n)
	}
	if len(oid) < 2 {
		return nil, false
	}
	return oid, true
}

// attribute is one AttributeTypeAndValue with its value still encoded, so
// that the string type survives (the canonical form and the one-line form
// both depend on it).
type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdn is one RelativeDistinguishedName (a SET; almost always one element).
type rdn []attribute

// parseName decodes a DER Name (RDNSequence) keeping the raw values.
func parseName(der []byte) ([]rdn, error) {
	var seq asn1.RawValue
	rest, err := asn1.Unmarshal(der, &seq)
	if err != nil {
		return nil, fmt.Errorf("gsi: bad name: %w", err)
	}
	if len(rest) != 0 || seq.Class != asn1.ClassUniversal || seq.Tag != asn1.TagSequence || !seq.IsCompound {
		return nil, errors.New("gsi: bad name: not a SEQUENCE")
	}
	var out []rdn
	for b := seq.Bytes; len(b) > 0; {
		var set asn1.RawValue
		if b, err = asn1.Unmarshal(b, &set); err != nil {
			return nil, fmt.Errorf("gsi: bad name: %w", err)
		}
		if set.Class != asn1.ClassUniversal || set.Tag != asn1.TagSet || !set.IsCompound {
			return nil, errors.New("gsi: bad name: RDN is not a SET")
		}
		var r rdn
		for s := set.Bytes; len(s) > 0; {
			var a attribute
			if s, err = asn1.Unmarshal(s, &a); err != nil {
				return nil, fmt.Errorf("gsi: bad name attribute: %w", err)
			}
			r = append(r, a)
		}
		if len(r) == 0 {
			return nil, errors.New("gsi: bad name: empty RDN")
		}
		out = append(out, r)
	}
	return out, nil
}

// valueBytes returns the bytes of a string value the way OpenSSL's
// X509_NAME_oneline sees them: UCS-2/UCS-4 strings whose characters are
// all below 256 are reduced to one byte per character.
func valueBytes(v asn1.RawValue) []byte {
	b := v.Bytes
	if v.Class != asn1.ClassUniversal {
		return b
	}
	width := 0
	switch v.Tag {
	case asn1.TagBMPString:
		width = 2
	case 28: // UniversalString
		width = 4
	}
	if width == 0 || len(b)%width != 0 {
		return b
	}
	out := make([]byte, 0, len(b)/width)
	for i := 0; i < len(b); i += width {
		for _, z := range b[i : i+width-1] {
			if z != 0 {
				return b
			}
		}
		out = append(out, b[i+width-1])
	}
	return out
}

func appendOneline(sb *strings.Builder, names []rdn) {
	const hex = "0123456789ABCDEF"
	for _, r := range names {
		for _, a := range r {
			sb.WriteByte('/')
			sb.WriteString(shortName(a.Type))
			sb.WriteByte('=')
			for _, c := range valueBytes(a.Value) {
				if c < ' ' || c > '~' {
					sb.WriteString(`\x`)
					sb.WriteByte(hex[c>>4])
					sb.WriteByte(hex[c&15])
				} else {
					sb.WriteByte(c)
				}
			}
		}
	}
}

// DN formats a name the way GCT and grid-mapfiles do: OpenSSL's one-line
// form "/C=US/O=GridLab/CN=Lab User", attributes in certificate order,
// known attribute types by their short names and others by dotted OID,
// bytes outside printable ASCII as \xHH.
func DN(name pkix.RDNSequence) string {
	var names []rdn
	for _, set := range name {
		var r rdn
		for _, atv := range set {
			v, err := encodeValue(atv.Type, atv.Value)
			if err != nil {
				continue
			}
			r = append(r, attribute{Type: atv.Type, Value: v})
		}
		if len(r) > 0 {
			names = append(names, r)
		}
	}
	var sb strings.Builder
	appendOneline(&sb, names)
	return sb.String()
}

// encodeValue turns a decoded pkix value back into a raw value.
func encodeValue(oid asn1.ObjectIdentifier, v any) (asn1.RawValue, error) {
	s, ok := v.(string)
	if !ok {
		b, err := asn1.Marshal(v)
		if err != nil {
			return asn1.RawValue{}, err
		}
		var rv asn1.RawValue
		_, err = asn1.Unmarshal(b, &rv)
		return rv, err
	}
	return stringValue(oid, s), nil
}

// stringValue encodes s the way `openssl req -subj` does with its default
// string mask: countryName as PrintableString, emailAddress and DC as
// IA5String, everything else as UTF8String.
func stringValue(oid asn1.ObjectIdentifier, s string) asn1.RawValue {
	tag := asn1.TagUTF8String
	switch {
	case oid.Equal(oidCountry):
		tag = asn1.TagPrintableString
	case oid.Equal(oidEmailAddress), oid.Equal(oidDC):
		tag = asn1.TagIA5String
	}
	return asn1.RawValue{Class: asn1.ClassUniversal, Tag: tag, Bytes: []byte(s)}
}

// rawDN formats a DER name; ok is false if it does not parse.
func rawDN(der []byte) (string, bool) {
	names, err := parseName(der)
	if err != nil {
		return "", false
	}
	var sb strings.Builder
	appendOneline(&sb, names)
	return sb.String(), true
}

// CertDN returns the subject of c in the one-line form of DN.
func CertDN(c *x509.Certificate) string {
	if s, ok := rawDN(c.RawSubject); ok {
		return s
	}
	return DN(c.Subject.ToRDNSequence())
}

// CertIssuerDN returns the issuer of c in the one-line form of DN.
func CertIssuerDN(c *x509.Certificate) string {
	if s, ok := rawDN(c.RawIssuer); ok {
		return s
	}
	return DN(c.Issuer.ToRDNSequence())
}

// ParseDN parses the one-line form ("/C=US/O=Grid/CN=Jane Doe") into a DER
// Name. A slash inside a value is written "\/", a backslash "\\", and any
// byte as \xHH. Values are encoded as `openssl req -subj` encodes them.
func ParseDN(s string) ([]byte, error) {
	if !strings.HasPrefix(s, "/") {
		return nil, fmt.Errorf("gsi: DN %q does not start with /", s)
	}
	var parts []string
	var cur strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			if s[i+1] == 'x' && i+3 < len(s) && isHex(s[i+2]) && isHex(s[i+3]) {
				cur.WriteByte(unhex(s[i+2])<<4 | unhex(s[i+3]))
				i += 3
			} else {
				cur.WriteByte(s[i+1])
				i++
			}
		case c == '/':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	parts = append(parts, cur.String())
	var seq []byte
	for _, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("gsi: DN %q: component %q is not TYPE=VALUE", s, p)
		}
		if v == "" {
			return nil, fmt.Errorf("gsi: DN %q: empty value for %s", s, k)
		}
		oid, ok := oidForName(k)
		if !ok {
			return nil, fmt.Errorf("gsi: DN %q: unknown attribute type %q", s, k)
		}
		if oid.Equal(oidCountry) && len(v) != 2 {
			return nil, fmt.Errorf("gsi: DN %q: country must be two letters", s)
		}
		atv, err := asn1.Marshal(attribute{Type: oid, Value: stringValue(oid, v)})
		if err != nil {
			return nil, err
		}
		set, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSet, IsCompound: true, Bytes: atv})
		if err != nil {
			return nil, err
		}
		seq = append(seq, set...)
	}
	return asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSequence, IsCompound: true, Bytes: seq})
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// canonString reports whether OpenSSL canonicalises values of this type
// (the others are hashed as they are).
func canonString(v asn1.RawValue) bool {
	if v.Class != asn1.ClassUniversal || v.IsCompound {
		return false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagT61String, asn1.TagIA5String,
		26 /* VisibleString */, asn1.TagBMPString, 28 /* UniversalString */ :
		return true
	}
	return false
}

// toUTF8 converts a string value to UTF-8; ok is false for malformed ones.
func toUTF8(v asn1.RawValue) ([]byte, bool) {
	b := v.Bytes
	switch v.Tag {
	case asn1.TagT61String: // treated as Latin-1, as OpenSSL does
		var out []byte
		for _, c := range b {
			out = utf8.AppendRune(out, rune(c))
		}
		return out, true
	case asn1.TagBMPString:
		if len(b)%2 != 0 {
			return nil, false
		}
		u := make([]uint16, len(b)/2)
		for i := range u {
			u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		}
		var out []byte
		for _, r := range utf16.Decode(u) {
			out = utf8.AppendRune(out, r)
		}
		return out, true
	case 28:
		if len(b)%4 != 0 {
			return nil, false
		}
		var out []byte
		for i := 0; i < len(b); i += 4 {
			r := rune(b[i])<<24 | rune(b[i+1])<<16 | rune(b[i+2])<<8 | rune(b[i+3])
			if !utf8.ValidRune(r) {
				return nil, false
			}
			out = utf8.AppendRune(out, r)
		}
		return out, true
	}
	return b, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// canonValue lower-cases ASCII letters, trims white space and folds runs of
// it into one space, as OpenSSL does before hashing or comparing names.
func canonValue(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case isSpace(c):
			out = append(out, ' ')
			for i+1 < len(b) && isSpace(b[i+1]) {
				i++
			}
		case 'A' <= c && c <= 'Z':
			out = append(out, c+'a'-'A')
		default:
			out = append(out, c)
		}
	}
	return out
}

// canonRDN returns the canonical DER of one RDN: a SET of attributes whose
// string values are canonicalised UTF8Strings, sorted as DER requires.
func canonRDN(r rdn) ([]byte, error) {
	var elems [][]byte
	for _, a := range r {
		v := a.Value
		if canonString(v) {
			u, ok := toUTF8(v)
			if !ok {
				return nil, errors.New("gsi: bad string in name")
			}
			v = asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagUTF8String, Bytes: canonValue(u)}
		} else {
			v = asn1.RawValue{FullBytes: v.FullBytes}
		}
		e, err := asn1.Marshal(attribute{Type: a.Type, Value: v})
		if err != nil {
			return nil, err
		}
		elems = append(elems, e)
	}
	slices.SortFunc(elems, bytes.Compare)
	return asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSet, IsCompound: true, Bytes: bytes.Join(elems, nil)})
}

// canonName returns the canonical encoding of a DER name, RDN by RDN.
func canonName(der []byte) ([][]byte, error) {
	names, err := parseName(der)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(names))
	for i, r := range names {
		if out[i], err = canonRDN(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// nameEqual compares two DER names as OpenSSL's X509_NAME_cmp does: by
// canonical form (case and white space in strings do not matter).
func nameEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	ca, err := canonName(a)
	if err != nil {
		return false
	}
	cb, err := canonName(b)
	if err != nil || len(ca) != len(cb) {
		return false
	}
	for i := range ca {
		if !bytes.Equal(ca[i], cb[i]) {
			return false
		}
	}
	return true
}

// SubjectHash returns OpenSSL's X509_NAME_hash of a DER name (the "new"
// hash of `openssl x509 -subject_hash`, OpenSSL ≥ 1.0) as 8 lower-case hex
// digits: the first four bytes, little-endian, of the SHA-1 of the
// canonical name encoding.
func SubjectHash(rawSubject []byte) (string, error) {
	c, err := canonName(rawSubject)
	if err != nil {
		return "", err
	}
	sum := sha1.Sum(bytes.Join(c, nil))
	v := uint32(sum[0]) | uint32(sum[1])<<8 | uint32(sum[2])<<16 | uint32(sum[3])<<24
	return fmt.Sprintf("%08x", v), nil
}
