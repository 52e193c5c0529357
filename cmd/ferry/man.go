package main

// ferry man: the manual pages of the package, rendered from each
// command's own help (ferry COMMAND -h), so that they never drift from it.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ferrygrid/ferry/internal/version"
)

func init() {
	register(&command{
		name:    "man",
		summary: "write the manual pages (ferry.1, ferry-COMMAND.1) from the commands' help",
		usage:   "-dir DIR",
		hidden:  true,
		run:     runMan,
	})
}

func runMan(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(commands["man"], e)
	dir := fs.String("dir", "", "write the pages into `DIR` (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() != 0 {
		return usagef("-dir DIR is required and takes no arguments")
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	pages, err := manPages(ctx)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range pages {
			if !yield(n) {
				return
			}
		}
	}) {
		if err := os.WriteFile(filepath.Join(*dir, name), pages[name], 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "%d manual pages written to %s\n", len(pages), *dir)
	return nil
}

// manPages renders ferry.1 and one ferry-NAME.1 per listed command.
func manPages(ctx context.Context) (map[string][]byte, error) {
	var names []string
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	pages := map[string][]byte{}
	var overview bytes.Buffer
	printHelp(&overview)
	var see []string
	for _, n := range names {
		see = append(see, `.BR ferry\-`+roffEscape(n)+` (1)`)
	}
	pages["ferry.1"] = manPage("ferry", "a GridFTP server, client and tools", "ferry COMMAND [flags] [args]", overview.String(), see)
	for _, n := range names {
		c := commands[n]
		var help bytes.Buffer
		// As "ferry help NAME": the command prints its usage and flags.
		c.run(ctx, &env{stdin: strings.NewReader(""), stdout: &help, stderr: &help}, []string{"-h"})
		if help.Len() == 0 {
			return nil, fmt.Errorf("ferry %s -h printed nothing", n)
		}
		pages["ferry-"+n+".1"] = manPage("ferry-"+n, c.summary, "ferry "+n+" "+c.usage, help.String(), []string{`.BR ferry (1)`})
	}
	return pages, nil
}

// manPage is a man(7) page: the help text goes verbatim (no filling) in
// the DESCRIPTION section.
func manPage(name, summary, synopsis, help string, seeAlso []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"Ferry %s\" \"Ferry Manual\"\n", strings.ToUpper(roffEscape(name)), version.Version)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roffEscape(name), roffEscape(summary))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B %s\n", roffEscape(synopsis))
	fmt.Fprintf(&b, ".SH DESCRIPTION\n.nf\n")
	for line := range strings.SplitSeq(strings.TrimRight(help, "\n"), "\n") {
		line = roffEscape(line)
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			line = `\&` + line
		}
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, ".fi\n.SH SEE ALSO\n%s\n", strings.Join(seeAlso, ",\n"))
	return b.Bytes()
}

// roffEscape escapes the backslashes and hyphens of text for troff, and
// writes other than ASCII as \[uXXXX].
func roffEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r > 0x7e:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
