package main

// globus-url-copy's processing module options in the drop-in: -mn and
// -mp name the module and its parameters for both sides, -smn/-smp for
// the source, -dmn/-dmp for the destination. As in globus-url-copy, each
// option sets its side's value and the last one given wins (-mn gzip
// -smn zstd retrieves with zstd); parameters without a module name do
// nothing; a module on a side that is a local file does nothing. They
// become ferry cp's -src-module NAME=PARAMS and -dst-module.

import "strings"

// gucModules holds the module options, per side.
type gucModules struct {
	srcName, srcParams string
	dstName, dstParams string
}

// gucModule is the apply function of a module option: for the source,
// the destination or both, the name or (params) the parameters.
func gucModule(src, dst, params bool) func(*gucConfig, string) error {
	return func(c *gucConfig, v string) error {
		m := &c.modules
		switch {
		case src && params:
			m.srcParams = v
		case src:
			m.srcName = v
		}
		switch {
		case dst && params:
			m.dstParams = v
		case dst:
			m.dstName = v
		}
		return nil
	}
}

// moduleArgs are the ferry cp module flags of c. With the two URLs on
// the command line, a side that is no server gets none (globus-url-copy
// uses them only for GridFTP URLs); with a list file both go through,
// and ferry cp refuses modules with many files.
func (c *gucConfig) moduleArgs() []string {
	m := c.modules
	srcRemote, dstRemote := true, true
	if len(c.urls) == 2 && c.listFile == "" {
		srcRemote, dstRemote = isServerURL(c.urls[0]), isServerURL(c.urls[1])
	}
	var args []string
	if m.srcName != "" && srcRemote {
		args = append(args, "-src-module", moduleValue(m.srcName, m.srcParams))
	}
	if m.dstName != "" && dstRemote {
		args = append(args, "-dst-module", moduleValue(m.dstName, m.dstParams))
	}
	return args
}

// moduleValue is NAME[=PARAMS].
func moduleValue(name, params string) string {
	if params == "" {
		return name
	}
	return name + "=" + params
}

// isServerURL reports whether a globus-url-copy URL names a file on a
// GridFTP or FTP server.
func isServerURL(u string) bool {
	scheme, _, ok := strings.Cut(u, "://")
	if !ok {
		return false
	}
	switch strings.ToLower(scheme) {
	case "ftp", "gsiftp", "ftps", "sshftp":
		return true
	}
	return false
}
