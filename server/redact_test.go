package server

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// TestLogsOmitHeaderValues: neither the request log nor mcp-go's own log
// lines (which name the session in some errors) hold a session id or an
// Authorization value, whatever the client sends.
func TestLogsOmitHeaderValues(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		var logs testkit.SyncBuffer
		srv := startServer(t, s, Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		const chosen = "mcp-session-0badc0de-1234-4321-8888-feedfacecafe" // a client-chosen id in ctalk's format
		const token = "ctalk_distinctive-token-7788"
		minted := initSession(t, srv.URL).Get("Mcp-Session-Id")
		if minted == "" {
			t.Fatalf("initialize minted no session id")
		}
		for _, id := range []string{chosen, minted} {
			h := mcpHeader("Mcp-Session-Id", id, "Authorization", "Bearer "+token)
			do(t, http.MethodGet, srv.URL+"/mcp", "", h)                                            // mcp-go logs the rejected GET with its session
			do(t, http.MethodPost, srv.URL+"/mcp", `{"jsonrpc":"2.0","id":77,"result":{"x":1}}`, h) // and an unknown response's session
			toolCall(t, srv.URL, h, "whoami", map[string]any{})
			do(t, http.MethodDelete, srv.URL+"/mcp", "", h)
		}
		out := logs.String()
		for _, want := range []string{"Rejected GET request", "Failed to handle sampling response", "msg=request"} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %q; the test no longer reaches the lines that used to leak:\n%s", want, out)
			}
		}
		// A stranger's stray response is the client's fault, not ctalk's: DEBUG, not ERROR.
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "Failed to handle sampling response") && !strings.Contains(line, "level=DEBUG") {
				t.Errorf("a client's stray response is logged above DEBUG: %s", line)
			}
		}
		for _, secret := range []string{chosen, minted, token, strings.TrimPrefix(minted, "mcp-session-"), "0badc0de", "Bearer"} {
			if strings.Contains(out, secret) {
				t.Errorf("log contains %q; it must hold no header values:\n%s", secret, out)
			}
		}
	})
}

func TestRedactHandler(t *testing.T) {
	t.Parallel()
	var logs testkit.SyncBuffer
	log := RedactLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	log = RedactLogger(log.With("sessionID", "mcp-session-a1", "component", "mcp Bearer abc.def"))
	log.WithGroup("g").Error("no session mcp-session-b2 for Bearer xyz",
		"err", errString("session mcp-session-c3 gone"), "Authorization", "Bearer t0k", "status", 404,
		slog.Group("req", "header", "h1", "id", "mcp-session-d4"))
	out := logs.String()
	for _, secret := range []string{"a1", "b2", "c3", "d4", "abc.def", "xyz", "t0k", "h1"} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains %q:\n%s", secret, out)
		}
	}
	for _, kept := range []string{"component=", "g.err=", "g.status=404", "g.req.id="} {
		if !strings.Contains(out, kept) {
			t.Errorf("log lacks %q; only secrets are dropped:\n%s", kept, out)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }
