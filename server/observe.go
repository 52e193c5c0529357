package server

import (
	"time"

	"github.com/ferrygrid/ferry/internal/pi"
	"github.com/ferrygrid/ferry/internal/xfer"
)

// Transfer describes one file transfer, for accounting and metrics: the
// fields of GCT's transfer log line (start, end, user, file, bytes,
// streams, stripes, buffer, block, type, code, remote host) and Ferry's
// (DN, checksum, rate, retransmits). See Observer.Transfer.
type Transfer = xfer.Summary

// Auth methods, the values of Observer's auth arguments: a session that
// has not logged in is AuthNone.
const (
	AuthNone      = "none"
	AuthAnonymous = "anonymous"
	AuthPassword  = "password" // a password, on a plain or TLS control channel
	AuthGSI       = "gsi"      // a certificate proved with AUTH GSSAPI (GSI)
	AuthTLSCert   = "tls-cert" // a client certificate of AUTH TLS
	AuthKerberos  = "krb5"     // a Kerberos principal proved with AUTH GSSAPI
	AuthRefused   = "policy"   // a request the server's policy refuses before any check
)

// Observer is told what a server does, for metrics and accounting
// (internal/metrics and the transfer log implement it). Its methods are
// called from every session's goroutines at once, Reply for every reply:
// they must return quickly, must not block, and must not keep or change
// their arguments. Only counts and sizes reach it per transfer, never per
// block of data.
type Observer interface {
	// Session is told of each change of a session's auth method: from ""
	// to AuthNone when it starts, from AuthNone to the method when it
	// logs in, from its method to "" when it ends.
	Session(from, to string)
	// LoginRefused is told of each refused login, by the method it tried.
	LoginRefused(auth string)
	// Reply is told of each reply code written to a client.
	Reply(code int)
	// Handshake is told of each control-channel authentication handshake
	// that ended: mech "gsi" (AUTH GSSAPI, from AUTH to the last ADAT) or
	// "tls" (AUTH TLS), how long it took, and its error (nil: success).
	Handshake(mech string, d time.Duration, err error)
	// Transfer is told of each file transfer (not listings) twice: when
	// it starts, with t.End zero, and when it has ended, with every field
	// filled in. Both calls get the same *Transfer.
	Transfer(t *Transfer)
}

// TransferFunc is an Observer of transfers only, such as an accounting log:
// the function is called as Observer.Transfer, the other events are
// ignored.
type TransferFunc func(t *Transfer)

// Session ignores the event.
func (TransferFunc) Session(from, to string) {}

// LoginRefused ignores the event.
func (TransferFunc) LoginRefused(auth string) {}

// Reply ignores the event.
func (TransferFunc) Reply(code int) {}

// Handshake ignores the event.
func (TransferFunc) Handshake(mech string, d time.Duration, err error) {}

// Transfer calls f(t).
func (f TransferFunc) Transfer(t *Transfer) { f(t) }

// observers tells several Observers, in order.
type observers []Observer

func (o observers) Session(from, to string) {
	for _, x := range o {
		x.Session(from, to)
	}
}

func (o observers) LoginRefused(auth string) {
	for _, x := range o {
		x.LoginRefused(auth)
	}
}

func (o observers) Reply(code int) {
	for _, x := range o {
		x.Reply(code)
	}
}

func (o observers) Handshake(mech string, d time.Duration, err error) {
	for _, x := range o {
		x.Handshake(mech, d, err)
	}
}

func (o observers) Transfer(t *Transfer) {
	for _, x := range o {
		x.Transfer(t)
	}
}

var (
	_ Observer    = observers(nil)
	_ Observer    = TransferFunc(nil)
	_ pi.Observer = Observer(nil)
)

// authLabel is the auth method of a login request that was checked as
// method; a request refused without a check (denyLogin) is labelled by
// what it presented.
func authLabel(req pi.LoginRequest, method loginMethod) string {
	switch {
	case method == kerberosLogin || req.Mechanism == "krb5":
		return AuthKerberos
	case method == anonymousLogin:
		return AuthAnonymous
	case method == passwordLogin:
		return AuthPassword
	case (method == certificateLogin || req.Identity != nil) && req.Mechanism == "tls":
		return AuthTLSCert
	case method == certificateLogin || req.Identity != nil:
		return AuthGSI
	case req.User == "anonymous" || req.User == "ftp":
		return AuthAnonymous
	}
	return AuthPassword
}
