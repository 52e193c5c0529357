// Package transfer is Ferry's copy engine: the logic of a copy between
// GridFTP/FTP servers, local files and standard input and output, shared
// by ferry cp, ferry sync, ferry shell and the tools built on them.
//
// An [Engine] holds what all copies share: how to dial a server, where
// standard input and output are, and the transfer history. A [Request]
// names a source and a destination ([Location]) and the [Options] of the
// copy (parallelism, buffer and block sizes, restart, checksums,
// striping); [Engine.Copy] runs it, reporting [Event]s (start, progress
// with each data connection's TCP statistics, notes for the user) to a
// callback and returning a [Result]. Copies are uploads, downloads,
// third-party transfers (server to server, the bytes flowing directly
// between them) or local copies; downloads to local files never leave a
// partial file that looks complete, and resume state is kept on disk
// (see [RangesSuffix] and [UploadStatePath]).
//
// Locations are written as ferry cp takes them ([ParseLocation]): "-",
// ftp://, ftps://, gsiftp:// and file:// URLs, local paths.
//
// Many-file copies (trees, wildcards, lists, sync) are a [JobRequest]:
// [Engine.PlanJob] plans it with internal/job into a [JobRun], whose
// Plan can be shown (a dry run) and whose Run copies it with the workers
// of a [Job], which pipeline small files in batches (client.GetFiles,
// PutFiles and ThirdPartyFiles) and copy large ones one by one like
// Engine.Copy.
//
// Every file transfer is recorded in Engine.History (internal/history)
// when it is set: endpoints, parameters, outcome, and what the data
// connections measured (RTT, retransmits, rates). Recording never fails
// a copy. [Engine.Track] records a transfer made outside the engine.
//
// The engine is a client-side library: it never imports the server, the
// protocol interpreter or cmd/ferry.
package transfer
