package pi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrygrid/ferry/internal/checksum"
	"github.com/ferrygrid/ferry/internal/wire"
	"github.com/ferrygrid/ferry/internal/xfer"
)

type argRule int

const (
	argOptional argRule = iota
	argRequired
	argNone
)

// cmdSpec describes one verb: its handler, whether it is public (allowed
// before login; every other verb needs one), its argument rule and its HELP
// text. A handler returns the final reply, or a zero Reply when it has
// written its replies itself.
type cmdSpec struct {
	run    func(ctx context.Context, s *session, arg string) wire.Reply
	public bool
	arg    argRule
	help   string
}

// commandTable is where every verb is handled. SITE sub-commands are in siteTable.
var commandTable map[string]cmdSpec

func init() {
	commandTable = map[string]cmdSpec{
		// Access control (RFC 959 §4.1.1).
		"AUTH": {run: cmdAUTH, public: true, arg: argRequired, help: "AUTH <sp> GSSAPI|TLS"},
		"ADAT": {run: cmdADAT, public: true, arg: argRequired, help: "ADAT <sp> base64-token"},
		"USER": {run: cmdUSER, public: true, arg: argRequired, help: "USER <sp> username"},
		"PASS": {run: cmdPASS, public: true, help: "PASS <sp> password"},
		"QUIT": {run: cmdQUIT, public: true, arg: argNone, help: "QUIT"},
		"CWD":  {run: cmdCWD, help: "CWD [<sp> directory-name]"},
		"CDUP": {run: cmdCDUP, arg: argNone, help: "CDUP"},
		"PWD":  {run: cmdPWD, arg: argNone, help: "PWD"},
		// Transfer parameters (RFC 959 §4.1.2, RFC 2428).
		"TYPE": {run: cmdTYPE, arg: argRequired, help: "TYPE <sp> type-code (A or I)"},
		"MODE": {run: cmdMODE, arg: argRequired, help: "MODE <sp> mode-code (S)"},
		"STRU": {run: cmdSTRU, arg: argRequired, help: "STRU <sp> structure-code (F)"},
		"PASV": {run: cmdPASV, arg: argNone, help: "PASV"},
		"EPSV": {run: cmdEPSV, help: "EPSV [<sp> 1|2|ALL]"},
		"PORT": {run: cmdPORT, arg: argRequired, help: "PORT <sp> h1,h2,h3,h4,p1,p2"},
		"EPRT": {run: cmdEPRT, arg: argRequired, help: "EPRT <sp> |af|addr|port|"},
		"SPAS": {run: cmdSPAS, help: "SPAS [<sp> any: addresses in EPRT form]"},
		"SPOR": {run: cmdSPOR, arg: argRequired, help: "SPOR <sp> host-port [<sp> host-port...]"},
		"REST": {run: cmdREST, arg: argRequired, help: "REST <sp> offset | start-end[,start-end...]"},
		"PART": {run: cmdPART, arg: argRequired, help: "PART <sp> start-end (the part of the file the next STOR brings)"},
		"ALLO": {run: cmdALLO, arg: argRequired, help: "ALLO <sp> size"},
		"SBUF": {run: cmdSBUF, arg: argRequired, help: "SBUF <sp> bytes"},
		"TREV": {run: cmdTREV, arg: argRequired, help: "TREV <sp> PERF|RESTART <sp> seconds"},
		"DCAU": {run: cmdDCAU, arg: argRequired, help: "DCAU <sp> N"},
		"DCSC": {run: cmdDCSC, arg: argRequired, help: "DCSC <sp> P <sp> base64-PEM-credential | DCSC <sp> D"},
		"PBSZ": {run: cmdPBSZ, arg: argRequired, help: "PBSZ <sp> size"},
		"PROT": {run: cmdPROT, arg: argRequired, help: "PROT <sp> C"},
		// Data transfers (transfer.go).
		"RETR": {run: cmdRETR, arg: argRequired, help: "RETR <sp> pathname"},
		"STOR": {run: cmdSTOR, arg: argRequired, help: "STOR <sp> pathname"},
		"APPE": {run: cmdAPPE, arg: argRequired, help: "APPE <sp> pathname"},
		"ERET": {run: cmdERET, arg: argRequired, help: "ERET <sp> P <sp> offset <sp> length <sp> pathname"},
		"ESTO": {run: cmdESTO, arg: argRequired, help: "ESTO <sp> A <sp> offset <sp> pathname"},
		"LIST": {run: cmdLIST, help: "LIST [<sp> pathname]"},
		"NLST": {run: cmdNLST, help: "NLST [<sp> pathname]"},
		"MLSD": {run: cmdMLSD, help: "MLSD [<sp> pathname]"},
		"ABOR": {run: cmdABOR, public: true, arg: argNone, help: "ABOR"},
		// Files and directories (files.go).
		"MLST": {run: cmdMLST, help: "MLST [<sp> pathname]"},
		"SIZE": {run: cmdSIZE, arg: argRequired, help: "SIZE <sp> pathname"},
		"MDTM": {run: cmdMDTM, arg: argRequired, help: "MDTM <sp> pathname"},
		"MFMT": {run: cmdMFMT, arg: argRequired, help: "MFMT <sp> YYYYMMDDHHMMSS <sp> pathname"},
		"DELE": {run: cmdDELE, arg: argRequired, help: "DELE <sp> pathname"},
		"MKD":  {run: cmdMKD, arg: argRequired, help: "MKD <sp> pathname"},
		"RMD":  {run: cmdRMD, arg: argRequired, help: "RMD <sp> pathname"},
		"RNFR": {run: cmdRNFR, arg: argRequired, help: "RNFR <sp> pathname"},
		"RNTO": {run: cmdRNTO, arg: argRequired, help: "RNTO <sp> pathname"},
		"CKSM": {run: cmdCKSM, arg: argRequired, help: "CKSM <sp> algorithm <sp> offset <sp> length <sp> pathname"},
		// Informational.
		"SYST": {run: cmdSYST, arg: argNone, help: "SYST"},
		"STAT": {run: cmdSTAT, help: "STAT [<sp> pathname]"},
		"HELP": {run: cmdHELP, public: true, help: "HELP [<sp> command]"},
		"NOOP": {run: cmdNOOP, public: true, help: "NOOP"},
		"FEAT": {run: cmdFEAT, public: true, arg: argNone, help: "FEAT"},
		"OPTS": {run: cmdOPTS, arg: argRequired, help: "OPTS <sp> command <sp> options"},
		"SITE": {run: cmdSITE, public: true, arg: argRequired, help: "SITE <sp> command"},
	}
}

func ok(code int, format string, args ...any) wire.Reply {
	return wire.Reply{Code: code, Lines: []string{fmt.Sprintf(format, args...)}}
}

func cmdUSER(ctx context.Context, s *session, arg string) wire.Reply {
	if s.acct != nil {
		return ok(503, "You are already logged in.")
	}
	s.user = arg
	return ok(331, "Password required for %s.", arg)
}

func cmdPASS(ctx context.Context, s *session, arg string) wire.Reply {
	if s.acct != nil {
		return ok(503, "You are already logged in.")
	}
	if s.user == "" {
		return ok(503, "Login with USER first.")
	}
	if s.sec.mode == secGSIPending {
		return ok(503, "Finish the ADAT exchange first.")
	}
	user := s.user
	s.user = ""
	req := LoginRequest{
		User: user, Password: arg,
		Protected: s.sec.mode == secGSI || s.sec.mode == secTLS || s.sec.mode == secKrb5,
		Identity:  s.sec.identity(),
		Principal: s.sec.krbPrincipal(),
		Service:   s.sec.service,
		Remote:    remoteAddrPort(s.conn).Addr().Unmap(),
		Mechanism: s.sec.mechanism(),
	}
	acct, err := s.cfg.Login(ctx, req)
	if err != nil {
		if !errors.Is(err, ErrLoginDenied) {
			s.log.Error("login failed", "user", user, "err", err)
		} else {
			s.log.Info("login denied", "user", user, "err", err)
		}
		// A failed guess costs the guesser time, not the server CPU.
		if d := s.cfg.loginFailureDelay(); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		// The peer hears why only where the reason is policy, not a
		// secret: never whether a DN or user is known.
		msg := "Login incorrect."
		switch {
		case errors.Is(err, ErrProtectionRequired):
			msg = "Login incorrect: password logins need a protected control channel (use FTPS or GSI)."
		case errors.Is(err, ErrHomeUnavailable):
			msg = "Login incorrect: your home directory is not available on this server; tell its administrator."
		}
		return s.authFailed(530, msg)
	}
	s.acct = acct
	s.fs = acct.Storage
	s.loggedIn.Store(true)
	if s.cfg.OnLogin != nil {
		s.cfg.OnLogin(s.conn, acct)
	}
	if h, homed := s.dtp.(interface{ SetHome(string) }); homed {
		h.SetHome(acct.Home)
	}
	s.log = s.log.With("user", acct.Name)
	s.log.Info("logged in")
	if s.sec.mode == secGSI {
		// GSI sessions authenticate data channels by default (DCAU A).
		s.dcau = 'A'
		s.applyDataSecurity()
	}
	return ok(230, "User %s logged in.", acct.Name)
}

func cmdQUIT(ctx context.Context, s *session, arg string) wire.Reply {
	s.quit = true
	return ok(221, "Goodbye.")
}

func cmdNOOP(ctx context.Context, s *session, arg string) wire.Reply {
	return ok(200, "NOOP command successful.")
}

func cmdSYST(ctx context.Context, s *session, arg string) wire.Reply {
	return ok(215, "UNIX Type: L8")
}

func cmdPWD(ctx context.Context, s *session, arg string) wire.Reply {
	return ok(257, "%s is current directory.", quotePath(s.cwd))
}

// quotePath quotes a path for 257 replies, doubling embedded quotes (RFC 959 Appendix II).
func quotePath(p string) string {
	return `"` + strings.ReplaceAll(p, `"`, `""`) + `"`
}

func cmdCWD(ctx context.Context, s *session, arg string) wire.Reply {
	p := s.abs(arg)
	if arg == "" {
		p = "/"
	}
	fi, err := s.fs.Stat(ctx, p)
	if err != nil {
		return fsError(s, err, arg)
	}
	if !fi.IsDir() {
		return ok(550, "%s: Not a directory.", arg)
	}
	s.cwd = p
	return ok(250, "CWD command successful.")
}

func cmdCDUP(ctx context.Context, s *session, arg string) wire.Reply {
	return cmdCWD(ctx, s, "..")
}

func cmdTYPE(ctx context.Context, s *session, arg string) wire.Reply {
	f := wire.SplitArgs(strings.ToUpper(arg), 0)
	switch {
	case len(f) == 1 && f[0] == "I", len(f) == 2 && f[0] == "L" && f[1] == "8":
		s.typ = xfer.TypeImage
		return ok(200, "Type set to I.")
	case f[0] == "A" && (len(f) == 1 || len(f) == 2 && f[1] == "N"):
		s.typ = xfer.TypeASCII
		return ok(200, "Type set to A.")
	}
	return ok(501, "'TYPE %s' unrecognized type.", arg)
}

func cmdMODE(ctx context.Context, s *session, arg string) wire.Reply {
	switch strings.ToUpper(arg) {
	case "S":
		s.mode = xfer.ModeStream
		return ok(200, "Mode set to S.")
	case "E":
		s.mode = xfer.ModeEBlock
		return ok(200, "Mode set to E.")
	}
	return ok(501, "'MODE %s' unrecognized transfer mode.", arg)
}

func cmdSTRU(ctx context.Context, s *session, arg string) wire.Reply {
	if strings.EqualFold(arg, "F") {
		return ok(200, "STRU F ok.")
	}
	return ok(501, "Syntax error in parameter: only STRU F is supported.")
}

func cmdPASV(ctx context.Context, s *session, arg string) wire.Reply {
	if s.epsvAll {
		return ok(503, "EPSV ALL in effect; use EPSV.")
	}
	ap, err := s.dtp.Passive(ctx, true)
	if err != nil {
		s.log.Warn("passive listen failed", "err", err)
		return ok(425, "Cannot open passive connection: %s.", reason(err))
	}
	s.activeUnchecked = false // passive replaces any active address
	hp, err := wire.FormatPORT(ap)
	if err != nil {
		return ok(425, "Cannot open passive connection: %v.", err)
	}
	return ok(227, "Entering Passive Mode (%s)", hp)
}

func cmdEPSV(ctx context.Context, s *session, arg string) wire.Reply {
	switch strings.ToUpper(arg) {
	case "ALL":
		s.epsvAll = true
		return ok(229, "EPSV ALL Successful.")
	case "", "1", "2":
	default:
		return ok(522, "Network protocol not supported, use (1,2).")
	}
	ap, err := s.dtp.Passive(ctx, false)
	if err != nil {
		s.log.Warn("passive listen failed", "err", err)
		return ok(425, "Cannot open passive connection: %s.", reason(err))
	}
	s.activeUnchecked = false // passive replaces any active address
	if _, striped := s.dtp.(StripedDTP); striped && ap.Addr() != localAddrPort(s.conn).Addr() {
		// A striped server's first data node is another host: name it
		// (the form GCT uses with its epsv_ip option).
		return ok(229, "Entering Extended Passive Mode (%s)", wire.FormatEPRT(ap))
	}
	return ok(229, "Entering Extended Passive Mode (|||%d|)", ap.Port())
}

func cmdPORT(ctx context.Context, s *session, arg string) wire.Reply {
	if s.epsvAll {
		return ok(503, "EPSV ALL in effect; use EPSV.")
	}
	ap, err := wire.ParsePORT(arg)
	if err != nil {
		return ok(501, "Illegal PORT command.")
	}
	return s.setActive(ctx, []netip.AddrPort{ap})
}

func cmdEPRT(ctx context.Context, s *session, arg string) wire.Reply {
	if s.epsvAll {
		return ok(503, "EPSV ALL in effect; use EPSV.")
	}
	ap, err := wire.ParseEPRT(arg)
	if err != nil {
		return ok(522, "Network protocol not supported, use (1,2).")
	}
	return s.setActive(ctx, []netip.AddrPort{ap})
}

// cmdSPAS is striped passive (GFD.020 §4.1): one address line per stripe
// (one for a single-host server, one per data node for a StripedDTP). An
// argument asks for EPRT-form lines.
func cmdSPAS(ctx context.Context, s *session, arg string) wire.Reply {
	if s.epsvAll {
		return ok(503, "EPSV ALL in effect; use EPSV.")
	}
	var addrs []netip.AddrPort
	var err error
	if sd, striped := s.dtp.(StripedDTP); striped {
		addrs, err = sd.PassiveStripes(ctx, arg == "")
	} else {
		var ap netip.AddrPort
		ap, err = s.dtp.Passive(ctx, arg == "")
		addrs = []netip.AddrPort{ap}
	}
	if err != nil {
		s.log.Warn("passive listen failed", "err", err)
		return ok(425, "Cannot open passive connection: %v.", err)
	}
	s.activeUnchecked = false // passive replaces any active address
	lines := []string{"Entering Striped Passive Mode."}
	for _, ap := range addrs {
		// The reply writer indents continuation lines by one space, as
		// GCT's SPAS lines are (GFD.020's examples).
		line := wire.FormatEPRT(ap)
		if arg == "" {
			hp, err := wire.FormatPORT(ap)
			if err != nil {
				return ok(425, "Cannot open passive connection: %v.", err)
			}
			line = hp
		}
		lines = append(lines, line)
	}
	return wire.Reply{Code: 229, Lines: append(lines, "End")}
}

// cmdSPOR is striped active (GFD.020 §4.2): one address per receiving stripe.
func cmdSPOR(ctx context.Context, s *session, arg string) wire.Reply {
	if s.epsvAll {
		return ok(503, "EPSV ALL in effect; use EPSV.")
	}
	addrs, err := wire.ParseHostPorts(arg)
	if err != nil || len(addrs) == 0 || len(addrs) > 64 {
		return ok(522, "Network protocol not supported, use (1,2).")
	}
	return s.setActive(ctx, addrs)
}

// setActive applies FTP bounce protection (RFC 2577): data connections go
// only to the control peer, and never to a privileged port.
func (s *session) setActive(ctx context.Context, addrs []netip.AddrPort) wire.Reply {
	// Bounce protection (RFC 2577) guards unauthenticated data channels; a
	// GSI data channel with DCAU authenticates its peer, so third-party
	// transfers between servers work there. Addresses allowed only for
	// that reason are remembered, so that DCAU N cannot keep them (the DTP
	// checks again when it connects).
	// Anonymous users of a GSI session are not who the certificate says.
	authenticated := s.sec.mode == secGSI && s.dcau != 'N' && !s.acct.Anonymous
	unchecked := false
	for _, ap := range addrs {
		if ap.Port() == 0 {
			return ok(501, "Illegal PORT command.")
		}
		if err := s.bounceCheck(ap); err != nil {
			if !authenticated {
				s.log.Warn("refused PORT", "addr", ap, "err", err)
				return ok(501, "Illegal PORT command: %v.", err)
			}
			unchecked = true
		}
	}
	if err := s.dtp.Active(ctx, addrs); err != nil {
		return ok(425, "Cannot use data address: %v.", err)
	}
	s.activeUnchecked = unchecked
	return ok(200, "PORT Command successful.")
}

// bounceCheck is the rule for data addresses of an unauthenticated data
// channel: the control peer's own address and an unprivileged port.
func (s *session) bounceCheck(ap netip.AddrPort) error {
	if s.cfg.AllowForeignDataAddress {
		return nil
	}
	if peer := remoteAddrPort(s.conn).Addr().Unmap(); ap.Addr().Unmap() != peer {
		return fmt.Errorf("the data address must be the client's own (%s)", peer)
	}
	if ap.Port() < 1024 {
		return fmt.Errorf("privileged port %d refused", ap.Port())
	}
	return nil
}

func cmdREST(ctx context.Context, s *session, arg string) wire.Reply {
	rs, err := xfer.ParseRangeList(strings.TrimSpace(arg))
	if err != nil {
		return ok(501, "bad parameter.")
	}
	s.rest, s.hasRest = rs, true
	return ok(350, "Restart Marker OK. Send STORE or RETR to initiate transfer.")
}

func cmdALLO(ctx context.Context, s *session, arg string) wire.Reply {
	f := wire.SplitArgs(arg, 0)
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 {
		return ok(501, "Syntax error in parameters or arguments.")
	}
	s.allo = n
	return ok(200, "ALLO command successful.")
}

// cmdSBUF sets the TCP buffer size of later data connections (GridFTP SBUF).
func cmdSBUF(ctx context.Context, s *session, arg string) wire.Reply {
	if r := s.setBuffer(arg); r.Code != 200 {
		return ok(502, "Invalid Parameter.")
	}
	return ok(200, "SBUF Command Successful.")
}

func (s *session) setBuffer(arg string) wire.Reply {
	n, err := strconv.Atoi(strings.TrimSpace(arg))
	if err != nil || n < 0 || n > 1<<30 {
		return ok(501, "Buffer size must be 0 to 1073741824 bytes.")
	}
	s.dtp.SetBuffer(n)
	s.buffer = n
	return ok(200, "Site Command Successful.")
}

// cmdTREV sets marker frequencies: TREV PERF|RESTART <seconds>.
func cmdTREV(ctx context.Context, s *session, arg string) wire.Reply {
	f := wire.SplitArgs(arg, 2)
	if len(f) != 2 {
		return ok(501, "Syntax error in parameters or arguments.")
	}
	n, err := strconv.Atoi(strings.TrimSpace(f[1]))
	if err != nil || n < 0 || n > 3600 {
		return ok(501, "TREV: frequency must be 0 to 3600 seconds.")
	}
	switch strings.ToUpper(f[0]) {
	case "PERF":
		s.perfFreq = time.Duration(n) * time.Second
	case "RESTART":
		s.rangeFreq = time.Duration(n) * time.Second
	default:
		return ok(502, "Unsupported event.")
	}
	return ok(200, "Command Successful.")
}

// cmdDCAU: data channel authentication (GFD.020 §4.6). A and S need a GSI
// session; refusing them elsewhere beats accepting them and failing every
// transfer (as GCT does). Any DCAU drops cached data connections.
func cmdDCAU(ctx context.Context, s *session, arg string) wire.Reply {
	f := wire.SplitArgs(arg, 2)
	mode := strings.ToUpper(f[0])
	switch mode {
	case "N":
		if s.prot != 'C' {
			return ok(503, "DCAU N would leave PROT %c without protection; send PROT C first.", s.prot)
		}
		if s.activeUnchecked {
			// The address was allowed only for an authenticated channel.
			return ok(503, "DCAU N refused: the data address set by PORT/EPRT/SPOR is allowed only with DCAU; send DCAU N first, then the address.")
		}
		s.dcau, s.dcauSubject = 'N', ""
	case "A", "S":
		if s.sec.mode != secGSI {
			return ok(504, "DCAU %s needs a GSI (gsiftp://) session.", mode)
		}
		if mode == "S" {
			if len(f) < 2 || strings.TrimSpace(f[1]) == "" {
				return ok(501, "DCAU S expected subject.")
			}
			s.dcauSubject = strings.TrimSpace(f[1])
		}
		s.dcau = mode[0]
	default:
		if len(mode) > 1 {
			return ok(504, "Bad DCAU mode.")
		}
		return ok(501, "Bad DCAU mode.")
	}
	s.applyDataSecurity()
	return ok(200, "DCAU %s.", mode)
}

func cmdPBSZ(ctx context.Context, s *session, arg string) wire.Reply {
	n, err := strconv.ParseUint(strings.TrimSpace(arg), 10, 32)
	if err != nil {
		return ok(501, "Syntax error in parameters or arguments.")
	}
	return ok(200, "PBSZ=%d", n)
}

// cmdPROT sets the data channel protection level (RFC 2228). A level that
// cannot be delivered is refused: data never flows in clear when protection
// was asked for.
func cmdPROT(ctx context.Context, s *session, arg string) wire.Reply {
	level := strings.ToUpper(strings.TrimSpace(arg))
	switch {
	case level == "C":
	case level == "E":
		return ok(536, "Protection level E is not supported.")
	case level != "S" && level != "P":
		return ok(504, "Unknown protection level.")
	case s.sec.mode == secKrb5:
		// Kerberos sessions keep data channels in clear (krb5.go).
		return ok(536, "Protection level %s is not supported with Kerberos; only PROT C.", level)
	case s.sec.mode != secGSI && s.sec.mode != secTLS:
		return ok(536, "Protection level %s needs AUTH GSSAPI or AUTH TLS first; data would flow in clear.", level)
	case s.sec.mode == secGSI && s.dcau == 'N':
		return ok(536, "Protection level %s needs DCAU A or S; data would flow in clear.", level)
	case s.sec.mode == secTLS && level == "S":
		return ok(536, "FTPS supports PROT C and P.")
	}
	s.prot = level[0]
	s.applyDataSecurity()
	return ok(200, "Protection level set to %s.", level)
}

func cmdABOR(ctx context.Context, s *session, arg string) wire.Reply {
	// A running transfer was cancelled by the reader and has already been
	// answered (426); ABOR itself always succeeds.
	return ok(226, "Abort successful")
}

func cmdSTAT(ctx context.Context, s *session, arg string) wire.Reply {
	if arg == "" {
		who := "not logged in"
		if s.acct != nil {
			who = "logged in as " + s.acct.Name
		}
		return wire.Reply{Code: 211, Lines: []string{
			"Ferry GridFTP server status:",
			fmt.Sprintf("Connected from %s, %s", remoteAddrPort(s.conn), who),
			fmt.Sprintf("TYPE: %c, MODE: %c, STRU: F", s.typ, s.mode),
			"End of status.",
		}}
	}
	return statPath(ctx, s, arg)
}

func cmdHELP(ctx context.Context, s *session, arg string) wire.Reply {
	if arg != "" {
		verb := strings.ToUpper(arg)
		if spec, found := commandTable[verb]; found {
			return wire.Reply{Code: 214, Lines: []string{"Help for " + verb + ":", spec.help, "End."}}
		}
		if verb == "SITE" {
			return siteHelp()
		}
		return ok(502, "Unknown command '%s'.", verb)
	}
	verbs := make([]string, 0, len(commandTable))
	for v := range commandTable {
		verbs = append(verbs, v)
	}
	slices.Sort(verbs)
	lines := []string{"The following commands are recognized:"}
	for i := 0; i < len(verbs); i += 8 {
		var b strings.Builder
		for _, v := range verbs[i:min(i+8, len(verbs))] {
			fmt.Fprintf(&b, "    %-4s", v)
		}
		lines = append(lines, strings.TrimPrefix(b.String(), " "))
	}
	return wire.Reply{Code: 214, Lines: append(lines, "End")}
}

// cmdFEAT lists the extensions this server really implements (RFC 2389);
// each line is derived from the command table or the capability it names.
func cmdFEAT(ctx context.Context, s *session, arg string) wire.Reply {
	lines := []string{"Extensions supported"}
	add := func(verb, feat string) {
		if _, found := commandTable[verb]; found {
			lines = append(lines, feat)
		}
	}
	if sec := s.cfg.Security; sec != nil {
		if sec.Host != nil && sec.Trust != nil || sec.Kerberos != nil {
			lines = append(lines, "AUTH GSSAPI")
		}
		if sec.tlsCert() != nil {
			lines = append(lines, "AUTH TLS", "PBSZ", "PROT")
		}
	}
	add("CKSM", "CKSM "+checksum.Feature())
	add("EPSV", "EPSV")
	add("EPRT", "EPRT")
	add("MDTM", "MDTM")
	add("MFMT", "MFMT")
	add("DCAU", "DCAU")
	if s.canDCSC() {
		add("DCSC", featDCSC)
	}
	add("ERET", "ERET")
	add("ESTO", "ESTO")
	if feat := featModules(s.cfg.AllowedModules); feat != "" {
		add("ERET", feat)
	}
	add("MLST", "MLST "+wire.FeatMLST(s.facts))
	add("OPTS", "PARALLEL")
	if s.canPart() {
		add("PART", featPart)
	}
	add("REST", "REST STREAM")
	add("SIZE", "SIZE")
	add("SPAS", "SPAS")
	add("SPOR", "SPOR")
	if s.canDrain() {
		lines = append(lines, featStorDrain)
	}
	lines = append(lines, "TVFS", "UTF8")
	return wire.Reply{Code: 211, Lines: append(lines, "End.")}
}

func cmdOPTS(ctx context.Context, s *session, arg string) wire.Reply {
	f := wire.SplitArgs(arg, 2)
	opt := ""
	if len(f) > 1 {
		opt = f[1]
	}
	switch strings.ToUpper(f[0]) {
	case "UTF8":
		switch strings.ToUpper(strings.TrimSpace(opt)) {
		case "ON", "":
			return ok(200, "UTF8 set to on.")
		case "OFF":
			return ok(200, "UTF8 set to off.")
		}
		return ok(501, "OPTS UTF8 takes ON or OFF.")
	case "MLST":
		s.facts = wire.ParseFactSet(opt)
		return ok(200, "MLST OPTS %s", s.facts)
	case "RETR":
		return s.optsRetr(opt)
	case "PIPE":
		return s.optsPipe(opt)
	}
	return ok(501, "OPTS %s not supported.", f[0])
}

// optsRetr parses GridFTP's OPTS RETR name=value; list (protocol.md §6).
func (s *session) optsRetr(opt string) wire.Reply {
	items := strings.Split(opt, ";")
	if len(items) < 2 || strings.TrimSpace(items[len(items)-1]) != "" {
		return ok(501, "OPTS RETR options must each end in ';'.")
	}
	parallel, bs, layout, marks := s.parallel, s.stripeBS, s.layout, s.retrMarks
	for _, it := range items[:len(items)-1] {
		name, value, found := strings.Cut(strings.TrimSpace(it), "=")
		if !found {
			return ok(501, "OPTS RETR: bad option %q.", it)
		}
		switch strings.ToLower(name) {
		case "parallelism":
			n, err := strconv.Atoi(strings.Split(value, ",")[0])
			if err != nil || n < 1 || n > 64 {
				return ok(501, "OPTS RETR: parallelism must be 1 to 64.")
			}
			parallel = n
		case "blocksize":
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 || n > 64<<20 {
				return ok(501, "OPTS RETR: BlockSize must be 1 to 67108864.")
			}
			bs = int64(n)
		case "markers":
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 || n > 3600 {
				return ok(501, "OPTS RETR: markers must be 0 to 3600 seconds.")
			}
			marks = time.Duration(n) * time.Second
		case "stripelayout":
			switch strings.ToLower(value) {
			case "blocked":
				layout = xfer.LayoutBlocked
			case "partitioned":
				layout = xfer.LayoutPartitioned
			default:
				return ok(501, "OPTS RETR: StripeLayout must be Blocked or Partitioned.")
			}
		default:
			return ok(501, "OPTS RETR: unknown option %q.", name)
		}
	}
	s.parallel, s.stripeBS, s.layout, s.retrMarks = parallel, bs, layout, marks
	return ok(200, "OPTS Command Successful.")
}

// localAddrPort is the control connection's local address.
func localAddrPort(c net.Conn) netip.AddrPort {
	if a, isTCP := c.LocalAddr().(*net.TCPAddr); isTCP {
		return a.AddrPort()
	}
	return netip.AddrPort{}
}

// remoteAddrPort is the control peer's address (invalid if it is not TCP).
func remoteAddrPort(c net.Conn) netip.AddrPort {
	if a, isTCP := c.RemoteAddr().(*net.TCPAddr); isTCP {
		return a.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	return ap
}
