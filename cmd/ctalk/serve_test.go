package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	ctalksql "github.com/ctalk/ctalk/sql"
)

// backendEnv is the environment that points ctalk at cfg's database.
func backendEnv(cfg db.Config) env {
	if cfg.DatabaseURL != "" {
		return env{"DATABASE_URL": cfg.DatabaseURL}
	}
	return env{"RELAY_DB_PATH": cfg.SQLitePath}
}

// waitHealthy polls base/health until it answers 200.
func waitHealthy(t *testing.T, base string, exited <-chan int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case code := <-exited:
			t.Fatalf("ctalk serve exited with %d before %s/health answered", code, base)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s/health never answered 200 within 30s (last error %v)", base, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestServe(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		base, stderr, stop := serveInProcess(t, backendEnv(cfg))
		resp, err := http.Get(base + "/")
		if err != nil {
			t.Fatalf("GET /: %v", err)
		}
		var index map[string]string
		err = json.NewDecoder(resp.Body).Decode(&index)
		resp.Body.Close()
		if err != nil || index["mcp_endpoint"] != base+"/mcp" || index["version"] != version {
			t.Errorf("GET / = %v (%v), want mcp_endpoint %s/mcp and version %s", index, err, base, version)
		}

		if code := stop(); code != 0 {
			t.Errorf("ctalk serve after cancel = exit %d, want 0; stderr:\n%s", code, stderr.String())
		}
		if !strings.Contains(stderr.String(), "ctalk stopped") {
			t.Errorf("ctalk serve log lacks the clean-stop line:\n%s", stderr.String())
		}
		// The first line names the URL to add and the database, never its password.
		wantDB := "database=\"sqlite " + cfg.SQLitePath + "\""
		if cfg.DatabaseURL != "" {
			pc, _ := db.ParsePostgresURL(cfg.DatabaseURL)
			wantDB = fmt.Sprintf("database=\"postgres %s:%d/%s\"", pc.ConnConfig.Host, pc.ConnConfig.Port, pc.ConnConfig.Database)
			if pw := pc.ConnConfig.Password; pw != "" && strings.Contains(stderr.String(), pw) {
				t.Errorf("ctalk serve logged the database password:\n%s", stderr.String())
			}
		}
		if log := stderr.String(); !strings.Contains(log, "mcp_url="+base+"/mcp") || !strings.Contains(log, wantDB) {
			t.Errorf("ctalk serve log lacks mcp_url=%s/mcp or %s:\n%s", base, wantDB, log)
		}
		if _, err := http.Get(base + "/health"); err == nil {
			t.Errorf("GET /health after serve returned: err = nil, want connection refused")
		}
	})
}

// TestServeMetricsAndJSONLog: with CTALK_METRICS_ADDR, CTALK_METRICS_TOKEN
// and CTALK_LOG_FORMAT=json, ctalk serve writes JSON lines and serves the
// metrics on their own listener and, behind the token, on the main port.
func TestServeMetricsAndJSONLog(t *testing.T) {
	t.Parallel()
	const token = "serve-test-metrics-token-4f1b"
	metricsPort := testkit.FreePort(t)
	e := backendEnv(dbtest.NewConfig(t, "sqlite"))
	e["CTALK_METRICS_ADDR"], e["CTALK_METRICS_TOKEN"], e["CTALK_LOG_FORMAT"] = "127.0.0.1:"+strconv.Itoa(metricsPort), token, "json"
	base, stderr, stop := serveInProcess(t, e)

	get := func(url, bearer string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	wantInfo := `ctalk_build_info{goversion="` + runtime.Version() + `",version="` + version + `"} 1`
	for _, tc := range []struct {
		url, bearer string
		want        int
	}{
		{"http://127.0.0.1:" + strconv.Itoa(metricsPort) + "/metrics", "", http.StatusOK},
		{base + "/metrics", token, http.StatusOK},
		{base + "/metrics", "", http.StatusUnauthorized},
	} {
		code, body := get(tc.url, tc.bearer)
		if code != tc.want || (code == http.StatusOK) != strings.Contains(body, wantInfo) {
			t.Errorf("GET %s (token %v) = %d, want %d and %q only with 200:\n%.300s", tc.url, tc.bearer != "", code, tc.want, wantInfo, body)
		}
	}
	stop()
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("log line is not JSON (%v): %s", err, line)
		}
		if strings.Contains(line, token) {
			t.Errorf("log line holds the metrics token: %s", line)
		}
	}
	if !strings.Contains(stderr.String(), `"msg":"ctalk stopped"`) || len(lines) < 5 {
		t.Errorf("log = %s, want the serving, request and stop lines as JSON", stderr.String())
	}
}

// migrations are the embedded migration files, oldest first.
func migrations(t *testing.T, backend string) []string {
	t.Helper()
	entries, err := fs.ReadDir(ctalksql.Migrations, backend+"/migrations")
	if err != nil {
		t.Fatalf("read embedded migrations: %v", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sql") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 || names[0] != "00001_init.sql" {
		t.Fatalf("embedded %s migrations = %v, want 00001_init.sql first", backend, names)
	}
	return names
}

// migrationStates runs `ctalk migrate status` and returns file → state.
func migrationStates(t *testing.T, e env) map[string]string {
	t.Helper()
	code, stdout, stderr := runCtalk(t, t.Context(), e, "migrate", "status")
	if code != 0 {
		t.Fatalf("ctalk migrate status = exit %d, stderr %q", code, stderr)
	}
	states := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			t.Fatalf("ctalk migrate status line %q, want <file> <state>", line)
		}
		states[f[0]] = f[1]
	}
	return states
}

// allIn returns every file in state, except the newest n which are in other.
func allIn(files []string, state string, n int, other string) map[string]string {
	m := map[string]string{}
	for i, f := range files {
		m[f] = state
		if i >= len(files)-n {
			m[f] = other
		}
	}
	return m
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	for _, backend := range dbtest.Backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := backendEnv(dbtest.NewConfig(t, backend))
			files := migrations(t, backend)
			step := func(want string, args ...string) {
				t.Helper()
				code, stdout, stderr := runCtalk(t, t.Context(), e, append([]string{"migrate"}, args...)...)
				if code != 0 || stdout != want+"\n" {
					t.Fatalf("ctalk migrate %v = exit %d, stdout %q, stderr %q; want %q", args, code, stdout, stderr, want)
				}
			}
			check := func(when string, want map[string]string) {
				t.Helper()
				if diff := cmp.Diff(want, migrationStates(t, e)); diff != "" {
					t.Errorf("ctalk migrate status %s (-want +got):\n%s", when, diff)
				}
			}

			check("on an empty database", allIn(files, "pending", 0, ""))
			step("applied "+strconv.Itoa(len(files))+" migration(s)", "up")
			check("after up", allIn(files, "applied", 0, ""))
			step("applied 0 migration(s)", "up")

			step("rolled back "+files[len(files)-1], "down")
			check("after one down", allIn(files, "applied", 1, "pending"))
			for _, f := range slices.Backward(files[:len(files)-1]) {
				step("rolled back "+f, "down")
			}
			check("after rolling back 00001_init.sql", allIn(files, "pending", 0, ""))

			code, _, stderr := runCtalk(t, t.Context(), e, "migrate", "down")
			if code == 0 {
				t.Errorf("ctalk migrate down with nothing applied = exit 0, want a failure")
			}
			oneLine(t, "ctalk migrate down with nothing applied", stderr)

			step("applied "+strconv.Itoa(len(files))+" migration(s)", "up")
			check("after up again", allIn(files, "applied", 0, ""))
			dbtest.Open(t, backendCfg(e)) // the re-created schema is usable
		})
	}
}

func backendCfg(e env) db.Config {
	return db.Config{DatabaseURL: e["DATABASE_URL"], SQLitePath: e["RELAY_DB_PATH"]}
}

func TestMigrateUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"migrate"}, {"migrate", "sideways"}, {"migrate", "up", "extra"}} {
		code, stdout, stderr := runCtalk(t, t.Context(), sqliteEnv(t), args...)
		if code == 0 || stdout != "" {
			t.Errorf("ctalk %v = exit %d, stdout %q; want a failure", args, code, stdout)
		}
		oneLine(t, "ctalk "+strings.Join(args, " "), stderr)
		for _, want := range []string{"status", "up", "down"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("ctalk %v stderr = %q, want it to list %s", args, stderr, want)
			}
		}
	}
}

func TestStdio(t *testing.T) {
	t.Parallel()
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var stdout, stderr testkit.SyncBuffer
	code := run(ctx, []string{"stdio"}, sqliteEnv(t).getenv, strings.NewReader(in), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("ctalk stdio = exit %d, stderr %q", code, stderr.String())
	}
	var ids []int
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.Result == nil {
			t.Errorf("ctalk stdio wrote %q, want JSON-RPC results only (stdout carries the protocol)", line)
			continue
		}
		ids = append(ids, msg.ID)
	}
	// JSON-RPC lets a server answer in any order, and mcp-go's stdio server
	// handles requests concurrently: each id must be answered once.
	slices.Sort(ids)
	if diff := cmp.Diff([]int{1, 2}, ids); diff != "" {
		t.Errorf("ctalk stdio answered ids (-want +got):\n%s", diff)
	}
}
