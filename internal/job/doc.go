// Package job plans and runs many-file copies for ferry cp and ferry sync:
// recursive trees, wildcards, URL-pair lists (-f), synchronisation
// (-sync, -sync-level as globus-url-copy defines them) and deletion of
// extras, over N concurrent workers (-cc).
//
// A Planner walks the source (an FS: the local file system, or one
// server through MLSD/MLST) and the destination, and produces a Plan:
// directories to create, Pairs to copy, extras to delete, entries that
// cannot be copied with the reason. A Runner then creates the
// directories, queues the Pairs and lets each Worker take them one by
// one, or in batches of the same endpoints when the Worker is a
// BatchCopier (pipelined transfers on one connection). Every worker keeps
// its own sessions, so a tree costs one login per worker and server.
// Observers see each file start, progress and end.
package job
