package main

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/internal/testkit"
)

// env is a fake environment: getenv reads only these variables.
type env map[string]string

func (e env) getenv(name string) string { return e[name] }

// runCtalk runs the command to completion with env as its whole environment.
func runCtalk(t *testing.T, ctx context.Context, e env, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut testkit.SyncBuffer
	code = run(ctx, args, e.getenv, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// sqliteEnv is an environment with a fresh SQLite file and no DATABASE_URL.
func sqliteEnv(t *testing.T) env {
	t.Helper()
	return env{"RELAY_DB_PATH": filepath.Join(t.TempDir(), "relay.sqlite3")}
}

// oneLine fails unless s is exactly one non-empty line.
func oneLine(t *testing.T, what, s string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") || strings.TrimSpace(s) == "" {
		t.Errorf("%s wrote %q to stderr, want exactly one line", what, s)
	}
}

var envVars = []string{"PORT", "DATABASE_URL", "RELAY_DB_PATH", "CTALK_TOKEN_TTL", "CTALK_ALLOWED_ORIGINS", "CTALK_SHUTDOWN_TIMEOUT"}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {}} {
		code, stdout, stderr := runCtalk(t, t.Context(), env{}, args...)
		if code != 0 || stderr != "" {
			t.Errorf("ctalk %v = exit %d, stderr %q; want exit 0 and nothing on stderr", args, code, stderr)
		}
		for _, want := range append([]string{"serve", "stdio", "migrate status|up|down", "version", "help"}, envVars...) {
			if !strings.Contains(stdout, want) {
				t.Errorf("ctalk %v output lacks %q:\n%s", args, want, stdout)
			}
		}
	}
}

func TestMain(m *testing.M) { testkit.Main(m) }

func TestVersion(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCtalk(t, t.Context(), env{}, "version")
	if want := versionLine + "\n"; code != 0 || stdout != want || !strings.HasPrefix(stdout, "ctalk "+version) || stderr != "" {
		t.Errorf("ctalk version = exit %d, stdout %q, stderr %q; want exit 0, %q", code, stdout, stderr, want)
	}
}

func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCtalk(t, t.Context(), env{}, "serv")
	if code != 2 || stdout != "" {
		t.Errorf("ctalk serv = exit %d, stdout %q; want exit 2 and no stdout", code, stdout)
	}
	oneLine(t, "ctalk serv", stderr)
	if !strings.Contains(stderr, `"serv"`) || !strings.Contains(stderr, "ctalk help") {
		t.Errorf("ctalk serv stderr = %q, want it to name the command and point at ctalk help", stderr)
	}
}

const secret = "hunter2secret"

func TestBadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		env  env
		want string // what the one line must name
	}{
		{"PORT not a number", env{"PORT": "abc"}, "PORT"},
		{"PORT out of range", env{"PORT": "70000"}, "PORT"},
		{"PORT zero", env{"PORT": "0"}, "PORT"},
		{"DATABASE_URL unparseable", env{"DATABASE_URL": "postgres://%zz"}, "DATABASE_URL"},
		{"DATABASE_URL bad escape after a password", env{"DATABASE_URL": "postgres://ctalk:" + secret + "@db.example:5432/%zz"}, "DATABASE_URL"},
		{"DATABASE_URL bad escape in the password", env{"DATABASE_URL": "postgres://ctalk:" + secret + "%zz@db.example/ctalk"}, "DATABASE_URL"},
		{"DATABASE_URL bad port", env{"DATABASE_URL": "postgres://ctalk:" + secret + "@db.example:notaport/ctalk"}, "DATABASE_URL"},
		{"DATABASE_URL bad sslmode", env{"DATABASE_URL": "postgres://ctalk:" + secret + "@db.example/ctalk?sslmode=bogus"}, "DATABASE_URL"},
		{"CTALK_LISTEN_DATABASE_URL unparseable", env{"DATABASE_URL": "postgres://db.example/ctalk", "CTALK_LISTEN_DATABASE_URL": "postgres://ctalk:" + secret + "@db.example:notaport/ctalk"}, "CTALK_LISTEN_DATABASE_URL"},
		{"CTALK_LISTEN_DATABASE_URL without DATABASE_URL", env{"CTALK_LISTEN_DATABASE_URL": "postgres://db.example/ctalk"}, "CTALK_LISTEN_DATABASE_URL"},
		{"RELAY_DB_PATH in a missing directory", env{"RELAY_DB_PATH": filepath.Join(dir, "missing", "relay.sqlite3")}, "RELAY_DB_PATH"},
		{"RELAY_DB_PATH is a directory", env{"RELAY_DB_PATH": dir}, "RELAY_DB_PATH"},
		{"CTALK_TOKEN_TTL bogus", env{"CTALK_TOKEN_TTL": "bogus"}, "CTALK_TOKEN_TTL"},
		{"CTALK_TOKEN_TTL too short", env{"CTALK_TOKEN_TTL": "1s"}, "CTALK_TOKEN_TTL"},
		{"CTALK_SHUTDOWN_TIMEOUT bogus", env{"CTALK_SHUTDOWN_TIMEOUT": "soon"}, "CTALK_SHUTDOWN_TIMEOUT"},
		{"CTALK_ALLOWED_ORIGINS not an origin", env{"CTALK_ALLOWED_ORIGINS": "https://ok.example, example.com/app"}, "CTALK_ALLOWED_ORIGINS"},
		{"CTALK_PUBLIC_URL relative", env{"CTALK_PUBLIC_URL": "ctalk.example.com"}, "CTALK_PUBLIC_URL"},
		{"CTALK_TRUSTED_PROXIES not a CIDR", env{"CTALK_TRUSTED_PROXIES": "10.0.0.0/8, everyone"}, "CTALK_TRUSTED_PROXIES"},
		{"CTALK_MAX_SESSIONS zero", env{"CTALK_MAX_SESSIONS": "0"}, "CTALK_MAX_SESSIONS"},
		{"CTALK_MAX_WAITS not a number", env{"CTALK_MAX_WAITS": "lots"}, "CTALK_MAX_WAITS"},
		{"CTALK_MAX_CONCURRENT_REQUESTS not a number", env{"CTALK_MAX_CONCURRENT_REQUESTS": "many"}, "CTALK_MAX_CONCURRENT_REQUESTS"},
		{"CTALK_MAX_BODY_BYTES_IN_FLIGHT negative", env{"CTALK_MAX_BODY_BYTES_IN_FLIGHT": "-1"}, "CTALK_MAX_BODY_BYTES_IN_FLIGHT"},
		{"CTALK_METRICS_ADDR without a port", env{"CTALK_METRICS_ADDR": "127.0.0.1"}, "CTALK_METRICS_ADDR"},
		{"CTALK_METRICS_TOKEN too short", env{"CTALK_METRICS_TOKEN": secret}, "CTALK_METRICS_TOKEN"},
		{"CTALK_METRICS_TOKEN with spaces", env{"CTALK_METRICS_TOKEN": secret + " and " + secret}, "CTALK_METRICS_TOKEN"},
		{"CTALK_LOG_FORMAT unknown", env{"CTALK_LOG_FORMAT": "yaml"}, "CTALK_LOG_FORMAT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, ok := tc.env["RELAY_DB_PATH"]; !ok {
				tc.env["RELAY_DB_PATH"] = filepath.Join(t.TempDir(), "relay.sqlite3")
			}
			for _, args := range [][]string{{"serve"}, {"migrate", "status"}} {
				code, stdout, stderr := runCtalk(t, t.Context(), tc.env, args...)
				if code == 0 || stdout != "" {
					t.Errorf("ctalk %v with %v = exit %d, stdout %q; want a failure and no stdout", args, tc.env, code, stdout)
				}
				oneLine(t, "ctalk "+strings.Join(args, " "), stderr)
				if !strings.Contains(stderr, tc.want) {
					t.Errorf("ctalk %v stderr = %q, want it to name %s", args, stderr, tc.want)
				}
				if strings.Contains(stderr, secret) {
					t.Errorf("ctalk %v stderr = %q, which reveals the database password", args, stderr)
				}
			}
		})
	}
}

// TestReadOnlyDatabasePath needs permission bits to matter, which they do not
// for root (CAP_DAC_OVERRIDE).
func TestReadOnlyDatabasePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "existing.sqlite3")
	if err := os.WriteFile(file, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	// A writable file is not enough: SQLite's WAL needs files beside it.
	writable := filepath.Join(dir, "writable.sqlite3")
	if err := os.WriteFile(writable, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if f, err := os.CreateTemp(dir, "probe"); err == nil {
		f.Close()
		t.Skip("permission bits do not stop this process from writing (running as root?): cannot test a read-only RELAY_DB_PATH")
	}
	for _, path := range []string{filepath.Join(dir, "relay.sqlite3"), file, writable} {
		code, _, stderr := runCtalk(t, t.Context(), env{"RELAY_DB_PATH": path}, "serve")
		if code == 0 {
			t.Errorf("ctalk serve with read-only RELAY_DB_PATH=%s = exit 0, want a failure", path)
		}
		oneLine(t, "ctalk serve", stderr)
		if !strings.Contains(stderr, "RELAY_DB_PATH") || !strings.Contains(stderr, "writable") {
			t.Errorf("ctalk serve with read-only RELAY_DB_PATH=%s stderr = %q, want it to say the path is not writable", path, stderr)
		}
	}
}

func TestUnreachableDatabase(t *testing.T) {
	t.Parallel()
	e := env{"PORT": strconv.Itoa(testkit.FreePort(t)),
		"DATABASE_URL": "postgres://ctalk:" + secret + "@127.0.0.1:" + strconv.Itoa(testkit.FreePort(t)) + "/ctalk?connect_timeout=5"}
	code, stdout, stderr := runCtalk(t, t.Context(), e, "serve")
	if code == 0 || stdout != "" {
		t.Errorf("ctalk serve with no database listening = exit %d, stdout %q; want a failure", code, stdout)
	}
	oneLine(t, "ctalk serve", stderr)
	if !strings.Contains(stderr, "PostgreSQL") || strings.Contains(stderr, secret) {
		t.Errorf("ctalk serve stderr = %q, want it to name PostgreSQL and never the password", stderr)
	}
}

func TestPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	e := sqliteEnv(t)
	e["PORT"] = strconv.Itoa(port)
	code, _, stderr := runCtalk(t, t.Context(), e, "serve")
	if want := "port " + strconv.Itoa(port) + " is in use"; code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("ctalk serve on a taken port = exit %d, stderr %q; want a failure saying %q", code, stderr, want)
	}
}

func TestDescribeDB(t *testing.T) {
	t.Parallel()
	c := config{DatabaseURL: "postgres://ctalk:" + secret + "@db.example:6543/relay?sslmode=disable"}
	if got, want := c.describeDB(), "postgres db.example:6543/relay"; got != want {
		t.Errorf("describeDB = %q, want %q", got, want)
	}
	c = config{SQLitePath: "relay.sqlite3"}
	if got := c.describeDB(); !strings.HasPrefix(got, "sqlite /") || !strings.HasSuffix(got, "/relay.sqlite3") {
		t.Errorf("describeDB = %q, want the SQLite file's absolute path", got)
	}
}

// TestHostProxyPresets: on a host that documents its proxies, ctalk trusts
// them without configuration (or every user would share the proxy's
// throttle key); elsewhere it trusts nobody, and an explicit setting wins.
func TestHostProxyPresets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		env        env
		wantTrust  bool // a private proxy address is trusted
		wantHeader string
	}{
		{"no host", env{}, false, ""},
		{"Railway", env{"RAILWAY_ENVIRONMENT": "production"}, true, ""},
		{"Render", env{"RENDER": "true"}, true, ""},
		{"Fly.io", env{"FLY_APP_NAME": "ctalk"}, true, "Fly-Client-IP"},
		{"explicit setting wins", env{"RAILWAY_ENVIRONMENT": "production", "CTALK_TRUSTED_PROXIES": "192.0.2.1"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.env["RELAY_DB_PATH"] = filepath.Join(t.TempDir(), "relay.sqlite3")
			cfg, err := loadConfig(func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatalf("loadConfig(%v) = %v", tc.env, err)
			}
			trusted := false
			for _, p := range cfg.TrustedProxies {
				trusted = trusted || p.Contains(netip.MustParseAddr("10.1.2.3"))
			}
			if trusted != tc.wantTrust || cfg.ClientIPHeader != tc.wantHeader {
				t.Errorf("loadConfig(%v): trusts 10.1.2.3 = %v, client IP header %q; want %v, %q",
					tc.env, trusted, cfg.ClientIPHeader, tc.wantTrust, tc.wantHeader)
			}
		})
	}
}
