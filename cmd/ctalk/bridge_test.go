package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

const (
	testAdminPassword = "bridge-admin-password-0123"
	testUserPassword  = "bridge-user-password-0123"
)

// startRelay serves a real relay over store on a local port until the test
// ends and returns its MCP URL.
func startRelay(t *testing.T, store db.Store) string {
	t.Helper()
	ts := httptest.NewServer(server.Handler(server.Config{
		Store: store, MCP: mcp.NewServer(store, mcp.Options{HashConcurrency: 4}),
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// relayAs connects to the relay with a token ("" for none).
func relayAs(t *testing.T, endpoint, token string) relayClient {
	t.Helper()
	c, err := connectRelay(t.Context(), endpoint, func() string { return token })
	if err != nil {
		t.Fatalf("connect to the relay: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// mustRelay calls a relay tool that must succeed.
func mustRelay(t *testing.T, c relayClient, tool string, args map[string]any, out any) {
	t.Helper()
	if err := callRelay(t.Context(), c, tool, args, out); err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
}

// seedTeam registers organization acme with umar and john (both with
// testUserPassword) and returns a client logged in as umar.
func seedTeam(t *testing.T, endpoint string) (umar relayClient) {
	t.Helper()
	anon := relayAs(t, endpoint, "")
	mustRelay(t, anon, "register_organization", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": testAdminPassword}, nil)
	for _, u := range []string{"umar", "john"} {
		mustRelay(t, anon, "register_user", map[string]any{
			"org_id": "acme", "admin_password": testAdminPassword, "user_id": u,
			"name": strings.ToUpper(u[:1]) + u[1:], "password": testUserPassword, "ownership": u + "-repo",
		}, nil)
	}
	var login struct {
		AuthToken string `json:"auth_token"`
	}
	mustRelay(t, anon, "login", map[string]any{"org_id": "acme", "user_id": "umar", "password": testUserPassword}, &login)
	return relayAs(t, endpoint, login.AuthToken)
}

func askFrom(t *testing.T, c relayClient, to, question string) int64 {
	t.Helper()
	var res struct {
		MessageID int64 `json:"message_id"`
	}
	mustRelay(t, c, "ask_person", map[string]any{"to_user_id": to, "question": question}, &res)
	return res.MessageID
}

// buildBridgeCtalk builds the ctalk binary into a temporary directory.
func buildBridgeCtalk(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ctalk")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// homeEnv is a fresh home directory and the environment that points ctalk's
// config directory into it.
func homeEnv(t *testing.T) (home string, env []string) {
	home = t.TempDir()
	return home, []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
}

// getenvOf turns an environment list into a getenv for run.
func getenvOf(env []string) func(string) string {
	return func(k string) string {
		for _, kv := range slices.Backward(env) {
			if name, v, ok := strings.Cut(kv, "="); ok && name == k {
				return v
			}
		}
		return ""
	}
}

// bridgeClient drives `ctalk stdio --relay` over stdin/stdout and collects
// the notifications it sends.
type bridgeClient struct {
	*mcpclient.Client
	init   *mcpgo.InitializeResult
	stderr *lockedLog
	notes  chan mcpgo.JSONRPCNotification
}

type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedLog) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startBridge(t *testing.T, bin, endpoint string, env []string) *bridgeClient {
	t.Helper()
	b := &bridgeClient{stderr: &lockedLog{}, notes: make(chan mcpgo.JSONRPCNotification, 16)}
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
	bin := buildBridgeCtalk(t)
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		endpoint := startRelay(t, s)
		umar := seedTeam(t, endpoint)
		home, env := homeEnv(t)

		login := exec.CommandContext(t.Context(), bin, "login", "--relay", endpoint, "--org", "acme", "--user", "john")
		login.Env = append(os.Environ(), env...)
		login.Stdin = strings.NewReader(testUserPassword + "\n")
		out, err := login.CombinedOutput()
		if err != nil {
			t.Fatalf("ctalk login: %v\n%s", err, out)
		}
		if strings.Contains(string(out), testUserPassword) {
			t.Errorf("ctalk login printed the password: %s", out)
		}
		dir := filepath.Join(home, ".config", "ctalk")
		checkMode(t, dir, 0o700)
		checkMode(t, filepath.Join(dir, credentialsFile), 0o600)
		cred, err := loadCredentials(dir, endpoint)
		if err != nil || cred.Org != "acme" || cred.User != "john" || !strings.HasPrefix(cred.Token, "ctalk_") {
			t.Fatalf("stored credentials = %+v, %v; want john's token for %s", cred, err, endpoint)
		}

		b := startBridge(t, bin, endpoint, env)
		if _, ok := b.init.Capabilities.Experimental[channelCapability]; !ok {
			t.Errorf("bridge capabilities.experimental = %v, want %q", b.init.Capabilities.Experimental, channelCapability)
		}

		// Every relay tool, with the relay's schema.
		relayTools, err := umar.ListTools(t.Context(), mcpgo.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		bridgeTools, err := b.ListTools(t.Context(), mcpgo.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(toolsJSON(t, relayTools.Tools), toolsJSON(t, bridgeTools.Tools)); diff != "" {
			t.Errorf("bridge tools differ from the relay's (-relay +bridge):\n%s", diff)
		}

		// Forwarded with the stored token: no auth_token argument needed.
		var whoami struct {
			UserID string `json:"user_id"`
			OrgID  string `json:"org_id"`
		}
		mustRelay(t, b.Client, "whoami", map[string]any{}, &whoami)
		if whoami.UserID != "john" || whoami.OrgID != "acme" {
			t.Errorf("whoami through the bridge = %+v, want john in acme", whoami)
		}

		// A question from another client arrives as a channel event.
		time.Sleep(300 * time.Millisecond) // the bridge settles into waiting
		sent := time.Now()
		id := askFrom(t, umar, "john", "What is the retry logic in alpha-repo?")
		content, meta := b.channelEvent(t, 5*time.Second)
		t.Logf("%s: channel notification %v after the question was asked", s.Backend(), time.Since(sent).Round(time.Millisecond))
		if want := "Umar (umar) asks you (message 1): What is the retry logic in alpha-repo?"; content != want {
			t.Errorf("channel content = %q, want %q", content, want)
		}
		wantMeta := map[string]any{"message_id": "1", "from": "umar", "kind": "question"}
		if diff := cmp.Diff(wantMeta, meta); diff != "" {
			t.Errorf("channel meta mismatch (-want +got):\n%s", diff)
		}
		if id != 1 {
			t.Errorf("message id = %d, want 1", id)
		}
		// The cursor moves once the notification is written: just after we read it.
		cursors := newCursorFile(dir, "channel", cred)
		for deadline := time.Now().Add(2 * time.Second); cursors.load() != "1" && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if got := cursors.load(); got != "1" {
			t.Errorf("stored channel cursor = %q, want 1 (past the event just written)", got)
		}

		// Stopped, the bridge misses nothing: a question asked meanwhile
		// arrives when it starts again, and the first does not repeat.
		b.Close()
		askFrom(t, umar, "john", "Asked while your bridge was down")
		b = startBridge(t, bin, endpoint, env)
		content, _ = b.channelEvent(t, 5*time.Second)
		if want := "Umar (umar) asks you (message 2): Asked while your bridge was down"; content != want {
			t.Errorf("after a restart, channel content = %q, want %q", content, want)
		}
		b.noChannelEvent(t, 500*time.Millisecond)
		if strings.Contains(b.stderr.String(), cred.Token) {
			t.Errorf("the bridge logged the token")
		}
	})
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
	_, env := homeEnv(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"stdio", "--relay", "https://relay.example/mcp"}, getenvOf(env), strings.NewReader(""), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "not logged in: run ctalk login --relay https://relay.example/mcp") {
		t.Errorf("stdio --relay without a login = %d, stderr %q; want 1 and how to log in", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing (it is the MCP channel)", stdout.String())
	}
}

func TestRelayURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want, err string }{
		{"https://ctalk.example.com/mcp", "https://ctalk.example.com/mcp", ""},
		{"https://ctalk.example.com", "https://ctalk.example.com/mcp", ""},
		{"https://ctalk.example.com/", "https://ctalk.example.com/mcp", ""},
		{"http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcp", ""},
		{"http://localhost:8000", "http://localhost:8000/mcp", ""},
		{"http://ctalk.example.com/mcp", "", "use https"},
		{"ctalk.example.com", "", "is not a URL"},
		{"", "", "--relay is required"},
	} {
		got, err := relayURL(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("relayURL(%q) = %q, %v; want %q, error containing %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}
