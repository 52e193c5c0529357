// Package bench is the data-plane benchmark behind "ferry bench loopback",
// "ferry bench wan" and "ferry bench stripe".
//
// # Striping
//
// "ferry bench stripe" (RunStripe, WriteStripeTable) measures how a
// third-party copy between two striped servers scales with the number of
// data nodes when each node's own link is the bottleneck: a wan.Lab of
// 2N+1 hosts, each link rate-limited, N data nodes a side, Ferry (ferry
// serve -movers and ferry mover with null storage, ferry cp -stripe) and
// GCT (globus-gridftp-server -r and -dn, globus-url-copy -stripe) in turn.
//
// # WAN
//
// "ferry bench wan" (RunWAN, Presets, WriteWANOutputs) re-runs published
// GridFTP measurements over an emulated WAN (internal/wan): a preset is a
// set of grids of cells, a cell one implementation (Ferry, GCT or iperf3)
// pulling data through a link of its own with a given latency, loss, rate,
// parallelism, TCP buffer and socket-limit profile, for a fixed size or a
// fixed duration. Each result carries the theoretical bounds (Bounds) and
// the emulator's fidelity figures; the report puts the rates beside the
// published ones (the BBC WHP 178 tables are embedded) and draws the
// papers' figures as SVG and PNG with gonum.org/v1/plot (Plot). The
// method is in docs/bench/wan/README.md.
//
// # Loopback
//
// "ferry bench loopback" moves the same bytes with Ferry (ferry serve +
// ferry cp), with the Grid Community Toolkit (globus-gridftp-server +
// globus-url-copy) and with raw TCP (iperf3, the ceiling), and reports
// throughput, CPU time and peak memory of both ends.
//
// The workloads:
//
//	mem   memory to memory: Ferry's null storage (a path named like a size
//	      reads as zeros) and GCT's /dev/zero, both written to /dev/null;
//	      iperf3 for raw TCP
//	disk  a page-cached random file in a served directory, copied to a new
//	      local file that is removed after each run; no raw TCP row
//	disk-up  the same file uploaded (ferry cp file:///… ftp://…,
//	      globus-url-copy file:///… ftp://…) to a new file in the server's
//	      directory, removed after each run; no raw TCP row
//	gsi   the secured cases, over gsiftp:// (not in the CLI's default set):
//	      a test PKI, a proxy and a grid-mapfile are made in the scratch
//	      directory and GSI servers started (ferry serve -cert -gridmap
//	      with null storage; GCT's server with the host credential, as
//	      root mapping to the local account ferrygsi); then the login time
//	      (connect to 230) of each server is timed with Ferry's client
//	      library, without and with delegation (rows gsi-login,
//	      gsi-login-deleg, a table of their own), and mem is measured with
//	      DCAU A and PROT C (row gsi-dcau) and with PROT P (-dcpriv, row
//	      gsi-prot-p); no raw TCP row
//
// Each (workload, parallelism) cell runs every implementation in turn,
// ferry, gct, raw, ferry, gct, raw, ..., so that drift in the machine's
// state affects all of them alike; the report gives the median and the
// range of the repetitions.
//
// Parallelism 1 runs both GridFTP clients in stream mode (MODE S, no -p
// flag); p > 1 runs MODE E with p data connections (GFD.020 §3.3, "-p N"
// for both clients) and p iperf3 streams.
//
// The numbers of one run come from the kernel: the client's wall time and
// CPU time from wait4; the server's CPU time from the difference of
// utime+stime+cutime+cstime in /proc/PID/stat across the run (GCT forks a
// process per session that its master reaps, so the children's time lands
// in cutime/cstime); peak RSS from VmHWM in /proc/PID/status, reset
// through /proc/PID/clear_refs for Ferry's long-lived server and sampled
// every 20 ms for clients, GCT's session processes and iperf3's server,
// starting right after the exec. A child that ends before its first sample
// (a short run on a loaded machine) falls back to wait4's ru_maxrss, but
// only when that exceeds the benchmark's own peak: Go starts programs with
// a vfork-style clone, and exec charges the parent's peak to the child.
// Otherwise the peak is unknown (-1 in a Sample, "?" in the table).
package bench
