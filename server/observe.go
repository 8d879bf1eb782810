package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ctalk/ctalk/internal/metrics"
	"github.com/ctalk/ctalk/mcp"
)

// What an operator looks at: the Prometheus metrics (internal/metrics
// names the series), the log's format, and the request id that ties a
// response to its log lines.

// Observability is how an operator watches one replica.
type Observability struct {
	// MetricsAddr, if set, is a listener of its own (host:port) that serves
	// GET /metrics to anyone who can reach it: bind it to a private address.
	MetricsAddr string
	// MetricsToken, if set, serves GET /metrics on the main listener too,
	// to requests with Authorization: Bearer MetricsToken. With neither
	// set, /metrics answers 404.
	MetricsToken string
	// LogFormat is "text" (the default) or "json".
	LogFormat string
}

// minMetricsToken is the shortest metrics token accepted: /metrics on the
// main listener is open to the internet, so the token must not be guessable.
const minMetricsToken = 16

// ParseObservability checks the settings of CTALK_METRICS_ADDR,
// CTALK_METRICS_TOKEN and CTALK_LOG_FORMAT. Its errors never repeat the token.
func ParseObservability(addr, token, format string) (Observability, error) {
	o := Observability{MetricsAddr: strings.TrimSpace(addr), MetricsToken: strings.TrimSpace(token),
		LogFormat: strings.ToLower(strings.TrimSpace(format))}
	if o.MetricsAddr != "" {
		_, port, err := net.SplitHostPort(o.MetricsAddr)
		if p, perr := strconv.Atoi(port); err != nil || perr != nil || p < 0 || p > 65535 {
			return o, fmt.Errorf("CTALK_METRICS_ADDR=%q is not host:port: use e.g. 127.0.0.1:9090 (a private address)", o.MetricsAddr)
		}
	}
	if o.MetricsToken != "" && (len(o.MetricsToken) < minMetricsToken || strings.ContainsAny(o.MetricsToken, " \t\r\n")) {
		return o, fmt.Errorf("CTALK_METRICS_TOKEN is too short or has spaces: use at least %d random characters, "+
			"e.g. the output of openssl rand -hex 32", minMetricsToken)
	}
	switch o.LogFormat {
	case "":
		o.LogFormat = "text"
	case "text", "json":
	default:
		return o, fmt.Errorf("CTALK_LOG_FORMAT=%q is not a log format: use text or json", format)
	}
	return o, nil
}

// NewLogger returns the process's root logger, writing to w in format
// ("json" or text), with every line redacted (see RedactLogger) and
// carrying the request id of the request it was logged for.
func NewLogger(w io.Writer, format string) *slog.Logger {
	if format == "json" {
		return RedactLogger(slog.New(slog.NewJSONHandler(w, nil)))
	}
	return RedactLogger(slog.New(slog.NewTextHandler(w, nil)))
}

// Listen opens a TCP listener on addr (host:port), saying which setting
// (env) to change when the port is taken.
func Listen(addr, env string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		_, port, _ := net.SplitHostPort(addr)
		return nil, fmt.Errorf("port %s is in use: stop the other process or set %s to a free port", port, env)
	} else if err != nil {
		return nil, fmt.Errorf("listen on %s (%s): %w", addr, env, err)
	}
	return ln, nil
}

// MCPURL is the MCP URL to add: publicURL's /mcp, or else the loopback
// URL of addr (the listener's) for this machine.
func MCPURL(publicURL string, addr net.Addr) string {
	if publicURL != "" {
		return publicURL + "/mcp"
	}
	port := 0
	if a, ok := addr.(*net.TCPAddr); ok {
		port = a.Port
	}
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
}

// MetricsHandler serves m in the Prometheus text format at GET /metrics,
// and nothing else (404): the handler of the metrics' own listener.
func MetricsHandler(m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Gatherer(), promhttp.HandlerOpts{}))
	return mux
}

// ServeMetrics serves MetricsHandler(m) on its own listener at addr until
// ctx is done; an empty addr serves nothing. It returns once the port is
// open, with its address, or the reason it could not be opened.
func ServeMetrics(ctx context.Context, addr string, m *metrics.Metrics, log *slog.Logger) (net.Addr, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := Listen(addr, "CTALK_METRICS_ADDR")
	if err != nil {
		return nil, err
	}
	log.Info("metrics serving", "url", "http://"+ln.Addr().String()+"/metrics")
	go func() {
		if err := Serve(ctx, ln, MetricsHandler(m), time.Second, nil); err != nil {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	return ln.Addr(), nil
}

// bearerOnly lets through requests that carry Authorization: Bearer token,
// comparing in constant time (of hashes, so the token's length does not
// show either); others get 401.
func bearerOnly(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(mcp.BearerToken(r.Header.Get("Authorization"))))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ctalk metrics"`)
			http.Error(w, "401 unauthorized: send Authorization: Bearer CTALK_METRICS_TOKEN", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type requestIDKey struct{}

// RequestID is the id of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// maxRequestID bounds an incoming X-Request-Id.
const maxRequestID = 128

// saneRequestID accepts ids made of letters, digits and - _ . : / + = @,
// as proxies and balancers make them (UUIDs, hex, Heroku's and AWS's).
func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:/+=@", c)) {
			return false
		}
	}
	return true
}

// withRequestID gives every request an id: the X-Request-Id a trusted
// proxy sent, when it is sane, else a new random one. The response's
// X-Request-Id header carries it, and every line logged with the request's
// context (see redactHandler) has it as request_id.
func withRequestID(fwd proxies, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !saneRequestID(id) || !fwd.fromTrusted(r) {
			var b [12]byte
			rand.Read(b[:]) //nolint:errcheck // crypto/rand.Read never fails
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}
