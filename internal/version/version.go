// Package version holds Ferry's version string, shared by the server banner,
// SITE VERSION, the client's SITE CLIENTINFO and "ferry version".
package version

// Version is Ferry's release version.
const Version = "0.1.0"
