// Package cli is ctalk's command line: the conventions every command
// follows (the Go tools' -h/--help, exit codes and usage), and the commands
// a person runs on their own machine against a hosted relay: login,
// logout, wait and admin.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// IO is a command's environment: main passes the process's, tests their own.
type IO struct {
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Command is one ctalk command: its usage, its flags and what it runs.
type Command struct {
	Name    string // as typed after ctalk: "login", "admin register-user"
	Args    string // the synopsis after the name
	Summary string // one line for `ctalk help`
	Details string // the paragraphs `ctalk help NAME` adds
	// Setup defines the command's flags on fs and returns what runs with
	// the arguments left once they are parsed.
	Setup func(fs *flag.FlagSet, io *IO) func(ctx context.Context, args []string) error
}

// Exit codes shared by every command.
const (
	ExitOK    = 0
	ExitError = 1 // the command failed at run time
	ExitUsage = 2 // unknown command, unknown flag or wrong arguments
)

// ExitCode ends a command with a code of its own, printing Msg (if any)
// on stderr as it is.
type ExitCode struct {
	Code int
	Msg  string
}

func (e *ExitCode) Error() string { return fmt.Sprintf("exit %d: %s", e.Code, e.Msg) }

// usageError is a mistake in a command's arguments.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// UsageError reports wrong arguments: exit 2, one line on stderr.
func UsageError(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// Usage writes c's usage: synopsis, details and flags.
func (c *Command) Usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: ctalk %s", c.Name)
	if c.Args != "" {
		fmt.Fprintf(w, " %s", c.Args)
	}
	fmt.Fprintf(w, "\n\n%s\n", c.Summary)
	if c.Details != "" {
		fmt.Fprintf(w, "\n%s", strings.TrimLeft(c.Details, "\n"))
	}
	if fs != nil && hasFlags(fs) {
		fmt.Fprintln(w, "\nFlags:")
		out := fs.Output()
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// newFlags is c's flag set, with its runner.
func (c *Command) newFlags(io *IO) (*flag.FlagSet, func(context.Context, []string) error) {
	fs := flag.NewFlagSet("ctalk "+c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Stderr)
	fs.Usage = func() {} // Run prints the usage where it belongs
	var run func(context.Context, []string) error
	if c.Setup != nil {
		run = c.Setup(fs, io)
	}
	return fs, run
}

// Run parses args and runs c, returning its exit code: -h and --help print
// the usage on stdout and exit 0, a bad flag prints it on stderr and exits 2.
func (c *Command) Run(ctx context.Context, io *IO, args []string) int {
	fs, run := c.newFlags(io)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		c.Usage(io.Stdout, fs)
		return ExitOK
	} else if err != nil {
		fmt.Fprintln(io.Stderr) // the flag package has named the bad flag
		c.Usage(io.Stderr, fs)
		return ExitUsage
	}
	if run == nil {
		c.Usage(io.Stdout, fs)
		return ExitOK
	}
	err := run(ctx, fs.Args())
	var exit *ExitCode
	var usage *usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &exit):
		if exit.Msg != "" {
			fmt.Fprintln(io.Stderr, exit.Msg)
		}
		return exit.Code
	case errors.As(err, &usage):
		fmt.Fprintf(io.Stderr, "ctalk %s: %s (ctalk help %s shows the usage)\n", c.Name, usage.msg, c.Name)
		return ExitUsage
	}
	fmt.Fprintln(io.Stderr, "ctalk:", err)
	return ExitError
}

// PrintHelp writes c's usage with its flags.
func (c *Command) PrintHelp(io *IO, w io.Writer) {
	fs, _ := c.newFlags(io)
	c.Usage(w, fs)
}

// Find returns the command args name (the longest match: "admin
// deactivate" before "admin") and the arguments after its name.
func Find(cmds []*Command, args []string) (*Command, []string) {
	for n := min(len(args), 2); n > 0; n-- {
		name := strings.Join(args[:n], " ")
		if i := slices.IndexFunc(cmds, func(c *Command) bool { return c.Name == name }); i >= 0 {
			return cmds[i], args[n:]
		}
	}
	return nil, args
}

// Summaries lists cmds, one synopsis and summary each, for a help page.
func Summaries(w io.Writer, cmds []*Command) {
	for _, c := range cmds {
		line := "  ctalk " + c.Name
		if c.Args != "" {
			line += " " + c.Args
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, c.Summary)
	}
}
