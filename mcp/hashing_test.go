package mcp

// The proof that a token check never hashes a password, through the tools.
// internal/relay benchmarks the same calls without MCP.

import (
	"strconv"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestTokenCheckNeverHashes proves that calls with a token cost no password
// hash: the hasher's counter moves for login and not for any token-checked
// call, valid or not.
func TestTokenCheckNeverHashes(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		tl := newTools(s, Options{HashConcurrency: 2})
		srv := mcpserver.NewMCPServer("ctalk", "test", mcpserver.WithToolCapabilities(false))
		for _, st := range tl.all() {
			srv.AddTool(st.Tool, st.handler)
		}
		c, err := mcpclient.NewInProcessClient(srv)
		if err != nil {
			t.Fatalf("NewInProcessClient: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.Start(t.Context()); err != nil {
			t.Fatalf("Start: %v", err)
		}
		if _, err := c.Initialize(t.Context(), mcpgo.InitializeRequest{}); err != nil {
			t.Fatalf("Initialize: %v", err)
		}
		call := func(name string, args map[string]any) *mcpgo.CallToolResult {
			t.Helper()
			var req mcpgo.CallToolRequest
			req.Params.Name, req.Params.Arguments = name, args
			res, err := c.CallTool(t.Context(), req)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return res
		}
		call("register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": testAdminPassword})
		for _, u := range []string{"umar", "john"} {
			call("register_user", map[string]any{"org_id": "acme", "admin_password": testAdminPassword, "user_id": u,
				"name": u, "password": testUserPassword, "ownership": u})
		}
		before := tl.relay.PasswordHashes()
		res := call("login", map[string]any{"org_id": "acme", "user_id": "umar", "password": testUserPassword})
		if got := tl.relay.PasswordHashes() - before; res.IsError || got != 1 {
			t.Fatalf("login: isError %v, %d hashes; want a token and 1 hash", res.IsError, got)
		}
		token := res.StructuredContent.(map[string]any)["auth_token"].(string)

		before = tl.relay.PasswordHashes()
		for i := range 20 {
			for name, args := range map[string]map[string]any{
				"whoami":        {"auth_token": token},
				"check_inbox":   {"auth_token": token},
				"check_replies": {"auth_token": token},
				"list_users":    {"auth_token": token},
				"ask_person":    {"auth_token": token, "to_user_id": "john", "question": "q" + strconv.Itoa(i)},
			} {
				if res := call(name, args); res.IsError {
					t.Fatalf("%s: isError, want success", name)
				}
			}
			// A wrong or malformed token is refused without hashing anything either.
			other := "A"
			if strings.HasSuffix(token, "A") {
				other = "B"
			}
			for _, bad := range []string{token[:len(token)-1] + other, "ctalk_short", "not-a-token"} {
				if res := call("whoami", map[string]any{"auth_token": bad}); !res.IsError {
					t.Fatalf("whoami with a bad token succeeded")
				}
			}
		}
		if got := tl.relay.PasswordHashes() - before; got != 0 {
			t.Errorf("200 token-checked calls ran %d password hashes, want 0", got)
		}
	})
}
