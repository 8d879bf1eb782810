// Command ctalk is the ctalk relay: a hosted MCP server that lets people on
// a team ask each other questions through Claude Code. This package holds
// main, the commands' flags and the wiring; the work is in the packages it
// calls (server, mcp, internal/bridge, internal/bench, internal/cli).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ctalk/ctalk/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usageHeader = `ctalk — ask coworkers questions through Claude Code.

Usage: ctalk COMMAND [flags] [arguments]

Commands:
`

const usageFooter = `
ctalk help COMMAND (or ctalk COMMAND --help) shows a command's usage and flags.

`

// run is the whole program; main only wires the process to it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	io := &cli.IO{Getenv: getenv, Stdin: stdin, Stdout: stdout, Stderr: stderr}
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		usage(stdout, cmds)
		return cli.ExitOK
	}
	if args[0] == "--version" {
		args[0] = "version"
	}
	c, rest := cli.Find(cmds, args)
	if c == nil {
		fmt.Fprintf(stderr, "ctalk: unknown command %q: run 'ctalk help' for the commands\n", args[0])
		return cli.ExitUsage
	}
	return c.Run(ctx, io, rest)
}

// usage is the top-level help: each command (not the admin subcommands)
// and the environment.
func usage(w io.Writer, cmds []*cli.Command) {
	fmt.Fprint(w, usageHeader)
	var top []*cli.Command
	for _, c := range cmds {
		if !strings.Contains(c.Name, " ") {
			top = append(top, c)
		}
	}
	cli.Summaries(w, top)
	fmt.Fprint(w, usageFooter, envHelp)
}
