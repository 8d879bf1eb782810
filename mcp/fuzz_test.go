package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// FuzzToolArguments feeds arbitrary argument JSON to every tool handler:
// each must answer with a tool result (an error result is fine), never a
// protocol error or a panic, and never echo a password argument.
func FuzzToolArguments(f *testing.F) {
	f.Add("send_response", `{"message_id":"message 12","final_text":"ok"}`)
	f.Add("check_replies", `{"since":"yesterday","cursor":"-1"}`)
	f.Add("ask_person", `{"to_user_id":["x"],"question":7}`)
	f.Add("login", `{"org_id":"a","user_id":"b","password":"pw-SECRET-pw"}`)
	f.Add("register_organization", `{"org_id":"Bad Id!","name":"","admin_password":"short"}`)
	f.Add("check_inbox", `[1,2,3]`)
	f.Add("whoami", `{"auth_token":"ctalk_not-a-real-token"}`)
	f.Add("propose_response", `null`)
	store := openFuzzStore(f)
	tl := newTools(store, Options{HashConcurrency: 1})
	handlers := map[string]func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error){}
	for _, st := range tl.all() {
		handlers[st.Tool.Name] = st.handler
	}
	f.Fuzz(func(t *testing.T, tool, args string) {
		h, ok := handlers[tool]
		if !ok || !json.Valid([]byte(args)) {
			return
		}
		var req mcpgo.CallToolRequest
		req.Params.Name = tool
		req.Params.RawArguments = json.RawMessage(args)
		res, err := h(context.Background(), req)
		if err != nil || res == nil {
			t.Fatalf("%s(%s) = %v, %v; want a tool result", tool, args, res, err)
		}
		out, _ := json.Marshal(res)
		if strings.Contains(args, "pw-SECRET-pw") && strings.Contains(string(out), "pw-SECRET-pw") {
			t.Fatalf("%s(%s) echoed the password: %s", tool, args, out)
		}
	})
}
