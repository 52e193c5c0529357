// Package web is ferry web: a self-hosted web application that browses
// two endpoints side by side (ftp://, gsiftp:// servers and the web
// host's own files, confined to directories the admin allows) and copies
// files between them with the copy engine (package transfer), showing
// the advisor's parameters and ETA first, then live progress, and the
// transfer history.
//
// An [App] is an http.Handler. Its assets are embedded (no CDN: grid
// sites are often air-gapped) and its JSON API lives under /api/:
//
//	POST /api/login            {user, password} → session cookie + CSRF token
//	POST /api/logout
//	GET  /api/me               the user and the CSRF token
//	POST /api/endpoints        {url, user, password} → an endpoint id
//	GET  /api/list?ep=&path=   a directory's entries
//	POST /api/mkdir|rename|delete
//	POST /api/advice           {src, paths, dst, dir} → parameters, ETA
//	POST /api/jobs             start a copy; GET /api/jobs lists them
//	POST /api/jobs/{id}/cancel
//	GET  /api/events           Server-Sent Events: the user's jobs
//	GET  /api/history          the user's past transfers
//
// Security: every user's endpoints, credentials and jobs live in that
// user's own state, reached only through the session; a request never
// names another user's objects. Sessions are random 256-bit tokens in an
// HttpOnly, SameSite=Strict cookie (Secure over HTTPS). Every
// state-changing request carries the session's CSRF token in the
// X-CSRF-Token header (403 without it). Failed logins are limited per
// source address (429).
package web
