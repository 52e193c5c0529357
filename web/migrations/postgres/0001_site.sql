-- Site mode: several ferry web instances share sessions, endpoints and
-- the job queue through one PostgreSQL database (web/site.go).

CREATE TABLE web_sessions (
	token_hash bytea PRIMARY KEY,          -- SHA-256 of the cookie's token
	owner      text NOT NULL,
	csrf       text NOT NULL,
	cert       bytea,                      -- SHA-256 of the client certificate that logged it in
	created    timestamptz NOT NULL DEFAULT now(),
	expires    timestamptz NOT NULL
);
CREATE INDEX web_sessions_owner ON web_sessions (owner, created);
CREATE INDEX web_sessions_expires ON web_sessions (expires);

CREATE TABLE web_endpoints (
	owner  text NOT NULL,
	id     text NOT NULL,
	spec   text NOT NULL,                  -- JSON, no password
	secret bytea,                          -- the password, sealed with the site key
	pinned text NOT NULL DEFAULT '',       -- the instance that alone holds its password
	opened timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (owner, id)
);

CREATE TABLE web_jobs (
	seq              bigserial PRIMARY KEY,
	id               text NOT NULL UNIQUE,
	owner            text NOT NULL,
	state            text NOT NULL,        -- queued, running, done, failed, cancelled
	error            text NOT NULL DEFAULT '',
	request          text NOT NULL,        -- JSON: the endpoints (no password) and the files
	secret           bytea,                -- the endpoints' passwords, sealed with the site key
	pinned           text NOT NULL DEFAULT '', -- the only instance that may run it
	claimed_by       text,                 -- the instance running it
	lease_until      timestamptz,          -- its claim ends then unless renewed
	attempts         integer NOT NULL DEFAULT 0,
	cancel_requested boolean NOT NULL DEFAULT false,
	doc              text NOT NULL,        -- JSON: the job as the page shows it (progress, result)
	created          timestamptz NOT NULL DEFAULT now(),
	ended            timestamptz
);
CREATE INDEX web_jobs_queue ON web_jobs (state, seq);
CREATE INDEX web_jobs_owner ON web_jobs (owner, seq);
