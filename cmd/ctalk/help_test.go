package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestEveryCommandsHelp runs every command (each admin subcommand too)
// with --help, -h and through ctalk help: exit 0, its usage on stdout and
// nothing on stderr, and nothing else done (serve and stdio would block).
// An unknown flag exits 2 with the usage on stderr.
func TestEveryCommandsHelp(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		name := strings.Fields(c.Name)
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			for _, args := range [][]string{
				append(append([]string{}, name...), "--help"),
				append(append([]string{}, name...), "-h"),
				append([]string{"help"}, name...),
			} {
				code, stdout, stderr := runCtalk(t, ctx, sqliteEnv(t), args...)
				if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "usage: ctalk "+c.Name) || !strings.Contains(stdout, c.Summary) {
					t.Errorf("ctalk %s = exit %d, stdout %q, stderr %q; want exit 0 and the usage of ctalk %s on stdout",
						strings.Join(args, " "), code, stdout, stderr, c.Name)
				}
			}
			args := append(append([]string{}, name...), "--no-such-flag")
			code, stdout, stderr := runCtalk(t, ctx, sqliteEnv(t), args...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, "no-such-flag") || !strings.Contains(stderr, "usage: ctalk "+c.Name) {
				t.Errorf("ctalk %s = exit %d, stdout %q, stderr %q; want exit 2, the flag named and the usage on stderr",
					strings.Join(args, " "), code, stdout, stderr)
			}
		})
	}
}

func TestHelpUnknownCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help", "serv"}, {"help", "admin", "sideways"}, {"admin", "sideways"}, {"admin"}} {
		code, stdout, stderr := runCtalk(t, t.Context(), env{}, args...)
		if code != 2 || stdout != "" {
			t.Errorf("ctalk %s = exit %d, stdout %q; want exit 2 and no stdout", strings.Join(args, " "), code, stdout)
		}
		oneLine(t, "ctalk "+strings.Join(args, " "), stderr)
	}
}
