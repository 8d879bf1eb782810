package relayclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestSSEResponse(t *testing.T) {
	t.Parallel()
	stream := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\n\n"
	if got, err := sseResponse(strings.NewReader(stream), 7); string(got) != `{"jsonrpc":"2.0","id":7,"result":{"ok":true}}` || err != nil {
		t.Errorf("sseResponse(id 7) = %q, %v", got, err)
	}
	if got, err := sseResponse(strings.NewReader(stream), 8); got != nil || err == nil {
		t.Errorf("sseResponse(id 8) = %q, %v; want nil and an error", got, err)
	}
	// The last event need not end with a blank line.
	if got, _ := sseResponse(strings.NewReader("data: {\"id\":3,\"result\":{}}"), 3); string(got) != `{"id":3,"result":{}}` {
		t.Errorf("sseResponse of an unterminated event = %q", got)
	}
}

// fakeRelay answers initialize and tools/call like a relay, as JSON or as
// an event stream, and records the headers it saw. It checks the protocol
// the client speaks, not a relay's behaviour (the other packages' tests
// run a real one).
func fakeRelay(t *testing.T, sse bool, headers chan<- http.Header) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID     *int64 `json:"id"`
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
				Meta struct {
					ClientInfo struct {
						Name string `json:"name"`
					} `json:"io.modelcontextprotocol/clientInfo"`
				} `json:"_meta"`
			} `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if headers != nil {
			h := r.Header.Clone()
			h.Set("X-Test-Meta-Client", msg.Params.Meta.ClientInfo.Name) // what the request's _meta named
			headers <- h
		}
		if msg.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result string
		switch {
		case msg.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", "s-1")
			result = `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"fake","version":"0"}}`
		case msg.Params.Name == "fails":
			result = `{"content":[{"type":"text","text":"not logged in: call login"}],"isError":true}`
		default:
			result = `{"content":[{"type":"text","text":"{}"}],"structuredContent":{"user_id":"umar"}}`
		}
		resp := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, *msg.ID, result)
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\nevent: message\ndata: %s\n\n", resp)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, resp)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestClient(t *testing.T) {
	t.Parallel()
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			t.Parallel()
			headers := make(chan http.Header, 16)
			ts := fakeRelay(t, sse, headers)
			c, err := Connect(t.Context(), ts.URL, Options{Token: Static("tok-1"), Name: "test", Version: "0"})
			if err != nil {
				t.Fatal(err)
			}
			var who struct {
				UserID string `json:"user_id"`
			}
			if err := c.Call(t.Context(), "whoami", nil, &who); err != nil || who.UserID != "umar" {
				t.Errorf("Call(whoami) = %+v, %v; want umar", who, err)
			}
			err = c.Call(t.Context(), "fails", nil, nil)
			var te *ToolError
			if !errors.As(err, &te) || te.Tool != "fails" || !IsAuthError(te.Message) {
				t.Errorf("Call(fails) = %v, want a *ToolError with the relay's auth message", err)
			}
			// initialize, initialized, whoami, fails: the session and the
			// version follow initialize; the token goes with every request.
			for i := range 4 {
				h := <-headers
				if h.Get("Authorization") != "Bearer tok-1" {
					t.Errorf("request %d: Authorization %q", i, h.Get("Authorization"))
				}
				if i != 1 && h.Get("X-Test-Meta-Client") != "test" { // not on the notification
					t.Errorf("request %d: _meta clientInfo name %q, want test", i, h.Get("X-Test-Meta-Client"))
				}
				if i > 0 && (h.Get("Mcp-Session-Id") != "s-1" || h.Get("Mcp-Protocol-Version") != ProtocolVersion) {
					t.Errorf("request %d: session %q, protocol %q", i, h.Get("Mcp-Session-Id"), h.Get("Mcp-Protocol-Version"))
				}
			}
		})
	}
}

func TestClientCancel(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := New(ts.URL, Options{}).CallTool(ctx, "whoami", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("CallTool with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestHTTPError(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such session", http.StatusNotFound)
	}))
	t.Cleanup(ts.Close)
	err := New(ts.URL, Options{}).Call(t.Context(), "whoami", nil, nil)
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusNotFound || !strings.Contains(he.Body, "no such session") {
		t.Errorf("Call against a 404 = %v, want an *HTTPError 404 with the body", err)
	}
}

// TestCallToolApproving: a call for a client that shows dialogs goes out as
// protocol 2026-07-28 does (its headers, no session), with the token.
func TestCallToolApproving(t *testing.T) {
	t.Parallel()
	headers := make(chan http.Header, 16)
	ts := fakeRelay(t, false, headers)
	c, err := Connect(t.Context(), ts.URL, Options{Token: Static("tok-1"), Name: "test", Version: "0"})
	if err != nil {
		t.Fatal(err)
	}
	<-headers
	<-headers // initialize, initialized
	res, err := c.CallToolApproving(t.Context(), "send_response", map[string]any{"message_id": 1}, Approval{State: "s", Responses: map[string]any{}})
	if err != nil || res.IsError || res.InputRequired {
		t.Fatalf("CallToolApproving = %+v, %v", res, err)
	}
	h := <-headers
	if h.Get("Mcp-Protocol-Version") != ModernProtocolVersion || h.Get("Mcp-Method") != "tools/call" || h.Get("Mcp-Name") != "send_response" ||
		h.Get("Mcp-Session-Id") != "" || h.Get("Authorization") != "Bearer tok-1" || h.Get("X-Test-Meta-Client") != "test" {
		t.Errorf("CallToolApproving headers = %v, want 2026-07-28's, the token, no session", h)
	}
}

func TestToolErrorRetryAfter(t *testing.T) {
	for msg, want := range map[string]time.Duration{
		"ctalk is busy checking other passwords: retry in 2 s":                     2 * time.Second,
		"too many failed password attempts: retry in 900 s":                        900 * time.Second,
		"unknown user \"bob\" in organization \"acme\": ask your admin to add you": 0,
		"ctalk has too many open waits (2000): retry in a few seconds":             0,
	} {
		got, ok := (&ToolError{Tool: "login", Message: msg}).RetryAfter()
		if got != want || ok != (want != 0) {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", msg, got, ok, want, want != 0)
		}
	}
}
