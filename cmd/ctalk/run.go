package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
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
  ctalk migrate status|up|down
                            show, apply, or roll back one database migration
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
	case "serve", "stdio", "migrate":
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

func newMCP(store db.Store, cfg config, logger *slog.Logger) *mcpserver.MCPServer {
	return mcp.NewServer(store, mcp.Options{Version: version, TokenTTL: cfg.TokenTTL, Logger: logger})
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
	h := server.Handler(server.Config{
		Store: store, MCP: newMCP(store, cfg, logger), Logger: logger, Version: version,
		AllowedOrigins: cfg.AllowedOrigins,
	})
	logger.Info("ctalk serving", "addr", ln.Addr().String(), "backend", store.Backend(), "version", version)
	if err := server.Serve(ctx, ln, h, cfg.ShutdownTimeout); err != nil {
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
	s := mcpserver.NewStdioServer(newMCP(store, cfg, logger))
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
