-- The first schema: one row per transfer of one file, one per probe.
-- Times are UTC text, "2006-01-02T15:04:05.000000Z" (fixed width, so
-- that text order is time order); durations are nanoseconds; booleans
-- are 0 or 1; lists are JSON arrays.

CREATE TABLE transfers (
	id               INTEGER PRIMARY KEY AUTOINCREMENT,
	start_time       TEXT    NOT NULL,
	end_time         TEXT    NOT NULL,
	kind             TEXT    NOT NULL DEFAULT '',
	tool             TEXT    NOT NULL DEFAULT '',
	src_scheme       TEXT    NOT NULL DEFAULT '',
	src_host         TEXT    NOT NULL DEFAULT '',
	src_port         INTEGER NOT NULL DEFAULT 0,
	src_domain       TEXT    NOT NULL DEFAULT '',
	dst_scheme       TEXT    NOT NULL DEFAULT '',
	dst_host         TEXT    NOT NULL DEFAULT '',
	dst_port         INTEGER NOT NULL DEFAULT 0,
	dst_domain       TEXT    NOT NULL DEFAULT '',
	src_path         TEXT    NOT NULL DEFAULT '',
	dst_path         TEXT    NOT NULL DEFAULT '',
	size             INTEGER NOT NULL DEFAULT -1,
	bytes            INTEGER NOT NULL DEFAULT 0,
	duration_ns      INTEGER NOT NULL DEFAULT 0,
	outcome          TEXT    NOT NULL DEFAULT '',
	error            TEXT    NOT NULL DEFAULT '',
	mode             TEXT    NOT NULL DEFAULT '',
	parallel         INTEGER NOT NULL DEFAULT 0,
	tcp_buffer       INTEGER NOT NULL DEFAULT 0,
	block_size       INTEGER NOT NULL DEFAULT 0,
	concurrency      INTEGER NOT NULL DEFAULT 0,
	pipeline         INTEGER NOT NULL DEFAULT 0,
	stripes          INTEGER NOT NULL DEFAULT 0,
	dcau             TEXT    NOT NULL DEFAULT '',
	prot             TEXT    NOT NULL DEFAULT '',
	auto             INTEGER NOT NULL DEFAULT 0,
	rtt_ns           INTEGER NOT NULL DEFAULT 0,
	bandwidth        REAL    NOT NULL DEFAULT 0,
	retransmits      INTEGER NOT NULL DEFAULT -1,
	loss_rate        REAL    NOT NULL DEFAULT 0,
	stream_rates     TEXT    NOT NULL DEFAULT '[]',
	predicted_eta_ns INTEGER NOT NULL DEFAULT 0,
	tuning           TEXT    NOT NULL DEFAULT '',
	client_host      TEXT    NOT NULL DEFAULT '',
	user_name        TEXT    NOT NULL DEFAULT ''
);

-- The advisor's questions: this pair of hosts, this pair of sites,
-- lately; and the -host filter, which matches either end.
CREATE INDEX transfers_hosts   ON transfers (src_host, dst_host, start_time);
CREATE INDEX transfers_dst     ON transfers (dst_host, start_time);
CREATE INDEX transfers_domains ON transfers (src_domain, dst_domain, start_time);
CREATE INDEX transfers_start   ON transfers (start_time);

CREATE TABLE probes (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	probe_time  TEXT    NOT NULL,
	src_scheme  TEXT    NOT NULL DEFAULT '',
	src_host    TEXT    NOT NULL DEFAULT '',
	src_port    INTEGER NOT NULL DEFAULT 0,
	src_domain  TEXT    NOT NULL DEFAULT '',
	dst_scheme  TEXT    NOT NULL DEFAULT '',
	dst_host    TEXT    NOT NULL DEFAULT '',
	dst_port    INTEGER NOT NULL DEFAULT 0,
	dst_domain  TEXT    NOT NULL DEFAULT '',
	rtt_ns      INTEGER NOT NULL DEFAULT 0,
	bandwidth   REAL    NOT NULL DEFAULT 0,
	retransmits INTEGER NOT NULL DEFAULT -1,
	loss_rate   REAL    NOT NULL DEFAULT 0,
	max_buffer  INTEGER NOT NULL DEFAULT 0,
	features    TEXT    NOT NULL DEFAULT '[]',
	note        TEXT    NOT NULL DEFAULT ''
);

CREATE INDEX probes_hosts ON probes (src_host, dst_host, probe_time);
CREATE INDEX probes_dst   ON probes (dst_host, probe_time);
CREATE INDEX probes_time  ON probes (probe_time);
