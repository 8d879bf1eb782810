package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/bench"
	"github.com/ctalk/ctalk/internal/bridge"
	"github.com/ctalk/ctalk/internal/cli"
	"github.com/ctalk/ctalk/internal/credentials"
	"github.com/ctalk/ctalk/server"
)

// commands are every ctalk command, in help order.
func commands() []*cli.Command {
	cmds := []*cli.Command{serveCommand, stdioCommand}
	cmds = append(cmds, cli.Commands(version)...)
	cmds = append(cmds, cli.DatabaseCommands(cli.Database{EnvHelp: envHelp, Config: func(getenv func(string) string) (db.Config, error) {
		cfg, err := loadConfig(getenv)
		return cfg.dbConfig(), err
	}})...)
	cmds = append(cmds, benchCommand, versionCommand)
	var help *cli.Command
	help = &cli.Command{
		Name: "help", Args: "[COMMAND]", Summary: "show the commands, or one command's usage and flags",
		Setup: func(_ *flag.FlagSet, io *cli.IO) func(context.Context, []string) error {
			return func(_ context.Context, args []string) error {
				if len(args) == 0 {
					usage(io.Stdout, cmds)
					return nil
				}
				c, rest := cli.Find(append(cmds, help), args)
				if c == nil || len(rest) > 0 {
					return &cli.ExitCode{Code: cli.ExitUsage,
						Msg: fmt.Sprintf("ctalk help: unknown command %q: run 'ctalk help' for the commands", strings.Join(args, " "))}
				}
				c.PrintHelp(io, io.Stdout)
				return nil
			}
		},
	}
	return append(cmds, help)
}

// noArgs wraps a runner of a command that takes no arguments.
func noArgs(run func(ctx context.Context) error) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return cli.UsageError("unexpected argument %q", args[0])
		}
		return run(ctx)
	}
}

var serveCommand = &cli.Command{
	Name: "serve", Summary: "run the relay: MCP at /mcp, GET /health, GET /",
	Details: "The log's first line names the MCP URL to add and the database in use.\n\n" + envHelp,
	Setup: func(_ *flag.FlagSet, io *cli.IO) func(context.Context, []string) error {
		return noArgs(func(ctx context.Context) error {
			cfg, err := loadConfig(io.Getenv)
			if err != nil {
				return err
			}
			return serve(ctx, cfg, server.NewLogger(io.Stderr, cfg.Obs.LogFormat))
		})
	},
}

var stdioCommand = &cli.Command{
	Name: "stdio", Args: "[--relay URL]",
	Summary: "serve the MCP tools over stdin/stdout: from the local database, or with --relay as the local bridge to a hosted relay",
	Details: `With --relay, ctalk serves the hosted relay's tools with the token from ctalk
login (run it first, in a terminal), and pushes new questions and answers to
Claude Code as channel events (claude/channel). The login and logout tools are
not offered through the bridge: ctalk login and ctalk logout do that in a
terminal. stdout carries only MCP messages; logs go to stderr.

Without --relay, the tools run against the database of the environment below.

` + envHelp,
	Setup: func(fs *flag.FlagSet, io *cli.IO) func(context.Context, []string) error {
		relay := fs.String("relay", "", "the hosted relay's MCP URL, e.g. https://ctalk.example.com/mcp")
		return noArgs(func(ctx context.Context) error {
			logger := slog.New(slog.NewTextHandler(io.Stderr, nil))
			if *relay != "" {
				endpoint, err := credentials.RelayURL(*relay)
				if err != nil {
					return err
				}
				return bridge.Run(ctx, bridge.Config{Endpoint: endpoint, Version: version, Getenv: io.Getenv,
					Stdin: io.Stdin, Stdout: io.Stdout, Stderr: io.Stderr, Logger: logger})
			}
			cfg, err := loadConfig(io.Getenv)
			if err != nil {
				return err
			}
			return stdio(ctx, cfg, logger, io.Stdin, io.Stdout)
		})
	},
}

var benchCommand = &cli.Command{
	Name: "bench", Args: "--url URL [--orgs N] [--users N] [--concurrency C] [--duration D]",
	Summary: "load-test a relay through MCP: registers throwaway organizations, drives a realistic mix of calls, " +
		"reports calls/s, latency, errors and leaks",
	Details: "Registers throwaway organizations (bench-…) on the relay, so point it at a test deployment.\n" +
		"Exit status: 0 no errors, 1 errors, 2 usage, 3 a call saw another organization's data.\n",
	Setup: func(fs *flag.FlagSet, io *cli.IO) func(context.Context, []string) error {
		cfg := bench.Config{Progress: io.Stderr, Version: version}
		rawURL := fs.String("url", "", "the relay's URL, e.g. http://127.0.0.1:8000 (/mcp is added when missing)")
		fs.IntVar(&cfg.Orgs, "orgs", 4, "organizations to register")
		fs.IntVar(&cfg.Users, "users", 8, "users per organization (at least 2)")
		fs.IntVar(&cfg.Concurrency, "concurrency", 16, "concurrent clients")
		fs.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long to drive the mix")
		return noArgs(func(ctx context.Context) error {
			var err error
			if cfg.Endpoint, err = bench.URL(*rawURL); err == nil {
				err = cfg.Check()
			}
			if err != nil {
				return cli.UsageError("%v", err)
			}
			rep, err := bench.Run(ctx, cfg)
			if err != nil {
				return &cli.ExitCode{Code: bench.ExitErrors, Msg: "ctalk bench: " + err.Error()}
			}
			rep.Print(io.Stdout, cfg)
			if code := rep.ExitCode(); code != 0 {
				return &cli.ExitCode{Code: code}
			}
			return nil
		})
	},
}

var versionCommand = &cli.Command{
	Name: "version", Summary: "print the version, and the VCS revision the binary was built from",
	Setup: func(_ *flag.FlagSet, io *cli.IO) func(context.Context, []string) error {
		return noArgs(func(context.Context) error {
			_, err := fmt.Fprintln(io.Stdout, versionLine)
			return err
		})
	},
}
