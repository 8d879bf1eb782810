package server_test

// The HTTP client and seeding the wait tests share: plain JSON-RPC POSTs
// to /mcp, one call per request, tokens in the Authorization header.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// relayURL serves ctalk over store on a local port until the test ends and
// returns its /mcp URL.
func relayURL(t *testing.T, store db.Store) string {
	t.Helper()
	// The waiters stand for agents on many machines; here they share one
	// address, so the per-address cap is lifted to the whole.
	ts := httptest.NewServer(server.Handler(server.Config{Store: store, MCP: mcp.NewServer(store, mcp.Options{}),
		MaxRequestsPerAddress: server.DefaultMaxConcurrentRequests}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

const statelessProtocol = "2026-07-28"

// waitClient makes one JSON-RPC POST per call; its transport keeps one
// connection per concurrent call, as separate clients would.
var waitClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1100, MaxConnsPerHost: 0}}

// toolResult is the part of a tools/call result the tests read.
type toolResult struct {
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Content           []struct {
		Text string `json:"text"`
	} `json:"content"`
}

// callTool calls a tool over HTTP with a bearer token; a protocol or
// transport error is returned as err.
func callTool(ctx context.Context, mcpURL, token, tool string, args map[string]any) (toolResult, error) {
	// The stateless protocol generation: every request stands alone, as a
	// client that reaches any replica behind a load balancer sends it.
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    statelessProtocol,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "ctalk-wait-test", "version": "0"},
		}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, bytes.NewReader(body))
	if err != nil {
		return toolResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", statelessProtocol)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := waitClient.Do(req)
	if err != nil {
		return toolResult{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return toolResult{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return toolResult{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, raw)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw = lastSSEData(raw)
	}
	var msg struct {
		Result *toolResult `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return toolResult{}, fmt.Errorf("decode %s: %w", raw, err)
	}
	if msg.Error != nil || msg.Result == nil {
		return toolResult{}, fmt.Errorf("JSON-RPC error: %s", raw)
	}
	return *msg.Result, nil
}

// lastSSEData returns the data of the last event in an SSE body.
func lastSSEData(body []byte) []byte {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
			last = append([]byte(nil), bytes.TrimSpace(d)...)
		}
	}
	return last
}

// mustCall runs a tool that must succeed and decodes its structured content.
func mustCall[T any](t *testing.T, mcpURL, token, tool string, args map[string]any) T {
	t.Helper()
	res, err := callTool(t.Context(), mcpURL, token, tool, args)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s: isError %q, want success", tool, res.Content)
	}
	var out T
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		t.Fatalf("%s: decode %s: %v", tool, res.StructuredContent, err)
	}
	return out
}

// waitOut mirrors a wait_for_messages result.
type waitOut struct {
	Events []struct {
		Kind      string `json:"kind"`
		Cursor    string `json:"cursor"`
		MessageID int64  `json:"message_id"`
		From      struct {
			UserID string `json:"user_id"`
			Name   string `json:"name"`
		} `json:"from"`
		Question        string `json:"question"`
		Answer          string `json:"answer"`
		AlreadyAnswered bool   `json:"already_answered"`
	} `json:"events"`
	Cursor   string `json:"cursor"`
	More     bool   `json:"more"`
	TimedOut bool   `json:"timed_out"`
	NextStep string `json:"next_step"`
}

func waitFor(t *testing.T, mcpURL, token string, timeout int, cursor string) waitOut {
	t.Helper()
	return mustCall[waitOut](t, mcpURL, token, "wait_for_messages", map[string]any{"timeout_seconds": timeout, "cursor": cursor})
}

// newTokenFor stores a login token for a user directly (no password hashing)
// and returns it: the same shape and hash login produces.
func newTokenFor(ctx context.Context, q db.Queries, orgID, userID string) (string, error) {
	b := make([]byte, 32)
	rand.Read(b)
	token := "ctalk_" + base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	now := time.Now().UTC().Truncate(time.Microsecond)
	return token, q.CreateToken(ctx, db.Token{TokenHash: sum[:], OrgID: orgID, UserID: userID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
}

// seedUsers creates an organization with users and returns their tokens,
// directly in the database: these tests are about waiting, not logging in.
func seedUsers(t *testing.T, s db.Store, orgID string, userIDs ...string) map[string]string {
	t.Helper()
	tokens := map[string]string{}
	err := s.InTx(t.Context(), func(q db.Queries) error {
		now := time.Now().UTC().Truncate(time.Microsecond)
		if err := q.CreateOrganization(t.Context(), db.Organization{ID: orgID, Name: "Org " + orgID, AdminPasswordHash: "x", CreatedAt: now}); err != nil {
			return err
		}
		for _, id := range userIDs {
			u := db.User{OrgID: orgID, ID: id, Name: strings.ToUpper(id[:1]) + id[1:], PasswordHash: "x", Ownership: id + "-repo", CreatedAt: now}
			if err := q.CreateUser(t.Context(), u); err != nil {
				return err
			}
			tok, err := newTokenFor(t.Context(), q, orgID, id)
			if err != nil {
				return err
			}
			tokens[id] = tok
		}
		return nil
	})
	if err != nil {
		t.Fatalf("seed %s: %v", orgID, err)
	}
	return tokens
}

func askVia(t *testing.T, mcpURL, token, to, question string) int64 {
	t.Helper()
	return mustCall[struct {
		MessageID int64 `json:"message_id"`
	}](t, mcpURL, token, "ask_person", map[string]any{"to_user_id": to, "question": question}).MessageID
}

// answerVia sends an answer the way a client without elicitation must:
// propose it, then send the same text.
func answerVia(t *testing.T, mcpURL, token string, id int64, text string) {
	t.Helper()
	mustCall[map[string]any](t, mcpURL, token, "propose_response", map[string]any{"message_id": id, "draft_text": text})
	mustCall[map[string]any](t, mcpURL, token, "send_response", map[string]any{"message_id": id, "final_text": text})
}
