package history

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// dialect is the SQL back-end of a sqlStore.
type dialect int

const (
	dialectSQLite dialect = iota
	dialectPostgres
)

// sqlStore is a Store in an SQL database: SQLite or PostgreSQL. The two
// share every query; they differ in placeholders (rebind) and in how a
// time is written (timeArg).
type sqlStore struct {
	db      *sql.DB
	dialect dialect
	// stamp, for SQLite, is the file whose age says when the database
	// last passed its quick check (see checkDue); a corrupt result
	// removes it, so that the next Open checks again.
	stamp string
}

// noteCorrupt removes the check stamp when *err says the database is
// damaged.
func (s *sqlStore) noteCorrupt(err *error) {
	if *err != nil && s.stamp != "" && corrupt(*err) {
		os.Remove(s.stamp)
	}
}

var (
	_ Store      = (*sqlStore)(nil)
	_ BatchAdder = (*sqlStore)(nil)
)

// sqliteTime is how SQLite keeps a time: UTC text of fixed width, so that
// comparing texts compares times.
const sqliteTime = "2006-01-02T15:04:05.000000Z"

// timeArg is t as a query argument: UTC, to the microsecond.
func (s *sqlStore) timeArg(t time.Time) any {
	t = t.UTC().Truncate(time.Microsecond)
	if s.dialect == dialectSQLite {
		return t.Format(sqliteTime)
	}
	return t
}

// rebind turns the ? placeholders of query into PostgreSQL's $1, $2, ...
// The queries of this package have no ? in literals.
func (s *sqlStore) rebind(query string) string { return rebind(s.dialect, query) }

// rebind turns the ? placeholders of query into $1, $2, ... for
// PostgreSQL (d), and leaves them for SQLite.
func rebind(d dialect, query string) string {
	if d == dialectSQLite {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// dbTime scans a time column: a time.Time (PostgreSQL) or sqliteTime
// text (SQLite), into UTC.
type dbTime struct{ t *time.Time }

func (d dbTime) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		*d.t = v.UTC()
	case string:
		return d.parse(v)
	case []byte:
		return d.parse(string(v))
	case nil:
		*d.t = time.Time{}
	default:
		return fmt.Errorf("history: time column holds %T", src)
	}
	return nil
}

func (d dbTime) parse(v string) error {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return fmt.Errorf("history: time column: %w", err)
	}
	*d.t = t.UTC()
	return nil
}

// jsonList scans a JSON array column into a slice; an empty array is a
// nil slice.
type jsonList[T any] struct{ v *[]T }

func (j jsonList[T]) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	case nil:
		*j.v = nil
		return nil
	default:
		return fmt.Errorf("history: JSON column holds %T", src)
	}
	var out []T
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("history: JSON column: %w", err)
	}
	if len(out) == 0 {
		out = nil
	}
	*j.v = out
	return nil
}

// jsonArg is list as the text of a JSON array ("[]" when empty).
func jsonArg[T any](list []T) (string, error) {
	if len(list) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(list)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// transferCols are the columns of transfers that recordArgs writes and
// recordDests reads, in their order, after the id.
var transferCols = []string{
	"start_time", "end_time", "kind", "tool",
	"src_scheme", "src_host", "src_port", "src_domain",
	"dst_scheme", "dst_host", "dst_port", "dst_domain",
	"src_path", "dst_path", "size", "bytes", "duration_ns", "outcome", "error",
	"mode", "parallel", "tcp_buffer", "block_size", "concurrency", "pipeline",
	"stripes", "dcau", "prot", "auto",
	"rtt_ns", "bandwidth", "retransmits", "loss_rate",
	"stream_rates", "predicted_eta_ns", "tuning", "client_host", "user_name",
}

func (s *sqlStore) recordArgs(r *Record) ([]any, error) {
	rates, err := jsonArg(r.StreamRates)
	if err != nil {
		return nil, fmt.Errorf("history: stream rates: %w", err)
	}
	p, l := &r.Params, &r.Link
	return []any{
		s.timeArg(r.Start), s.timeArg(r.End), r.Kind, r.Tool,
		r.Src.Scheme, r.Src.Host, r.Src.Port, r.Src.Domain,
		r.Dst.Scheme, r.Dst.Host, r.Dst.Port, r.Dst.Domain,
		r.SrcPath, r.DstPath, r.Size, r.Bytes, int64(r.Duration), r.Outcome, r.Error,
		p.Mode, p.Parallel, p.TCPBuffer, p.BlockSize, p.Concurrency, p.Pipeline,
		p.Stripes, p.DCAU, p.Prot, p.Auto,
		int64(l.RTT), l.Bandwidth, l.Retransmits, l.LossRate,
		rates, int64(r.PredictedETA), r.Tuning, r.ClientHost, r.User,
	}, nil
}

// recordDests are the scan destinations of "id" and transferCols.
func recordDests(r *Record) []any {
	p, l := &r.Params, &r.Link
	return []any{
		&r.ID,
		dbTime{&r.Start}, dbTime{&r.End}, &r.Kind, &r.Tool,
		&r.Src.Scheme, &r.Src.Host, &r.Src.Port, &r.Src.Domain,
		&r.Dst.Scheme, &r.Dst.Host, &r.Dst.Port, &r.Dst.Domain,
		&r.SrcPath, &r.DstPath, &r.Size, &r.Bytes, (*int64)(&r.Duration), &r.Outcome, &r.Error,
		&p.Mode, &p.Parallel, &p.TCPBuffer, &p.BlockSize, &p.Concurrency, &p.Pipeline,
		&p.Stripes, &p.DCAU, &p.Prot, &p.Auto,
		(*int64)(&l.RTT), &l.Bandwidth, &l.Retransmits, &l.LossRate,
		jsonList[float64]{&r.StreamRates}, (*int64)(&r.PredictedETA), &r.Tuning, &r.ClientHost, &r.User,
	}
}

// probeCols are the columns of probes that probeArgs writes and
// probeDests reads, after the id.
var probeCols = []string{
	"probe_time",
	"src_scheme", "src_host", "src_port", "src_domain",
	"dst_scheme", "dst_host", "dst_port", "dst_domain",
	"rtt_ns", "bandwidth", "retransmits", "loss_rate",
	"max_buffer", "features", "note",
}

func (s *sqlStore) probeArgs(p *Probe) ([]any, error) {
	feat, err := jsonArg(p.Features)
	if err != nil {
		return nil, fmt.Errorf("history: features: %w", err)
	}
	return []any{
		s.timeArg(p.Time),
		p.Src.Scheme, p.Src.Host, p.Src.Port, p.Src.Domain,
		p.Dst.Scheme, p.Dst.Host, p.Dst.Port, p.Dst.Domain,
		int64(p.Link.RTT), p.Link.Bandwidth, p.Link.Retransmits, p.Link.LossRate,
		p.MaxBuffer, feat, p.Note,
	}, nil
}

func probeDests(p *Probe) []any {
	return []any{
		&p.ID,
		dbTime{&p.Time},
		&p.Src.Scheme, &p.Src.Host, &p.Src.Port, &p.Src.Domain,
		&p.Dst.Scheme, &p.Dst.Host, &p.Dst.Port, &p.Dst.Domain,
		(*int64)(&p.Link.RTT), &p.Link.Bandwidth, &p.Link.Retransmits, &p.Link.LossRate,
		&p.MaxBuffer, jsonList[string]{&p.Features}, &p.Note,
	}
}

// insert adds a row of cols to table and returns its id.
func (s *sqlStore) insert(ctx context.Context, table string, cols []string, args []any) (int64, error) {
	q := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" +
		strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ") RETURNING id"
	var id int64
	if err := s.db.QueryRowContext(ctx, s.rebind(q), args...).Scan(&id); err != nil {
		return 0, fmt.Errorf("history: add to %s: %w", table, err)
	}
	return id, nil
}

// Add stores r and returns its ID. Times are kept in UTC to the
// microsecond; r's ID is ignored and r is not changed.
func (s *sqlStore) Add(ctx context.Context, r *Record) (_ int64, err error) {
	defer s.noteCorrupt(&err)
	args, err := s.recordArgs(r)
	if err != nil {
		return 0, err
	}
	return s.insert(ctx, "transfers", transferCols, args)
}

// batchRows is how many records one INSERT of AddBatch carries: a
// statement per row costs more than the row (SQLite allows 32766
// arguments, PostgreSQL 65535; a record has len(transferCols)).
const batchRows = 32

// AddBatch stores rs in one transaction, batchRows to a statement: one
// commit (one WAL write and sync for SQLite) for them all instead of one
// each. A record whose arguments cannot be made is skipped and reported
// in the error; the others are stored, in order.
func (s *sqlStore) AddBatch(ctx context.Context, rs []*Record) error {
	var skipped error
	args := make([]any, 0, batchRows*len(transferCols))
	rows := 0
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: add to transfers: %w", err)
	}
	defer tx.Rollback()
	insert := func(rows int) string {
		one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(transferCols)), ", ") + ")"
		return s.rebind("INSERT INTO transfers (" + strings.Join(transferCols, ", ") + ") VALUES " +
			strings.TrimSuffix(strings.Repeat(one+", ", rows), ", "))
	}
	var full *sql.Stmt // of batchRows rows, prepared once
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	flush := func() error {
		var err error
		switch {
		case rows == 0:
			return nil
		case rows < batchRows:
			_, err = tx.ExecContext(ctx, insert(rows), args...)
		default:
			if full == nil {
				if full, err = tx.PrepareContext(ctx, insert(batchRows)); err != nil {
					return err
				}
			}
			_, err = full.ExecContext(ctx, args...)
		}
		args, rows = args[:0], 0
		return err
	}
	for _, r := range rs {
		a, err := s.recordArgs(r)
		if err != nil {
			skipped = cmp.Or(skipped, err)
			continue
		}
		args = append(args, a...)
		if rows++; rows == batchRows {
			if err := flush(); err != nil {
				return fmt.Errorf("history: add to transfers: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("history: add to transfers: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: add to transfers: %w", err)
	}
	return skipped
}

// AddProbe stores p and returns its ID, as Add.
func (s *sqlStore) AddProbe(ctx context.Context, p *Probe) (_ int64, err error) {
	defer s.noteCorrupt(&err)
	args, err := s.probeArgs(p)
	if err != nil {
		return 0, err
	}
	return s.insert(ctx, "probes", probeCols, args)
}

// where is the WHERE condition (without the keyword) and its arguments
// for f over a table whose time column is timeCol. Since is inclusive,
// Until exclusive. The outcome, user and tool are columns of transfers
// only.
func (s *sqlStore) where(f Filter, timeCol string, outcome bool) (string, []any) {
	conds := []string{"1 = 1"}
	var args []any
	if !f.Since.IsZero() {
		conds = append(conds, timeCol+" >= ?")
		args = append(args, s.timeArg(f.Since))
	}
	if !f.Until.IsZero() {
		conds = append(conds, timeCol+" < ?")
		args = append(args, s.timeArg(f.Until))
	}
	if f.Host != "" {
		h := strings.ToLower(f.Host)
		conds = append(conds, "(src_host = ? OR dst_host = ?)")
		args = append(args, h, h)
	}
	if outcome && f.Outcome != "" {
		conds = append(conds, "outcome = ?")
		args = append(args, f.Outcome)
	}
	if outcome && f.User != "" {
		conds = append(conds, "user_name = ?")
		args = append(args, f.User)
	}
	if outcome && f.Tool != "" {
		conds = append(conds, "tool = ?")
		args = append(args, f.Tool)
	}
	return strings.Join(conds, " AND "), args
}

// limit is the LIMIT clause of f, "" for none.
func limit(f Filter) string {
	if f.Limit <= 0 {
		return ""
	}
	return " LIMIT " + strconv.Itoa(f.Limit)
}

// Records returns the records f selects, newest first (by start time).
func (s *sqlStore) Records(ctx context.Context, f Filter) (_ []Record, err error) {
	defer s.noteCorrupt(&err)
	cond, args := s.where(f, "start_time", true)
	q := "SELECT id, " + strings.Join(transferCols, ", ") + " FROM transfers WHERE " + cond +
		" ORDER BY start_time DESC, id DESC" + limit(f)
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("history: list transfers: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		if err := rows.Scan(recordDests(&r)...); err != nil {
			return nil, fmt.Errorf("history: list transfers: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: list transfers: %w", err)
	}
	return out, nil
}

// Probes returns the probes f selects, newest first; f.Outcome does not
// apply to probes.
func (s *sqlStore) Probes(ctx context.Context, f Filter) (_ []Probe, err error) {
	defer s.noteCorrupt(&err)
	cond, args := s.where(f, "probe_time", false)
	q := "SELECT id, " + strings.Join(probeCols, ", ") + " FROM probes WHERE " + cond +
		" ORDER BY probe_time DESC, id DESC" + limit(f)
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("history: list probes: %w", err)
	}
	defer rows.Close()
	var out []Probe
	for rows.Next() {
		var p Probe
		if err := rows.Scan(probeDests(&p)...); err != nil {
			return nil, fmt.Errorf("history: list probes: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: list probes: %w", err)
	}
	return out, nil
}

// linksQuery sums the transfers a filter selects (%s: the condition)
// per (source host, destination host). The ends' other fields come from
// the newest record of the pair, the best parameters from its fastest
// successful one, RTT and bandwidth from its newest record that knew
// them. %s after it is the LIMIT clause.
const linksQuery = `
WITH r AS (
	SELECT * FROM transfers WHERE %s
), g AS (
	SELECT src_host, dst_host,
		count(*) AS n,
		CAST(sum(CASE WHEN outcome = 'failed' THEN 1 ELSE 0 END) AS bigint) AS failures,
		CAST(sum(bytes) AS bigint) AS bytes,
		CAST(sum(CASE WHEN outcome = 'ok' AND duration_ns > 0 THEN bytes ELSE 0 END) AS bigint) AS ok_bytes,
		CAST(sum(CASE WHEN outcome = 'ok' AND duration_ns > 0 THEN duration_ns ELSE 0 END) AS bigint) AS ok_ns,
		max(start_time) AS last
	FROM r GROUP BY src_host, dst_host
), newest AS (
	SELECT src_host, dst_host, src_scheme, src_port, src_domain, dst_scheme, dst_port, dst_domain,
		row_number() OVER (PARTITION BY src_host, dst_host ORDER BY start_time DESC, id DESC) AS rn
	FROM r
), best AS (
	SELECT src_host, dst_host, bytes, duration_ns,
		mode, parallel, tcp_buffer, block_size, concurrency, pipeline, stripes, dcau, prot, auto,
		row_number() OVER (PARTITION BY src_host, dst_host
			ORDER BY CAST(bytes AS double precision) / duration_ns DESC, id DESC) AS rn
	FROM r WHERE outcome = 'ok' AND duration_ns > 0
), rtt AS (
	SELECT src_host, dst_host, rtt_ns,
		row_number() OVER (PARTITION BY src_host, dst_host ORDER BY start_time DESC, id DESC) AS rn
	FROM r WHERE rtt_ns > 0
), bw AS (
	SELECT src_host, dst_host, bandwidth,
		row_number() OVER (PARTITION BY src_host, dst_host ORDER BY start_time DESC, id DESC) AS rn
	FROM r WHERE bandwidth > 0
)
SELECT g.src_host, n.src_scheme, n.src_port, n.src_domain,
	g.dst_host, n.dst_scheme, n.dst_port, n.dst_domain,
	g.n, g.failures, g.bytes, g.ok_bytes, g.ok_ns, g.last,
	b.bytes, b.duration_ns,
	b.mode, b.parallel, b.tcp_buffer, b.block_size, b.concurrency, b.pipeline, b.stripes, b.dcau, b.prot, b.auto,
	rtt.rtt_ns, bw.bandwidth
FROM g
JOIN newest n ON n.src_host = g.src_host AND n.dst_host = g.dst_host AND n.rn = 1
LEFT JOIN best b ON b.src_host = g.src_host AND b.dst_host = g.dst_host AND b.rn = 1
LEFT JOIN rtt ON rtt.src_host = g.src_host AND rtt.dst_host = g.dst_host AND rtt.rn = 1
LEFT JOIN bw ON bw.src_host = g.src_host AND bw.dst_host = g.dst_host AND bw.rn = 1
ORDER BY g.last DESC, g.src_host, g.dst_host%s`

// Links sums the records f selects per (source host, destination host),
// the pairs used last first; f.Limit bounds the number of pairs.
// MeanRate is the bytes of the successful transfers over their total
// duration; Failures counts outcome Failed only.
func (s *sqlStore) Links(ctx context.Context, f Filter) (_ []LinkSummary, err error) {
	defer s.noteCorrupt(&err)
	cond, args := s.where(f, "start_time", true)
	rows, err := s.db.QueryContext(ctx, s.rebind(fmt.Sprintf(linksQuery, cond, limit(f))), args...)
	if err != nil {
		return nil, fmt.Errorf("history: sum links: %w", err)
	}
	defer rows.Close()
	var out []LinkSummary
	for rows.Next() {
		var (
			l                     LinkSummary
			okBytes, okNs         int64
			bestBytes, bestNs     sql.Null[int64]
			mode, dcau, prot      sql.Null[string]
			par, buf, bs, cc, str sql.Null[int64]
			pipe, auto            sql.Null[bool]
			rtt                   sql.Null[int64]
			bw                    sql.Null[float64]
		)
		err := rows.Scan(
			&l.Src.Host, &l.Src.Scheme, &l.Src.Port, &l.Src.Domain,
			&l.Dst.Host, &l.Dst.Scheme, &l.Dst.Port, &l.Dst.Domain,
			&l.Transfers, &l.Failures, &l.Bytes, &okBytes, &okNs, dbTime{&l.Last},
			&bestBytes, &bestNs,
			&mode, &par, &buf, &bs, &cc, &pipe, &str, &dcau, &prot, &auto,
			&rtt, &bw)
		if err != nil {
			return nil, fmt.Errorf("history: sum links: %w", err)
		}
		if okNs > 0 {
			l.MeanRate = float64(okBytes) / time.Duration(okNs).Seconds()
		}
		if bestNs.Valid && bestNs.V > 0 {
			l.BestRate = float64(bestBytes.V) / time.Duration(bestNs.V).Seconds()
			l.BestParams = Params{
				Mode: mode.V, Parallel: int(par.V), TCPBuffer: int(buf.V), BlockSize: int(bs.V),
				Concurrency: int(cc.V), Pipeline: pipe.V, Stripes: int(str.V),
				DCAU: dcau.V, Prot: prot.V, Auto: auto.V,
			}
		}
		l.RTT = time.Duration(rtt.V)
		l.Bandwidth = bw.V
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: sum links: %w", err)
	}
	return out, nil
}

// Close closes the database.
func (s *sqlStore) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("history: close: %w", err)
	}
	return nil
}
