// Package chaos proves that Ferry survives faults: bounded, seeded
// scenarios that run the real ferry binary (ferry serve, ferry mover,
// ferry cp) and break it on purpose.
//
//   - kill: SIGKILL of the client, the server or a mover at a random point
//     of a copy (upload or download; -p 1, -p 4 or striped), then the dead
//     process is started again and the same copy run again (resume) until
//     it succeeds. Counted: files whose content differs (corrupt), copies
//     that never succeed (lost), steps that outlive their bound (hangs),
//     and files shown under their final name while partial.
//   - scan: a port scanner connects to the server's passive data ports
//     (-port-range) during ferry cp -p 8, closing at once, sending garbage
//     or a forged MODE E header (globus-toolkit#93 killed GCT transfers
//     that way). The copies must finish intact.
//   - slowloris: slow control connections, half-open data connections and
//     a reader that stops reading, while a good client's login and NOOP
//     latency is measured; the server must stay responsive.
//   - disk: an upload to a tmpfs that fills up, and a resumed upload to a
//     tmpfs remounted read-only: a clear 4xx/5xx reply and no partial file
//     under the final name.
//
// Every loop is bounded in count and time; processes are killed and
// temporary directories and mounts removed when Run returns. A step that
// outlives its bound is a hang: its processes are sent SIGQUIT (a Go
// goroutine dump) and their output is kept in the report.
package chaos
