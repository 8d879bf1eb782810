package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
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

// approvalState binds an approval to one caller, message and exact text: an
// "accept" given for other text does not send this one.
func approvalState(c caller, id int64, final string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d\x00%s", c.user.OrgID, c.user.ID, id, final)))
	return "send:" + hex.EncodeToString(sum[:16])
}

type decision int

const (
	decisionNone     decision = iota // not asked yet (or asked about other text)
	decisionAccepted                 // the human accepted
	decisionRefused                  // the human declined or cancelled
)

// approvalDecision reads the human's answer for this exact send, if any.
func approvalDecision(ctx context.Context, state string) (decision, mcpgo.ElicitationResponseAction) {
	call := callFrom(ctx)
	if call.state != state {
		return decisionNone, ""
	}
	res := mcpserver.ElicitationResponse(call.responses, approvalInputID)
	if res == nil {
		return decisionNone, ""
	}
	if res.Action == mcpgo.ElicitationResponseActionAccept {
		return decisionAccepted, res.Action
	}
	return decisionRefused, res.Action
}

// askApproval is the input-required result that shows the human what would be sent.
func askApproval(state, askerName, askerID string, id int64, question, final string) *mcpgo.CallToolResult {
	msg := fmt.Sprintf("Send this answer to %s (%s)?\n\nTheir question (message %d):\n%s\n\nYour answer, exactly as it will be sent:\n%s",
		askerName, askerID, id, question, final)
	return mcpserver.NewInputRequestBuilder(state).Elicit(approvalInputID, mcpgo.ElicitationParams{
		Message:         msg,
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
	}).ToolResult()
}
