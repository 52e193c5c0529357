// Package pkgdeb builds Ferry's Debian package with nfpm (used as a
// library, so that "make package" needs no other tool): the ferry binary,
// its manual pages, the systemd unit and its privsep drop-in, the default
// /etc/ferry/ferry.conf, and the maintainer scripts that create the ferry
// system account. The files come from the repository's packaging/
// directory; see packaging/README.md.
package pkgdeb

import (
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
)

// Options says what to package.
type Options struct {
	// Binary is the ferry executable. Required.
	Binary string
	// ManDir holds the pages "ferry man -dir" wrote (*.1); they are
	// packaged gzipped. Required.
	ManDir string
	// Source is the packaging/ directory (unit, config, scripts). Required.
	Source string
	// Version is the Debian version (upstream part), e.g. "0.1.0" or
	// "0.1.0~git20261127.82956a1"; it must start with a digit.
	Version string
	// Arch is the Debian architecture; "" means amd64.
	Arch string
	// OutDir receives ferry_VERSION_ARCH.deb.
	OutDir string
	// MTime stamps the files (reproducible builds); zero means now.
	MTime time.Time
}

// Unit is where the package installs the systemd unit.
const Unit = "/usr/lib/systemd/system/ferry.service"

var debVersion = regexp.MustCompile(`^[0-9][A-Za-z0-9.+~-]*$`)

// Build writes the package and returns its file name.
func Build(o Options) (string, error) {
	if o.Binary == "" || o.ManDir == "" || o.Source == "" || o.OutDir == "" {
		return "", errors.New("pkgdeb: Binary, ManDir, Source and OutDir are required")
	}
	if !debVersion.MatchString(o.Version) {
		return "", fmt.Errorf("pkgdeb: version %q is not a Debian upstream version (starts with a digit)", o.Version)
	}
	if o.Arch == "" {
		o.Arch = "amd64"
	}
	if o.MTime.IsZero() {
		o.MTime = time.Now()
	}
	src := func(name string) string { return filepath.Join(o.Source, name) }
	contents := files.Contents{
		{Source: o.Binary, Destination: "/usr/bin/ferry", FileInfo: &files.ContentFileInfo{Mode: 0o755}},
		{Source: src("ferry.service"), Destination: Unit, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
		{Source: src("privsep.conf"), Destination: "/usr/share/ferry/privsep.conf", FileInfo: &files.ContentFileInfo{Mode: 0o644}},
		{Source: src("ferry.conf"), Destination: "/etc/ferry/ferry.conf", Type: files.TypeConfigNoReplace, FileInfo: &files.ContentFileInfo{Mode: 0o644}},
	}
	tmp, err := os.MkdirTemp("", "ferry-pkgdeb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	pages, err := filepath.Glob(filepath.Join(o.ManDir, "*.1"))
	if err != nil {
		return "", err
	}
	if len(pages) == 0 {
		return "", fmt.Errorf("pkgdeb: no manual pages (*.1) in %s", o.ManDir)
	}
	for _, p := range pages {
		gz := filepath.Join(tmp, filepath.Base(p)+".gz")
		if err := gzipFile(p, gz, o.MTime); err != nil {
			return "", err
		}
		contents = append(contents, &files.Content{Source: gz, Destination: "/usr/share/man/man1/" + filepath.Base(gz), FileInfo: &files.ContentFileInfo{Mode: 0o644}})
	}
	info := &nfpm.Info{
		Name:          "ferry",
		Arch:          o.Arch,
		Platform:      "linux",
		Version:       o.Version,
		VersionSchema: "none",
		Section:       "net",
		Priority:      "optional",
		Maintainer:    "Ferry developers <ferry@ferrygrid.org>",
		Homepage:      "https://github.com/ferrygrid/ferry",
		Description: "GridFTP server, client and tools\n" +
			"Ferry is a GridFTP implementation: a server (ferry serve, with GSI,\n" +
			"FTPS, password and anonymous logins, MODE E parallel and striped\n" +
			"transfers) run by the ferry.service systemd unit, and the ferry cp,\n" +
			"ls, sync and shell clients.",
		MTime: o.MTime,
		Overridables: nfpm.Overridables{
			// libc6: the binary is linked with cgo, so that os/user
			// finds accounts of NSS (LDAP, SSSD) for grid mappings.
			Depends:  []string{"adduser", "libc6"},
			Contents: contents,
			Scripts: nfpm.Scripts{
				PostInstall: src("postinst"),
				PreRemove:   src("prerm"),
				PostRemove:  src("postrm"),
			},
		},
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", fmt.Errorf("pkgdeb: %w", err)
	}
	out := filepath.Join(o.OutDir, deb.Default.ConventionalFileName(info))
	f, err := os.Create(out)
	if err != nil {
		return "", err
	}
	if err := deb.Default.Package(info, f); err != nil {
		f.Close()
		os.Remove(out)
		return "", fmt.Errorf("pkgdeb: %w", err)
	}
	return out, f.Close()
}

// gzipFile compresses from into to, as Debian wants manual pages (-9n:
// no name, a fixed time).
func gzipFile(from, to string, mtime time.Time) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	f, err := os.Create(to)
	if err != nil {
		return err
	}
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		f.Close()
		return err
	}
	zw.ModTime = mtime
	if _, err := zw.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
