package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/credentials"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// team is umar and john in acme.
var team = testkit.Pair

// callBridge calls a tool through the bridge's stdio client; it must succeed.
func callBridge(t *testing.T, c *mcpclient.Client, tool string, args map[string]any, out any) *mcpgo.CallToolResult {
	t.Helper()
	var req mcpgo.CallToolRequest
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("%s through the bridge: %v", tool, err)
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil || res.IsError {
			t.Fatalf("%s through the bridge = %+v, %v", tool, res, err)
		}
	}
	return res
}

// bridgeClient drives `ctalk stdio --relay` over stdin/stdout and collects
// the notifications it sends.
type bridgeClient struct {
	*mcpclient.Client
	init   *mcpgo.InitializeResult
	stderr *testkit.SyncBuffer
	notes  chan mcpgo.JSONRPCNotification
}

func startBridge(t *testing.T, bin, endpoint string, env []string) *bridgeClient {
	t.Helper()
	b := &bridgeClient{stderr: &testkit.SyncBuffer{}, notes: make(chan mcpgo.JSONRPCNotification, 16)}
	c, err := mcpclient.NewStdioMCPClientWithOptions(bin, env, []string{"stdio", "--relay", endpoint},
		transport.WithCommandStderrWriter(b.stderr))
	if err != nil {
		t.Fatalf("start ctalk stdio --relay: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	// Start (again: the transport is already running) routes notifications.
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("start the client: %v", err)
	}
	c.OnNotification(func(n mcpgo.JSONRPCNotification) { b.notes <- n })
	var init mcpgo.InitializeRequest
	init.Params.ProtocolVersion = "2025-11-25" // what Claude Code speaks over stdio
	init.Params.ClientInfo = mcpgo.Implementation{Name: "bridge-test", Version: "0"}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if b.init, err = c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize the bridge: %v\nstderr:\n%s", err, b.stderr)
	}
	b.Client = c
	return b
}

// channelEvent waits for the next claude/channel notification.
func (b *bridgeClient) channelEvent(t *testing.T, within time.Duration) (content string, meta map[string]any) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case n := <-b.notes:
			if n.Method != channelMethod {
				continue
			}
			content, _ = n.Params.AdditionalFields["content"].(string)
			meta, _ = n.Params.AdditionalFields["meta"].(map[string]any)
			return content, meta
		case <-deadline:
			t.Fatalf("no %s notification within %v\nbridge stderr:\n%s", channelMethod, within, b.stderr)
			return "", nil
		}
	}
}

func (b *bridgeClient) noChannelEvent(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case n := <-b.notes:
			if n.Method == channelMethod {
				t.Errorf("unexpected channel notification %+v", n.Params.AdditionalFields)
			}
		case <-deadline:
			return
		}
	}
}

// toolsJSON is a tools list as JSON, keyed by name, for comparing schemas.
func toolsJSON(t *testing.T, tools []mcpgo.Tool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tool := range tools {
		b, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = string(b)
	}
	return out
}

// TestBridge runs the real binary as Claude Code would: `ctalk login` with
// the password on stdin, then `ctalk stdio --relay` driven over stdio by an
// MCP client. The relay's tools are offered with the same schemas and
// forwarded with the stored token, and a question asked from another client
// arrives as a claude/channel notification, also after a restart.
func TestBridge(t *testing.T) {
	t.Parallel()
	bin := testkit.BuildCtalk(t, "")
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		endpoint := testkit.ServeMCP(t, server.Handler(server.Config{Store: s, MCP: mcp.NewServer(s, mcp.Options{HashConcurrency: 4})}))
		umar := team.Seed(t, endpoint)["umar"]
		home, env := testkit.Home(t)

		login := exec.CommandContext(t.Context(), bin, "login", "--relay", endpoint, "--org", "acme", "--user", "john")
		login.Env = append(os.Environ(), env...)
		login.Stdin = strings.NewReader(team.UserPassword + "\n")
		out, err := login.CombinedOutput()
		if err != nil {
			t.Fatalf("ctalk login: %v\n%s", err, out)
		}
		if strings.Contains(string(out), team.UserPassword) {
			t.Errorf("ctalk login printed the password: %s", out)
		}
		dir := filepath.Join(home, ".config", "ctalk")
		checkMode(t, dir, 0o700)
		checkMode(t, filepath.Join(dir, credentials.File), 0o600)
		cred, err := credentials.Load(dir, endpoint)
		if err != nil || cred.Org != "acme" || cred.User != "john" || !strings.HasPrefix(cred.Token, "ctalk_") {
			t.Fatalf("stored credentials = %+v, %v; want john's token for %s", cred, err, endpoint)
		}

		b := startBridge(t, bin, endpoint, env)
		if _, ok := b.init.Capabilities.Experimental[channelCapability]; !ok {
			t.Errorf("bridge capabilities.experimental = %v, want %q", b.init.Capabilities.Experimental, channelCapability)
		}

		// Every relay tool but login and logout, with the relay's schema.
		relayRaw, err := umar.ListTools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var relayTools []mcpgo.Tool
		for _, raw := range relayRaw {
			var tool mcpgo.Tool
			if err := json.Unmarshal(raw, &tool); err != nil {
				t.Fatal(err)
			}
			if tool.Name != "login" && tool.Name != "logout" {
				relayTools = append(relayTools, tool)
			}
		}
		bridgeTools, err := b.ListTools(t.Context(), mcpgo.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(toolsJSON(t, relayTools), toolsJSON(t, bridgeTools.Tools)); diff != "" {
			t.Errorf("bridge tools differ from the relay's less login and logout (-relay +bridge):\n%s", diff)
		}
		// Calling them anyway says what to run in a terminal; the token still works.
		loginCmd := "ctalk login --relay " + endpoint + " --org acme --user john"
		for _, tool := range []string{"login", "logout"} {
			res := callBridge(t, b.Client, tool, map[string]any{"org_id": "acme", "user_id": "john", "password": "x"}, nil)
			if text := resultText(res); !res.IsError || !strings.Contains(text, loginCmd) || !strings.Contains(text, "terminal") {
				t.Errorf("%s through the bridge = %q (isError %v), want a refusal naming `%s` in a terminal", tool, text, res.IsError, loginCmd)
			}
		}

		// Forwarded with the stored token: no auth_token argument needed.
		var whoami struct {
			UserID string `json:"user_id"`
			OrgID  string `json:"org_id"`
		}
		callBridge(t, b.Client, "whoami", map[string]any{}, &whoami)
		if whoami.UserID != "john" || whoami.OrgID != "acme" {
			t.Errorf("whoami through the bridge = %+v, want john in acme", whoami)
		}

		// A question from another client arrives as a channel event.
		time.Sleep(300 * time.Millisecond) // the bridge settles into waiting
		sent := time.Now()
		id := testkit.Ask(t, umar, "john", "What is the retry logic in alpha-repo?")
		content, meta := b.channelEvent(t, 5*time.Second)
		t.Logf("%s: channel notification %v after the question was asked", s.Backend(), time.Since(sent).Round(time.Millisecond))
		if want := "Umar (umar) asks you (message 1): What is the retry logic in alpha-repo?"; content != want {
			t.Errorf("channel content = %q, want %q", content, want)
		}
		wantMeta := map[string]any{"message_id": "1", "from": "umar", "kind": "question", "thread_id": "1"}
		if diff := cmp.Diff(wantMeta, meta); diff != "" {
			t.Errorf("channel meta mismatch (-want +got):\n%s", diff)
		}
		if id != 1 {
			t.Errorf("message id = %d, want 1", id)
		}
		// The cursor moves once the notification is written: just after we read it.
		cursors := credentials.NewCursor(dir, "channel", cred)
		for deadline := time.Now().Add(2 * time.Second); cursors.Load() != "1" && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if got := cursors.Load(); got != "1" {
			t.Errorf("stored channel cursor = %q, want 1 (past the event just written)", got)
		}

		// Stopped, the bridge misses nothing: a question asked meanwhile
		// arrives when it starts again, and the first does not repeat.
		b.Close()
		testkit.Ask(t, umar, "john", "Asked while your bridge was down")
		b = startBridge(t, bin, endpoint, env)
		content, _ = b.channelEvent(t, 5*time.Second)
		if want := "Umar (umar) asks you (message 2): Asked while your bridge was down"; content != want {
			t.Errorf("after a restart, channel content = %q, want %q", content, want)
		}
		b.noChannelEvent(t, 500*time.Millisecond)

		// Once the token is revoked, a call through the bridge says which
		// terminal command fixes it.
		if err := team.Connect(t, endpoint, cred.Token).Call(t.Context(), "logout", nil, nil); err != nil {
			t.Fatal(err)
		}
		res := callBridge(t, b.Client, "whoami", map[string]any{}, nil)
		if text := resultText(res); !res.IsError || !strings.Contains(text, "invalid, expired or revoked") ||
			!strings.Contains(text, "`"+loginCmd+"` in a terminal") {
			t.Errorf("whoami through the bridge with a revoked token = %q, want the relay's error and `%s` in a terminal", text, loginCmd)
		}
		if strings.Contains(b.stderr.String(), cred.Token) {
			t.Errorf("the bridge logged the token")
		}
	})
}

// Claude Code's channel contract, as the bridge must speak it.
const (
	channelMethod     = "notifications/claude/channel"
	channelCapability = "claude/channel"
)

// resultText is a tool result's text content.
func resultText(res *mcpgo.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcpgo.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	if got := st.Mode().Perm(); got != want {
		t.Errorf("mode of %s = %o, want %o", path, got, want)
	}
}

func TestBridgeNeedsALogin(t *testing.T) {
	t.Parallel()
	_, env := testkit.Home(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"stdio", "--relay", "https://relay.example/mcp"}, testkit.Getenv(env), strings.NewReader(""), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "not logged in: run ctalk login --relay https://relay.example/mcp") {
		t.Errorf("stdio --relay without a login = %d, stderr %q; want 1 and how to log in", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing (it is the MCP channel)", stdout.String())
	}
}
