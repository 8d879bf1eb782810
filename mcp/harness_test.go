package mcp

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// Passwords used by the fixtures. They are distinctive so a test can search
// logs for them.
const (
	testAdminPassword = "admin-Secret-Horse-Battery"
	testUserPassword  = "user-Secret-Staple-42"
)

// The rules' refusals the tests compare results with, word for word.
const (
	badLoginText = "login failed: the organization, user or password is wrong"
	badAdminText = "the organization does not exist or the admin password is wrong"
	badTokenText = "auth_token is invalid, expired or revoked: call login again to get a new one"
)

// testStart is where every harness clock starts: whole seconds, so both
// backends store it exactly.
var testStart = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// fakeClock is a settable Options.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// forEachHarness runs fn in a subtest per backend, over a fresh harness
// built with opts.
func forEachHarness(t *testing.T, opts Options, fn func(t *testing.T, h *harness)) {
	t.Helper()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) { fn(t, newHarness(t, s, opts)) })
}

// forEachTeam is forEachHarness with the harness's team registered; umar and
// john are their tokens.
func forEachTeam(t *testing.T, opts Options, fn func(t *testing.T, h *harness, umar, john string)) {
	t.Helper()
	forEachHarness(t, opts, func(t *testing.T, h *harness) {
		umar, john := h.team()
		fn(t, h, umar, john)
	})
}

// harness is one ctalk MCP server over a real store, driven through mcp-go's
// in-process client: calls go through the same JSON-RPC path a remote client's do.
type harness struct {
	t      *testing.T
	client *mcpclient.Client
	clock  *fakeClock
	logs   *testkit.SyncBuffer
}

// newHarness starts a server on s with a fake clock and a captured logger.
// opts.Now and opts.Logger are replaced.
func newHarness(t *testing.T, s db.Store, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, clock: &fakeClock{now: testStart}, logs: &testkit.SyncBuffer{}}
	opts.Now = h.clock.Now
	opts.Logger = slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := mcpclient.NewInProcessClient(NewServer(s, opts))
	if err != nil {
		t.Fatalf("NewInProcessClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("client Start: %v", err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ClientInfo = mcpgo.Implementation{Name: "ctalk-mcp-test", Version: "0"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatalf("client Initialize: %v", err)
	}
	h.client = c
	return h
}

// call runs a tool; a protocol error fails the test, since ctalk reports
// every failure as a tool result.
func (h *harness) call(name string, args map[string]any) *mcpgo.CallToolResult {
	h.t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := h.client.CallTool(h.t.Context(), req)
	if err != nil {
		h.t.Fatalf("%s: protocol error %v, want a tool result", name, err)
	}
	return res
}

// resultText is the text content of a result.
func resultText(t *testing.T, res *mcpgo.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d content items, want 1: %+v", len(res.Content), res.Content)
	}
	tc, ok := mcpgo.AsTextContent(res.Content[0])
	if !ok {
		t.Fatalf("result content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// ok runs a tool that must succeed and decodes its structured content into out (if not nil).
func (h *harness) ok(name string, args map[string]any, out any) {
	h.t.Helper()
	res := h.call(name, args)
	if res.IsError {
		h.t.Fatalf("%s: error %q, want success", name, resultText(h.t, res))
	}
	if out == nil {
		return
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		h.t.Fatalf("%s: marshal structured content: %v", name, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		h.t.Fatalf("%s: decode structured content %s: %v", name, b, err)
	}
}

// fail runs a tool that must fail and returns its error text.
func (h *harness) fail(name string, args map[string]any) string {
	h.t.Helper()
	res := h.call(name, args)
	text := resultText(h.t, res)
	if !res.IsError {
		h.t.Fatalf("%s: success %s, want an error", name, text)
	}
	if res.StructuredContent != nil {
		h.t.Errorf("%s: error result carries structured content %v, want none", name, res.StructuredContent)
	}
	return text
}

// wantFail runs a tool that must fail with exactly want.
func (h *harness) wantFail(name string, args map[string]any, want string) {
	h.t.Helper()
	if got := h.fail(name, args); got != want {
		h.t.Errorf("%s error = %q, want %q", name, got, want)
	}
}

// org registers an organization with testAdminPassword.
func (h *harness) org(orgID string) {
	h.t.Helper()
	h.ok("register_organization", map[string]any{
		"org_id": orgID, "name": "Org " + orgID, "admin_password": testAdminPassword,
	}, nil)
}

// user registers a user with testUserPassword.
func (h *harness) user(orgID, userID string) {
	h.t.Helper()
	h.ok("register_user", map[string]any{
		"org_id": orgID, "admin_password": testAdminPassword, "user_id": userID,
		"name": strings.ToUpper(userID[:1]) + userID[1:], "password": testUserPassword, "ownership": userID + "-repo",
	}, nil)
}

// login logs a user in and returns the token.
func (h *harness) login(orgID, userID string) string {
	h.t.Helper()
	var res struct {
		AuthToken string `json:"auth_token"`
	}
	h.ok("login", map[string]any{"org_id": orgID, "user_id": userID, "password": testUserPassword}, &res)
	if res.AuthToken == "" {
		h.t.Fatalf("login(%s, %s) returned no auth_token", orgID, userID)
	}
	return res.AuthToken
}

// team registers org "acme" with users umar and john, and returns their tokens.
func (h *harness) team() (umar, john string) {
	h.t.Helper()
	h.org("acme")
	h.user("acme", "umar")
	h.user("acme", "john")
	return h.login("acme", "umar"), h.login("acme", "john")
}

// ask has the token's owner ask a question and returns the message id.
func (h *harness) ask(token, to, question string) int64 {
	h.t.Helper()
	var res struct {
		MessageID int64 `json:"message_id"`
	}
	h.ok("ask_person", map[string]any{"auth_token": token, "to_user_id": to, "question": question}, &res)
	return res.MessageID
}

// answer has the token's owner draft an answer and send it, as a client
// without elicitation must: send_response only sends the saved draft.
func (h *harness) answer(token string, id int64, answer string) {
	h.t.Helper()
	h.ok("propose_response", map[string]any{"auth_token": token, "message_id": id, "draft_text": answer}, nil)
	h.ok("send_response", map[string]any{"auth_token": token, "message_id": id, "final_text": answer}, nil)
}

// replyView is the part of a check_replies result the tests compare.
type replyView struct {
	MessageID int64  `json:"message_id"`
	Answer    string `json:"answer"`
}

type repliesView struct {
	Replies []replyView `json:"replies"`
	Cursor  string      `json:"cursor"`
	More    bool        `json:"more"`
}

// replies runs check_replies with extra arguments.
func (h *harness) replies(token string, extra map[string]any) repliesView {
	h.t.Helper()
	args := map[string]any{"auth_token": token}
	for k, v := range extra {
		args[k] = v
	}
	var res repliesView
	h.ok("check_replies", args, &res)
	return res
}
