// Package relayclient is ctalk's one MCP client: JSON-RPC over Streamable
// HTTP to a relay's /mcp endpoint. The bridge, the local commands (login,
// logout, wait, admin), the load tool and the tests all talk to a relay
// through it.
//
// It is deliberately small and built on net/http alone: the load tool
// shares a small machine's CPU with the relay it measures, and a lean
// client keeps that measurement about the relay.
package relayclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ProtocolVersion is the MCP version the client asks for: Claude Code's.
const ProtocolVersion = "2025-11-25"

// DefaultTimeout bounds one request when Options.HTTPClient is nil: the
// relay's longest wait_for_messages (55 s) and a margin.
const DefaultTimeout = 90 * time.Second

// maxResponse bounds a response body: no relay answer is near it.
const maxResponse = 16 << 20

// Options configure a Client. The zero value is an anonymous client.
type Options struct {
	// HTTPClient sends the requests; nil uses one with DefaultTimeout.
	HTTPClient *http.Client
	// Token returns the bearer token for each request, so a new login can
	// take effect without a new client; nil or "" sends no Authorization.
	Token func() string
	// Name and Version identify the client in initialize.
	Name, Version string
}

// Client is one MCP session with a relay. It is safe for concurrent use.
type Client struct {
	endpoint string
	opts     Options
	ids      atomic.Int64

	mu       sync.Mutex
	session  string // Mcp-Session-Id from initialize
	protocol string // the negotiated version, sent on every later request
}

// New returns a client for the relay's MCP URL; call Initialize before
// anything else, or use Connect.
func New(endpoint string, opts Options) *Client {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: DefaultTimeout}
	}
	if opts.Name == "" {
		opts.Name = "ctalk"
	}
	return &Client{endpoint: endpoint, opts: opts}
}

// Connect returns an initialized client.
func Connect(ctx context.Context, endpoint string, opts Options) (*Client, error) {
	c := New(endpoint, opts)
	if err := c.Initialize(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Static is a Token function for a token that never changes.
func Static(token string) func() string { return func() string { return token } }

// Endpoint is the relay's MCP URL.
func (c *Client) Endpoint() string { return c.endpoint }

// Initialize opens the MCP session: initialize, then notifications/initialized.
func (c *Client) Initialize(ctx context.Context) error {
	res, err := c.rpc(ctx, "initialize", map[string]any{
		"protocolVersion": ProtocolVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": c.opts.Name, "version": c.opts.Version},
	})
	if err != nil {
		return fmt.Errorf("connect to the relay at %s: %w", c.endpoint, err)
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(res, &init); err != nil {
		return fmt.Errorf("connect to the relay at %s: undecodable initialize result: %w", c.endpoint, err)
	}
	c.mu.Lock()
	c.protocol = init.ProtocolVersion
	c.mu.Unlock()
	if _, err := c.rpc(ctx, "notifications/initialized", nil); err != nil {
		return fmt.Errorf("connect to the relay at %s: %w", c.endpoint, err)
	}
	return nil
}

// ListTools returns the relay's tool definitions as the relay sent them,
// every page, for a caller (the bridge) that offers them unchanged.
func (c *Client) ListTools(ctx context.Context) ([]json.RawMessage, error) {
	var tools []json.RawMessage
	cursor := ""
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := c.rpc(ctx, "tools/list", params)
		if err != nil {
			return nil, fmt.Errorf("list the relay's tools: %w", err)
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return nil, fmt.Errorf("list the relay's tools: undecodable result: %w", err)
		}
		tools = append(tools, page.Tools...)
		if cursor = page.NextCursor; cursor == "" {
			return tools, nil
		}
	}
}

// Result is one tools/call result.
type Result struct {
	IsError    bool
	Text       string          // the text content, joined by newlines
	Structured json.RawMessage // structuredContent; empty when there is none
	Raw        json.RawMessage // the whole JSON-RPC result, for forwarding unchanged
	// InputRequired marks a result that asks the person something first
	// (protocol 2026-07-28): only CallToolApproving gets one.
	InputRequired bool
}

// CallTool calls a tool and returns its result, a tool error included: an
// error means the call did not complete (network, HTTP, JSON-RPC).
func (c *Client) CallTool(ctx context.Context, tool string, args any) (*Result, error) {
	if args == nil {
		args = map[string]any{}
	}
	raw, err := c.rpc(ctx, "tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	return toolResult(tool, raw)
}

// toolResult decodes a tools/call result.
func toolResult(tool string, raw json.RawMessage) (*Result, error) {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
		ResultType        string          `json:"resultType"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: undecodable result: %w", tool, err)
	}
	res := &Result{IsError: r.IsError, Structured: r.StructuredContent, Raw: raw, InputRequired: r.ResultType == "input_required"}
	var texts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	res.Text = strings.Join(texts, "\n")
	return res, nil
}

// Call calls a tool that should succeed and decodes its structured result
// into out (unless out is nil). A tool error comes back as a *ToolError
// carrying the relay's message.
func (c *Client) Call(ctx context.Context, tool string, args, out any) error {
	res, err := c.CallTool(ctx, tool, args)
	switch {
	case err != nil:
		return err
	case res.IsError:
		return &ToolError{Tool: tool, Message: res.Text}
	case out == nil:
		return nil
	case len(res.Structured) == 0:
		return fmt.Errorf("%s: the relay sent no structured result", tool)
	}
	if err := json.Unmarshal(res.Structured, out); err != nil {
		return fmt.Errorf("%s: unexpected result from the relay: %w", tool, err)
	}
	return nil
}

// ToolError is a failure the relay reported as a tool result: the request
// arrived and was refused, so trying again unchanged will not help, unless
// RetryAfter says when it will.
type ToolError struct {
	Tool    string
	Message string // the relay's text; never holds a secret
}

func (e *ToolError) Error() string { return fmt.Sprintf("the relay refused %s: %s", e.Tool, e.Message) }

// retryIn matches the relay's throttling refusals ("…: retry in 2 s").
var retryIn = regexp.MustCompile(`retry in (\d+) s$`)

// RetryAfter reports how long the relay asked the caller to wait before
// trying again, for a refusal that was about load or pace rather than the
// request itself.
func (e *ToolError) RetryAfter() (time.Duration, bool) {
	m := retryIn.FindStringSubmatch(e.Message)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// RPCError is a JSON-RPC error response.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// HTTPError is a response with a status other than 2xx.
type HTTPError struct {
	Status int
	Body   string // the start of the body
}

func (e *HTTPError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body) }

// rpc sends one JSON-RPC message in the session and returns the result. A
// notification (its method starts with notifications/) expects no answer.
func (c *Client) rpc(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return c.send(ctx, method, params, nil)
}

// send is rpc; a non-nil modern sends the request as protocol 2026-07-28
// does (version and capabilities in _meta and headers, no session).
func (c *Client) send(ctx context.Context, method string, params any, modern *modernRequest) (json.RawMessage, error) {
	notify := strings.HasPrefix(method, "notifications/")
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if p, ok := params.(map[string]any); ok && !notify {
		// Who is calling, on every request as protocol 2026-07-28 does, so a
		// relay's logs (and the acceptance tests) can tell the clients apart.
		// Without a protocolVersion key the relay still treats the request
		// as 2025-11-25.
		meta := map[string]any{
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": c.opts.Name, "version": c.opts.Version},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
		if modern != nil {
			meta["io.modelcontextprotocol/protocolVersion"] = ModernProtocolVersion
			meta["io.modelcontextprotocol/clientCapabilities"] = modern.capabilities
		}
		p["_meta"] = meta
	}
	if params != nil {
		msg["params"] = params
	}
	id := c.ids.Add(1)
	if !notify {
		msg["id"] = id
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if modern != nil {
		req.Header.Set("Mcp-Protocol-Version", ModernProtocolVersion)
		req.Header.Set("Mcp-Method", method)
		req.Header.Set("Mcp-Name", modern.name)
	} else {
		c.mu.Lock()
		if c.session != "" {
			req.Header.Set("Mcp-Session-Id", c.session)
		}
		if c.protocol != "" {
			req.Header.Set("Mcp-Protocol-Version", c.protocol)
		}
		c.mu.Unlock()
	}
	if c.opts.Token != nil {
		if t := c.opts.Token(); t != "" {
			req.Header.Set("Authorization", "Bearer "+t)
		}
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return nil, &HTTPError{Status: resp.StatusCode, Body: string(bytes.TrimSpace(b))}
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" && method == "initialize" {
		c.mu.Lock()
		c.session = s
		c.mu.Unlock()
	}
	if notify {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse)) //nolint:errcheck // the body is empty; drained for reuse
		return nil, nil
	}
	var payload []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if payload, err = sseResponse(io.LimitReader(resp.Body, maxResponse), id); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
	} else if payload, err = io.ReadAll(io.LimitReader(resp.Body, maxResponse)); err != nil {
		return nil, err
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(payload, &r); err != nil {
		return nil, fmt.Errorf("%s: undecodable response: %w", method, err)
	}
	if r.Error != nil {
		return nil, r.Error
	}
	return r.Result, nil
}

// sseResponse reads an event stream until the JSON-RPC response with id,
// skipping the notifications and requests before it.
func sseResponse(stream io.Reader, id int64) ([]byte, error) {
	br := bufio.NewReader(stream)
	var data []byte
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
		} else if len(line) == 0 && len(data) > 0 {
			if isResponse(data, id) {
				return data, nil
			}
			data = nil
		}
		if err != nil {
			if len(data) > 0 && isResponse(data, id) {
				return data, nil
			}
			if errors.Is(err, io.EOF) {
				return nil, errors.New("the event stream ended without the response")
			}
			return nil, err
		}
	}
}

func isResponse(data []byte, id int64) bool {
	var m struct {
		ID     *int64 `json:"id"`
		Method string `json:"method"`
	}
	return json.Unmarshal(data, &m) == nil && m.Method == "" && m.ID != nil && *m.ID == id
}

// Reconnect opens a new session with the same options at endpoint: the
// same relay after a restart, or another replica.
func (c *Client) Reconnect(ctx context.Context, endpoint string) (*Client, error) {
	return Connect(ctx, endpoint, c.opts)
}
