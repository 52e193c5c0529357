// Package archtest enforces the layout rules of the house style in its
// tests: which package may import which, and that every package says what
// it is in a doc comment.
package archtest
