// Package metrics exposes a Ferry server's (and data mover's) metrics in
// the Prometheus format, with prometheus/client_golang. Server implements
// server.Observer: the server tells it of sessions, logins, replies,
// handshakes and transfers, and it counts them in a registry of its own
// (never the global default one, so that several servers, and tests, can
// live in one process).
//
// Costs: nothing is counted per block of data. A transfer is observed
// when it starts and when it ends (its bytes, streams and retransmissions
// then), a reply once, a session at each change of its auth method.
//
// Labels take a few fixed values each (auth method, direction, mode,
// outcome, reply code, mechanism): never a user, a path or an address.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ferrygrid/ferry/internal/xfer"
)

// Label values.
const (
	Download = "download" // the server sends (RETR, ERET)
	Upload   = "upload"   // the server receives (STOR, APPE, ESTO)

	ModeStream = "stream"
	ModeEBlock = "eblock"

	OutcomeOK        = "ok"        // 2xx final reply
	OutcomeTransient = "transient" // 4xx: aborted, data connection failed, no space...
	OutcomePermanent = "permanent" // 5xx, or no reply (a data mover's failure)
)

// authMethods are the auth labels server.Observer uses (server.AuthNone...).
var authMethods = []string{"none", "anonymous", "password", "gsi", "tls-cert", "krb5"}

// NewRegistry returns a registry with the Go runtime's and the process's
// collectors, for one server or mover.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves reg's metrics (for /metrics).
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// Server counts a GridFTP server's events; it implements server.Observer.
// Create it with NewServer.
type Server struct {
	sessions      *prometheus.GaugeVec
	logins        *prometheus.CounterVec
	refused       *prometheus.CounterVec
	replies       *prometheus.CounterVec
	handshakes    *prometheus.CounterVec
	handshakeTime *prometheus.HistogramVec
	transfers     *Transfers
}

// NewServer registers a server's metrics with reg.
func NewServer(reg prometheus.Registerer) *Server {
	m := &Server{
		sessions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ferry_sessions",
			Help: "Control connections open, by auth method (none: not logged in yet).",
		}, []string{"auth"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ferry_logins_total",
			Help: "Successful logins, by auth method.",
		}, []string{"auth"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ferry_logins_refused_total",
			Help: "Refused logins, by the auth method tried.",
		}, []string{"auth"}),
		replies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ferry_replies_total",
			Help: "Control channel replies, by reply code.",
		}, []string{"code"}),
		handshakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ferry_handshakes_total",
			Help: "Control channel authentication handshakes (gsi: AUTH GSSAPI with its ADAT exchange; tls: AUTH TLS), by outcome.",
		}, []string{"mech", "outcome"}),
		handshakeTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ferry_handshake_duration_seconds",
			Help:    "Time from AUTH to the end of the handshake (gsi: the last ADAT, the client's turns included).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"mech"}),
		transfers: NewTransfers(reg),
	}
	reg.MustRegister(m.sessions, m.logins, m.refused, m.replies, m.handshakes, m.handshakeTime)
	for _, a := range authMethods {
		m.sessions.WithLabelValues(a)
		if a != "none" {
			m.logins.WithLabelValues(a)
			m.refused.WithLabelValues(a)
		}
	}
	for _, mech := range []string{"gsi", "tls", "krb5"} {
		m.handshakes.WithLabelValues(mech, OutcomeOK)
		m.handshakes.WithLabelValues(mech, "failed")
		m.handshakeTime.WithLabelValues(mech)
	}
	return m
}

// Session counts a session's change of auth method (server.Observer).
func (m *Server) Session(from, to string) {
	if from != "" {
		m.sessions.WithLabelValues(from).Dec()
	}
	if to != "" {
		m.sessions.WithLabelValues(to).Inc()
	}
	if from != "" && to != "" {
		m.logins.WithLabelValues(to).Inc()
	}
}

// LoginRefused counts a refused login (server.Observer).
func (m *Server) LoginRefused(auth string) { m.refused.WithLabelValues(auth).Inc() }

// Reply counts a reply (server.Observer).
func (m *Server) Reply(code int) {
	if code < 100 || code > 999 {
		code = 0 // bounded, whatever happens
	}
	m.replies.WithLabelValues(codeLabel(code)).Inc()
}

// Handshake counts a handshake and its latency (server.Observer).
func (m *Server) Handshake(mech string, d time.Duration, err error) {
	outcome := OutcomeOK
	if err != nil {
		outcome = "failed"
	}
	m.handshakes.WithLabelValues(mech, outcome).Inc()
	m.handshakeTime.WithLabelValues(mech).Observe(d.Seconds())
}

// Transfer counts a transfer as it starts and ends (server.Observer).
func (m *Server) Transfer(t *xfer.Summary) { m.transfers.Observe(t) }

// codeLabel is the label of a reply code; the usual ones cost no allocation.
func codeLabel(code int) string {
	if code >= 100 && code < 700 {
		return codeLabels[code-100]
	}
	return strconv.Itoa(code)
}

var codeLabels = func() (l [600]string) {
	for i := range l {
		l[i] = strconv.Itoa(100 + i)
	}
	return l
}()

// Transfers counts transfers: those running, those done, their bytes,
// rates, durations, data connections and retransmissions. A server's
// Server has one; a data mover uses it alone.
type Transfers struct {
	running     *prometheus.GaugeVec
	done        *prometheus.CounterVec
	bytes       *prometheus.CounterVec
	rate        *prometheus.HistogramVec
	duration    *prometheus.HistogramVec
	conns       *prometheus.CounterVec
	streams     *prometheus.HistogramVec
	retransmits *prometheus.CounterVec
}

// NewTransfers registers the transfer metrics with reg.
func NewTransfers(reg prometheus.Registerer) *Transfers {
	dm := []string{"direction", "mode"}
	m := &Transfers{
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ferry_transfers_running",
			Help: "Transfers in progress.",
		}, dm),
		done: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ferry_transfers_total",
			Help: "Transfers ended, by outcome (ok: 2xx; transient: 4xx; permanent: 5xx).",
		}, []string{"direction", "mode", "outcome"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ferry_transfer_bytes_total",
			Help: "Bytes of file data moved by ended transfers, failed ones included.",
		}, dm),
		rate: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ferry_transfer_rate_bytes_per_second",
			Help:    "Average rate of each successful transfer of 1 MiB or more.",
			Buckets: prometheus.ExponentialBuckets(1<<20, 2, 16), // 1 MiB/s .. 32 GiB/s
		}, dm),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ferry_transfer_duration_seconds",
			Help:    "Duration of each ended transfer.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10), // 10 ms .. 44 min
		}, dm),
		conns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ferry_data_connections_total",
			Help: "Data connections opened by transfers (MODE E ones cached from the previous transfer are not counted again).",
		}, dm),
		streams: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ferry_transfer_streams",
			Help:    "Data connections (parallel streams, over all stripes) each transfer used.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
		}, dm),
		retransmits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ferry_data_retransmits_total",
			Help: "TCP segments the data connections retransmitted during transfers (Linux TCP_INFO).",
		}, dm),
	}
	reg.MustRegister(m.running, m.done, m.bytes, m.rate, m.duration, m.conns, m.streams, m.retransmits)
	for _, d := range []string{Download, Upload} {
		for _, mode := range []string{ModeStream, ModeEBlock} {
			m.running.WithLabelValues(d, mode)
			m.bytes.WithLabelValues(d, mode)
			m.conns.WithLabelValues(d, mode)
			m.retransmits.WithLabelValues(d, mode)
			m.rate.WithLabelValues(d, mode)
			m.duration.WithLabelValues(d, mode)
			m.streams.WithLabelValues(d, mode)
			for _, o := range []string{OutcomeOK, OutcomeTransient, OutcomePermanent} {
				m.done.WithLabelValues(d, mode, o)
			}
		}
	}
	return m
}

// Observe counts t as it starts (t.End zero) or ends.
func (m *Transfers) Observe(t *xfer.Summary) {
	dir, mode := Direction(t), Mode(t.Mode)
	if t.End.IsZero() {
		m.running.WithLabelValues(dir, mode).Inc()
		return
	}
	m.running.WithLabelValues(dir, mode).Dec()
	outcome := Outcome(t.Code)
	m.done.WithLabelValues(dir, mode, outcome).Inc()
	m.bytes.WithLabelValues(dir, mode).Add(float64(max(t.Bytes, 0)))
	m.duration.WithLabelValues(dir, mode).Observe(t.Duration().Seconds())
	if outcome == OutcomeOK && t.Bytes >= 1<<20 {
		m.rate.WithLabelValues(dir, mode).Observe(t.Rate())
	}
	if t.Streams > 0 {
		m.conns.WithLabelValues(dir, mode).Add(float64(t.Opened))
		m.streams.WithLabelValues(dir, mode).Observe(float64(t.Streams))
	}
	if t.Retransmits > 0 {
		m.retransmits.WithLabelValues(dir, mode).Add(float64(t.Retransmits))
	}
}

// Direction is t's direction label.
func Direction(t *xfer.Summary) string {
	if t.Upload {
		return Upload
	}
	return Download
}

// Mode is the label of a transfer mode.
func Mode(m xfer.Mode) string {
	if m == xfer.ModeEBlock {
		return ModeEBlock
	}
	return ModeStream
}

// Outcome is the label of a transfer's final reply code.
func Outcome(code int) string {
	switch code / 100 {
	case 2:
		return OutcomeOK
	case 4:
		return OutcomeTransient
	}
	return OutcomePermanent
}

// RegisterMovers registers ferry_movers, the data movers of a striped
// server that are up and down as status reports them when scraped.
func RegisterMovers(reg prometheus.Registerer, status func() (up, total int)) {
	reg.MustRegister(&moversCollector{status: status, desc: prometheus.NewDesc("ferry_movers",
		"Data movers of a striped server, by state.", []string{"state"}, nil)})
}

type moversCollector struct {
	desc   *prometheus.Desc
	status func() (up, total int)
}

func (c *moversCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *moversCollector) Collect(ch chan<- prometheus.Metric) {
	up, total := c.status()
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(up), "up")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(total-up), "down")
}

// Privsep counts the privilege-separation helpers of a server running as
// root (one process per mapped account).
type Privsep struct {
	starts *prometheus.CounterVec
}

// NewPrivsep registers ferry_privsep_helpers, the helpers running as
// running reports them when scraped, and ferry_privsep_helper_starts_total.
func NewPrivsep(reg prometheus.Registerer, running func() int) *Privsep {
	p := &Privsep{starts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ferry_privsep_helper_starts_total",
		Help: "Privilege-separation helper processes started, by outcome.",
	}, []string{"outcome"})}
	p.starts.WithLabelValues(OutcomeOK)
	p.starts.WithLabelValues("failed")
	reg.MustRegister(p.starts, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "ferry_privsep_helpers",
		Help: "Privilege-separation helper processes (one per mapped account in use).",
	}, func() float64 { return float64(running()) }))
	return p
}

// Started counts a helper start that ended with err.
func (p *Privsep) Started(err error) {
	if err != nil {
		p.starts.WithLabelValues("failed").Inc()
		return
	}
	p.starts.WithLabelValues(OutcomeOK).Inc()
}
