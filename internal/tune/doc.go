// Package tune re-tunes a large transfer while it runs.
//
// A file is moved in parts (byte ranges, each its own transfer: ERET or
// ESTO over MODE E). After each part a Controller looks at what the part
// measured (rate, round-trip time and retransmits from TCP_INFO) and
// picks the streams and TCP buffer of the next one: it grows the stream
// count while that pays, jumps further when the streams are plainly
// loss-bound (the Mathis bound per stream), widens the buffer when each
// stream is window-bound, settles on the best setting and keeps checking
// its neighbours, so a link that changes is followed. A start of many
// streams on a guess (Limits.Descend: the wide-area default when nothing
// is known) is checked downwards instead: when the client's CPU is busy
// (getrusage over a part), the streams are halved while the rate holds
// within 5 % of the fastest seen, and the cheapest that held is kept;
// a setting with more streams must then beat it by more than twice that
// (hysteresis). This is the on the fly adaptation of Cannataro et al.
// (seeds/001), made continuous.
//
// The Controller is a pure state machine: no I/O, no clock; the caller
// measures. Run drives one file through a Controller with a caller's
// move function, and guarantees the parts tile the range exactly: no byte
// is skipped or sent twice.
package tune
