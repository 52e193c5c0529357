package main

// SIGHUP in ferry serve: one handler that reads the -config file again,
// reloads the login policy (password file, grid-mapfile, host credential,
// trust directory and CRLs) and the movers of a striped server, then
// reopens the transfer log.

import (
	"context"
	"errors"
	"flag"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/ferrygrid/ferry/internal/auth"
	"github.com/ferrygrid/ferry/server"
)

// liveKeys are the serve flags (and -config keys) a SIGHUP applies to the
// running server; a change to any other key waits for a restart, and the
// log says so.
var liveKeys = map[string]bool{
	"anonymous":       true,
	"anonymous-write": true,
	"passwd":          true,
	"gridmap":         true,
	"cert":            true,
	"key":             true,
	"movers":          true, // a striped server's, from the -config file
}

// reloader is what a SIGHUP reloads in a running ferry serve.
type reloader struct {
	args           []string // ferry serve's command line, read again with the -config file
	cur            serveFlags
	values         map[string]string // cur's flag values, as text
	moversFromFlag bool
	srv            *server.Server
	obs            *serveObservers
	log            *slog.Logger
	// authenticate is the password check in force, kept when a new
	// password file is refused.
	authenticate func(ctx context.Context, user, pass string) (*server.Account, error)
}

// onHangup runs r.reload on each SIGHUP until stop is called.
func (r *reloader) onHangup() (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-hup:
			}
			r.reload()
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
		<-stopped
	}
}

// reload does what a SIGHUP asks. Whatever cannot be used (a config file
// that does not parse, a password file, grid-mapfile, credential or trust
// directory that cannot be read) is logged at error level with the file
// and the reason, and the running server keeps what it had for it. A
// password file or grid-mapfile that no longer exists is the exception:
// it revokes what it granted (no password logins, no mappings), logged at
// warn level.
//
// The login policy comes first and the transfer log last: reopening the
// log cannot block (translog refuses a FIFO or a symbolic link at once),
// and even if it failed, a new CRL or grid-mapfile is already in force.
func (r *reloader) reload() {
	defer r.obs.reopen(r.log)
	nf, values := r.cur, r.values
	if r.cur.config != "" {
		if f, v, err := r.readFlags(); err != nil {
			r.log.Error("SIGHUP: config file refused; keeping the current settings (the files they name are read again)", "config", r.cur.config, "err", err)
		} else {
			nf, values = f, v
			r.warnRestart(values)
		}
	}
	cfg := server.Config{Anonymous: nf.anonymous || nf.anonWrite, AnonymousWrite: nf.anonWrite, GridMap: nf.gridmap}
	cfg.HostCert, cfg.HostKey = hostCredentialFiles(nf.cert, nf.key)
	cfg.Authenticate = r.authenticate
	switch pw, err := loadPasswd(nf.passwd); {
	case nf.passwd == "":
		cfg.Authenticate = nil
	case errors.Is(err, fs.ErrNotExist):
		// Removing the file revokes every password it granted.
		r.log.Warn("SIGHUP: the password file is gone: no password logins until it is back and the server reloads", "file", nf.passwd)
		cfg.Authenticate = nil
	case err != nil:
		r.log.Error("SIGHUP: password file refused; keeping the current one", "file", nf.passwd, "err", err)
		nf.passwd = r.cur.passwd
	default:
		cfg.Authenticate = passwdAuthenticate(pw)
	}
	applied, err := r.srv.Reload(cfg)
	for _, e := range unwrapJoined(err) {
		var pe *server.ReloadPartError
		if errors.As(e, &pe) {
			r.log.Error("SIGHUP: "+pe.Part+" refused; keeping the current one", "file", pe.File, "err", pe.Err)
		} else {
			r.log.Error("SIGHUP: reload", "err", e)
		}
	}
	r.authenticate = cfg.Authenticate
	r.log.Info("SIGHUP: reloaded", "parts", strings.Join(applied, ", "), "anonymous", cfg.Anonymous, "passwd", nf.passwd != "")
	r.reloadMovers(nf)
	// Keys that need a restart keep their running values, so that the
	// next SIGHUP names them again.
	for k, v := range values {
		if liveKeys[k] {
			r.values[k] = v
		}
	}
	r.cur.anonymous, r.cur.anonWrite, r.cur.gridmap, r.cur.cert, r.cur.key = nf.anonymous, nf.anonWrite, nf.gridmap, nf.cert, nf.key
	r.cur.passwd, r.cur.movers = nf.passwd, nf.movers
}

// readFlags reads ferry serve's command line and -config file again.
func (r *reloader) readFlags() (serveFlags, map[string]string, error) {
	var f serveFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.register(fs)
	if err := fs.Parse(r.args); err != nil {
		return f, nil, err
	}
	if err := applyConfigFile(fs, r.cur.config); err != nil {
		return f, nil, err
	}
	return f, flagValues(fs), nil
}

// flagValues maps each flag of fs to its value as text.
func flagValues(fs *flag.FlagSet) map[string]string {
	v := map[string]string{}
	fs.VisitAll(func(fl *flag.Flag) { v[fl.Name] = fl.Value.String() })
	return v
}

// warnRestart logs each key whose new value needs a restart.
func (r *reloader) warnRestart(values map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if was := r.values[k]; !liveKeys[k] && values[k] != was {
			r.log.Warn("SIGHUP: this key needs a restart; still running with its old value", "key", k, "running", was, "new", values[k])
		}
	}
}

// reloadMovers applies the movers key of the -config file to a striped
// server. A -movers flag on the command line wins over the file, as at
// start-up, so then SIGHUP only says so.
func (r *reloader) reloadMovers(nf serveFlags) {
	if r.cur.movers == "" {
		return
	}
	switch {
	case r.moversFromFlag:
		r.log.Warn("SIGHUP: the movers were given with -movers on the command line; put them in the -config file to change them while serving")
		return
	case r.cur.config == "":
		r.log.Warn("SIGHUP: no -config file to reload the movers from")
		return
	}
	movers, err := parseMovers(nf.movers)
	if err == nil && len(movers) == 0 {
		err = errMoversKey
	}
	if err == nil {
		var joined, left []string
		if joined, left, err = r.srv.SetMovers(movers); err == nil {
			r.log.Info("SIGHUP: movers reloaded", "movers", strings.Join(movers, ","), "joined", strings.Join(joined, ","), "left", strings.Join(left, ","))
			return
		}
	}
	r.log.Error("SIGHUP: movers not reloaded; keeping the current ones", "config", r.cur.config, "err", err)
}

// errMoversKey is a -config file of a striped server without movers.
var errMoversKey = errors.New("no movers key")

// unwrapJoined splits an errors.Join error into its errors.
func unwrapJoined(err error) []error {
	if j, isJoined := err.(interface{ Unwrap() []error }); isJoined {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// loadPasswd loads a password file; "" loads nothing.
func loadPasswd(file string) (*auth.Passwd, error) {
	if file == "" {
		return nil, nil
	}
	return auth.Load(file)
}
