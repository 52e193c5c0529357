// Package web is ferry web: a self-hosted web application that browses
// two endpoints side by side (ftp://, gsiftp:// servers and the web
// host's own files, confined to directories the admin allows) and copies
// files between them with the copy engine (package transfer), showing
// the advisor's parameters and ETA first, then live progress, and the
// transfer history.
//
// An [App] is an http.Handler. Its assets are embedded (no CDN: grid
// sites are often air-gapped; Chart.js is vendored in assets/vendor) and
// its JSON API lives under /api/:
//
//	POST /api/login                 {user, password} → session cookie + CSRF token
//	POST /api/logout
//	GET  /api/me                    the user and the CSRF token (logs in a mapped client certificate)
//	GET  /api/credential            the user's GSI proxy: identity, time left
//	POST /api/credential            {proxy} or {cert, key, passphrase, hours}
//	POST /api/credential/delete
//	POST /api/endpoints             {url, user, password} → an endpoint id; GET lists them
//	GET  /api/list?ep=&path=        a directory's entries
//	POST /api/mkdir|rename|delete|checksum
//	POST /api/advice                {src, srcDir, names, dst, dstDir, sync} → parameters, ETA
//	POST /api/jobs                  the same with params: start a copy; GET lists the user's jobs
//	POST /api/jobs/{id}/cancel|retry
//	GET  /api/events                Server-Sent Events: the user's jobs at each change
//	GET  /api/history               the user's past transfers
//	GET  /api/catalogue/list?dir=&from=&limit=   the replica catalogue's names below an LFN directory, a page
//	GET  /api/catalogue/lfn?lfn=    one LFN and its replicas (404: unknown)
//	POST /api/catalogue/copy        {lfn, dst, dstDir}: a job copying the LFN from its best replica, checksum-verified
//
// Security: every user's endpoints, credentials and jobs live in that
// user's own state, reached only through the session; a request never
// names another user's objects. Sessions are random 256-bit tokens in an
// HttpOnly, SameSite=Strict cookie (Secure over HTTPS). Every
// state-changing request carries the session's CSRF token in the
// X-CSRF-Token header (403 without it). Failed logins are limited per
// user name and source, per source and per name, and password checks
// run at most four at once, one per source (429). Local files are opened
// through the root's *os.Root by the copy engine too
// (transfer.Location.Root). Endpoints and their data connections obey
// the network policy (Config.AllowNet, DenyNet, Self).
//
// Site mode (Config.Site, site.go, docs/web-site-mode.md): several
// instances share sessions, opened endpoints and the job queue through
// one PostgreSQL database. Jobs are claimed with SELECT … FOR UPDATE
// SKIP LOCKED under a lease that the running instance renews while it
// writes the job's progress; a job whose lease runs out is queued again
// and resumed by another instance. Every statement is scoped to the
// session's user, as the in-memory state is.
package web
