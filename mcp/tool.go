package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/internal/metrics"
	"github.com/ctalk/ctalk/internal/relay"
)

// tool is one MCP tool: what tools/list shows, the handler, and the type of
// its argument struct (so a test can hold the two to each other).
type tool struct {
	mcpgo.Tool
	handler mcpserver.ToolHandlerFunc
	args    reflect.Type
}

// declare names a tool once: its declaration (description, arguments,
// annotations) and its handler, which binds arguments of type A and
// renders a result of type R.
func declare[A, R any](t *tools, name string, fn func(context.Context, A) (R, error), opts ...mcpgo.ToolOption) tool {
	return tool{Tool: mcpgo.NewTool(name, opts...), handler: handle(t, name, fn), args: reflect.TypeFor[A]()}
}

// handle adapts a typed handler to mcp-go: it decodes the arguments, runs
// the handler, and turns its result or error into a tool result. Expected
// failures come back as isError results the model can act on; anything else
// is logged once (never with arguments) and shown as an internal error.
// Every call, whatever its end, is counted once in the metrics, by tool and
// outcome, with its duration.
func handle[A, R any](t *tools, name string, fn func(context.Context, A) (R, error)) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (res *mcpgo.CallToolResult, _ error) {
		start, outcome, held := heldStart(ctx, time.Now()), metrics.OK, false
		defer func() {
			if p := recover(); p != nil {
				t.log.ErrorContext(ctx, "tool panicked", "tool", name, "panic", fmt.Sprint(p), "stack", callers())
				res, outcome, held = mcpgo.NewToolResultError(errInternal.Error()), metrics.InternalError, false
			}
			if !held { // a held call is counted when it ends
				t.metrics.ToolCall(name, outcome, time.Since(start))
			}
		}()
		fail := func(err error) (*mcpgo.CallToolResult, error) {
			var msg string
			msg, outcome = publicError(ctx, t.log, name, err)
			return mcpgo.NewToolResultError(msg), nil
		}
		var args A
		if err := req.BindArguments(&args); err != nil {
			outcome = metrics.UserError
			return mcpgo.NewToolResultError(argumentError(err)), nil
		}
		out, err := fn(withCall(ctx, req), args)
		if errors.Is(err, relay.ErrHeld) {
			held = true
			return &mcpgo.CallToolResult{}, nil // never sent: the holder runs the call again (see Hold)
		}
		if err != nil {
			return fail(err)
		}
		if r, ok := any(out).(*mcpgo.CallToolResult); ok {
			return r, nil // a result the tool built itself, such as an input request
		}
		// Marshalled once: the text block carries the serialized JSON, and
		// the same bytes go out (compacted) as structuredContent.
		text, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return fail(err)
		}
		res = mcpgo.NewToolResultStructured(out, string(text))
		res.RawStructuredContent = text
		return res, nil
	}
}

// Argument definitions shared by several tools.
var (
	argAuthToken = mcpgo.WithString("auth_token", mcpgo.Description(
		"The auth_token returned by login. Optional when this MCP server was configured with an "+
			"Authorization: Bearer header. Treat it like a password."), mcpgo.MaxLength(relay.MaxTokenLen))
	argOrgID = func(desc string) mcpgo.ToolOption {
		return mcpgo.WithString("org_id", mcpgo.Required(), mcpgo.Description(desc), mcpgo.MaxLength(relay.MaxIDLen))
	}
	argAdminPassword = mcpgo.WithString("admin_password", mcpgo.Required(), mcpgo.Description(
		"The organization's admin password."), mcpgo.MaxLength(relay.MaxPasswordLen))
	argUserID = mcpgo.WithString("user_id", mcpgo.Required(), mcpgo.Description("The person's user id."),
		mcpgo.MaxLength(relay.MaxIDLen))
	argNewPassword = mcpgo.WithString("new_password", mcpgo.Required(), mcpgo.Description(
		fmt.Sprintf("The new password, at least %d characters.", relay.MinUserPassLen)),
		mcpgo.MinLength(relay.MinUserPassLen), mcpgo.MaxLength(relay.MaxPasswordLen))
	argMessageID = mcpgo.WithInteger("message_id", mcpgo.Required(), mcpgo.Min(1), mcpgo.Description(
		"The question's number, as shown by check_inbox (\"message 12\" is 12)."))
)

// authArgs are the arguments of a tool that needs only the caller.
type authArgs struct {
	AuthToken string `json:"auth_token,omitempty"`
}

// annotations states honestly what a tool does: mcp-go marks every tool
// destructive unless told otherwise.
func annotations(title string, readOnly, destructive, idempotent, openWorld bool) mcpgo.ToolOption {
	return mcpgo.WithToolAnnotation(mcpgo.ToolAnnotation{
		Title:           title,
		ReadOnlyHint:    &readOnly,
		DestructiveHint: &destructive,
		IdempotentHint:  &idempotent,
		OpenWorldHint:   &openWorld,
	})
}

// messageID accepts the id as a JSON number or as text such as "12" or "message 12".
type messageID int64

func (m *messageID) UnmarshalJSON(b []byte) error {
	s := strings.Trim(strings.TrimSpace(string(b)), `"`)
	s = strings.TrimSpace(strings.TrimPrefix(strings.ToLower(s), "message"))
	s = strings.TrimPrefix(s, "#")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return &argError{msg: "message_id must be a message number such as 12 (check_inbox lists them)"}
	}
	*m = messageID(n)
	return nil
}
