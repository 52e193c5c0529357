package transfer

import (
	"time"

	"github.com/ferrygrid/ferry/client"
)

// Options are the parameters of a copy. The zero value copies a whole
// file in stream mode without retries; Length must be set to -1 for
// "to the end" (ferry cp's default).
type Options struct {
	// Offset and Length select part of the source (-off, -len), written
	// at the same offset of the destination; Length -1 means to the end.
	Offset, Length int64
	// Parallel is the number of data connections; above 1 uses MODE E.
	Parallel int
	// TCPBuffer is the TCP buffer size of the data connections (0: the
	// system's); BlockSize the MODE E block size of uploads (0: 1 MiB);
	// StripeBlockSize the stripe block size with Stripe (0: 1 MiB).
	TCPBuffer, BlockSize, StripeBlockSize int64
	// Fast uses MODE E even with one connection and keeps the data
	// connections for the next transfer (globus-url-copy -fast).
	Fast bool
	// Stripe asks for striped transfers (SPAS/SPOR).
	Stripe bool
	// NoTPT routes server-to-server copies through this client.
	NoTPT bool
	// SrcModule and DstModule name server-side processing module chains
	// (docs/modules.md), with their parameters: the source server sends
	// its chain's output for the path (ERET NAME="PARAMS" PATH), the
	// destination server undoes its chain over the data before storing
	// it (ESTO). A copy with modules moves the whole file, in one
	// attempt after another with Restart, and takes no Offset, Length
	// or Verify.
	SrcModule, SrcModuleParams string
	DstModule, DstModuleParams string
	// Active makes the client listen for data connections (EPRT/PORT).
	// The Engine's Dial applies it; it is recorded in the history.
	Active bool
	// Restart retries failed transfers (Retries times, waiting
	// RetryInterval, doubled after each failure up to MaxRetryInterval,
	// for at most RetryTimeout in all; 0: no limit) and resumes them.
	// MaxRetryInterval 0 is client.DefaultMaxRetryInterval; equal to
	// RetryInterval, the wait is fixed. RetryDeadline, when not zero,
	// is the time after which no failure is retried (attempts under
	// way go on: globus-url-copy's -rst-timeout).
	Restart          bool
	Retries          int
	RetryInterval    time.Duration
	MaxRetryInterval time.Duration
	RetryTimeout     time.Duration
	RetryDeadline    time.Time
	// StallTimeout ends a transfer (or an attempt) when no data moved for
	// that long; 0: never.
	StallTimeout time.Duration
	// Concurrency (files at once, -cc) and Pipeline (pipelined batches,
	// -pp) are those of a many-file job; they are recorded in the
	// history, Engine.NewJob's argument decides pipelining.
	Concurrency int
	Pipeline    bool
	// Auto says the advisor chose these options rather than flags, and
	// PredictedETA is the duration it predicted for the copy (0: none);
	// both are recorded in the history. With Auto and neither Parallel
	// nor TCPBuffer set, the engine asks the advisor itself before the
	// transfer (see AutoChoice, EventAuto): streams, TCP buffer, block
	// size and PredictedETA; copies to or from standard input and
	// output, local copies and striped ones are then recorded without
	// Auto.
	// An automatic download of a large file (DefaultRetuneMin, or
	// a slow link) is moved in re-tuned parts (Result.Tuning).
	Auto         bool
	PredictedETA time.Duration
	// Verify compares checksums (CKSM) after the copy, with ChecksumAlg.
	Verify      bool
	ChecksumAlg string
	// Fsync makes a download to a local file durable before it counts:
	// the file is synced to disk before its resume state (DST.ferry-ranges)
	// lists a range, and before the copy succeeds (ferry cp -fsync).
	// Without it, as with cp(1) and globus-url-copy, the bytes are in the
	// page cache when the copy ends: a crash of ferry loses nothing (its
	// resume state stays true), a crash of the machine may.
	Fsync bool
}

// hasModules reports whether the options name a processing module.
func (o *Options) hasModules() bool {
	return o.SrcModule != "" || o.SrcModuleParams != "" || o.DstModule != "" || o.DstModuleParams != ""
}

// modeE reports whether the options ask for MODE E.
func (o *Options) modeE() bool { return o.Parallel > 1 || o.Fast }

// resumable reports whether local files are written in place with resume
// state: MODE E transfers and Restart.
func (o *Options) resumable() bool { return o.modeE() || o.Restart }

// retryPolicy is the client.RetryPolicy of the options.
func (o *Options) retryPolicy() client.RetryPolicy {
	p := client.RetryPolicy{
		StallTimeout: o.StallTimeout,
		Interval:     o.RetryInterval,
		MaxInterval:  o.MaxRetryInterval,
		Timeout:      o.RetryTimeout,
		Deadline:     o.RetryDeadline,
	}
	if o.Restart {
		p.Retries = o.Retries
	}
	return p
}

// retryWaits are the wait before the first retry and the longest wait
// (the doubling stops there), with the defaults of client.RetryPolicy.
func (o *Options) retryWaits() (first, longest time.Duration) {
	first, longest = o.RetryInterval, o.MaxRetryInterval
	if first <= 0 {
		first = client.DefaultRetryInterval
	}
	if longest <= 0 {
		longest = client.DefaultMaxRetryInterval
	}
	return first, max(first, longest)
}

// retryLate reports whether now is past the RetryDeadline.
func (o *Options) retryLate(now time.Time) bool {
	return !o.RetryDeadline.IsZero() && now.After(o.RetryDeadline)
}

// nextWait is the wait after wait: twice as long, at most longest,
// without overflowing.
func nextWait(wait, longest time.Duration) time.Duration {
	if wait > longest/2 {
		return longest
	}
	return wait * 2
}
