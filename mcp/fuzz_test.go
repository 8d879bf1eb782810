package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// FuzzText checks the rules every stored text goes through: whatever comes
// in, what is stored is valid UTF-8 with no control or hidden characters
// besides tab and newline, within the limit, and never token-shaped.
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "hello", "a\x00b", "x\u202Ey", "line\r\nline", "ctalk_" + strings.Repeat("A", 43),
		"\xff\xfe", "  padded  ", "emoji 👩‍👩‍👧", "\u200b", "tab\there"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := text("field", in, false, 100)
		if err != nil {
			if _, ok := err.(*inputError); !ok {
				t.Fatalf("text(%q) error %T %v, want *inputError", in, err, err)
			}
			return
		}
		if !utf8.ValidString(out) {
			t.Fatalf("text(%q) = %q, not valid UTF-8", in, out)
		}
		for _, r := range out {
			if (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f || hidden(r) {
				t.Fatalf("text(%q) = %q, keeps U+%04X", in, out, r)
			}
		}
		if utf8.RuneCountInString(out) > 100 || looksLikeToken(out) {
			t.Fatalf("text(%q) = %q, over the limit or token-shaped", in, out)
		}
	})
}

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
	for _, st := range tl.serverTools() {
		handlers[st.Tool.Name] = st.Handler
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
