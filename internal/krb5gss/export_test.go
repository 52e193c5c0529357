package krb5gss

// FrameAPReq frames an AP-REQ as an initial context token, for tests
// that craft their own.
func FrameAPReq(apreq []byte) []byte { return frame(tokAPReq, apreq) }
