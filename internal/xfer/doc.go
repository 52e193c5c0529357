// Package xfer is Ferry's shared transfer vocabulary: pure values, with no
// I/O, that the protocol interpreter, the data transfer process and the
// client agree on.
//
// Ranges implements the byte-range lists of GridFTP restart (GFD.020 §3.6,
// "REST a-b,c-d") and of 111 range markers, in GCT's half-open [start, end)
// convention.
package xfer
