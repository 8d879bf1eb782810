package main

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/internal/notify"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// config is every setting, read from the environment once and validated.
type config struct {
	Port                int
	DatabaseURL         string
	ListenURL           string // CTALK_LISTEN_DATABASE_URL
	SQLitePath          string
	TokenTTL            time.Duration
	Retention           time.Duration // 0: keep conversations forever
	AllowedOrigins      []string
	ClientMetadataAllow []string // CTALK_OAUTH_CLIENT_METADATA_ALLOW (tests)
	ShutdownTimeout     time.Duration
	// PublicURL is where clients reach the relay (CTALK_PUBLIC_URL), "" if unset.
	PublicURL string
	// TrustedProxies and ClientIPHeader decide whose forwarding headers
	// name the client (CTALK_TRUSTED_PROXIES, CTALK_CLIENT_IP_HEADER).
	TrustedProxies []netip.Prefix
	ClientIPHeader string
	// ProxyPreset names the host whose proxies were trusted without
	// CTALK_TRUSTED_PROXIES being set (Railway, Render, Fly.io), for the log.
	ProxyPreset string
	// Caps on what the HTTP front holds at once (0: the server's default).
	MaxConcurrentRequests int
	MaxBodyBytesInFlight  int64
	MaxSessions           int
	// Caps on open wait_for_messages calls (0: the relay's default).
	MaxWaits, MaxWaitsPerUser int
	Obs                       server.Observability // metrics and the log's format
	Notify                    notify.Env           // email and webhook notifications
}

// envHelp documents each environment variable with its default; `ctalk
// --help` prints it and the README repeats it.
const envHelp = `Environment:
  PORT                    port to listen on (default 8000)
  DATABASE_URL            PostgreSQL URL (postgres://user:pass@host:5432/db); unset: SQLite
  CTALK_LISTEN_DATABASE_URL
                          direct (unpooled) URL of the same database for LISTEN, which wakes
                          waiters, when DATABASE_URL goes through a transaction pooler such as
                          PgBouncer; setting it marks DATABASE_URL as pooled (default: DATABASE_URL)
  RELAY_DB_PATH           SQLite database file when DATABASE_URL is unset (default relay.sqlite3)
  CTALK_TOKEN_TTL         lifetime of a login token, e.g. 720h (default 720h = 30 days)
  CTALK_RETENTION         delete conversations whose every question is answered and whose last
                          answer is older than this, e.g. 2160h = 90 days (at least 24h; checked
                          hourly; default: keep them)
  CTALK_ALLOWED_ORIGINS   comma-separated browser origins allowed to call /mcp (default: none,
                          except local pages calling a loopback server; clients that send no
                          Origin, such as Claude Code and the SDKs, are unaffected)
  CTALK_SHUTDOWN_TIMEOUT  how long in-flight requests may finish after SIGTERM (default 10s)
  CTALK_PUBLIC_URL        the URL clients reach the relay at, e.g. https://ctalk.example.com;
                          GET / and the startup log build the MCP URL from it (default: the
                          request's Host when it is a plain host[:port], else http://localhost)
  CTALK_TRUSTED_PROXIES   proxies whose X-Forwarded-For names the client (password throttling):
                          CIDRs, addresses or presets private, railway, render, fly (default:
                          none; on Railway, Render and Fly.io the host's preset, detected from
                          RAILWAY_ENVIRONMENT, RENDER or FLY_APP_NAME)
  CTALK_CLIENT_IP_HEADER  a header a trusted proxy sets to the client's address (Fly-Client-IP;
                          default: none, or Fly-Client-IP on Fly.io)
  CTALK_MAX_CONCURRENT_REQUESTS
                          /mcp requests served at once, open waits included (default 4096;
                          under GOMEMLIMIT, the limit over 192 KiB: 256 at 48MiB)
  CTALK_MAX_BODY_BYTES_IN_FLIGHT
                          request body bytes held at once, in bytes (default 8388608 = 8 MiB;
                          under GOMEMLIMIT, 1/16 of the limit: 3 MiB at 48MiB)
  CTALK_MAX_SESSIONS      client sessions one replica remembers (default 500)
  CTALK_MAX_WAITS         open wait_for_messages calls per process (default 2000)
  CTALK_MAX_WAITS_PER_USER
                          open wait_for_messages calls per user (default 8)
  CTALK_METRICS_ADDR      host:port of a listener serving only GET /metrics (Prometheus), e.g.
                          127.0.0.1:9090; bind it to a private address (default: none)
  CTALK_METRICS_TOKEN     serve GET /metrics on the main port too, to Authorization: Bearer
                          this token (at least 16 characters; default: none, /metrics is 404)
  CTALK_LOG_FORMAT        text or json (default text)
  CTALK_OAUTH_CLIENT_METADATA_ALLOW
                          origins whose OAuth client metadata may be fetched over http from a
                          private address (tests only; default: none)
` + notify.EnvHelp

func loadConfig(getenv func(string) string) (config, error) {
	c := config{
		Port:            8000,
		DatabaseURL:     strings.TrimSpace(getenv("DATABASE_URL")),
		SQLitePath:      strings.TrimSpace(getenv("RELAY_DB_PATH")),
		TokenTTL:        mcp.DefaultTokenTTL,
		ShutdownTimeout: 10 * time.Second,
	}
	if v := strings.TrimSpace(getenv("PORT")); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			return c, fmt.Errorf("PORT=%q is not a port number: use 1-65535", v)
		}
		c.Port = p
	}
	if c.DatabaseURL != "" {
		if _, err := db.ParsePostgresURL(c.DatabaseURL); err != nil {
			return c, err
		}
		if c.ListenURL = strings.TrimSpace(getenv("CTALK_LISTEN_DATABASE_URL")); c.ListenURL != "" {
			if _, err := db.ParseListenURL(c.ListenURL); err != nil {
				return c, err
			}
		}
	} else {
		if strings.TrimSpace(getenv("CTALK_LISTEN_DATABASE_URL")) != "" {
			return c, fmt.Errorf("CTALK_LISTEN_DATABASE_URL is set but DATABASE_URL is not: set DATABASE_URL to the (pooled) PostgreSQL URL, or unset CTALK_LISTEN_DATABASE_URL")
		}
		if c.SQLitePath == "" {
			c.SQLitePath = "relay.sqlite3"
		}
		if err := db.CheckSQLitePath(c.SQLitePath); err != nil {
			return c, err
		}
	}
	var err error
	if c.TokenTTL, err = duration(getenv, "CTALK_TOKEN_TTL", c.TokenTTL, time.Minute); err != nil {
		return c, err
	}
	if c.Retention, err = duration(getenv, "CTALK_RETENTION", 0, 24*time.Hour); err != nil {
		return c, err
	}
	if c.ShutdownTimeout, err = duration(getenv, "CTALK_SHUTDOWN_TIMEOUT", c.ShutdownTimeout, 0); err != nil {
		return c, err
	}
	if c.AllowedOrigins, err = origins(getenv, "CTALK_ALLOWED_ORIGINS"); err != nil {
		return c, err
	}
	if c.ClientMetadataAllow, err = origins(getenv, "CTALK_OAUTH_CLIENT_METADATA_ALLOW"); err != nil {
		return c, err
	}
	if err := c.loadFront(getenv); err != nil {
		return c, err
	}
	if c.Notify, err = notify.LoadEnv(getenv); err != nil {
		return c, err
	}
	c.Obs, err = server.ParseObservability(getenv("CTALK_METRICS_ADDR"), getenv("CTALK_METRICS_TOKEN"), getenv("CTALK_LOG_FORMAT"))
	return c, err
}

// hostPresets are the hosts whose own proxies ctalk trusts when
// CTALK_TRUSTED_PROXIES is unset: each sets the variable named here in every
// service's environment, and forwards from its private network.
var hostPresets = []struct{ env, preset, header string }{
	{"RAILWAY_ENVIRONMENT", "railway", ""},
	{"RENDER", "render", ""},
	{"FLY_APP_NAME", "fly", "Fly-Client-IP"},
}

// origins reads a comma-separated list of origins.
func origins(getenv func(string) string, name string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(getenv(name), ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("%s: %q is not an origin: use scheme://host[:port], e.g. https://app.example.com", name, o)
		}
		out = append(out, o)
	}
	return out, nil
}

// loadFront reads the settings of the HTTP front: the public URL, trusted
// proxies and the caps on what it holds at once.
func (c *config) loadFront(getenv func(string) string) error {
	var err error
	v := strings.TrimSpace(getenv("CTALK_PUBLIC_URL"))
	if d := strings.TrimSpace(getenv("RAILWAY_PUBLIC_DOMAIN")); v == "" && d != "" {
		v = "https://" + d // Railway names the service's public domain
	}
	if v != "" {
		if c.PublicURL, err = server.ParsePublicURL(v); err != nil {
			return fmt.Errorf("CTALK_PUBLIC_URL: %w", err)
		}
	}
	proxies := strings.TrimSpace(getenv("CTALK_TRUSTED_PROXIES"))
	c.ClientIPHeader = strings.TrimSpace(getenv("CTALK_CLIENT_IP_HEADER"))
	if proxies == "" {
		for _, h := range hostPresets {
			if getenv(h.env) != "" {
				proxies, c.ProxyPreset = h.preset, h.preset
				if c.ClientIPHeader == "" {
					c.ClientIPHeader = h.header
				}
				break
			}
		}
	}
	if c.TrustedProxies, err = server.ParseTrustedProxies(proxies); err != nil {
		return fmt.Errorf("CTALK_TRUSTED_PROXIES: %w", err)
	}
	if c.MaxConcurrentRequests, err = positive(getenv, "CTALK_MAX_CONCURRENT_REQUESTS"); err != nil {
		return err
	}
	n, err := positive(getenv, "CTALK_MAX_BODY_BYTES_IN_FLIGHT")
	if err != nil {
		return err
	}
	c.MaxBodyBytesInFlight = int64(n)
	if c.MaxSessions, err = positive(getenv, "CTALK_MAX_SESSIONS"); err != nil {
		return err
	}
	if c.MaxWaits, err = positive(getenv, "CTALK_MAX_WAITS"); err != nil {
		return err
	}
	c.MaxWaitsPerUser, err = positive(getenv, "CTALK_MAX_WAITS_PER_USER")
	return err
}

// positive reads an optional positive whole number; 0 when unset.
func positive(getenv func(string) string, name string) (int, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q is not a positive whole number: use a value such as 512, or unset it for the default", name, v)
	}
	return n, nil
}

func duration(getenv func(string) string, name string, def, min time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < min {
		return 0, fmt.Errorf("%s=%q is not a valid duration: use a value such as 720h or 30s (at least %s)", name, v, min)
	}
	return d, nil
}

func (c config) dbConfig() db.Config {
	return db.Config{DatabaseURL: c.DatabaseURL, ListenURL: c.ListenURL, SQLitePath: c.SQLitePath}
}

// describeDB names the database in use for the log, never a password.
func (c config) describeDB() string { return c.dbConfig().Describe() }
