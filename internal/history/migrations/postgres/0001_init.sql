-- The first schema: one row per transfer of one file, one per probe.
-- Times are timestamptz (microseconds, read back in UTC); durations are
-- nanoseconds; lists are JSON arrays.

CREATE TABLE transfers (
	id               bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	start_time       timestamptz NOT NULL,
	end_time         timestamptz NOT NULL,
	kind             text    NOT NULL DEFAULT '',
	tool             text    NOT NULL DEFAULT '',
	src_scheme       text    NOT NULL DEFAULT '',
	src_host         text    NOT NULL DEFAULT '',
	src_port         bigint  NOT NULL DEFAULT 0,
	src_domain       text    NOT NULL DEFAULT '',
	dst_scheme       text    NOT NULL DEFAULT '',
	dst_host         text    NOT NULL DEFAULT '',
	dst_port         bigint  NOT NULL DEFAULT 0,
	dst_domain       text    NOT NULL DEFAULT '',
	src_path         text    NOT NULL DEFAULT '',
	dst_path         text    NOT NULL DEFAULT '',
	size             bigint  NOT NULL DEFAULT -1,
	bytes            bigint  NOT NULL DEFAULT 0,
	duration_ns      bigint  NOT NULL DEFAULT 0,
	outcome          text    NOT NULL DEFAULT '',
	error            text    NOT NULL DEFAULT '',
	mode             text    NOT NULL DEFAULT '',
	parallel         bigint  NOT NULL DEFAULT 0,
	tcp_buffer       bigint  NOT NULL DEFAULT 0,
	block_size       bigint  NOT NULL DEFAULT 0,
	concurrency      bigint  NOT NULL DEFAULT 0,
	pipeline         boolean NOT NULL DEFAULT false,
	stripes          bigint  NOT NULL DEFAULT 0,
	dcau             text    NOT NULL DEFAULT '',
	prot             text    NOT NULL DEFAULT '',
	auto             boolean NOT NULL DEFAULT false,
	rtt_ns           bigint  NOT NULL DEFAULT 0,
	bandwidth        double precision NOT NULL DEFAULT 0,
	retransmits      bigint  NOT NULL DEFAULT -1,
	loss_rate        double precision NOT NULL DEFAULT 0,
	stream_rates     jsonb   NOT NULL DEFAULT '[]',
	predicted_eta_ns bigint  NOT NULL DEFAULT 0,
	tuning           text    NOT NULL DEFAULT '',
	client_host      text    NOT NULL DEFAULT '',
	user_name        text    NOT NULL DEFAULT ''
);

-- The advisor's questions: this pair of hosts, this pair of sites,
-- lately; and the -host filter, which matches either end.
CREATE INDEX transfers_hosts   ON transfers (src_host, dst_host, start_time);
CREATE INDEX transfers_dst     ON transfers (dst_host, start_time);
CREATE INDEX transfers_domains ON transfers (src_domain, dst_domain, start_time);
CREATE INDEX transfers_start   ON transfers (start_time);

CREATE TABLE probes (
	id          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	probe_time  timestamptz NOT NULL,
	src_scheme  text    NOT NULL DEFAULT '',
	src_host    text    NOT NULL DEFAULT '',
	src_port    bigint  NOT NULL DEFAULT 0,
	src_domain  text    NOT NULL DEFAULT '',
	dst_scheme  text    NOT NULL DEFAULT '',
	dst_host    text    NOT NULL DEFAULT '',
	dst_port    bigint  NOT NULL DEFAULT 0,
	dst_domain  text    NOT NULL DEFAULT '',
	rtt_ns      bigint  NOT NULL DEFAULT 0,
	bandwidth   double precision NOT NULL DEFAULT 0,
	retransmits bigint  NOT NULL DEFAULT -1,
	loss_rate   double precision NOT NULL DEFAULT 0,
	max_buffer  bigint  NOT NULL DEFAULT 0,
	features    jsonb   NOT NULL DEFAULT '[]',
	note        text    NOT NULL DEFAULT ''
);

CREATE INDEX probes_hosts ON probes (src_host, dst_host, probe_time);
CREATE INDEX probes_dst   ON probes (dst_host, probe_time);
CREATE INDEX probes_time  ON probes (probe_time);
