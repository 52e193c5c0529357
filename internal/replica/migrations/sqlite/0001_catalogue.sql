-- The replica catalogue: one row per logical file name (LFN) with the
-- size and checksum every replica must have, one row per replica (a
-- URL) with what was last measured of it. Times are Unix nanoseconds
-- (0: never).

CREATE TABLE replica_lfns (
	lfn        TEXT    PRIMARY KEY,
	size       INTEGER NOT NULL,
	cksum_alg  TEXT    NOT NULL,
	cksum      TEXT    NOT NULL,
	created_ns INTEGER NOT NULL
);

CREATE TABLE replicas (
	lfn         TEXT    NOT NULL REFERENCES replica_lfns (lfn) ON DELETE CASCADE,
	url         TEXT    NOT NULL,
	size        INTEGER NOT NULL,
	cksum       TEXT    NOT NULL,
	state       TEXT    NOT NULL,
	verified_ns INTEGER NOT NULL DEFAULT 0,
	added_ns    INTEGER NOT NULL,
	note        TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (lfn, url)
);
