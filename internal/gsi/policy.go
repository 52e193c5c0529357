package gsi

import (
	"errors"
	"fmt"
	"strings"
)

// SigningPolicy is a parsed <hash>.signing_policy file (the EACL format of
// the Globus Toolkit):
//
//	# comment
//	access_id_CA   X509    '/C=US/O=Grid/CN=Grid CA'
//	pos_rights     globus  CA:sign
//	cond_subjects  globus  '"/C=US/O=Grid/*" "/C=US/O=Other/CN=*"'
//
// Each access_id_CA starts a block naming a CA; the block allows the CA to
// sign certificates whose subject matches one of the cond_subjects
// patterns, where '*' matches any run of characters (slashes included)
// and '?' any one character. Matching is case-sensitive, on the one-line
// DN form.
type SigningPolicy struct {
	blocks []policyBlock
}

type policyBlock struct {
	ca       string
	canSign  bool
	denied   bool
	subjects []string
}

// ParseSigningPolicy parses a signing policy file.
func ParseSigningPolicy(data []byte) (*SigningPolicy, error) {
	toks, err := policyTokens(string(data))
	if err != nil {
		return nil, err
	}
	p := &SigningPolicy{}
	for i := 0; i < len(toks); {
		if i+3 > len(toks) {
			return nil, fmt.Errorf("gsi: signing policy line %d: %q needs two arguments", toks[i].line, toks[i].text)
		}
		key, kind, val := toks[i], toks[i+1], toks[i+2]
		i += 3
		if key.quoted || kind.quoted {
			return nil, fmt.Errorf("gsi: signing policy line %d: unexpected quoted string", key.line)
		}
		if key.text == "access_id_CA" {
			if kind.text != "X509" {
				return nil, fmt.Errorf("gsi: signing policy line %d: access_id_CA type %q, want X509", key.line, kind.text)
			}
			p.blocks = append(p.blocks, policyBlock{ca: val.text})
			continue
		}
		if len(p.blocks) == 0 {
			return nil, fmt.Errorf("gsi: signing policy line %d: %s before access_id_CA", key.line, key.text)
		}
		b := &p.blocks[len(p.blocks)-1]
		switch key.text {
		case "pos_rights":
			if kind.text == "globus" && val.text == "CA:sign" {
				b.canSign = true
			}
		case "neg_rights":
			if kind.text == "globus" && val.text == "CA:sign" {
				b.denied = true
			}
		case "cond_subjects":
			if kind.text != "globus" {
				return nil, fmt.Errorf("gsi: signing policy line %d: cond_subjects type %q, want globus", key.line, kind.text)
			}
			subjects, err := splitSubjects(val.text)
			if err != nil {
				return nil, fmt.Errorf("gsi: signing policy line %d: %w", key.line, err)
			}
			b.subjects = append(b.subjects, subjects...)
		default:
			return nil, fmt.Errorf("gsi: signing policy line %d: unknown keyword %q", key.line, key.text)
		}
	}
	if len(p.blocks) == 0 {
		return nil, errors.New("gsi: signing policy has no access_id_CA")
	}
	return p, nil
}

type policyToken struct {
	text   string
	quoted bool
	line   int
}

// policyTokens splits a policy file into words and '…'-quoted strings
// (which may span lines); '#' outside quotes starts a comment.
func policyTokens(s string) ([]policyToken, error) {
	var toks []policyToken
	line := 1
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case isSpace(c):
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '\'':
			start := line
			j := i + 1
			for j < len(s) && s[j] != '\'' {
				if s[j] == '\n' {
					line++
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("gsi: signing policy line %d: unterminated quote", start)
			}
			toks = append(toks, policyToken{text: s[i+1 : j], quoted: true, line: start})
			i = j + 1
		default:
			j := i
			for j < len(s) && !isSpace(s[j]) && s[j] != '\'' && s[j] != '#' {
				j++
			}
			toks = append(toks, policyToken{text: s[i:j], line: line})
			i = j
		}
	}
	return toks, nil
}

// splitSubjects splits the value of cond_subjects: double-quoted patterns
// separated by blanks, or bare blank-separated patterns.
func splitSubjects(v string) ([]string, error) {
	if !strings.Contains(v, `"`) {
		f := strings.Fields(v)
		if len(f) == 0 {
			return nil, errors.New("empty cond_subjects")
		}
		return f, nil
	}
	var out []string
	for rest := strings.TrimSpace(v); rest != ""; rest = strings.TrimSpace(rest) {
		if rest[0] != '"' {
			return nil, fmt.Errorf("cond_subjects: unquoted text %q", rest)
		}
		end := strings.IndexByte(rest[1:], '"')
		if end < 0 {
			return nil, errors.New("cond_subjects: unterminated double quote")
		}
		out = append(out, rest[1:1+end])
		rest = rest[end+2:]
	}
	if len(out) == 0 {
		return nil, errors.New("empty cond_subjects")
	}
	return out, nil
}

// Allows reports (as a nil error) whether the policy lets the CA named
// caDN sign a certificate with subject subjectDN; both are one-line DNs.
func (p *SigningPolicy) Allows(caDN, subjectDN string) error {
	found := false
	for _, b := range p.blocks {
		if b.ca != caDN {
			continue
		}
		found = true
		if b.denied || !b.canSign {
			continue
		}
		for _, pat := range b.subjects {
			if globMatch(pat, subjectDN) {
				return nil
			}
		}
	}
	if !found {
		return fmt.Errorf("signing policy has no access_id_CA for %s", caDN)
	}
	return fmt.Errorf("subject %s is outside the CA's signing policy (cond_subjects)", subjectDN)
}

// globMatch matches s against a pattern where '*' is any run of bytes and
// '?' any one byte; it runs in O(len(pat)·len(s)) at worst.
func globMatch(pat, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pat) && (pat[p] == '?' || pat[p] == s[i]):
			p++
			i++
		case p < len(pat) && pat[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}
