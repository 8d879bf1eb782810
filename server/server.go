// Package server is ctalk's HTTP front: GET /health, GET /, and the MCP
// Streamable HTTP endpoint at /mcp, with timeouts, body limits, caps on
// what strangers can make it hold (requests, body bytes, sessions), Origin
// checks, the client address behind configured proxies, logs without
// header values, and graceful shutdown.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/metrics"
	"github.com/ctalk/ctalk/internal/relay"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server/oauth"
	"github.com/ctalk/ctalk/server/web"
)

// DefaultMaxBodyBytes bounds one /mcp request body.
const DefaultMaxBodyBytes = 1 << 20

// Config is what the HTTP server needs.
type Config struct {
	Store   db.Store
	MCP     *mcpserver.MCPServer
	Logger  *slog.Logger
	Version string
	// AllowedOrigins are browser origins (scheme://host[:port]) allowed to call
	// /mcp besides the server's own. Requests without an Origin header (every
	// non-browser MCP client) are not affected.
	AllowedOrigins []string
	// MaxBodyBytes bounds a request body (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// MaxBodyBytesInFlight bounds the body bytes of all /mcp requests held
	// at once (default DefaultMaxBodyBytesInFlight, or 1/16 of MemoryLimit
	// if less; never below one MaxBodyBytes). A request that would
	// exceed it gets 503, Retry-After. Bodies over 256 KiB may not take its
	// last 512 KiB, which stay free for ordinary calls.
	MaxBodyBytesInFlight int64
	// MaxConcurrentRequests bounds /mcp requests served at once, long
	// waits included (default DefaultMaxConcurrentRequests, or MemoryLimit
	// over 192 KiB if fewer, at least 64); more get 503 with Retry-After.
	MaxConcurrentRequests int
	// MaxRequestsPerAddress bounds the requests of one client address in
	// flight at once (default an eighth of the request cap's default:
	// DefaultMaxRequestsPerAddress without a memory limit; never above
	// MaxConcurrentRequests); more get 503 with Retry-After.
	MaxRequestsPerAddress int
	// MemoryLimit is the Go memory limit (bytes) the defaults of the caps
	// above shrink to fit (see capsFor); while the runtime holds more than
	// half of it, the memory its heap freed is returned to the system as
	// requests end (see memoryGuard). 0: the process's (GOMEMLIMIT);
	// without one, the defaults as they are and nothing returned early.
	MemoryLimit int64
	// MaxSessions bounds the initialized sessions one replica remembers
	// (default DefaultMaxSessions); beyond it the least recently used idle
	// one is forgotten.
	MaxSessions int
	// PublicURL is where clients reach this server (see ParsePublicURL);
	// GET / builds the URLs it suggests from it. Empty: from the request's
	// Host when that is a plain host[:port], else http://localhost.
	PublicURL string
	// TrustedProxies are the proxies whose X-Forwarded-For names the client
	// (see ParseTrustedProxies). Empty trusts nobody: the client is the
	// connection's peer, so nobody can dodge the password throttle by
	// writing their own X-Forwarded-For.
	TrustedProxies []netip.Prefix
	// ClientIPHeader, if set, is a header a trusted proxy sets to the
	// client's address (Fly-Client-IP on Fly.io); from a trusted proxy it
	// wins over X-Forwarded-For. Ignored from anyone else.
	ClientIPHeader string
	// Relay is the rules the MCP server was built on. When set, ctalk is
	// also an OAuth 2.1 authorization server, and /oauth/mcp serves the
	// same tools to clients that signed in with it.
	Relay *relay.Service
	// ClientMetadataAllow lists origins (http://127.0.0.1:PORT) whose
	// Client ID Metadata Documents may be fetched over plain HTTP from a
	// private address. Tests only; empty in production.
	ClientMetadataAllow []string
	// Metrics, when set, counts the requests the caps refuse and reads the
	// store's connections; MetricsToken, when set too, serves them at
	// GET /metrics to requests with Authorization: Bearer MetricsToken
	// (otherwise /metrics is 404 here: see MetricsHandler for a listener
	// of their own).
	Metrics      *metrics.Metrics
	MetricsToken string

	// noHeldWaits sends wait_for_messages calls through mcp-go's handler
	// too (tests compare the two answers).
	noHeldWaits bool
}

// Handler returns the HTTP handler for every route.
func Handler(cfg Config) http.Handler {
	h, _ := handler(cfg)
	return h
}

// handler is Handler, with the sessions it remembers for tests to count.
func handler(cfg Config) (http.Handler, *sessions) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = RedactLogger(cfg.Logger)
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MemoryLimit == 0 {
		cfg.MemoryLimit = memoryLimit()
	}
	capsFor(&cfg, cfg.MemoryLimit)
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	fwd := proxies{trusted: cfg.TrustedProxies, header: cfg.ClientIPHeader}
	tracked := newSessions(cfg.MaxSessions)
	// What a tool call's context carries besides the request's (mcp-go's
	// HTTPContextFunc, and the same for the waits served in heldWaits).
	callContext := func(ctx context.Context, r *http.Request) context.Context {
		ctx = mcp.WithClientAddr(ctx, fwd.clientKey(r))
		return mcp.WithBearerToken(ctx, mcp.BearerToken(r.Header.Get("Authorization")))
	}
	streamable := mcpserver.NewStreamableHTTPServer(cfg.MCP,
		// Session ids are minted at initialize but no request depends on
		// state kept for them: any replica answers any request, with no
		// sticky sessions. (mcp-go's fully stateless mode cannot carry a
		// 2025-11-25 client's answer to an elicitation back to the waiting
		// call; with minted ids it can, on the replica that asked.)
		// The ids are lenientSessions'; tracked learns which one each
		// initialize mints.
		mcpserver.WithSessionIdManagerResolver(tracked),
		// Forget per-session state (client capabilities) of clients that
		// went away without DELETE; sessions.track bounds it meanwhile.
		mcpserver.WithSessionIdleTTL(sessionIdleTTL),
		// In stateless mode every GET stream shares one session, so a
		// notification could reach the wrong client: no GET streams (405).
		mcpserver.WithDisableStreaming(true),
		// mcp-go names the session in some lines: cfg.Logger is redacting.
		mcpserver.WithStreamableHTTPLogger(cfg.Logger),
		mcpserver.WithHTTPContextFunc(callContext),
	)
	origins := map[string]bool{}
	for _, o := range cfg.AllowedOrigins {
		origins[strings.ToLower(strings.TrimRight(o, "/"))] = true
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", health(cfg.Store))
	if cfg.Metrics != nil {
		cfg.Metrics.WatchStore(cfg.Store.Connections)
		if cfg.MetricsToken != "" {
			mux.Handle("GET /metrics", bearerOnly(cfg.MetricsToken, MetricsHandler(cfg.Metrics)))
		}
	}
	mux.HandleFunc("GET /{$}", index(cfg.Version, cfg.PublicURL))
	tracked.mcp = streamable
	g := newGate(cfg, fwd.clientKey)
	waits := newHeldWaits(cfg.MCP, streamable, callContext, cfg.noHeldWaits)
	waits.log = cfg.Logger
	mcpChain := g.readBody(longWrite(waits.serve(tracked.track(streamable))))
	mux.Handle("/mcp", checkOrigin(origins, g.admit(mcpChain)))
	if cfg.Relay != nil {
		base := func(r *http.Request) string {
			if cfg.PublicURL != "" {
				return cfg.PublicURL
			}
			return guessBaseURL(r)
		}
		fetcher, err := oauth.NewFetcher(oauth.FetcherOptions{Allow: cfg.ClientMetadataAllow})
		if err != nil { // cmd checked the origins: a programming error
			panic("ClientMetadataAllow: " + err.Error())
		}
		face := oauth.New(oauth.Config{
			Relay: cfg.Relay, BaseURL: base, ClientAddr: fwd.clientKey, Logger: cfg.Logger, Fetcher: fetcher,
		})
		// The sign-in endpoints are held to the same caps as /mcp.
		pages := http.NewServeMux()
		face.Routes(pages)
		guarded := g.admit(g.readBody(pages))
		mux.Handle("/oauth/", guarded)
		mux.Handle("/.well-known/", guarded)
		// The web pages (issue 13), under the same caps.
		app := http.NewServeMux()
		web.New(web.Config{Relay: cfg.Relay, BaseURL: base, ClientAddr: fwd.clientKey, Logger: cfg.Logger}).Routes(app)
		pagesApp := g.admit(g.readBody(app))
		mux.Handle(web.Prefix, pagesApp)
		mux.Handle(web.Prefix+"/", pagesApp)
		mux.Handle(oauth.MCPPath, checkOrigin(origins, g.admit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if resource, ok := face.Guard(w, r); ok {
				mcpChain.ServeHTTP(w, r.WithContext(mcp.WithResource(r.Context(), resource)))
			}
		}))))
	}
	return front{Handler: withRequestID(fwd, withDetach(logRequests(cfg.Logger, mux))), waits: waits}, tracked
}

// front is the handler Handler returns. Its waits may be answered after
// their handlers returned (see heldWaits): Serve's drain waits for them too.
type front struct {
	http.Handler
	waits *heldWaits
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}

// health answers 200 while the database answers, 503 with a reason otherwise.
func health(store db.Store) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := store.Ping(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{
				"status": "unavailable",
				"reason": store.Backend() + " database is not answering",
			})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}

// checkOrigin refuses browser requests from other sites (cross-site requests
// and DNS rebinding, which the MCP transport spec requires servers to stop).
// ctalk has no web UI, so a request with an Origin header passes only when
// that origin is configured as allowed, or when a local page calls a server
// on a loopback address. Requests without Origin (every non-browser MCP
// client) pass.
func checkOrigin(allowed map[string]bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && !allowed[strings.ToLower(origin)] && !(isLoopbackOrigin(origin) && isLoopbackHost(r.Host)) {
			writeJSON(w, http.StatusForbidden, jsonRPCError(-32000,
				"Origin "+origin+" is not allowed: add it to CTALK_ALLOWED_ORIGINS to let that site call ctalk"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isLoopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && isLoopbackHost(u.Host)
}

func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// mcpWriteTimeout bounds one /mcp response. It is longer than the server's
// default write timeout: a call may wait for a person to approve an answer
// in their client's dialog.
const mcpWriteTimeout = 15 * time.Minute

func longWrite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(mcpWriteTimeout)) //nolint:errcheck // best effort
		next.ServeHTTP(w, r)
	})
}

func jsonRPCError(code int, msg string) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// logRequests logs one line per request: method, path, status, duration
// (and the request id, which the logger adds from the context). Never headers (tokens, session ids) or bodies (passwords, messages).
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		// Not r itself: a detached request's line comes later, and r holds its headers and buffers.
		ctx, method, path := r.Context(), r.Method, r.URL.Path
		afterRequest(ctx, rec.status, func(status int) {
			log.InfoContext(ctx, "request", "method", method, "path", path,
				"status", status, "duration_ms", time.Since(start).Milliseconds())
		})
	})
}

// Serve serves h on ln until ctx is done, then stops accepting connections
// and lets in-flight requests finish for up to drain. draining, if not nil,
// is closed when the drain begins: long waits watch it and end early.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, drain time.Duration, draining chan struct{}) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if draining != nil {
		close(draining)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if err != nil {
		srv.Close()
	}
	if f, ok := h.(front); ok && f.waits.drain(shutdownCtx) != nil {
		err = errors.Join(err, errors.New("held waits"))
	}
	if err != nil {
		return errors.New("shutdown: in-flight requests did not finish within the drain time")
	}
	return nil
}
