package main

// Processing module flags of ferry cp (-src-module, -dst-module) and of
// the globus-url-copy mode (-smn/-smp, -dmn/-dmp, -mn/-mp).

import (
	"errors"
	"flag"
	"strings"
)

// cpModulesHelp is the cp help about processing modules.
const cpModulesHelp = `
Processing modules (docs/modules.md): -src-module NAME[=PARAMS] has the
source server send what its module chain makes of SRC (ERET NAME="PARAMS"
PATH), -dst-module NAME[=PARAMS] has the destination server undo its chain
over the data before storing it at DST (ESTO). NAME may be a chain
("tar,zstd"), PARAMS then holds each module's parameters separated by "|".
  ferry cp -src-module gzip=9 ftp://host/data.bin data.bin.gz
  ferry cp -dst-module gzip data.bin.gz ftp://host/data.bin
  ferry cp -src-module tar ftp://host/dir dir.tar
  ferry cp -dst-module tar dir.tar ftp://host/dir   (DST is the directory)
The server must allow the module (ferry serve -allowed-modules; its FEAT
lists them as "DPM name,..."). Module copies move one whole file: no -r,
-off, -len or -verify-checksum; with -rst a retry moves everything again.
`

// moduleFlag is a -src-module or -dst-module value: NAME[=PARAMS].
type moduleFlag struct {
	name, params string
}

func (m *moduleFlag) String() string {
	if m == nil || m.name == "" {
		return ""
	}
	if m.params == "" {
		return m.name
	}
	return m.name + "=" + m.params
}

func (m *moduleFlag) Set(v string) error {
	name, params, _ := strings.Cut(v, "=")
	if name == "" || strings.ContainsAny(name, " \t\"") {
		return errors.New("want NAME[=PARAMS], NAME a module or a chain of them (gzip, tar,zstd)")
	}
	if strings.Contains(params, `"`) {
		return errors.New("PARAMS may not hold a double quote")
	}
	m.name, m.params = name, params
	return nil
}

// registerModuleFlags adds -src-module and -dst-module to a cp flag set.
func registerModuleFlags(fs *flag.FlagSet, f *cpFlags) {
	fs.Var(&f.srcModule, "src-module", "have the source server send its processing module chain's output for SRC: `MODULE` is NAME or NAME=PARAMS (gzip, zstd, tar, cat, cksum; see below)")
	fs.BoolVar(&f.tar, "tar", false, "with -r, between a server and a local directory: move the tree as one tar stream through the server's tar module when its FEAT offers it (see below)")
	fs.Var(&f.dstModule, "dst-module", "have the destination server undo a processing module chain over the data before storing it at DST: `MODULE` is NAME or NAME=PARAMS (gzip, zstd: the data is compressed, stored decompressed; tar: a tar unpacked into the directory DST)")
}

// hasModules reports whether a module flag was given.
func (f *cpFlags) hasModules() bool { return f.srcModule.name != "" || f.dstModule.name != "" }

// checkModuleCopy refuses module flags with a copy they cannot go with.
func checkModuleCopy(f *cpFlags, many bool) error {
	switch {
	case f.tar && f.hasModules():
		return usagef("-tar uses the tar module itself; it does not go with -src-module or -dst-module")
	case !f.hasModules():
		return nil
	case many:
		return usagef("-src-module and -dst-module copy one file; they do not go with -r, -f, -sync or wildcards")
	case f.off > 0 || f.length > 0:
		return usagef("-src-module and -dst-module move whole files; they do not go with -off or -len")
	case f.verify:
		return usagef("-src-module and -dst-module change the data; they do not go with -verify-checksum")
	}
	return nil
}
