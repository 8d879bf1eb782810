package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

// benchProtocol is the MCP version the bench speaks: Claude Code's, with a session.
const benchProtocol = "2025-11-25"

// mcpConn is a minimal MCP client over Streamable HTTP: one session, tool
// calls as JSON-RPC POSTs, answers as JSON or as an SSE stream.
type mcpConn struct {
	endpoint string
	client   *http.Client
	bearer   string // sent as Authorization: Bearer
	session  string
	ids      atomic.Int64
}

// toolResult is a tools/call result and the whole response it came in.
type toolResult struct {
	isError    bool
	text       string
	structured json.RawMessage
	raw        []byte
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

func (c *mcpConn) initialize(ctx context.Context) error {
	_, _, err := c.post(ctx, "initialize", map[string]any{
		"protocolVersion": benchProtocol, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "ctalk-bench", "version": version},
	})
	if err != nil {
		return err
	}
	_, _, err = c.post(ctx, "notifications/initialized", nil)
	return err
}

func (c *mcpConn) callTool(ctx context.Context, name string, args map[string]any) (*toolResult, error) {
	result, raw, err := c.post(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return nil, fmt.Errorf("%s: undecodable result: %w", name, err)
	}
	res := &toolResult{isError: r.IsError, structured: r.StructuredContent, raw: raw}
	for _, c := range r.Content {
		res.text += c.Text
	}
	return res, nil
}

// must calls a tool that has to succeed, decoding its structured result into out.
func (c *mcpConn) must(ctx context.Context, name string, args map[string]any, out any) error {
	res, err := c.callTool(ctx, name, args)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	case res.isError:
		return fmt.Errorf("%s: the relay refused: %s", name, res.text)
	case out != nil:
		return json.Unmarshal(res.structured, out)
	}
	return nil
}

// post sends one JSON-RPC message; a notification (nil params allowed)
// expects no answer. It returns the result and the raw response body.
func (c *mcpConn) post(ctx context.Context, method string, params any) (json.RawMessage, []byte, error) {
	notify := strings.HasPrefix(method, "notifications/")
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	id := c.ids.Add(1)
	if !notify {
		msg["id"] = id
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", benchProtocol)
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, raw, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(raw[:min(len(raw), 300)]))
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" && method == "initialize" {
		c.session = s
	}
	if notify {
		return nil, raw, nil
	}
	payload := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if payload = sseResponse(raw, id); payload == nil {
			return nil, raw, fmt.Errorf("%s: the event stream ended without the response", method)
		}
	}
	var r struct {
		ID     int64           `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(payload, &r); err != nil {
		return nil, raw, fmt.Errorf("%s: undecodable response: %w", method, err)
	}
	if r.Error != nil {
		return nil, raw, r.Error
	}
	return r.Result, raw, nil
}

// sseResponse finds the JSON-RPC response with id in an event stream.
func sseResponse(stream []byte, id int64) []byte {
	for _, event := range bytes.Split(stream, []byte("\n\n")) {
		var data []byte
		for _, line := range bytes.Split(event, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				data = append(data, bytes.TrimSpace(d)...)
			}
		}
		var m struct {
			ID     *int64          `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(data, &m) == nil && m.Method == "" && m.ID != nil && *m.ID == id {
			return data
		}
	}
	return nil
}
