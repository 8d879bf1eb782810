package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/metrics"
	"github.com/ctalk/ctalk/internal/notify"
	"github.com/ctalk/ctalk/internal/relay"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

func openStore(ctx context.Context, cfg config, logger *slog.Logger) (db.Store, error) {
	dc := cfg.dbConfig()
	dc.Logger = logger
	return db.Open(ctx, dc)
}

// newRelay returns the rules every face of one process shares.
func newRelay(store db.Store, cfg config, draining <-chan struct{}, m *metrics.Metrics) *relay.Service {
	return relay.New(store, relay.Options{TokenTTL: cfg.TokenTTL, Draining: draining,
		MaxWaits: cfg.MaxWaits, MaxWaitsPerUser: cfg.MaxWaitsPerUser, Metrics: m,
		Notify: relay.NotifyOptions{EmailEnabled: cfg.Notify.SMTP != nil, Guard: cfg.Notify.Guard()}})
}

func serve(ctx context.Context, cfg config, logger *slog.Logger) error {
	logger = server.RedactLogger(logger) // mcp-go's and the tools' lines too
	store, err := openStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer store.Close()
	ln, err := server.Listen(net.JoinHostPort("", strconv.Itoa(cfg.Port)), "PORT")
	if err != nil {
		return err
	}
	draining, m := make(chan struct{}), metrics.New(version)
	rules := newRelay(store, cfg, draining, m)
	if cfg.Retention > 0 {
		go rules.KeepPruning(ctx, cfg.Retention, time.Hour, func(n int64, err error) {
			logger.Info("retention", "questions_deleted", n, "error", err)
		})
	}
	h := server.Handler(server.Config{
		Store: store, MCP: mcp.NewServer(nil, mcp.Options{Version: version, Logger: logger, Relay: rules, Metrics: m}), Relay: rules,
		ClientMetadataAllow: cfg.ClientMetadataAllow, Logger: logger, Version: version,
		AllowedOrigins: cfg.AllowedOrigins, PublicURL: cfg.PublicURL,
		TrustedProxies: cfg.TrustedProxies, ClientIPHeader: cfg.ClientIPHeader,
		MaxConcurrentRequests: cfg.MaxConcurrentRequests, MaxBodyBytesInFlight: cfg.MaxBodyBytesInFlight,
		MaxSessions: cfg.MaxSessions, Metrics: m, MetricsToken: cfg.Obs.MetricsToken,
	})
	defer notify.NewWorker(notify.Config{Store: store, PublicURL: cfg.PublicURL, SMTP: cfg.Notify.SMTP,
		Guard: cfg.Notify.Guard(), Lease: cfg.Notify.Lease, Logger: logger, Metrics: m}).Start(ctx)()
	if _, err := server.ServeMetrics(ctx, cfg.Obs.MetricsAddr, m, logger); err != nil {
		return err
	}
	if cfg.ProxyPreset != "" {
		logger.Info("trusting the host's proxies for client addresses (set CTALK_TRUSTED_PROXIES to change)", "preset", cfg.ProxyPreset)
	}
	logger.Info("ctalk serving", "mcp_url", server.MCPURL(cfg.PublicURL, ln.Addr()), "database", cfg.describeDB(), "addr", ln.Addr().String(),
		"backend", store.Backend(), "version", version)
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
	s := mcpserver.NewStdioServer(mcp.NewServer(nil, mcp.Options{Version: version, Logger: logger, Relay: newRelay(store, cfg, nil, nil)}))
	if err := s.Listen(ctx, stdin, stdout); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
