package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"syscall"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `ctalk — ask coworkers questions through Claude Code.

Usage:
  ctalk serve               run the relay: MCP at /mcp, GET /health, GET /
  ctalk stdio               serve the MCP tools over stdin/stdout from the local database
  ctalk stdio --relay URL   the local bridge: serve a hosted relay's tools over stdin/stdout with
                            the token from ctalk login, and push new questions and answers to
                            Claude Code as channel events (claude/channel)
  ctalk login --relay URL --org ORG --user USER
                            log in to a relay (asks for the password) and keep the token in your
                            config directory, readable only by you
  ctalk logout [--relay URL]
                            revoke the stored token and delete it
  ctalk wait [--relay URL] [--timeout 10m]
                            for a Claude Code Stop hook with asyncRewake: wait for the next question
                            or answer; exit 2 with a one-line summary on stderr, or 0 on timeout
  ctalk migrate status|up|down
                            show, apply, or roll back one database migration
  ctalk bench --url URL [--orgs N] [--users N] [--concurrency C] [--duration D]
                            load-test a relay through MCP: registers throwaway organizations, drives
                            a realistic mix of calls, reports calls/s, latency, errors and leaks
  ctalk version             print the version
  ctalk help                show this help

`

// run is the whole program; main only wires the process to it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := "help"
	if len(args) > 0 {
		cmd = args[0]
	}
	switch cmd {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage, envHelp)
		return 0
	case "version", "--version":
		fmt.Fprintln(stdout, "ctalk", version)
		return 0
	case "bench":
		return benchCommand(ctx, args[1:], stdout, stderr)
	case "login", "logout", "wait":
		return runLocal(ctx, cmd, args[1:], getenv, stdin, stdout, stderr)
	case "stdio":
		if relay, ok := relayFlag(args[1:]); ok {
			return runBridge(ctx, relay, args[1:], getenv, stdin, stdout, stderr)
		}
	case "serve", "migrate":
	default:
		fmt.Fprintf(stderr, "ctalk: unknown command %q: run 'ctalk help' for the commands\n", cmd)
		return 2
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		fmt.Fprintln(stderr, "ctalk:", err)
		return 1
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	switch cmd {
	case "serve":
		err = serve(ctx, cfg, logger)
	case "stdio":
		err = stdio(ctx, cfg, logger, stdin, stdout)
	case "migrate":
		err = migrate(ctx, cfg, args[1:], stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "ctalk:", err)
		return 1
	}
	return 0
}

func openStore(ctx context.Context, cfg config, logger *slog.Logger) (db.Store, error) {
	dc := cfg.dbConfig()
	dc.Logger = logger
	return db.Open(ctx, dc)
}

func newMCP(store db.Store, cfg config, logger *slog.Logger, draining <-chan struct{}) *mcpserver.MCPServer {
	return mcp.NewServer(store, mcp.Options{Version: version, TokenTTL: cfg.TokenTTL, Logger: logger, Draining: draining})
}

func serve(ctx context.Context, cfg config, logger *slog.Logger) error {
	store, err := openStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer store.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(cfg.Port)))
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("port %d is in use: stop the other process or set PORT to a free port", cfg.Port)
	} else if err != nil {
		return fmt.Errorf("listen on port %d: %w", cfg.Port, err)
	}
	draining := make(chan struct{})
	h := server.Handler(server.Config{
		Store: store, MCP: newMCP(store, cfg, logger, draining), Logger: logger, Version: version,
		AllowedOrigins: cfg.AllowedOrigins,
	})
	logger.Info("ctalk serving", "addr", ln.Addr().String(), "backend", store.Backend(), "version", version)
	if err := server.Serve(ctx, ln, h, cfg.ShutdownTimeout, draining); err != nil {
		return err
	}
	logger.Info("ctalk stopped")
	return nil
}

func stdio(ctx context.Context, cfg config, logger *slog.Logger, stdin io.Reader, stdout io.Writer) error {
	store, err := openStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer store.Close()
	s := mcpserver.NewStdioServer(newMCP(store, cfg, logger, nil))
	if err := s.Listen(ctx, stdin, stdout); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func migrate(ctx context.Context, cfg config, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: ctalk migrate status|up|down")
	}
	m, err := db.OpenMigrator(ctx, cfg.dbConfig())
	if err != nil {
		return err
	}
	defer m.Close()
	switch args[0] {
	case "status":
		st, err := m.Status(ctx)
		if err != nil {
			return err
		}
		for _, s := range st {
			applied := "pending"
			if s.State == "applied" {
				applied = "applied " + s.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
			}
			fmt.Fprintf(stdout, "%-30s %s\n", s.Source.Path, applied)
		}
	case "up":
		n, err := m.Up(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "applied %d migration(s)\n", n)
	case "down":
		res, err := m.Down(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "rolled back %s\n", res.Source.Path)
	default:
		return fmt.Errorf("unknown migrate command %q: use status, up or down", args[0])
	}
	return nil
}

// errUsage is a command-line mistake the flag package has already explained.
var errUsage = errors.New("invalid arguments")

// runLocal runs the commands that talk to a hosted relay from the user's
// machine; they need no database.
func runLocal(ctx context.Context, cmd string, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var err error
	switch cmd {
	case "login":
		err = login(ctx, args, getenv, stdin, stdout, stderr)
	case "logout":
		err = logout(ctx, args, getenv, stdout, stderr)
	case "wait":
		return waitCommand(ctx, args, getenv, stderr, logger)
	}
	switch {
	case errors.Is(err, errUsage):
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "ctalk:", err)
		return 1
	}
	return 0
}

// relayFlag finds --relay in stdio's arguments.
func relayFlag(args []string) (string, bool) {
	for i, a := range args {
		switch {
		case a == "--relay" || a == "-relay":
			if i+1 < len(args) {
				return args[i+1], true
			}
			return "", true
		case strings.HasPrefix(a, "--relay="), strings.HasPrefix(a, "-relay="):
			_, v, _ := strings.Cut(a, "=")
			return v, true
		}
	}
	return "", false
}

// runBridge runs `ctalk stdio --relay URL`. stdout carries only MCP
// messages; logs go to stderr.
func runBridge(ctx context.Context, relay string, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 2 && !(len(args) == 1 && strings.Contains(args[0], "=")) {
		fmt.Fprintln(stderr, "usage: ctalk stdio --relay URL")
		return 2
	}
	endpoint, err := relayURL(relay)
	if err == nil {
		logger := slog.New(slog.NewTextHandler(stderr, nil))
		err = bridge(ctx, endpoint, getenv, stdin, stdout, stderr, logger)
	}
	if err != nil {
		fmt.Fprintln(stderr, "ctalk:", err)
		return 1
	}
	return 0
}
