package bridge

import (
	"context"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/internal/relayclient"
)

// Approval through the bridge: when the client (Claude Code) can show its
// person a dialog, the bridge says so to the relay, and the relay's
// approval request for send_response reaches the person unchanged; the
// dialog is the relay's, never the bridge's.
//
// The relay is asked in protocol 2026-07-28's way, whatever the client
// speaks: it answers with an input-required result, which the bridge
// returns as its own. A 2026-07-28 client shows it and calls again with the
// person's answer and the request state, which the bridge hands back to the
// relay. For a 2025-11-25 client, mcp-go turns the same result into an
// elicitation/create request on stdio and calls the handler again with the
// answer, so one path serves both. The relay keeps no state between the
// two calls: the request state binds the answer to the exact text.

// clientCanApprove reports whether the client declared form elicitation:
// on the request itself in protocol 2026-07-28, in initialize before it.
func clientCanApprove(ctx context.Context) bool {
	caps := mcpgo.ClientCapabilities{}
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		if info.ClientCapabilities != nil {
			caps = *info.ClientCapabilities
		}
	} else if s, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo); ok {
		caps = s.GetClientCapabilities()
	}
	return caps.Elicitation != nil
}

// approvalOf is what the client's call carries back of an earlier approval
// request: nothing on a first call.
func approvalOf(req mcpgo.CallToolRequest) relayclient.Approval {
	a := relayclient.Approval{State: req.Params.RequestState}
	if len(req.Params.InputResponses) > 0 {
		a.Responses = req.Params.InputResponses
	}
	return a
}
