package relayclient

import (
	"context"
	"fmt"
)

// ModernProtocolVersion is the protocol generation in which a server asks
// its client something mid-call by returning an input-required result
// (SEP-2322) rather than by a request of its own: what CallToolApproving
// speaks, because a result can be handed on to another client unchanged.
const ModernProtocolVersion = "2026-07-28"

// modernRequest is what send needs to send a 2026-07-28 request.
type modernRequest struct {
	name         string         // the Mcp-Name header: the tool
	capabilities map[string]any // the client capabilities declared in _meta
}

// Approval carries the person's answers from a client that shows dialogs:
// empty on the first call, then the inputResponses and requestState of the
// client's retry, unchanged.
type Approval struct {
	Responses any    // the client's inputResponses; nil for none
	State     string // the client's requestState
}

// CallToolApproving calls a tool for a client that can show its person a
// dialog (MCP form elicitation). It declares that capability to the relay
// on this request alone, as protocol 2026-07-28 does, so the relay may ask
// the person to approve (send_response): the result is then InputRequired
// and its Raw is the relay's question, for the client to show; the client's
// answers come back in the next call's Approval. The relay binds the answer
// to the exact call in its request state, so any session, or none, may
// carry the retry.
func (c *Client) CallToolApproving(ctx context.Context, tool string, args any, a Approval) (*Result, error) {
	if args == nil {
		args = map[string]any{}
	}
	params := map[string]any{"name": tool, "arguments": args}
	if a.Responses != nil {
		params["inputResponses"] = a.Responses
	}
	if a.State != "" {
		params["requestState"] = a.State
	}
	raw, err := c.send(ctx, "tools/call", params, &modernRequest{
		name:         tool,
		capabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	return toolResult(tool, raw)
}
