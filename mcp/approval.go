package mcp

import (
	"context"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/internal/relay"
)

// Human approval of send_response, enforced by the server rather than asked
// of the model in a tool description.
//
// When the client can show the human a dialog (MCP elicitation), the server
// asks directly: the question, who asked it, and the exact final text; only
// "accept" sends. Both protocol generations use one path: the handler returns
// an input-required result; 2026-07-28 clients answer it and repeat the call
// (stateless, any replica), and for 2025-11-25 clients mcp-go turns it into
// an elicitation/create request on the call's response stream.
//
// When the client cannot, send_response only sends the text the human was
// shown: the draft saved by propose_response.

const approvalInputID = "approve_send"

type callKey struct{}

// callInfo is what the transport told us about the current tools/call.
type callInfo struct {
	responses mcpgo.InputResponses
	state     string
	canElicit bool
}

func withCall(ctx context.Context, req mcpgo.CallToolRequest) context.Context {
	return context.WithValue(ctx, callKey{}, callInfo{
		responses: req.Params.InputResponses,
		state:     req.Params.RequestState,
		canElicit: clientCanElicit(ctx),
	})
}

func callFrom(ctx context.Context) callInfo {
	c, _ := ctx.Value(callKey{}).(callInfo)
	return c
}

// clientCanElicit reports whether the client declared form elicitation: per
// request on 2026-07-28, from initialize on 2025-11-25 (known only to the
// replica that handled initialize; elsewhere the draft rule applies).
func clientCanElicit(ctx context.Context) bool {
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
	}
	if cs, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo); ok {
		return cs.GetClientCapabilities().Elicitation != nil
	}
	return false
}

// approval is what this call tells the rules about the human's consent:
// whether the client can show them a dialog, and their answer if this call
// carries one.
func approval(ctx context.Context) relay.Approval {
	call := callFrom(ctx)
	a := relay.Approval{CanAsk: call.canElicit}
	if res := mcpserver.ElicitationResponse(call.responses, approvalInputID); res != nil {
		a.Key = call.state
		a.Accepted = res.Action == mcpgo.ElicitationResponseActionAccept
		a.Action = string(res.Action)
	}
	return a
}

// askApproval is the input-required result that shows the human what would be sent.
func askApproval(r relay.ApprovalRequest) *mcpgo.CallToolResult {
	return mcpserver.NewInputRequestBuilder(r.Key).Elicit(approvalInputID, mcpgo.ElicitationParams{
		Message:         approvalMessage(r),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
	}).ToolResult()
}
