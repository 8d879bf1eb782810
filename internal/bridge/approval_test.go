package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// dialogs is a client's elicitation handler: it records each dialog's
// message and answers with the next action.
type dialogs struct {
	messages []string
	action   string
}

func (d *dialogs) handle(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	d.messages = append(d.messages, req.Params.Message)
	return &sdk.ElicitResult{Action: d.action}, nil
}

// connectHost connects an MCP client named name, which shows dialogs, to a
// bridge: the official SDK's client, speaking 2026-07-28 where the bridge
// offers it and 2025-11-25 where it does not.
func connectHost(t *testing.T, br *bridgeRun, name string, d *dialogs) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: name, Version: "test"}, &sdk.ClientOptions{ElicitationHandler: d.handle})
	cs, err := c.Connect(t.Context(), &sdk.IOTransport{Reader: br.out, Writer: br.in}, nil)
	if err != nil {
		t.Fatalf("connect %s to the bridge: %v", name, err)
	}
	return cs
}

// TestBridgeCarriesApproval: a client that shows dialogs gets the relay's
// approval dialog through the bridge, on both protocol generations; only
// accept sends, decline and cancel leave the question unanswered.
func TestBridgeCarriesApproval(t *testing.T) {
	t.Parallel()
	team := testkit.Pair
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		endpoint, umar := seededRelay(t, s, team)
		for _, host := range []struct{ name, protocol string }{
			{"claude-code", "2025-11-25"}, // steered off 2026-07-28 for its channel
			{"sdk-host", "2026-07-28"},
		} {
			br := startBridge(t, endpoint, team, "john")
			d := &dialogs{}
			cs := connectHost(t, br, host.name, d)
			if got := cs.InitializeResult().ProtocolVersion; got != host.protocol {
				t.Errorf("%s negotiated protocol %s with the bridge, want %s", host.name, got, host.protocol)
			}
			for _, action := range []string{"decline", "cancel", "accept"} {
				question := fmt.Sprintf("%s %s: which port does staging use?", host.name, action)
				answer := fmt.Sprintf("Port 8443 (%s, %s).", host.name, action)
				var asked struct {
					MessageID int64 `json:"message_id"`
				}
				if err := umar.Call(t.Context(), "ask_person", map[string]any{"to_user_id": "john", "question": question}, &asked); err != nil {
					t.Fatal(err)
				}
				d.action, d.messages = action, nil
				res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "send_response",
					Arguments: map[string]any{"message_id": asked.MessageID, "final_text": answer}})
				if err != nil {
					t.Fatalf("%s: send_response through the bridge: %v", host.name, err)
				}
				out, _ := json.Marshal(res.StructuredContent)
				if len(d.messages) != 1 || !strings.Contains(d.messages[0], answer) || !strings.Contains(d.messages[0], question) {
					t.Errorf("%s %s: dialogs shown = %q, want one showing the question and the exact answer", host.name, action, d.messages)
				}
				var got struct{ Status, Reason string }
				json.Unmarshal(out, &got) //nolint:errcheck // an undecodable result fails the checks below
				wantStatus := map[string]string{"accept": "sent", "decline": "not sent", "cancel": "not sent"}[action]
				if res.IsError || got.Status != wantStatus || action != "accept" && !strings.Contains(got.Reason, action) {
					t.Errorf("%s %s: send_response = %s (isError %v), want status %q naming %q", host.name, action, out, res.IsError, wantStatus, action)
				}
				var replies struct {
					Replies []struct {
						MessageID int64 `json:"message_id"`
					} `json:"replies"`
				}
				if err := umar.Call(t.Context(), "check_replies", map[string]any{}, &replies); err != nil {
					t.Fatal(err)
				}
				delivered := slices.ContainsFunc(replies.Replies, func(r struct {
					MessageID int64 `json:"message_id"`
				}) bool {
					return r.MessageID == asked.MessageID
				})
				if delivered != (action == "accept") {
					t.Errorf("%s %s: umar's replies = %+v; message %d delivered %v, want %v", host.name, action, replies.Replies,
						asked.MessageID, delivered, action == "accept")
				}
			}
			cs.Close()
			br.stop(t)
		}
	})
}
