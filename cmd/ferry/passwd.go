package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/ferrygrid/ferry/internal/auth"
	"golang.org/x/term"
)

func init() {
	register(&command{
		name:    "passwd",
		summary: "add or change a user in a password file for 'ferry serve -passwd'",
		usage:   "[-home DIR [-root ROOT]] FILE USER",
		run:     runPasswd,
	})
}

func runPasswd(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["passwd"], e)
	home := fs.String("home", "", "the user's home `DIR` under the served root; the user sees only that tree")
	root := fs.String("root", "", "the server's `ROOT` (its -root), to check that -home exists there")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("want FILE USER")
	}
	file, user := fs.Arg(0), fs.Arg(1)
	if strings.Contains("/"+*home+"/", "/../") {
		// "../.." would clean to the whole tree: the confinement asked
		// for would be silently lost.
		return usagef("-home %q climbs out of the served root: give a directory below it", *home)
	}
	pass, err := readPassword(e)
	if err != nil {
		return err
	}
	if pass == "" {
		return errors.New("empty password")
	}
	if err := auth.SetUser(file, user, pass, *home); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "ferry passwd: %s set in %s\n", user, file)
	if h := path.Clean("/" + *home); *home != "" && h != "/" {
		switch {
		case *root == "":
			fmt.Fprintf(e.stderr, "ferry passwd: note: %s's home %s is relative to the server's -root; it must exist there, or %s cannot log in (give -root to check)\n", user, h, user)
		default:
			if fi, err := os.Stat(filepath.Join(*root, filepath.FromSlash(h))); err != nil || !fi.IsDir() {
				fmt.Fprintf(e.stderr, "ferry passwd: warning: %s is not a directory under %s: %s cannot log in until it is created\n", h, *root, user)
			}
		}
	}
	return nil
}

// readPassword prompts twice without echo on a terminal, else reads one line from stdin.
func readPassword(e *env) (string, error) {
	if f, isFile := e.stdin.(*os.File); isFile && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(e.stderr, "Password: ")
		p1, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return "", err
		}
		fmt.Fprint(e.stderr, "Again: ")
		p2, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return "", err
		}
		if string(p1) != string(p2) {
			return "", errors.New("passwords differ")
		}
		return string(p1), nil
	}
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
