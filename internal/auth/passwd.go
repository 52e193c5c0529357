// Package auth holds Ferry's password accounts: the file `ferry passwd`
// writes and `ferry serve -passwd` reads.
//
// File format, one account per line, '#' starts a comment:
//
//	name:pbkdf2-sha256$<iterations>$<base64 salt>$<base64 key>[:home]
//
// home is an optional directory under the served root that becomes the
// user's root; without it (and without the last ':') the user's root is
// the whole served tree. An empty home after a ':' is an error, and so is
// a file that does not end with a newline (it may have been cut short,
// taking the end of the last home with it). Hashes are PBKDF2-HMAC-SHA256 with a 16-byte random salt.
package auth

import (
	"bufio"
	"bytes"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// DefaultIterations is the PBKDF2 work factor of new hashes (OWASP 2023).
const DefaultIterations = 600_000

const scheme = "pbkdf2-sha256"

// User is one account of a password file.
type User struct {
	Name string
	Hash string
	// Home is the user's root below the served root, clean and absolute ("/" for all of it).
	Home string
}

// Passwd is a loaded password file.
type Passwd struct {
	users map[string]User
	dummy string // a hash to burn time on for unknown users
}

// ErrFormat reports a malformed password file line.
var ErrFormat = errors.New("auth: malformed password file")

// Load reads a password file.
func Load(file string) (*Passwd, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, file)
	}
	return p, nil
}

// Users returns the file's users, sorted by name.
func (p *Passwd) Users() []User {
	out := make([]User, 0, len(p.users))
	for _, u := range p.users {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b User) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ErrCutShort reports a password file whose last line has no newline:
// a file written halfway, whose last line may have lost the end of its
// home ("bob:HASH:/data/bob" cut to "bob:HASH:/data" or "bob:HASH"),
// which would widen the user's access.
var ErrCutShort = errors.New("auth: password file does not end with a newline: cut short?")

// Parse parses password file contents. Contents that are not empty must
// end with a newline (ErrCutShort), as every file `ferry passwd` writes
// does.
func Parse(data []byte) (*Passwd, error) {
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return nil, ErrCutShort
	}
	p := &Passwd{users: map[string]User{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) < 2 || len(f) > 3 || f[0] == "" {
			return nil, fmt.Errorf("%w: line %d", ErrFormat, n)
		}
		if _, _, _, err := parseHash(f[1]); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, n, err)
		}
		u := User{Name: f[0], Hash: f[1], Home: "/"}
		if len(f) == 3 {
			// "name:hash:" may be "name:hash:/home" cut short: it must
			// not grant the whole tree.
			if strings.TrimSpace(f[2]) == "" {
				return nil, fmt.Errorf("%w: line %d: empty home (leave out the last ':' to serve the whole tree)", ErrFormat, n)
			}
			u.Home = path.Clean("/" + f[2])
		}
		p.users[u.Name] = u
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	p.dummy = hashWith("not a password", make([]byte, 16), DefaultIterations)
	return p, nil
}

// Verify checks a password and returns the user. Unknown users take as long
// as known ones.
func (p *Passwd) Verify(name, password string) (User, bool) {
	u, found := p.users[name]
	h := u.Hash
	if !found {
		h = p.dummy
	}
	good := CheckHash(h, password)
	return u, found && good
}

// Hash returns a new salted hash of password.
func Hash(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	return hashWith(password, salt, DefaultIterations), nil
}

func hashWith(password string, salt []byte, iter int) string {
	key, err := pbkdf2.Key(sha256.New, password, salt, iter, 32)
	if err != nil {
		panic(err) // only for parameters we chose
	}
	enc := base64.RawStdEncoding
	return fmt.Sprintf("%s$%d$%s$%s", scheme, iter, enc.EncodeToString(salt), enc.EncodeToString(key))
}

func parseHash(h string) (iter int, salt, key []byte, err error) {
	f := strings.Split(h, "$")
	if len(f) != 4 || f[0] != scheme {
		return 0, nil, nil, errors.New("hash is not " + scheme)
	}
	iter, err = strconv.Atoi(f[1])
	if err != nil || iter < 1000 || iter > 100_000_000 {
		return 0, nil, nil, errors.New("bad iteration count")
	}
	enc := base64.RawStdEncoding
	if salt, err = enc.DecodeString(f[2]); err != nil || len(salt) < 8 {
		return 0, nil, nil, errors.New("bad salt")
	}
	if key, err = enc.DecodeString(f[3]); err != nil || len(key) != 32 {
		return 0, nil, nil, errors.New("bad key")
	}
	return iter, salt, key, nil
}

// CheckHash reports whether password matches hash, in constant time.
func CheckHash(hash, password string) bool {
	iter, salt, key, err := parseHash(hash)
	if err != nil {
		return false
	}
	got, err := pbkdf2.Key(sha256.New, password, salt, iter, len(key))
	return err == nil && subtle.ConstantTimeCompare(got, key) == 1
}

// SetUser adds or replaces name in the password file (creating it, mode
// 0600), keeping every other line. The file is replaced atomically; a
// file that exists keeps its mode (at most 0640: the hashes are never
// world-readable), and its owner and group when the caller may set them,
// so that a server running as its own account (the packaged ferry.service
// reads /etc/ferry/passwd, root:ferry 0640) can still read it after root
// changed a password.
func SetUser(file, name, password, home string) error {
	if name == "" || strings.ContainsAny(name, ":\n\r# ") {
		return fmt.Errorf("auth: invalid user name %q", name)
	}
	if strings.ContainsAny(home, ":\n\r") {
		return fmt.Errorf("auth: invalid home %q", home)
	}
	h, err := Hash(password)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	mode, keepOwner := os.FileMode(0o600), func(*os.File) {}
	if fi, err := os.Stat(file); err == nil {
		mode = fi.Mode().Perm() & 0o640
		keepOwner = func(f *os.File) { chownLike(f, fi) }
	}
	var out bytes.Buffer
	for line := range strings.SplitSeq(strings.TrimRight(string(old), "\n"), "\n") {
		if line == "" {
			continue
		}
		if f, _, _ := strings.Cut(strings.TrimSpace(line), ":"); f == name {
			continue
		}
		out.WriteString(line + "\n")
	}
	entry := name + ":" + h
	if home != "" {
		entry += ":" + home
	}
	out.WriteString(entry + "\n")
	tmp, err := os.CreateTemp(filepath.Dir(file), ".passwd-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	keepOwner(tmp)
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
