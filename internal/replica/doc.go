// Package replica is Ferry's replica catalogue: logical file names
// (LFNs, a path-like namespace written lfn:/path) mapped to replicas,
// the URLs of copies of the file on GridFTP/FTP servers.
//
// Each LFN has the size and checksum (algorithm and value) every replica
// must have; each replica has the size and checksum last measured of it,
// a State (ok, unverified, bad, missing) and when it was last verified.
// The catalogue lives in the same database as the transfer history
// (internal/history): an SQLite file by default, PostgreSQL for a site,
// chosen by the same DSN (-history, $FERRY_HISTORY). Its schema is a
// numbered list of migrations of its own (migrations/DIALECT), recorded
// in replica_schema_version beside the history's schema_version, so the
// two evolve independently in one database.
//
// Rank is the pure selection logic: it orders the replicas of an LFN by
// the rate the advisor predicts for each (from the history's past
// transfers and probes), usable ones first; it does no I/O.
package replica
